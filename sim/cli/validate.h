/*
 * validate.h - replay of a measured vLLM run through one simulated
 * instance, and the comparison of TTFT, TPOT and end-to-end latency
 * (mean and percentiles) between measurement and simulation.
 */
#ifndef LLMSIM_VALIDATE_H
#define LLMSIM_VALIDATE_H

#include "kernel/config.h"
#include "llmsim/llmsim.h"

struct lsim_validate_opts {
	const char *run_dir;	/* holds requests.jsonl and meta.json */
	const char *perf_dir;	/* per-layer profile: .../<GPU>/<model>/bf16 */
	const char *model;	/* model name; "" = meta.json's "model" (matched by
				 * lsim_model_match either way) */
	const char *gpu;	/* GPU profile sizing an underived KV cache; "" =
				 * the run's hardware.device_total_memory_bytes */
	double cpu_overhead_s;	/* per-iteration CPU time added to the table */
};

#define LSIM_VALIDATE_METRICS(X) X(ttft) X(tpot) X(e2e)
#define LSIM_VALIDATE_STATS(X) X(mean) X(p50) X(p90) X(p95) X(p99)

struct lsim_validate_row {
	double real_ms, sim_ms, err_pct;
};

struct lsim_validate_result {
	struct lsim_validate_row rows[3][5]; /* metric x stat */
	size_t n_requests;
	size_t n_preempted; /* simulated requests preempted at least once */
	char model[64];	    /* the catalogue model replayed */
	char run_model[128]; /* the run's model name */
	int64_t kv_blocks, block_size, max_model_len; /* as simulated */
	const char *kv_from;  /* meta.json key of the block count, or NULL: derived */
	const char *len_from; /* ... of max_model_len, or NULL: the model's context */
	bool prefix_caching;  /* as the run had it */
	int64_t dp;	      /* data-parallel ranks replayed (1: one engine) */
	int64_t pp;	      /* pipeline stages (1: none) */
	int64_t ep;	      /* GPUs the experts are split over (1: none) */
	bool lockstep;	      /* the ranks stepped together (an MoE model) */
	char fabric[64];      /* tp > 1: the GPU profile whose fabric the all-reduces use */
	char fabric_from[96]; /* ... where it came from; empty at tp 1 */
	char prefix_from[96]; /* meta.json key it came from, or how it was defaulted */
	uint64_t n_back;      /* requests.jsonl lines earlier than the line before */
	double max_back_ms;   /* the largest such step back */
	double wall_s;
};

int lsim_validate_run(const struct lsim_validate_opts *o,
		      struct lsim_validate_result *out, struct lsim_diag *d);

/* Human table or the JSON object {"metrics": {...}} into b. */
void lsim_validate_format(const struct lsim_validate_result *r, bool json,
			  struct lsim_buf *b);

#endif
