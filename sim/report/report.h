/*
 * report.h - what one run produced, as plain arrays, and the sinks that
 * write it: an HDF5 report per run, a row in a SQLite results database,
 * and CSV exports. Every writer produces its file under a temporary name
 * and renames it only when complete.
 */
#ifndef LLMSIM_REPORT_H
#define LLMSIM_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "llmsim/llmsim.h"

/* Request status codes (the /requests "status" column). */
enum lsim_req_status {
	LSIM_REQ_FINISHED = 0,
	LSIM_REQ_REJECTED = 1,
	LSIM_REQ_FAILED = 2,
	LSIM_REQ_UNFINISHED = 3, /* still in flight when the run ended (time limit) */
};

/* One row of /requests. Times in seconds of simulated time; -1 if never. */
struct lsim_req_record {
	uint64_t id;
	double arrival;
	double first_scheduled;
	double first_token;
	double finish;
	int32_t prompt_tokens;
	int32_t output_tokens;
	int32_t instance; /* -1 if never routed */
	int32_t preemptions;
	int32_t status; /* enum lsim_req_status */
	int32_t qos_class; /* index into the scenario's classes (0 if none) */
	int32_t predicted_output; /* profiler's prediction at arrival (-1: none) */
	int32_t reject_reason; /* enum lsim_reject_reason (0: not rejected) */
	int32_t slo_met; /* 1 if finished within every target of its class */
	int32_t tenant;	 /* its trace in workload.traces, or its tenant_column value (names) */
	int32_t model;	 /* index in model_names of the model it asked for (-1: any) */
	int32_t prefill_instance; /* disaggregated: the instance of its prefill (-1: none) */
	/* what it used: GPU-seconds (its share of each step's tokens times the
	 * step time, times tp), its mean and largest share of the GPUs while
	 * it was scheduled, and its peak KV-cache bytes */
	double gpu_time_s;
	double gpu_util_mean;
	double gpu_util_max;
	double kv_peak_bytes;
};

/* One row of /instances. */
struct lsim_inst_record {
	int32_t id;
	char gpu[32];	  /* hardware profile name */
	char model[64];	  /* model name */
	int32_t tp;	  /* GPUs in each stage's tensor-parallel group */
	double start;	  /* provisioning began, s */
	double ready;	  /* ready to serve, s */
	double stop;	  /* stopped (or end of run), s */
	double busy_s;	  /* time with a batch running */
	int64_t iterations;
	int64_t tokens;	  /* prefill + decode tokens processed */
	int64_t preemptions;
	int64_t kv_blocks; /* KV-cache block capacity */
	double energy_j;
	double cost_usd;
	int32_t node;	  /* cluster node it was placed on (-1: no cluster given) */
	int64_t prompt_tokens; /* prompt (+ recomputed) tokens at admissions */
	int64_t prefix_hit_tokens; /* of which found in the prefix cache */
	int64_t swaps;	  /* preemptions by swap (KV to host memory) */
	double swap_bytes; /* KV bytes moved to the host and back */
	int32_t role;	  /* 0 both, 1 prefill, 2 decode (disaggregation) */
	double kv_sent_bytes; /* prefill: KV sent to decode instances */
	double failed_at; /* s; -1 if it never failed */
	double carbon_g;  /* CO2 of its facility energy */
	int32_t pp;	  /* pipeline stages (each on tp GPUs) */
	double pp_bytes;  /* activations sent between its stages */
	double work_s;	  /* its steps' work at peak rates, per GPU of a stage
			   * (service mode: busy_s) */
	int32_t spot;	  /* 1: ran on spot capacity */
	/* over the GPU-time it held, tp x pp x (stop - start) (all 0 when
	 * that is 0; lsim_inst_record_rates): */
	double gpu_util;  /* work_s x tp / GPU-time: its GPUs' utilisation */
	double gpu_busy;  /* busy_s x tp x pp / GPU-time: share with a batch running */
	double model_flops; /* model FLOPs of its steps, all its GPUs */
	double hbm_bytes; /* bytes its steps moved through HBM, all its GPUs */
	double mfu;	  /* model_flops / (GPU-time x peak FLOP/s); NaN: no model */
	double mbu;	  /* hbm_bytes / (GPU-time x peak HBM bandwidth); NaN: no model */
};

/* One row of /timeseries: one sample of one instance. */
struct lsim_ts_sample {
	double t;
	int32_t instance;
	double gpu_busy;  /* busy fraction over the sample period (monitor's view) */
	double kv_util;	  /* used / total KV blocks */
	int32_t queue_len; /* waiting requests */
	int32_t running;  /* running sequences */
	double power_w;	  /* average power of the instance's GPUs over the period */
	double arrival_rate; /* requests routed to it per second (monitor's view) */
	double gpu_util;  /* its GPUs' utilisation over the period: work at peak
			   * rates / (pp x period) */
};

/* One row of /links: a link of the cluster and what it carried. */
struct lsim_link_record {
	int32_t id;
	char kind[16];	   /* pcie, host, nvlink, nic, tor, spine, storage */
	double bw;	   /* bytes/s */
	double latency_s;
	double bytes;	   /* carried by flows */
	double busy_s;	   /* time with at least one flow */
	double mean_util;  /* time-average of (sum of flow rates / bw) */
	int64_t msgs;	   /* messages serialized on it */
	char from[48];	   /* its ends ("gpu 3", "node 0 switch 1", ...; */
	char to[48];	   /* lsim_topo_link_ends), empty if unnamed */
};

/* One row of /link_timeseries: a link's mean utilisation over a sample
 * period; rows only for periods in which it carried something. */
struct lsim_link_sample {
	double t;
	int32_t link;
	double util;
};

/* One row of /tenants: what one tenant asked for and its share of the
 * run's cost, energy and carbon, in proportion to the tokens (prompt +
 * output) of its completed requests. */
struct lsim_tenant_record {
	int32_t tenant;
	char name[64];	 /* its tenant_names entry, or its trace position */
	double requests, completed;
	double tokens;	 /* prompt + output tokens of completed requests */
	double cost_usd, energy_j, carbon_g;
	double cost_per_mtok_usd; /* per million output tokens */
};

/* One row of /jobs: a training or fine-tuning job (sim/jobs/jobs.h). Times in
 * seconds, -1 if never. */
struct lsim_job_row {
	uint64_t id;
	int32_t tenant;
	int32_t status;	   /* 0 finished, 1 rejected, 2 unfinished */
	int32_t gpus_peak;
	int32_t restarts, failures, preemptions, resizes;
	int64_t iterations, lost_iterations;
	double arrival, first_start, finish, queued_s;
	double alloc_gpu_s, useful_gpu_s, lost_gpu_s, overhead_gpu_s;
	double cost_usd;
	double energy_j; /* GPUs held at their tdp, times PUE */
};

/* One row of /job_timeline: a job entering a state (1 queued, 2
 * restarting, 3 computing, 4 checkpointing, 5 done) holding gpus. */
struct lsim_job_event_row {
	double t;
	int32_t job;   /* its row in /jobs */
	int32_t state;
	double gpus;
};

/* One row of /job_timeseries: the training pool at a sample. */
struct lsim_job_sample {
	double t;
	int32_t held, lent, free, pending, fragmented;
};

/* One row of /classes: SLO attainment of one QoS class. */
struct lsim_class_record {
	char name[32];
	double share;
	double ttft_target, tpot_target, e2e_target; /* s; 0 = none */
	double requests, completed, rejected;
	double ttft_attainment; /* fraction of the class's requests finished within the TTFT target */
	double tpot_attainment;
	double e2e_attainment;
	double slo_attainment;	/* within every target */
	double goodput_rps;	/* requests within every target per second of makespan */
	double ttft_mean_s;	/* over finished requests */
};

/*
 * The /summary fields, declared once: X(name, unit, help). The same list
 * drives the struct, the HDF5 attributes, the SQLite metrics rows and the
 * printed summary.
 */
#define LSIM_SUMMARY_FIELDS(X)                                                   \
	X(requests, "", "requests that arrived")                                 \
	X(completed, "", "requests finished")                                    \
	X(rejected, "", "requests rejected")                                     \
	X(failed, "", "requests failed")                                         \
	X(unfinished, "", "requests in flight at the end")                       \
	X(overloaded_instances, "", "instances whose waiting queue grew through the run (overloaded: their latencies depend on the run's length)") \
	X(makespan_s, "s", "first arrival to last finish")                       \
	X(throughput_rps, "1/s", "completed requests per second of makespan")    \
	X(output_tokens_per_s, "1/s", "generated tokens per second of makespan") \
	X(ttft_mean_s, "s", "time to first token, mean")                         \
	X(ttft_p50_s, "s", "time to first token, median")                        \
	X(ttft_p90_s, "s", "time to first token, 90th percentile")               \
	X(ttft_p95_s, "s", "time to first token, 95th percentile")               \
	X(ttft_p99_s, "s", "time to first token, 99th percentile")               \
	X(tpot_mean_s, "s", "time per output token after the first, mean")       \
	X(tpot_p50_s, "s", "time per output token, median")                      \
	X(tpot_p90_s, "s", "time per output token, 90th percentile")             \
	X(tpot_p95_s, "s", "time per output token, 95th percentile")             \
	X(tpot_p99_s, "s", "time per output token, 99th percentile")             \
	X(e2e_mean_s, "s", "arrival to last token, mean")                        \
	X(e2e_p50_s, "s", "arrival to last token, median")                       \
	X(e2e_p90_s, "s", "arrival to last token, 90th percentile")              \
	X(e2e_p95_s, "s", "arrival to last token, 95th percentile")              \
	X(e2e_p99_s, "s", "arrival to last token, 99th percentile")              \
	X(queue_wait_mean_s, "s", "arrival to first scheduled, mean")            \
	X(preemptions, "", "total preemptions")                                  \
	X(prefix_hit_rate, "", "share of admitted prompt tokens found in the prefix cache") \
	X(trace_lines_skipped, "", "malformed trace lines skipped (workload.on_error: skip)") \
	X(trace_zero_output, "", "trace requests with 0 output tokens, failed in the trace (workload.zero_output)") \
	X(slo_attainment, "", "of the requests of classes with a target, the fraction finished within every target of their class (NaN: no SLO declared)") \
	X(goodput_rps, "1/s", "requests within every target of their class per second of makespan (NaN: no SLO declared)") \
	X(gpu_util, "", "GPUs' utilisation: work at peak rates / GPU-time held")  \
	X(gpu_busy, "", "share of the GPU-time held with a batch running")      \
	X(mfu, "", "model FLOPs / (GPU-time held x peak FLOP/s)")               \
	X(mbu, "", "bytes moved through HBM / (GPU-time held x peak HBM bandwidth)") \
	X(energy_j, "J", "GPU energy times PUE")                                 \
	X(energy_kwh, "kWh", "energy_j in kilowatt-hours")                       \
	X(cost_usd, "USD", "instance cost")                                      \
	X(carbon_kg, "kg", "CO2 of the facility energy (grid carbon intensity)") \
	X(cost_per_mtok_usd, "USD", "cost per million output tokens of completed requests") \
	X(failures, "", "instance failures")                                     \
	X(node_failures, "", "node failures (each fails the instances on the node)") \
	X(spot_reclaims, "", "spot instances reclaimed by the provider")         \
	X(requeued, "", "requests re-queued after their instance failed")        \
	X(lost_tokens, "", "tokens computed for requests then lost to failures") \
	X(lost_gpu_s, "s", "GPU time of the work lost to failures")              \
	X(control_downtime_s, "s", "time the coordinator was down (leader elections)") \
	X(jobs, "", "training and fine-tuning jobs submitted")                   \
	X(jobs_finished, "", "jobs finished")                                    \
	X(jobs_makespan_s, "s", "first job arrival to last job end")             \
	X(jct_mean_s, "s", "job completion time (finish - arrival), mean")       \
	X(jct_p99_s, "s", "job completion time, 99th percentile")                \
	X(job_queue_mean_s, "s", "time jobs waited for GPUs, mean")              \
	X(job_gpu_util, "", "GPU-time jobs held / the GPU-time not lent to inference") \
	X(job_useful_util, "", "GPU-time of kept job iterations / the same capacity") \
	X(jobs_cost_usd, "USD", "GPU-time jobs held, priced per GPU-hour")       \
	X(jobs_energy_j, "J", "GPUs held by jobs at their tdp, times PUE")       \
	X(job_fragmentation, "", "mean share of free training GPUs the head job could not use") \
	X(sim_events, "", "events processed")

struct lsim_summary {
#define LSIM_X_FIELD(name, unit, help) double name;
	LSIM_SUMMARY_FIELDS(LSIM_X_FIELD)
#undef LSIM_X_FIELD
};

/*
 * The serverless fields (docs/serverless.md), declared once like the
 * summary's: written (CSV rows, /summary attributes, SQLite metrics, the
 * printed summary) only by a run with serverless serving, so that every
 * other run's outputs stay as they were.
 */
#define LSIM_SERVERLESS_FIELDS(X)                                                \
	X(model_loads, "", "cold starts: weights loaded onto an instance's GPUs") \
	X(loads_host, "", "of which from a node's host-DRAM cache")              \
	X(loads_ssd, "", "of which from a node's local SSD")                     \
	X(loads_remote, "", "of which from the remote storage service")          \
	X(load_mean_s, "s", "weights load time (first byte to last GPU), mean")  \
	X(keep_alive_scale_ins, "", "instances scaled in after their keep-alive") \
	X(evictions, "", "idle instances stopped to make room for a scale-out")  \
	X(cache_evictions, "", "checkpoints dropped from a node's host cache or SSD") \
	X(requests_delayed_by_load, "", "requests that waited for an instance of their model to load") \
	X(cold_start_mean_s, "s", "arrival to routed, of the requests delayed by a load, mean") \
	X(cold_start_p50_s, "s", "the same, median")                             \
	X(cold_start_p90_s, "s", "the same, 90th percentile")                    \
	X(cold_start_p99_s, "s", "the same, 99th percentile")                    \
	X(cold_start_max_s, "s", "the same, longest")                            \
	X(gpu_seconds, "s", "GPU-seconds billed: GPUs held x time, placement to release")

struct lsim_serverless_summary {
#define LSIM_X_FIELD(name, unit, help) double name;
	LSIM_SERVERLESS_FIELDS(LSIM_X_FIELD)
#undef LSIM_X_FIELD
};

/*
 * KV offload's fields (instances[].kv_offload: host, docs/memory.md),
 * written as the serverless ones are: only by a run with an instance
 * that offloads, so that every other run's outputs stay as they were.
 */
#define LSIM_KV_OFFLOAD_FIELDS(X)                                                \
	X(kv_offload_bytes, "B", "KV of evicted prefix-cache blocks copied GPU to host") \
	X(kv_reload_bytes, "B", "KV of prefixes found in host memory copied back to the GPU") \
	X(kv_host_hit_tokens, "", "prompt tokens reloaded from host memory, not computed") \
	X(kv_host_hit_rate, "", "kv_host_hit_tokens / prompt tokens admitted")

struct lsim_kv_offload_summary {
#define LSIM_X_FIELD(name, unit, help) double name;
	LSIM_KV_OFFLOAD_FIELDS(LSIM_X_FIELD)
#undef LSIM_X_FIELD
};

/*
 * LoRA's fields (instances[].enable_lora, docs/lora.md), written only by
 * a run with an instance that serves adapters.
 */
#define LSIM_LORA_FIELDS(X)                                                      \
	X(lora_requests, "", "requests that named an adapter")                  \
	X(lora_loads, "", "adapters copied into a GPU slot (all instances)")     \
	X(lora_storage_reads, "", "of those, read from storage (not in the host cache)") \
	X(lora_bytes, "B", "adapter bytes moved to the GPUs (all GPUs, from host or storage)") \
	X(lora_delayed_requests, "", "requests with a step that waited for an adapter copy") \
	X(lora_wait_s, "s", "time steps waited for adapter copies, summed over instances")

struct lsim_lora_summary {
#define LSIM_X_FIELD(name, unit, help) double name;
	LSIM_LORA_FIELDS(LSIM_X_FIELD)
#undef LSIM_X_FIELD
};

/* Provenance and configuration of the run. */
struct lsim_run_info {
	const char *run_id;	 /* stable id of (effective config and seed, data read) */
	const char *scenario;	 /* scenario file path as given */
	const char *config_yaml; /* effective configuration, YAML text */
	const char *version;	 /* LSIM_VERSION */
	uint64_t seed;
	const char *hw_profile;	 /* hardware profile name(s) */
	const char *hw_source;	 /* profile source / provenance */
	const char *perf_model;	 /* "roofline" or "table:<dir>" */
};

struct lsim_recstore;

struct lsim_results {
	struct lsim_run_info info;
	/* The n_reqs request records, in arrival order: in req_store if set
	 * (a simulation's results), else in the array reqs. reqs is also set
	 * with a store while the store holds them in memory; it is NULL when
	 * a long run spilled them to disk. Read them with
	 * lsim_results_read_reqs or lsim_results_each_req. */
	const struct lsim_recstore *req_store;
	const struct lsim_req_record *reqs;
	size_t n_reqs;
	const struct lsim_inst_record *insts;
	size_t n_insts;
	/* The stored time series and their recorded periods in seconds
	 * (output.sample_period, or a power of two times it once a series
	 * passed output.timeseries_rows; docs/output.md). */
	const struct lsim_ts_sample *ts;
	size_t n_ts;
	double ts_period_s, link_ts_period_s, job_ts_period_s;
	const struct lsim_class_record *classes;
	size_t n_classes;
	const struct lsim_tenant_record *tenants;
	size_t n_tenants;
	const struct lsim_job_row *jobs; /* training jobs, if any */
	size_t n_jobs;
	const struct lsim_job_sample *job_ts;
	size_t n_job_ts;
	const struct lsim_job_event_row *job_timeline;
	size_t n_job_timeline;
	const struct lsim_link_record *links; /* none without a cluster */
	size_t n_links;
	const struct lsim_link_sample *link_ts;
	size_t n_link_ts;
	/* Names behind the model and tenant columns of the records (tenants
	 * only when named by workload.tenant_column). */
	const char *const *model_names;
	size_t n_models;
	const char *const *tenant_names;
	size_t n_tenant_names;
	struct lsim_summary summary;
	/* serverless serving's fields, when has_serverless */
	bool has_serverless;
	struct lsim_serverless_summary serverless;
	/* KV offload's fields, when has_kv_offload */
	bool has_kv_offload;
	struct lsim_kv_offload_summary kv_offload;
	/* LoRA's fields, when has_lora */
	bool has_lora;
	struct lsim_lora_summary lora;
	/* the overloaded instance whose waiting queue rose most (-1: none),
	 * and its fitted queue at the start and end of its window (steady.h;
	 * summary.overloaded_instances counts them) */
	int32_t overload_worst;
	double overload_from, overload_to;
	/* Host seconds the simulation took. Not deterministic, so it is kept
	 * out of the HDF5 and CSV files (which must be byte-identical for the
	 * same config and seed); SQLite stores it as runs.wall_s. */
	double wall_s;
};

/* Copies request records first .. first+n-1 of r into buf. */
int lsim_results_read_reqs(const struct lsim_results *r, size_t first,
			   size_t n, struct lsim_req_record *buf);
/* Calls fn on every request record in order, in chunks; stops at the
 * first non-zero return of fn and returns it. */
int lsim_results_each_req(const struct lsim_results *r,
			  int (*fn)(void *ctx, const struct lsim_req_record *q),
			  void *ctx);

/*
 * Computes summary fields from reqs and insts (all except sim_events and
 * trace_lines_skipped, which the caller sets). Uses GSL for percentiles.
 */
int lsim_summary_compute(struct lsim_results *r);

/* Fills o's gpu_util, gpu_busy, mfu and mbu (docs/output.md) from its
 * counters (work_s, busy_s, model_flops, hbm_bytes, start, stop, tp, pp)
 * and its GPUs' peaks: FLOP/s and HBM bytes/s (0: no model, as in service
 * mode: mfu and mbu NaN). */
void lsim_inst_record_rates(struct lsim_inst_record *o, double peak_flops,
			    double peak_bw);
/* Sorts x ascending in place (no NaNs), as gsl_sort does, faster for
 * large n (summary.c). */
void lsim_sort_doubles(double *x, size_t n);

/* Starts the HDF5 library (H5open), before a run: started later, when
 * memory has run short, HDF5 1.10 can fail its own start and then crash
 * in its error stack (a segfault at the report's first call, found with an
 * address-space limit). LSIM_ENOMEM when it cannot start. */
int lsim_report_h5_init(struct lsim_diag *d);

/* Writes the HDF5 report to path.tmp, complete and synced to the disk
 * (on failure it is removed); lsim_report_h5_commit then renames it to
 * path. lsim_report_h5_write does both. */
int lsim_report_h5_stage(const char *path, const struct lsim_results *r,
			 struct lsim_diag *d);
int lsim_report_h5_commit(const char *path, struct lsim_diag *d);
/* Writes the HDF5 report to path (via path.tmp + rename; on failure
 * neither is left). */
int lsim_report_h5_write(const char *path, const struct lsim_results *r,
			 struct lsim_diag *d);

/*
 * Appends the run to a SQLite database (created if missing) with tables
 *   runs(run_id TEXT PRIMARY KEY, scenario, seed, version, hw_profile,
 *        hw_source, perf_model, config_yaml, status, wall_s)
 *   metrics(run_id, name, value, unit)
 * (docs/output.md has the full schema).
 * A run id that already exists is replaced (INSERT OR REPLACE), in one
 * transaction. A database this call created is removed again if it fails.
 */
int lsim_report_sqlite_append(const char *path, const struct lsim_results *r,
			      struct lsim_diag *d);

/* The SQL that creates those two tables if they are missing (a sweep's
 * database holds the same tables). */
const char *lsim_report_sqlite_schema(void);

/* Writes requests.csv, instances.csv, timeseries.csv, summary.csv and the
 * other CSV files in dir; on failure none of them is left there. */
int lsim_report_csv_write(const char *dir, const struct lsim_results *r,
			  struct lsim_diag *d);

/* The same in two steps: lsim_report_csv_stage writes each file as
 * dir/NAME.tmp, synced (on failure none is left); lsim_report_csv_commit
 * renames them into place; lsim_report_csv_unstage removes them. */
int lsim_report_csv_stage(const char *dir, const struct lsim_results *r,
			  struct lsim_diag *d);
int lsim_report_csv_commit(const char *dir, const struct lsim_results *r,
			   struct lsim_diag *d);
void lsim_report_csv_unstage(const char *dir);

/* The name of the ith CSV file a run may write (NULL past the last). */
const char *lsim_report_csv_name(size_t i);


#endif
