/*
 * scenario_internal.h - what the pieces of the scenario share (scenario.c,
 * scenario_cluster.c, scenario_instances.c, scenario_workload.c,
 * scenario_jobs.c, scenario_runid.c; nothing else includes it): the
 * configuration of each section as bound from its key table, the
 * scenario itself, and the functions one piece calls in another.
 */
#ifndef LLMSIM_SCENARIO_INTERNAL_H
#define LLMSIM_SCENARIO_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jobs/jobs.h"
#include "kernel/rng.h"
#include "run/scenario.h"
#include "run/sim.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the sections, as their key tables in scenario.c bind them ---- */

struct top_cfg {
	const char *name;
	int64_t seed;
	lsim_time duration;
	const char *data_dir;
	bool macro_steps;
};

struct node_cfg {
	const char *name;
	const char *gpu;
	int64_t count;
	int64_t gpus_per_node;
	double host_cache, ssd_bw, ssd_capacity; /* serverless tiers */
	lsim_time ssd_latency;
	bool ssd_preload;
};

struct inst_cfg {
	const char *name;
	const char *model;
	const char *gpu;
	const char *gpu_from; /* gpu: cheapest among these ('|'-separated; empty: all) */
	int64_t tp;
	int64_t replicas;
	int64_t dp;	 /* data_parallel_size: ranks per replica */
	bool ep;	 /* enable_expert_parallel */
	int perf;
	const char *perf_table;
	bool perf_table_other_gpu; /* a what-if: tables of another GPU than gpu */
	lsim_time cpu_overhead;
	struct lsim_engine_cfg eng;
	lsim_time service_time;
	int service_dist;
	int64_t min_kv_tokens;
	bool cold_start;
	lsim_time engine_init;
	double swap_space; /* per GPU */
	double kv_offload_space; /* per GPU */
	int role;
	int64_t min_replicas, max_replicas; /* -1: replicas */
	const char *price; /* an offer of the price file, or "" */
	bool spot;
	int64_t on_demand_base; /* spot: replicas kept on demand */
	double on_demand_percent; /* spot: of those above the base */
	lsim_time provision_time;
	double capacity_rps;
	bool serverless;      /* scales to and from zero (docs/serverless.md) */
	lsim_time keep_alive;
	/* GPU sharing (scenario_share.c, docs/sharing.md) */
	const char *mig;	/* a MIG profile of its GPU kind, or "" */
	int share;		/* 0 none, LSIM_SHARE_MPS, LSIM_SHARE_TIME_SLICE */
	const char *gpu_group;	/* co-located groups name the same one */
	double gpu_fraction;	/* MPS: its share of the SMs */
	lsim_time time_slice, switch_cost; /* time slicing */
	/* the whole GPU's FLOP/s, bandwidth and memory, before its MIG slice
	 * or MPS share (the members' work is counted at its peak rates) */
	double whole_flops, whole_bw, whole_bytes;
	int mig_compute, mig_memory; /* its MIG profile's slices (mig set) */
};

/* The instance keys of GPU sharing, the last of the table (the effective
 * config shows them only for a group that uses them). */
#define LSIM_SCN_SHARE_KEYS 6
static inline bool lsim_scn_shared(const struct inst_cfg *ic)
{
	return ic->mig[0] || ic->share || ic->gpu_group[0];
}

/* GPUs one instance (a replica, or one data-parallel rank of one)
 * occupies: tp per pipeline stage. */
static inline int64_t lsim_scn_replica_gpus(const struct inst_cfg *ic)
{
	return ic->tp * (ic->eng.pp > 1 ? ic->eng.pp : 1);
}

/* GPUs placed together for one replica: its data-parallel ranks' side by
 * side in one node (pp is 1 with data parallelism). */
static inline int64_t lsim_scn_placed_gpus(const struct inst_cfg *ic)
{
	return lsim_scn_replica_gpus(ic) * ic->dp;
}

static inline int64_t lsim_scn_max_replicas(const struct inst_cfg *ic)
{
	return ic->max_replicas >= 0 ? ic->max_replicas : ic->replicas;
}

static inline int64_t lsim_scn_min_replicas(const struct inst_cfg *ic)
{
	return ic->min_replicas >= 0 ? ic->min_replicas : ic->replicas;
}

enum { PERF_ROOFLINE, PERF_TABLE, PERF_SERVICE };

/* workload.models: requests assigned to models by share. */
struct model_share {
	const char *name;
	double share;
};

struct wl_cfg {
	int kind;
	int arrival;
	double rate, cv;
	double rate_on, rate_off, amplitude, spike_factor;
	lsim_time mean_on, mean_off, period, spike_every, spike_length;
	lsim_time window_start, window_end;
	const char *lengths_from;
	double time_scale, keep, rate_scale;
	int64_t repeat;
	int on_error;
	int zero_output;
	int64_t count;
	lsim_time duration;
	const char *path;
	int time_format;
	const char *arrival_column, *prompt_column, *output_column, *class_column;
	const char *model_column, *tenant_column, *lora_column;
	bool jsonl_mapped; /* kind jsonl with arrival/prompt/output keys given */
};
enum { WL_GENERATOR, WL_CSV, WL_JSONL, WL_AUTO };

/* workload.lora: the requests' LoRA adapters (docs/lora.md) */
struct lora_wl_cfg {
	int64_t adapters, rank;
	int popularity; /* 0 uniform, 1 zipf */
	double alpha, share;
};

struct len_cfg {
	int dist;
	double value, low, high, mean, stddev, exponent;
	int64_t min, max;
};

struct power_cfg {
	double pue, alpha, carbon_intensity;
	const char *carbon_trace;
	lsim_time carbon_period;
	const char *prices;
};

/* network: the links of the cluster (sim/cluster/links.h); 0 bandwidths take the
 * GPU profile's pcie_bw / nvlink_bw. */
struct net_cfg {
	int64_t gpus_per_switch, nodes_per_tor;
	double pcie_bw, host_bw, nvlink_bw, nic_bw, oversubscription, spine_bw,
		storage_bw;
	lsim_time pcie_latency, host_latency, nvlink_latency, nic_latency,
		tor_latency, spine_latency, storage_latency;
	lsim_time util_window;
	bool messages;
	bool allreduce_on_links;
};

/* jobs: training and fine-tuning jobs on the cluster's GPUs (sim/jobs/jobs.h). */
struct job_cfg {
	int source;
	const char *path;
	const char *scheduler, *allocator;
	int64_t count;
	double load, mean_gpus;
	lsim_time ckpt_interval, gpu_mtbf;
	double efficiency, storage_bw;
	const char *cluster_name, *quotas;
	int traffic;
};
enum { JOBS_CSV, JOBS_ALIBABA, JOBS_PHILLY, JOBS_STATS };

/* failures: instances and the coordinator fail. */
struct fail_cfg {
	lsim_time mtbf, coordinator_mtbf;
	int distribution;
	double shape;
	const char *trace;
	bool replace;
	lsim_time spot_mtbr, spot_warning, node_mtbf, gpu_mtbf;
};

/* background: host <-> GPU copy streams sharing the links. */
struct bg_cfg {
	int64_t gpu;
	int direction;
	double block;
	int64_t count, streams;
	lsim_time gap, start;
	double staging_bw;
	int priority; /* traffic class (docs/links.md, "Traffic classes") */
	double weight, rate, burst;
};

/* network.link_classes[]: the traffic class of a kind of flow. */
struct lc_cfg {
	int kind; /* enum lsim_flow_kind */
	int priority;
	double weight, rate, burst;
	const char *tenant; /* "": every tenant */
};

struct output_cfg {
	lsim_time sample_period;
	int64_t records_in_memory;
	int64_t timeseries_rows;
};

/* ---- the scenario ---- */

struct lsim_scenario {
	struct lsim_doc *doc;
	char *dir; /* folder of the scenario file */
	struct top_cfg top;
	struct node_cfg *nodes;
	size_t n_nodes;
	struct inst_cfg *insts;
	size_t n_insts;
	struct lsim_qos_class *classes;
	size_t n_classes;
	struct lsim_policy *policies[LSIM_ROLE_COUNT];
	int32_t *placement; /* node of each replica's stages, in instance order
			     * (with a cluster): pp entries per replica */
	struct wl_cfg wl;
	struct lora_wl_cfg lora_wl;
	struct len_cfg len[2];
	int32_t *len_values[2];
	const char **traces; /* workload.traces: paths as written (tenants) */
	struct model_share *model_shares; /* workload.models */
	size_t n_model_shares;
	/* distinct models of the instance groups, and the labels naming them
	 * (model names, then group names) */
	const char **model_names;
	size_t n_models;
	const char **model_labels;
	int32_t *model_label_idx;
	size_t n_model_labels;
	double *model_share_by_idx; /* share of each model, or NULL */
	int32_t *group_model;	    /* model index of each instance group */
	int32_t *lora_refused;	    /* per model + 1: sim.lora_refused */
	size_t n_traces;
	int32_t *pairs; /* workload.lengths_from: prompt, output, prompt, ... */
	size_t n_pairs;
	size_t n_len_values[2];
	struct power_cfg power;
	struct output_cfg output;
	struct net_cfg net;
	struct bg_cfg *bg;
	struct lc_cfg *lc;
	size_t n_lc;
	size_t n_bg;
	struct fail_cfg fail;
	/* jobs */
	bool have_jobs;
	struct job_cfg jobs;
	struct lsim_job_list job_list;
	struct lsim_pool_spec pool;
	struct lsim_gpu_profile *pool_profiles; /* per pool type */
	const struct lsim_gpu_profile **pool_profile_ptrs;
	struct lsim_jobs *js;
	struct lsim_job_row *job_rows;
	/* /job_timeseries: run-length encoded and coarsened to its cap, as
	 * /timeseries (report/tsrec.h), made at the first sample */
	struct lsim_tsrec *job_rec;
	double job_frag_sum; /* of fragmented / free, over every sample with free GPUs */
	int64_t job_frag_n;
	struct lsim_job_event_row *job_events;
	struct lsim_prices *prices;
	const struct lsim_instance_price **offers; /* per instances[] entry, or NULL */
	struct lsim_carbon_series *carbon;
	lsim_time *fail_t; /* failures.trace */
	int32_t *fail_inst;
	size_t n_fail;
	int32_t *placement_gpu; /* first local GPU of each stage on its node */
	int32_t gpus_per_node_max;
	/* the nodes after the initial placement, and as the run changes them */
	struct lsim_node_info *nodes_init, *rt_nodes;
	uint64_t *used_init, *rt_used; /* per node: local GPUs taken (bit i) */
	size_t n_rt_nodes;
	struct lsim_group *groups; /* per instances[] entry, for the adaptor */
	/* loaded data, parallel to insts */
	struct lsim_gpu_profile *gpus;
	char (*gpu_choice)[64]; /* per group: the kind gpu: cheapest chose */
	/* gpu: cheapest, as the scenario loads: the hardware profile of each
	 * kind in the price file, read once for all the groups that choose
	 * (1 read, -1 unreadable, 0 not yet) */
	struct lsim_gpu_profile *cheap_profiles; /* per prices->items entry */
	signed char *cheap_state;
	struct lsim_model_arch *models;
	char **table_dirs;
	/* per group, during a run: the perf models its replicas share (one
	 * holder each here; NULL until its first replica): its time model and,
	 * with a table, the roofline its work comes from */
	struct lsim_share *shares; /* GPU sharing: one per gpu_group of MPS or
				    * time slicing, for the run */
	size_t n_shares;
	struct group_perf {
		struct lsim_perf *time, *work;
	} *group_perf;
	struct lsim_buf effective;
	char run_id[17];
	char hw_names[256];
	char hw_sources[1024];
	char perf_desc[512];
	/* results of the last run */
	struct lsim_sim sim;
	bool sim_live;
	int runs;
	bool hit_limit;	   /* it stopped at duration, events still queued */
	int64_t serving;   /* instances neither stopped nor failed at its end */
	double jobs_unfinished; /* training jobs queued or running at its end */
	struct lsim_results res;
	struct lsim_inst_record *rec_insts;
	struct lsim_class_record *rec_classes;
};

/* What reopening the trace needs (shaping's repeat). */
struct trace_ctx {
	const struct lsim_scenario *sc;
	char *path;
};

struct run_rngs {
	gsl_rng *arrivals, *lengths;
	gsl_rng *shaping[64]; /* one per superposed copy */
	struct trace_ctx trace;
};

/* ---- scenario.c: the key tables, binding, the configuration ---- */

/* The key tables a piece binds itself (the others are scenario.c's). */
extern const struct lsim_keydef lsim_scn_model_share_keys[];
extern const size_t lsim_scn_n_model_share_keys;
extern const struct lsim_keydef lsim_scn_job_keys[];
extern const size_t lsim_scn_n_job_keys;

/* path relative to the scenario's folder (absolute ones as they are; ""
 * for NULL or empty); the caller frees it, NULL when out of memory */
char *lsim_scn_resolve(const struct lsim_scenario *sc, const char *p);
int lsim_scn_bind_list_in(struct lsim_scenario *sc, const struct lsim_node *parent,
			  const char *key, const char *path_name,
			  const struct lsim_keydef *keys, size_t nkeys, void **out,
			  size_t *n_out, size_t elem, bool required,
			  struct lsim_diag *d);
int lsim_scn_bind_section(struct lsim_scenario *sc, const struct lsim_node *parent,
			  const char *key, const char *path,
			  const struct lsim_keydef *keys, size_t nkeys,
			  const char *const *also, void *obj, struct lsim_diag *d);
void lsim_scn_dump_config(const struct lsim_scenario *sc, struct lsim_buf *b, bool for_id);

/* ---- scenario_runid.c ---- */

int lsim_scn_compute_run_id(struct lsim_scenario *sc, struct lsim_diag *d);

/* ---- scenario_cluster.c ---- */

int lsim_scn_place(struct lsim_scenario *sc, struct lsim_diag *d);
int lsim_scn_build_network(struct lsim_scenario *sc, struct lsim_diag *d);
int lsim_scn_setup_fleet(struct lsim_scenario *sc);
/* Serverless serving (scenario_serverless.c): its keys checked (after
 * instances and cluster are bound), and attached to the run (after the
 * instances are built). */
int lsim_scn_check_serverless(struct lsim_scenario *sc, struct lsim_node *root,
			      struct lsim_diag *d);
int lsim_scn_setup_serverless(struct lsim_scenario *sc, struct lsim_diag *d);
/* The serverless keys of cluster[] (those of instances[] are listed where
 * the instances are echoed, in scenario.c), left out of the
 * effective configuration (and so of the run id) at their defaults, so a
 * configuration that does not use them keeps the run id it had before they
 * existed (NULL-terminated). */
extern const char *const lsim_scn_serverless_node_keys[];
/* Whether the scenario has a serverless group or a weight tier (its echo
 * then names every serverless key, defaults included). */
bool lsim_scn_uses_serverless(const struct lsim_scenario *sc);

/* ---- scenario_instances.c ---- */

/* The file of hardware profile NAME as the scenario names it: a path
 * (lsim_data_is_path) relative to the scenario's folder, else
 * data_dir/profiles/NAME.yaml, else found on the data search path. */
int lsim_scn_profile_path(const struct lsim_scenario *sc, const char *name, char *out,
			  size_t size);
/* Loads hardware profile NAME, found as lsim_scn_profile_path says. */
int lsim_scn_load_profile(const struct lsim_scenario *sc, const char *name,
			  struct lsim_gpu_profile *g, struct lsim_diag *d);
/* Loads model NAME: a catalogue file of one model relative to the
 * scenario's folder, else from data_dir/models.yaml, else from the
 * catalogues of the data search path. */
int lsim_scn_load_model(const struct lsim_scenario *sc, const char *name,
			struct lsim_model_arch *m, struct lsim_diag *d);
/* A data file (mig.yaml, ...) from data_dir, else the data search path. */
int lsim_scn_data_file(const struct lsim_scenario *sc, const char *rel, char *out,
		       size_t size);
int lsim_scn_load_hw(struct lsim_scenario *sc, struct lsim_diag *d);
int lsim_scn_check_dp(struct lsim_scenario *sc, struct lsim_node *root, size_t i,
		      struct lsim_diag *d);
/* At most one pipeline stage per decoder layer; and without a cluster
 * section a replica's GPUs are one node's (its collectives and stage
 * sends on that node's fabric): at most LSIM_SCN_NODE_GPUS, the
 * cluster's default gpus_per_node. */
#define LSIM_SCN_NODE_GPUS 8
#define LSIM_SCN_NODE_GPUS_STR "8" /* its default in the key table */
int lsim_scn_check_node(struct lsim_scenario *sc, struct lsim_node *root, size_t i,
			struct lsim_diag *d);
int lsim_scn_check_cpu_offload(struct lsim_scenario *sc, struct lsim_node *root, size_t i,
			       struct lsim_diag *d);
int lsim_scn_check_lora(struct lsim_scenario *sc, struct lsim_node *root, size_t i,
			struct lsim_diag *d);
int lsim_scn_check_chunked_prefill(const struct lsim_scenario *sc, struct lsim_diag *d);
int lsim_scn_check_memory(struct lsim_scenario *sc, struct lsim_diag *d);
int lsim_scn_load_costs(struct lsim_scenario *sc, struct lsim_diag *d);
int lsim_scn_make_instance(struct lsim_scenario *sc, size_t i, const int32_t *node,
			   const int32_t *gpu_local, struct lsim_instance **out,
			   struct lsim_diag *d);
int lsim_scn_build_instances(struct lsim_scenario *sc, struct lsim_diag *d);

/* ---- scenario_share.c ---- */

int lsim_scn_check_share(struct lsim_scenario *sc, struct lsim_diag *d);
int lsim_scn_attach_shares(struct lsim_scenario *sc, struct lsim_diag *d);
/* The first group on group i's GPU when i shares one with an earlier
 * group (a later member of a gpu_group: placed on that group's GPU), or
 * -1. */
int32_t lsim_scn_share_host(const struct lsim_scenario *sc, size_t i);

/* ---- scenario_workload.c ---- */

int lsim_scn_check_jsonl_mapping(struct lsim_scenario *sc, struct lsim_diag *d);
int lsim_scn_bind_traces(struct lsim_scenario *sc, struct lsim_diag *d);
int lsim_scn_build_models(struct lsim_scenario *sc, struct lsim_diag *d);
int lsim_scn_load_pairs(struct lsim_scenario *sc, struct lsim_diag *d);
int lsim_scn_load_failure_trace(struct lsim_scenario *sc, struct lsim_diag *d);
int lsim_scn_open_workload(struct lsim_scenario *sc, struct run_rngs *rngs,
			   struct lsim_workload **w, struct lsim_diag *d);
/* check: every line of the request trace (none for a generator) through
 * the run's reader, as the run reads them (format errors, on_error), in
 * one streaming pass; nothing is simulated. */
int lsim_scn_read_trace(struct lsim_scenario *sc, struct lsim_diag *d);

/* ---- scenario_jobs.c ---- */

int lsim_scn_load_jobs(struct lsim_scenario *sc, struct lsim_diag *d);
int lsim_scn_start_jobs(struct lsim_scenario *sc, struct lsim_diag *d);
int lsim_scn_check_jobs(void *ctx, char *why, size_t n);
void lsim_scn_sample_jobs(void *ctx, lsim_time now);
int lsim_scn_job_results(struct lsim_scenario *sc);

#endif
