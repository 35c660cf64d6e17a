/*
 * sim.h - the context of one run (struct lsim_sim): its requests, its
 * instances (serving/serving.h) and what they share with it, routing,
 * failures, scaling, sampling and results. Private to the core: policies
 * and readers see only the public headers.
 */
#ifndef LLMSIM_SIM_H
#define LLMSIM_SIM_H

#include <gsl/gsl_rng.h>
#include <stdbool.h>
#include <stdint.h>

#include "llmsim/engine.h"
#include "llmsim/policy.h"
#include "report/report.h"
#include "report/tsrec.h"
#include "run/policy_core.h"
#include "run/serverless.h"
#include "serving/serving.h"
#include "workload.h"

/* A QoS class: requests are assigned to classes by share. */
struct lsim_qos_class {
	const char *name;
	double share;
	int64_t priority;
	lsim_time ttft, tpot, e2e; /* targets; 0 = none */
};

struct lsim_sim;
struct lsim_bg_stream;
struct lsim_policy;

/* The most periodic samples a run may take (output.sample_period):
 * beyond it the run stops with an error naming the key (1ns over a
 * second would be 10^9 samples; 5 x 10^7 at 1s is 1.6 years, taken in
 * about 10 s). */
#define LSIM_MAX_SAMPLES 50000000u

/* An instance group (one scenario instances[] entry) as the adaptor
 * scales it. */
struct lsim_group {
	int32_t min, max;
	double capacity_rps;
	lsim_time start_lead;	/* expected scale-out to ready */
	lsim_time provision;	/* machine acquisition before the cold start */
	lsim_time engine_init;
	int64_t scale_outs, scale_ins, refused; /* refused: no room in the cluster */
	int32_t model_idx;	/* the model it serves */
	int32_t gpus;		/* GPUs placed together for one replica */
};

/* How the run adds and removes instances: the scenario knows how to build
 * and place one. */
struct lsim_fleet_ops {
	/* Adds one instance of group g (state provisioning, placed); returns
	 * 0, LSIM_EBUSY when no node has room, or an error in d. */
	int (*spawn)(void *ctx, int32_t g, struct lsim_instance **out,
		     struct lsim_diag *d);
	/* The instance stopped: its GPUs are free again. */
	void (*stopped)(void *ctx, const struct lsim_instance *in);
	/* The node failed: none of its GPUs can be used again. */
	void (*node_failed)(void *ctx, int32_t node);
	void *ctx;
};

/* A traffic class of a named tenant's flows of one kind. */
struct lsim_tenant_class {
	const char *name;
	int32_t kind; /* enum lsim_flow_kind */
	int32_t cls;
};

struct lsim_sim {
	/* What its instances share with it (first: see lsim_sim_of). */
	struct lsim_serving sv;
	uint64_t seed;
	/* Request slots (sv.reqs): a slot is reused once its request ended
	 * and its record went to the store, so memory follows the requests
	 * in flight, not the length of the run. */
	size_t n_reqs, cap_reqs; /* slots used (high-water mark), allocated */
	int32_t *free_slots;
	size_t n_free, cap_free;
	int32_t pending_slot;	 /* the request pulled but not yet arrived, or -1 */
	bool retain_requests;	 /* never reuse slots: reqs[i] is the i-th
				  * arrival after the run (tests, validate) */
	uint64_t n_arrived;	 /* requests pulled from the workload */
	size_t n_done; /* finished, rejected or failed */
	struct lsim_recstore *records; /* one record per request, by seq */
	size_t records_in_memory;      /* before spilling (0: the default) */
	/* The cluster's links (NULL without a cluster section), their mean
	 * utilisation over the last sample period, and its rows */
	double *link_util;
	/* scratch of a sample: the links sampled and their utilisations */
	int32_t *sample_link;
	double *sample_util;
	/* Small messages through the network queues: each request from the
	 * front end (beyond the spine) to its instance's node, and each step's
	 * output tokens back (network.messages). */
	bool messages;
	/* /link_timeseries: its recorder, the rows of the sample being taken,
	 * and the table as written once the run ends */
	struct lsim_tsrec *link_rec;
	struct lsim_link_sample *link_cur;
	size_t cap_link_cur;
	const struct lsim_link_sample *link_ts;
	size_t n_link_ts;
	double link_ts_period_s;
	struct lsim_link_record *link_recs;
	struct lsim_tenant_record *tenant_recs;
	struct lsim_bg_stream **bg; /* background copy streams (owned) */
	size_t n_bg;
	struct lsim_instance **inst; /* each allocated on its own: stable */
	size_t n_inst, cap_inst;
	size_t cap_info;	     /* inst_info, route_map, info_stale entries */
	struct lsim_dp **dp;	     /* data-parallel groups (owned) */
	size_t n_dp;
	struct lsim_group *groups;   /* borrowed; n_groups 0: no scaling */
	size_t n_groups;
	struct lsim_fleet_ops fleet;
	double load_bw;		     /* weights load rate without a cluster, B/s */
	struct lsim_serverless *sl;  /* serverless serving (owned), or NULL */
	/* Failures: instances fail after a time drawn from mtbf (exponential,
	 * or Weibull of shape fail_shape), or at the times of a trace; the
	 * coordinator after coord_mtbf. */
	lsim_time mtbf, coord_mtbf;
	lsim_time gpu_mtbf;	     /* each GPU of an instance fails (the instance with it) */
	bool fail_weibull;
	double fail_shape;
	bool replace_failed;	     /* start a replacement once detected */
	lsim_time node_mtbf;	     /* each node fails (all its instances) */
	int32_t n_nodes;
	lsim_event_id *node_ev;	     /* pending node failures (owned) */
	uint64_t n_node_failures;
	lsim_time spot_mtbr;	     /* spot instances: mean time between reclaims */
	lsim_time spot_warning;	     /* notice before a reclaim: the instance drains */
	uint64_t n_reclaims;
	const lsim_time *trace_fail_t; /* borrowed: failure trace */
	const int32_t *trace_fail_inst;
	size_t n_trace_fail;
	gsl_rng *fail_rng;
	lsim_event_id coord_ev;	     /* the coordinator's next failure */
	lsim_event_id *trace_ev;     /* the trace's failures (owned) */
	bool control_down;	     /* leader election under way */
	lsim_time control_down_since;
	uint64_t n_failures, n_requeued, n_coord_failures;
	double lost_tokens, lost_gpu_s;
	lsim_time control_down_ns;
	struct lsim_policy *router;   /* borrowed; NULL = round robin */
	struct lsim_policy *queue;    /* borrowed; NULL = fcfs */
	struct lsim_policy *profiler; /* borrowed; NULL = none */
	struct lsim_policy *qos;      /* borrowed; NULL = admit all */
	struct lsim_policy *monitor;  /* borrowed; NULL = raw samples */
	struct lsim_policy *adaptor;  /* borrowed; NULL = static */
	struct lsim_policy *synchronizer; /* borrowed; NULL = perfect */
	size_t rr_next;
	size_t n_ready; /* instances in state ready */
	bool disaggregated; /* some instances only prefill or only decode */
	bool has_jobs;	    /* training jobs run beside (or without) serving */
	/* Requests that arrived while no instance of their model was ready
	 * (all still loading): FIFO, routed when one becomes ready. */
	int32_t *held;
	size_t held_head, held_len, held_cap;
	struct lsim_instance_info *inst_info; /* scratch for routers */
	const struct lsim_qos_class *classes; /* borrowed */
	size_t n_classes;
	gsl_rng *class_rng;
	/* Models: instances serve one each; a request goes only to instances
	 * of its model, named by a trace column (a label: a model or an
	 * instance group name) or drawn by share. */
	const char *const *model_names; /* borrowed; n_models >= 1 */
	size_t n_models;
	const char *const *model_labels; /* borrowed: label -> model_label_idx */
	const int32_t *model_label_idx;
	size_t n_model_labels;
	const double *model_shares; /* borrowed, per model, or NULL */
	gsl_rng *model_rng;
	/* workload.lora: each request's adapter (0 .. lora_adapters - 1, or
	 * the base model) drawn from a stream of its own; zipf: lora_cdf */
	int32_t lora_adapters;
	bool lora_zipf;
	double lora_alpha, lora_share;
	double *lora_cdf;
	gsl_rng *lora_rng;
	int64_t lora_requests; /* requests that named an adapter */
	/* workload.lora_column: adapters named by the trace, numbered by
	 * first appearance (owned names; lora_index: an open-addressing hash
	 * of their numbers, -1 empty, lora_index_cap a power of two). A
	 * request naming one may go only to groups with enable_lora:
	 * lora_refused[m] is the first instance group serving model m that
	 * has none (-1: every one has), [n_models] the first of all groups
	 * (a request whose model is not named yet); borrowed. */
	char **lora_names;
	size_t n_lora_names, cap_lora_names;
	int32_t *lora_index;
	size_t lora_index_cap;
	const int32_t *lora_refused;
	int32_t *route_map;	    /* scratch: inst_info entry -> instance */
	size_t *rr_model;	    /* round-robin position per model */
	/* Tenants named by a trace column (workload.tenant_column), by first
	 * appearance; owned. */
	char **tenant_names;
	size_t n_tenant_names;
	/* network.link_classes entries naming a tenant by name: mapped on
	 * the links when the trace first names it (owned; names borrowed) */
	struct lsim_tenant_class *tenant_cls;
	size_t n_tenant_cls;
	struct lsim_workload *workload;
	bool workload_done;
	/* time series */
	lsim_time sample_period;
	uint64_t n_samples; /* taken, at most LSIM_MAX_SAMPLES */
	/* /timeseries: the most rows a stored series keeps (0: no cap;
	 * output.timeseries_rows), its recorder (tsrec.h: run-length encoded
	 * and coarsened to the cap), the rows of the sample being taken, and
	 * the table as written once the run ends */
	uint64_t ts_rows;
	struct lsim_tsrec *ts_rec;
	struct lsim_ts_sample *ts_cur;
	size_t n_ts_cur, cap_ts_cur;
	const struct lsim_ts_sample *ts;
	size_t n_ts;
	double ts_period_s;
	/* What a request with 0 output tokens (failed in its trace) becomes. */
	enum { LSIM_ZERO_ONE, LSIM_ZERO_SKIP, LSIM_ZERO_FAIL } zero_output;
	uint64_t zero_output_seen; /* such requests read from the workload */
	/* Trace requests longer than every instance of their model accepts
	 * (max_model_len): an error naming the line, or skipped and counted
	 * with skip_bad_lines (workload.on_error: skip). */
	bool skip_bad_lines;
	uint64_t context_skipped;
	int64_t *ctx_by_model; /* longest prompt+output per model (0: no limit) */
	int64_t ctx_any;       /* ... of any instance */
	/* Called at every sample after the instances (training jobs' pool). */
	void (*sample_hook)(void *ctx, lsim_time now);
	void *sample_hook_ctx;
	/* Invariant checks (invariants.c): the last time checked, scratch
	 * marks per request slot and KV sums per instance, and a further
	 * check of the training jobs (0, or LSIM_ESTATE with why filled). */
	lsim_time inv_last;
	uint32_t *inv_mark;
	size_t inv_cap_mark;
	uint32_t inv_epoch;
	int64_t *inv_kv;
	size_t inv_cap_kv;
	int (*check_hook)(void *ctx, char *why, size_t n);
	void *check_hook_ctx;
	/* Called every 2^16 events (the CLI reports progress from it). */
	void (*progress)(void *ctx, const struct lsim_sim *s, lsim_time now);
	void *progress_ctx;
	lsim_time run_limit; /* lsim_sim_run's limit (0: none) */
};

/* Checks the simulation's invariants (invariants.c): 0, or LSIM_ESTATE
 * with the broken one described in d. */
int lsim_sim_check(struct lsim_sim *s, struct lsim_diag *d);

/* What policies may see of request req. */
void lsim_sim_request_info(const struct lsim_sim *s, int32_t req,
			   struct lsim_request_info *out);


/* ---- the run ---- */

/* The run an instance belongs to (its serving context is the run's first
 * member). */
static inline struct lsim_sim *lsim_sim_of(const struct lsim_instance *in)
{
	return (struct lsim_sim *)in->sv->owner;
}

int lsim_sim_init(struct lsim_sim *s, uint64_t seed, struct lsim_diag *d);
void lsim_sim_release(struct lsim_sim *s);
/* Adds a zeroed instance; returns it (its address never changes). */
struct lsim_instance *lsim_sim_add_instance(struct lsim_sim *s);
/* Frees the instance added last, whose init failed (it holds nothing). */
void lsim_sim_drop_instance(struct lsim_sim *s);

/*
 * Makes ranks[0 .. n-1] (instances already added) one data-parallel
 * group of the run (lsim_dp_create), stepping in lockstep when lockstep
 * is set; NULL on ENOMEM. The
 * group's balancer then picks among them the rank of each request routed
 * to any of them.
 */
struct lsim_dp *lsim_sim_add_dp(struct lsim_sim *s, struct lsim_instance **ranks,
				int32_t n, bool lockstep);
/* Runs the workload (ownership passes) to completion or until limit. */
int lsim_sim_run(struct lsim_sim *s, struct lsim_workload *w,
		 lsim_time limit, struct lsim_diag *d);
/* Called by instances when a request ends. */
void lsim_sim_request_done(struct lsim_sim *s, int32_t req);
/* Request req finished its prefill on instance from (a prefill instance):
 * it goes to a decode instance of its model, its KV following. */
void lsim_sim_handoff(struct lsim_sim *s, struct lsim_instance *from,
		      int32_t req);
/* Streams the tokens of one step back to the front end: a message of
 * tokens * LSIM_TOKEN_MSG_BYTES from the instance's node (if messages). */
void lsim_sim_stream_tokens(struct lsim_sim *s, const struct lsim_instance *in,
			    int32_t tokens);
#define LSIM_TOKEN_MSG_BYTES 64.0  /* one server-sent event of one token */
#define LSIM_REQUEST_MSG_BYTES 1024.0 /* headers; plus 4 bytes a prompt token */

/* The instance is ready from now: it takes requests, held ones first. */
void lsim_sim_instance_ready(struct lsim_sim *s, struct lsim_instance *in);

/* ---- lifecycle and links (lifecycle.c) ---- */


/* Background copies between host and a GPU (other tenants' traffic, or
 * a contention experiment): `streams` streams each copy `block` bytes
 * `count` times, one after another, waiting `gap` plus block/staging_bw
 * (host-side staging; 0: none) between copies. */
struct lsim_bg_cfg {
	int32_t gpu;	      /* in the topology */
	bool to_host;	      /* d2h; else h2d */
	double block;	      /* bytes */
	int64_t count;	      /* copies per stream */
	int64_t streams;
	lsim_time gap;
	double staging_bw;    /* B/s; 0: no staging time */
	lsim_time start;
	int32_t cls;	      /* traffic class of the copies (0: by kind) */
};
int lsim_sim_add_background(struct lsim_sim *s, const struct lsim_bg_cfg *c,
			    struct lsim_diag *d);

/* Scale-out: the instance (just built, placed) is provisioned for
 * provision, then starts cold (over the links with a cluster, else
 * loading its weights at sim->load_bw), then engine_init. */
int lsim_instance_provision(struct lsim_instance *in, lsim_time provision,
			    lsim_time engine_init, struct lsim_diag *d);
/* Failure injection: schedules the instance's next failure (mtbf), the
 * trace's failures and the coordinator's; called at the start of the run
 * and for each new instance. */
void lsim_sim_arm_failures(struct lsim_sim *s, struct lsim_instance *in);
void lsim_sim_arm_run_failures(struct lsim_sim *s);
/* A request caught on a failed instance: re-queued (routed again from
 * scratch) or failed, as the synchronizer says; lost work counted. */
void lsim_sim_requeue(struct lsim_sim *s, struct lsim_instance *failed,
		      int32_t req);
/* Routes a request again (after a failure, or once the control plane is
 * back). */
void lsim_sim_dispatch(struct lsim_sim *s, int32_t req);
/* inst_info and route_map hold an entry per instance (after an add). */
int lsim_sim_grow_arrays(struct lsim_sim *s);


/* The kept view agrees with every instance not listed as stale; else
 * writes why. */
int lsim_sim_check_view(const struct lsim_sim *s, char *why, size_t n);
/* Every request has ended: failures still to come are dropped, so that
 * they do not keep the run going. */
void lsim_sim_disarm_failures(struct lsim_sim *s);
/* Releases the requests held while the control plane was down. */
void lsim_sim_release_held(struct lsim_sim *s);

/* A policy returned what its contract rules out: the run stops with
 * LSIM_EPLUGIN and "POLICY returned WHAT" under the policy's scenario key
 * (a plugin's bug must neither crash the run nor skew its results). The
 * first error of a run stands. Returns LSIM_EPLUGIN. */
int lsim_sim_policy_error(struct lsim_sim *s, const struct lsim_policy *p,
			  const char *what, ...) __attribute__((format(printf, 3, 4)));

/* Scale-in: no new requests; it stops once it has none left. */
void lsim_sim_drain(struct lsim_sim *s, struct lsim_instance *in);
/* A draining instance went idle: stop it if it holds no request. */
void lsim_sim_instance_idle(struct lsim_sim *s, struct lsim_instance *in);

/* Builds the cluster's links (before instances are added). */
int lsim_sim_set_network(struct lsim_sim *s, const struct lsim_topo_params *p,
			 struct lsim_diag *d);
/*
 * Starts the instance cold: its tp GPUs (from gpu0) each load their share
 * of the weights from storage as flows over the links; engine_init after
 * the last one it becomes ready.
 */
int lsim_instance_cold_start(struct lsim_instance *in, lsim_time engine_init,
			     struct lsim_diag *d);
/* Energy and carbon of instance in from its energy_t to now at its GPUs'
 * utilisation over that interval (run.c; busy: its busy_ns now, for
 * service mode); returns that utilisation. */
double lsim_sim_account_energy(struct lsim_instance *in, lsim_time now, lsim_time busy);
/* The record of request q as it stands (results.c). */
void lsim_sim_to_record(const struct lsim_sim *s, const struct lsim_req *q,
			struct lsim_req_record *o);
/*
 * Fills r with records owned by s (the request store, ts) or allocated
 * for the caller (*insts_out, *classes_out: free them, also when it
 * fails) and computes the summary. Requests still in flight are recorded
 * as unfinished.
 */
int lsim_sim_results(struct lsim_sim *s, struct lsim_results *r,
		     struct lsim_inst_record **insts_out,
		     struct lsim_class_record **classes_out);

#endif
