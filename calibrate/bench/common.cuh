/*
 * common.cuh - what the CUDA microbenchmarks share: the run context, error
 * checking that turns a failed CUDA call into a message, owning wrappers
 * of device/host buffers, streams and events, a host clock, and helpers
 * that turn timing samples into a raw-table row.
 */
#ifndef LLMSIM_CALIB_COMMON_CUH
#define LLMSIM_CALIB_COMMON_CUH

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#include "bench.h"

struct bench_ctx {
	int device;
	bool quick;
	FILE *progress;
	struct lsim_calib_raw *raw;
	char *err;
	size_t errsize;
	int sm_count;
	double h2d_bw; /* best pinned host-to-device bandwidth, B/s (0: not yet) */
};

/* Fills ctx->err with "what: msg" and returns -1. */
int bench_fail(bench_ctx *c, const char *what, const char *msg);
/* One progress line (to ctx->progress, if any). */
void bench_note(bench_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Seconds on a monotonic host clock. */
double bench_now(void);
/* Sleeps for s seconds (s <= 0: returns at once). */
void bench_sleep(double s);
/*
 * Appends a row: bench, variant and the stats of samples (seconds; sorted in
 * place), with the numeric fields set in proto. Returns 0 or -1.
 */
int bench_row(bench_ctx *c, const struct lsim_calib_row *proto,
	      std::vector<double> &samples);

#define CK(c, call)                                                         \
	do {                                                                \
		cudaError_t e_ = (call);                                    \
		if (e_ != cudaSuccess)                                      \
			return bench_fail((c), #call, cudaGetErrorString(e_)); \
	} while (0)

/* Owning wrappers: freed when they go out of scope (also on errors). */
struct dev_buf {
	void *p = nullptr;
	dev_buf() = default;
	dev_buf(const dev_buf &) = delete;
	dev_buf &operator=(const dev_buf &) = delete;
	~dev_buf()
	{
		if (p)
			cudaFree(p);
	}
};

struct pinned_buf {
	void *p = nullptr;
	pinned_buf() = default;
	pinned_buf(const pinned_buf &) = delete;
	pinned_buf &operator=(const pinned_buf &) = delete;
	~pinned_buf()
	{
		if (p)
			cudaFreeHost(p);
	}
};

struct host_buf {
	void *p = nullptr;
	host_buf() = default;
	host_buf(const host_buf &) = delete;
	host_buf &operator=(const host_buf &) = delete;
	~host_buf() { free(p); }
};

struct stream_t {
	cudaStream_t s = nullptr;
	stream_t() = default;
	stream_t(const stream_t &) = delete;
	stream_t &operator=(const stream_t &) = delete;
	~stream_t()
	{
		if (s)
			cudaStreamDestroy(s);
	}
};

struct event_t {
	cudaEvent_t e = nullptr;
	event_t() = default;
	event_t(const event_t &) = delete;
	event_t &operator=(const event_t &) = delete;
	~event_t()
	{
		if (e)
			cudaEventDestroy(e);
	}
};

/* Benchmarks: each appends its rows; 0 or -1 with ctx->err set. */
int bench_transfer(bench_ctx *c);
int bench_contention(bench_ctx *c);
int bench_interference(bench_ctx *c);
int bench_p2p(bench_ctx *c);
int bench_hbm(bench_ctx *c);
int bench_gemm(bench_ctx *c);
int bench_launch(bench_ctx *c);

#endif
