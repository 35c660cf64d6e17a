/*
 * transfer.cu - host<->device copies: bandwidth against size (4 KiB to
 * 1 GiB in powers of 4), pinned and pageable, each direction and both at
 * once (two streams); PCIe contention (0-8 host threads each copying
 * blocks of 1024 x 1024 x N floats, as in the seed study, while a probe
 * times a small upload + kernel + download); the same probe under paced
 * load of known utilisation; peer-to-peer copies between GPUs.
 */
#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>
#include <thread>

#include "common.cuh"

namespace {

const size_t MIN_SIZE = 4096;
const size_t MAX_SIZE = size_t(1) << 30;
const size_t PROBE_BYTES = 4096;

int reps_for(const bench_ctx *c, size_t size)
{
	if (size <= (size_t(1) << 20))
		return c->quick ? 20 : 100;
	if (size <= (size_t(64) << 20))
		return c->quick ? 10 : 30;
	return c->quick ? 3 : 10;
}

struct lsim_calib_row proto(const char *bench, const char *variant)
{
	struct lsim_calib_row r;
	lsim_calib_row_clear(&r);
	snprintf(r.bench, sizeof r.bench, "%s", bench);
	snprintf(r.variant, sizeof r.variant, "%s", variant);
	return r;
}

/* One direction, pinned (CUDA events) or pageable (host clock). */
int one_way(bench_ctx *c, bool h2d, bool pinned, void *host, void *dev,
	    size_t size, cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1,
	    std::vector<double> &out)
{
	cudaMemcpyKind kind = h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
	void *dst = h2d ? dev : host;
	const void *src = h2d ? host : dev;
	int reps = reps_for(c, size);
	int warm = c->quick ? 1 : 2;
	for (int i = 0; i < warm + reps; i++) {
		double t;
		if (pinned) {
			CK(c, cudaEventRecord(e0, s));
			CK(c, cudaMemcpyAsync(dst, src, size, kind, s));
			CK(c, cudaEventRecord(e1, s));
			CK(c, cudaEventSynchronize(e1));
			float ms = 0;
			CK(c, cudaEventElapsedTime(&ms, e0, e1));
			t = ms * 1e-3;
		} else {
			/* pageable: staging runs on the host, so time the host */
			double t0 = bench_now();
			CK(c, cudaMemcpyAsync(dst, src, size, kind, s));
			CK(c, cudaStreamSynchronize(s));
			t = bench_now() - t0;
		}
		if (i >= warm)
			out.push_back(t);
	}
	return 0;
}

/* Pinned: both copies on two streams between events. */
int both_pinned(bench_ctx *c, void *h_in, void *d_in, void *h_out,
		void *d_out, size_t size, cudaStream_t s1, cudaStream_t s2,
		cudaEvent_t e0, cudaEvent_t e1, cudaEvent_t e2,
		std::vector<double> &out)
{
	int reps = reps_for(c, size);
	int warm = c->quick ? 1 : 2;
	for (int i = 0; i < warm + reps; i++) {
		CK(c, cudaEventRecord(e0, s1));
		CK(c, cudaStreamWaitEvent(s2, e0, 0));
		CK(c, cudaMemcpyAsync(d_in, h_in, size, cudaMemcpyHostToDevice, s1));
		CK(c, cudaMemcpyAsync(h_out, d_out, size, cudaMemcpyDeviceToHost, s2));
		CK(c, cudaEventRecord(e1, s2));
		CK(c, cudaStreamWaitEvent(s1, e1, 0));
		CK(c, cudaEventRecord(e2, s1));
		CK(c, cudaEventSynchronize(e2));
		float ms = 0;
		CK(c, cudaEventElapsedTime(&ms, e0, e2));
		if (i >= warm)
			out.push_back(ms * 1e-3);
	}
	return 0;
}

/* Pageable: two host threads, one per direction, timed on the host. */
int both_pageable(bench_ctx *c, void *h_in, void *d_in, void *h_out,
		  void *d_out, size_t size, cudaStream_t s1, cudaStream_t s2,
		  std::vector<double> &out)
{
	int reps = reps_for(c, size);
	int warm = c->quick ? 1 : 2;
	for (int i = 0; i < warm + reps; i++) {
		cudaError_t e_out = cudaSuccess;
		std::atomic<bool> go(false);
		std::thread t([&] {
			cudaSetDevice(c->device);
			while (!go.load())
				;
			e_out = cudaMemcpyAsync(h_out, d_out, size,
						cudaMemcpyDeviceToHost, s2);
			if (e_out == cudaSuccess)
				e_out = cudaStreamSynchronize(s2);
		});
		double t0 = bench_now();
		go.store(true);
		cudaError_t e_in = cudaMemcpyAsync(d_in, h_in, size,
						   cudaMemcpyHostToDevice, s1);
		if (e_in == cudaSuccess)
			e_in = cudaStreamSynchronize(s1);
		t.join();
		double dt = bench_now() - t0;
		CK(c, e_in);
		CK(c, e_out);
		if (i >= warm)
			out.push_back(dt);
	}
	return 0;
}

__global__ void probe_kernel(unsigned *p, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = p[i] * 2654435761u + 1u;
}

/* The probe: upload 4 KiB, a tiny kernel, download 4 KiB; host-timed. */
struct probe {
	pinned_buf h_in, h_out;
	dev_buf d;
	stream_t s;

	int init(bench_ctx *c)
	{
		CK(c, cudaHostAlloc(&h_in.p, PROBE_BYTES, cudaHostAllocDefault));
		CK(c, cudaHostAlloc(&h_out.p, PROBE_BYTES, cudaHostAllocDefault));
		memset(h_in.p, 1, PROBE_BYTES);
		CK(c, cudaMalloc(&d.p, PROBE_BYTES));
		CK(c, cudaStreamCreateWithFlags(&s.s, cudaStreamNonBlocking));
		for (int i = 0; i < 20; i++) {
			double t;
			if (once(c, &t))
				return -1;
		}
		return 0;
	}

	int once(bench_ctx *c, double *t)
	{
		int n = int(PROBE_BYTES / sizeof(unsigned));
		double t0 = bench_now();
		CK(c, cudaMemcpyAsync(d.p, h_in.p, PROBE_BYTES,
				      cudaMemcpyHostToDevice, s.s));
		probe_kernel<<<(n + 255) / 256, 256, 0, s.s>>>((unsigned *)d.p, n);
		CK(c, cudaGetLastError());
		CK(c, cudaMemcpyAsync(h_out.p, d.p, PROBE_BYTES,
				      cudaMemcpyDeviceToHost, s.s));
		CK(c, cudaStreamSynchronize(s.s));
		*t = bench_now() - t0;
		return 0;
	}
};

/* A background copy thread's buffers, stream and samples. */
struct copier {
	pinned_buf h;
	dev_buf d;
	stream_t s;
	event_t e0, e1;
	std::vector<double> times;
	double start = 0, end = 0;
	cudaError_t err = cudaSuccess;
	const char *what = "";
};

int copier_init(bench_ctx *c, copier &w, size_t block)
{
	CK(c, cudaHostAlloc(&w.h.p, block, cudaHostAllocDefault));
	memset(w.h.p, 3, block);
	CK(c, cudaMalloc(&w.d.p, block));
	CK(c, cudaStreamCreateWithFlags(&w.s.s, cudaStreamNonBlocking));
	CK(c, cudaEventCreate(&w.e0.e));
	CK(c, cudaEventCreate(&w.e1.e));
	return 0;
}

/*
 * Copies block host-to-device `copies` times (or, with duty < 1, until
 * stop is set, sleeping so that the copies fill `duty` of the time).
 */
void copier_run(int device, copier *w, size_t block, int copies, double duty,
		const std::atomic<bool> *go, const std::atomic<bool> *stop,
		std::atomic<int> *running)
{
	cudaSetDevice(device);
	while (!go->load())
		;
	w->start = bench_now();
	for (int i = 0; duty < 1 ? !stop->load() : i < copies; i++) {
		cudaError_t e = cudaEventRecord(w->e0.e, w->s.s);
		if (e == cudaSuccess)
			e = cudaMemcpyAsync(w->d.p, w->h.p, block,
					    cudaMemcpyHostToDevice, w->s.s);
		if (e == cudaSuccess)
			e = cudaEventRecord(w->e1.e, w->s.s);
		if (e == cudaSuccess)
			e = cudaEventSynchronize(w->e1.e);
		float ms = 0;
		if (e == cudaSuccess)
			e = cudaEventElapsedTime(&ms, w->e0.e, w->e1.e);
		if (e != cudaSuccess) {
			w->err = e;
			w->what = "background cudaMemcpyAsync";
			break;
		}
		w->times.push_back(ms * 1e-3);
		if (duty < 1)
			bench_sleep(ms * 1e-3 * (1 - duty) / duty);
	}
	w->end = bench_now();
	running->fetch_sub(1);
}

/*
 * Runs n copiers with the probe in the foreground; appends a probe row
 * and (n > 0) a stream row. duty >= 1: each copier does `copies` copies;
 * duty < 1: paced, for `seconds`.
 */
int pressure(bench_ctx *c, probe &pr, const char *bench, int n, size_t block,
	     int copies, double duty, double seconds, int min_probes)
{
	std::vector<copier> w(size_t(n > 0 ? n : 0));
	for (auto &x : w)
		if (copier_init(c, x, block))
			return -1;
	std::atomic<bool> go(false), stop(false);
	std::atomic<int> running(n);
	std::vector<std::thread> th;
	for (int i = 0; i < n; i++)
		th.emplace_back(copier_run, c->device, &w[size_t(i)], block, copies,
				duty, &go, &stop, &running);
	std::vector<double> lat;
	double t_start = bench_now();
	go.store(true);
	int rc = 0;
	while (rc == 0) {
		if (n == 0 && int(lat.size()) >= min_probes)
			break;
		if (n > 0 && duty < 1 && bench_now() - t_start >= seconds)
			stop.store(true);
		if (n > 0 && running.load() < n)
			break; /* a copier finished: the pressure level is over */
		double t;
		rc = pr.once(c, &t);
		if (rc == 0 && (n == 0 || running.load() == n))
			lat.push_back(t);
	}
	stop.store(true);
	for (auto &t : th)
		t.join();
	if (rc)
		return rc;
	for (auto &x : w)
		if (x.err != cudaSuccess)
			return bench_fail(c, x.what, cudaGetErrorString(x.err));
	/* utilisation: background bytes over link capacity x wall time */
	double bytes = 0, t0 = 1e300, t1 = 0;
	std::vector<double> copy_times;
	for (auto &x : w) {
		bytes += double(block) * double(x.times.size());
		t0 = std::min(t0, x.start);
		t1 = std::max(t1, x.end);
		copy_times.insert(copy_times.end(), x.times.begin(), x.times.end());
	}
	double wall = t1 - t0;
	double agg = n > 0 && wall > 0 ? bytes / wall : 0;
	double util = c->h2d_bw > 0 ? agg / c->h2d_bw : NAN;
	struct lsim_calib_row r = proto(bench, "probe");
	r.size = double(PROBE_BYTES);
	r.threads = n;
	r.util = n > 0 ? util : 0;
	r.value = agg;
	snprintf(r.unit, sizeof r.unit, "B/s");
	if (lat.empty())
		return bench_fail(c, bench, "no probe completed while the background ran");
	if (bench_row(c, &r, lat))
		return -1;
	double med_lat = c->raw->rows[c->raw->n_rows - 1].median_s;
	if (n > 0) {
		struct lsim_calib_row s = proto(bench, "stream");
		s.size = double(block);
		s.threads = n;
		s.util = util;
		if (bench_row(c, &s, copy_times))
			return -1;
		struct lsim_calib_row *last = &c->raw->rows[c->raw->n_rows - 1];
		last->value = double(block) / last->median_s;
		snprintf(last->unit, sizeof last->unit, "B/s");
	}
	bench_note(c, "%s: %d thread%s, utilisation %.2f, probe median %.1f us (%zu probes)",
		   bench, n, n == 1 ? "" : "s", n > 0 ? util : 0.0, med_lat * 1e6,
		   lat.size());
	return 0;
}

} /* namespace */

int bench_transfer(bench_ctx *c)
{
	size_t free_b = 0, total_b = 0;
	CK(c, cudaMemGetInfo(&free_b, &total_b));
	size_t max_size = MAX_SIZE;
	while (max_size > MIN_SIZE && 2 * max_size > free_b / 2)
		max_size /= 4;
	dev_buf d_in, d_out;
	pinned_buf hp_in, hp_out;
	host_buf hq_in, hq_out;
	stream_t s1, s2;
	event_t e0, e1, e2;
	CK(c, cudaMalloc(&d_in.p, max_size));
	CK(c, cudaMalloc(&d_out.p, max_size));
	CK(c, cudaMemset(d_out.p, 7, max_size));
	CK(c, cudaHostAlloc(&hp_in.p, max_size, cudaHostAllocDefault));
	CK(c, cudaHostAlloc(&hp_out.p, max_size, cudaHostAllocDefault));
	hq_in.p = malloc(max_size);
	hq_out.p = malloc(max_size);
	if (!hq_in.p || !hq_out.p)
		return bench_fail(c, "malloc of pageable buffers", "out of memory");
	/* touch every page so first-use faults are not timed */
	memset(hp_in.p, 1, max_size);
	memset(hp_out.p, 2, max_size);
	memset(hq_in.p, 1, max_size);
	memset(hq_out.p, 2, max_size);
	CK(c, cudaStreamCreateWithFlags(&s1.s, cudaStreamNonBlocking));
	CK(c, cudaStreamCreateWithFlags(&s2.s, cudaStreamNonBlocking));
	CK(c, cudaEventCreate(&e0.e));
	CK(c, cudaEventCreate(&e1.e));
	CK(c, cudaEventCreate(&e2.e));

	for (int pinned = 1; pinned >= 0; pinned--) {
		void *h_in = pinned ? hp_in.p : hq_in.p;
		void *h_out = pinned ? hp_out.p : hq_out.p;
		const char *mode = pinned ? "pinned" : "pageable";
		for (size_t size = MIN_SIZE; size <= max_size; size *= 4) {
			for (int dir = 0; dir < 3; dir++) {
				std::vector<double> t;
				int rc;
				if (dir == 0)
					rc = one_way(c, true, pinned, h_in, d_in.p, size,
						     s1.s, e0.e, e1.e, t);
				else if (dir == 1)
					rc = one_way(c, false, pinned, h_out, d_out.p,
						     size, s1.s, e0.e, e1.e, t);
				else if (pinned)
					rc = both_pinned(c, h_in, d_in.p, h_out, d_out.p,
							 size, s1.s, s2.s, e0.e, e1.e,
							 e2.e, t);
				else
					rc = both_pageable(c, h_in, d_in.p, h_out,
							   d_out.p, size, s1.s, s2.s, t);
				if (rc)
					return rc;
				std::string v = std::string(dir == 0 ? "h2d_" :
							    dir == 1 ? "d2h_" : "bidir_") + mode;
				struct lsim_calib_row r = proto("transfer", v.c_str());
				r.size = double(size);
				if (bench_row(c, &r, t))
					return -1;
				struct lsim_calib_row *last =
					&c->raw->rows[c->raw->n_rows - 1];
				last->value = (dir == 2 ? 2.0 : 1.0) * double(size) /
					      last->median_s;
				snprintf(last->unit, sizeof last->unit, "B/s");
				if (dir == 0 && pinned)
					c->h2d_bw = std::max(c->h2d_bw, last->value);
			}
		}
		bench_note(c, "transfers, %s: 4 KiB to %zu MiB done", mode,
			   max_size >> 20);
	}
	return 0;
}

int bench_contention(bench_ctx *c)
{
	probe pr;
	if (pr.init(c))
		return -1;
	int copies = c->quick ? 30 : 300;
	for (int n = 0; n <= 8; n++) {
		/* the seed study's blocks: 1024 x 1024 x N floats per copy */
		size_t block = size_t(1024) * 1024 * size_t(n > 0 ? n : 1) * sizeof(float);
		if (pressure(c, pr, "contention", n, block, copies, 1.0, 0,
			     c->quick ? 50 : 500))
			return -1;
	}
	return 0;
}

int bench_interference(bench_ctx *c)
{
	probe pr;
	if (pr.init(c))
		return -1;
	if (pressure(c, pr, "interference", 0, 0, 0, 1.0, 0, c->quick ? 50 : 500))
		return -1;
	static const double full[] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};
	static const double quick[] = {0.2, 0.5, 0.8};
	const double *duty = c->quick ? quick : full;
	size_t n = c->quick ? 3 : 9;
	size_t block = size_t(64) << 20;
	for (size_t i = 0; i < n; i++)
		if (pressure(c, pr, "interference", 1, block, 0, duty[i],
			     c->quick ? 0.25 : 1.0, 0))
			return -1;
	return 0;
}

int bench_p2p(bench_ctx *c)
{
	int count = 0;
	CK(c, cudaGetDeviceCount(&count));
	if (count < 2)
		return 0;
	size_t size = (c->quick ? size_t(64) : size_t(256)) << 20;
	int reps = c->quick ? 3 : 10;
	for (int j = 0; j < count; j++) {
		if (j == c->device)
			continue;
		int can = 0;
		CK(c, cudaDeviceCanAccessPeer(&can, c->device, j));
		dev_buf src, dst;
		CK(c, cudaSetDevice(j));
		if (can) {
			cudaError_t e = cudaDeviceEnablePeerAccess(c->device, 0);
			if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
				CK(c, e);
			cudaGetLastError();
		}
		CK(c, cudaMalloc(&dst.p, size));
		CK(c, cudaSetDevice(c->device));
		if (can) {
			cudaError_t e = cudaDeviceEnablePeerAccess(j, 0);
			if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
				CK(c, e);
			cudaGetLastError();
		}
		CK(c, cudaMalloc(&src.p, size));
		stream_t s;
		event_t e0, e1;
		CK(c, cudaStreamCreateWithFlags(&s.s, cudaStreamNonBlocking));
		CK(c, cudaEventCreate(&e0.e));
		CK(c, cudaEventCreate(&e1.e));
		std::vector<double> t;
		for (int i = 0; i < reps + 1; i++) {
			CK(c, cudaEventRecord(e0.e, s.s));
			CK(c, cudaMemcpyPeerAsync(dst.p, j, src.p, c->device, size, s.s));
			CK(c, cudaEventRecord(e1.e, s.s));
			CK(c, cudaEventSynchronize(e1.e));
			float ms = 0;
			CK(c, cudaEventElapsedTime(&ms, e0.e, e1.e));
			if (i > 0)
				t.push_back(ms * 1e-3);
		}
		std::string v = "to" + std::to_string(j) + (can ? "" : "_staged");
		struct lsim_calib_row r = proto("p2p", v.c_str());
		r.size = double(size);
		if (bench_row(c, &r, t))
			return -1;
		struct lsim_calib_row *last = &c->raw->rows[c->raw->n_rows - 1];
		last->value = double(size) / last->median_s;
		snprintf(last->unit, sizeof last->unit, "B/s");
		bench_note(c, "p2p %d -> %d: %.1f GB/s%s", c->device, j,
			   last->value / 1e9, can ? "" : " (no peer access)");
	}
	return 0;
}
