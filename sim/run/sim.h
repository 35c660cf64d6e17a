/*
 * sim.h - the context of one run (struct lsim_sim) and the serving
 * instance model that lives in it. Private to the core: policies and
 * readers see only the public headers.
 */
#ifndef LLMSIM_SIM_H
#define LLMSIM_SIM_H

#include <gsl/gsl_rng.h>
#include <stdbool.h>
#include <stdint.h>

#include "cluster/hw.h"
#include "serving/kvcache.h"
#include "cluster/collective.h"
#include "cluster/cost.h"
#include "cluster/links.h"
#include "llmsim/engine.h"
#include "llmsim/policy.h"
#include "serving/perf.h"
#include "run/policy_core.h"
#include "report/report.h"
#include "workload.h"

/* Engine settings of one instance (vLLM names). */
struct lsim_engine_cfg {
	int64_t max_num_seqs;
	int64_t max_num_batched_tokens;
	int64_t block_size;
	int64_t num_gpu_blocks; /* 0: derive from memory */
	double gpu_memory_utilization;
	int64_t max_model_len; /* 0: the model's max_context */
	bool enable_prefix_caching;
	bool enable_chunked_prefill;
	int preemption_mode; /* enum lsim_preemption */
	double swap_space;   /* host bytes for swapped KV, per instance */
	int first_token;     /* role prefill: enum lsim_first_token */
	int64_t pp;	     /* pipeline stages (0 or 1: none) */
	int kv_reserve;	     /* enum lsim_kv_reserve */
	int32_t experts_per_rank; /* MoE under expert parallelism: whole experts
				   * a rank holds (0: all, sharded over tp) */
};

/* Admission's KV check: blocks for what a request needs now (vLLM), or
 * also for its predicted output, counting what running requests have
 * reserved and not yet filled. */
enum lsim_kv_reserve { LSIM_KV_RESERVE_NONE, LSIM_KV_RESERVE_PREDICTED };

/* Disaggregation: where the client's first token comes from. From the
 * prefill instance as soon as it is computed (Splitwise), or from the
 * decode instance once the KV has arrived there (vLLM's and llm-d's
 * disaggregated serving, where the front end streams only from decode). */
enum lsim_first_token { LSIM_FIRST_TOKEN_PREFILL, LSIM_FIRST_TOKEN_DECODE };

/* What a preempted request loses: its KV is dropped and recomputed, or
 * moved to host memory over PCIe and back (needs the cluster's links). */
enum lsim_preemption { LSIM_PREEMPT_RECOMPUTE, LSIM_PREEMPT_SWAP };

/* Service-time mode (queueing validation): each request holds one of
 * max_num_seqs servers for a drawn time; no batching, no KV. */
enum lsim_service_dist { LSIM_SVC_EXPONENTIAL, LSIM_SVC_DETERMINISTIC };

struct lsim_service_cfg {
	int dist; /* enum lsim_service_dist */
	lsim_time mean;
};

/* Internal state of one request. Indices, never pointers: the array grows. */
struct lsim_req {
	/* What each step reads and writes, in the first cache line (the
	 * array is 64-byte aligned and the struct a multiple of 64 bytes):
	 * a step touches one line per request instead of three. */
	_Alignas(64) int32_t sched_tokens; /* tokens scheduled in the current step (pipelined: in all batches in flight) */
	int32_t prompt, output;
	int32_t generated; /* output tokens produced so far */
	int32_t computed;  /* tokens whose KV is in the cache */
	int32_t hashed;	   /* leading blocks registered in the prefix cache */
	int32_t nblocks;   /* KV blocks held, n_listed of them in blocks[] */
	int32_t predicted;    /* profiler's output prediction (-1: none) */
	int32_t status;
	int32_t n_hashes;
	/* what it used (the profiler's targets): its share of each step's
	 * tokens times the step time, the largest such share, the most KV */
	double gpu_ns;
	double max_share;
	double max_kv_bytes;
	/* the rest */
	int32_t *blocks;
	lsim_time first_token;
	uint64_t id;
	uint64_t *hashes;      /* trace prefix-block ids (owned), or NULL */
	int32_t hash_block_tokens;
	int32_t cap_blocks;
	int32_t n_listed;
	uint64_t seq; /* arrival order: the index of its record */
	bool live;    /* the slot holds a request that has not ended */
	lsim_time arrival, first_sched, finish;
	int32_t instance;
	int32_t preemptions;
	int32_t qos_class;
	int32_t priority;
	lsim_time deadline;
	int32_t reject_reason; /* enum lsim_reject_reason */
	int32_t tenant;	       /* source trace of a merged workload */
	int32_t trace_class;   /* class named by the trace's class column, or -1 */
	int32_t model;	       /* index in model_names: the instances that may serve it */
	/* swap: KV bytes on the host, and transfers of it still moving */
	double swapped_bytes;
	int32_t swap_flows;
	bool swapped;	       /* its KV is elsewhere (computed tokens kept): on
				* the host, or on kv_src (disaggregation) */
	struct lsim_instance *kv_src; /* prefill instance holding its KV, or NULL */
	int32_t *src_blocks;	      /* its KV blocks there (owned) */
	int32_t src_nblocks;
	int32_t prefill_instance;     /* id of the instance that ran its prefill
				       * when another decodes it, else -1 */
	int32_t attempts;	      /* failures it was caught in */
	bool kv_published;	      /* a cache may hold content only it
				       * can find (its KV released before
				       * it was done): its lookups look */
};

/* A QoS class: requests are assigned to classes by share. */
struct lsim_qos_class {
	const char *name;
	double share;
	int64_t priority;
	lsim_time ttft, tpot, e2e; /* targets; 0 = none */
};

struct lsim_sim;
struct lsim_bg_stream;
struct lsim_wait_entry;
struct lsim_policy;

/* Prefill/decode disaggregation: a prefill instance hands each request
 * over after its first token; its KV moves to a decode instance over the
 * links (NVLink within a node, the network between nodes). */
enum lsim_inst_role { LSIM_ROLE_BOTH, LSIM_ROLE_PREFILL, LSIM_ROLE_DECODE };

/* Lifecycle of an instance. Only ready instances take requests; an
 * instance costs money from provisioning to stopped. */
enum lsim_inst_state {
	LSIM_INST_PROVISIONING, /* the machine is being acquired */
	LSIM_INST_LOADING,	/* weights moving in, then engine start-up */
	LSIM_INST_READY,
	LSIM_INST_DRAINING,	/* no new requests; in-flight ones finish */
	LSIM_INST_STOPPED,
};

/* A batch in flight through the pipeline stages (instance.c). */
struct lsim_pp_batch {
	int32_t *reqs; /* its requests */
	int32_t *toks; /* each one's tokens in it (their sched_tokens: in all batches in flight) */
	struct lsim_iter_work work; /* what it does; s at peak rates in ns */
	size_t n;
	uint64_t seq;	/* formed as the seq-th batch */
	int32_t stage;	/* the stage it is at (or arriving at, waiting) */
	bool waiting;	/* arrived at `stage`, not yet computing there */
	int32_t flows;	/* its all-reduce or send flows still moving */
	lsim_time send_lat; /* NCCL's send/recv latency after its send flows */
	lsim_time *stage_ns; /* each stage's compute for it (pp entries) */
	lsim_time start;
	int64_t tokens;
};

/* The most steps a macro step plans at once (instance.c). */
#define LSIM_RUN_STEPS 32
/* The most periodic samples a run may take (output.sample_period):
 * beyond it the run stops with an error naming the key (1ns over a
 * second would be 10^9 samples; 5 x 10^7 at 1s is 1.6 years, taken in
 * about 10 s). */
#define LSIM_MAX_SAMPLES 50000000u

struct lsim_instance {
	int32_t id;
	/* What routing reads of every instance (run.c's describe), side by
	 * side: two cache lines, not seven. */
	bool service_mode;
	bool info_stale; /* listed in sim->info_stale (below) */
	int32_t busy_servers; /* service mode */
	int32_t m_slot, m_kvp; /* macro steps (below) */
	lsim_time m_next;
	int64_t outstanding; /* submitted and not finished */
	size_t wait_len, run_len;
	int64_t queued_tokens; /* prompt tokens of waiting requests */
	/* routed to it and still on the way (run.c: a network message or a
	 * dispatch delay), with their work in tokens: routers count them */
	int64_t in_transit, transit_tokens;
	struct lsim_kvcache *kv;     /* NULL once stopped empty (kv_blocks kept) */
	int32_t kv_blocks;	     /* its size (0 in service mode) */
	struct lsim_monitor_sample mon; /* the monitor's latest output */
	/* what advancing a macro step's run touches besides, next to it */
	int32_t m_n, m_done, m_settled, m_tokens;
	size_t n_sched; /* of the batch in flight */
	lsim_time step_start;
	struct lsim_iter_work step_work; /* of the step in flight (pp 1); s in ns */
	lsim_time busy_ns;	   /* accumulated step time (service: server-time / servers) */
	double work_ns; /* see work_perf */
	double flops, bytes; /* model FLOPs and HBM bytes of the steps done,
			      * per GPU of a stage's TP group (see work_perf) */
	int64_t iterations, tokens;

	struct lsim_sim *sim;
	struct lsim_engine_cfg cfg;
	struct lsim_service_cfg service;
	const struct lsim_gpu_profile *gpu;
	const struct lsim_model_arch *model;
	int32_t tp;	   /* tensor-parallel degree: GPUs per stage */
	int32_t pp;	   /* pipeline stages, each on tp GPUs */
	int32_t n_gpus;	   /* tp * pp */
	int32_t node; /* cluster node it was placed on (-1: no cluster) */
	int32_t model_idx; /* index in the run's model_names */
	int32_t group;	   /* the scenario's instances[] entry it belongs to */
	struct lsim_dp *dp; /* its data-parallel group, or NULL (rank dp_rank) */
	int32_t dp_rank;
	int state;	   /* enum lsim_inst_state */
	int role;	   /* enum lsim_inst_role */
	int32_t gpu0;	   /* first of its GPUs in the topology (-1: none) */
	/* pp > 1 with a placement: each stage's node and first GPU (its tp
	 * GPUs are consecutive there); NULL: the stages follow each other
	 * from gpu0 in one node */
	int32_t *stage_node, *stage_gpu0;
	int loads_left;	   /* weight flows of a cold start still moving */
	/* PCIe load seen by its kernels: an exponential moving average (time
	 * constant sim->util_window) of its links' utilisation */
	double pcie_ewma;
	lsim_time pcie_t;
	double *pcie_util_ns; /* per link (2 per GPU): integral at pcie_t */
	lsim_time engine_init; /* start-up after the weights are in */
	lsim_time provision_start;
	/* what it used and costs: energy and carbon from its utilisation
	 * samples, money from its billing terms */
	struct lsim_energy_acc energy;
	lsim_time energy_t;   /* energy counted up to here */
	lsim_time energy_busy; /* busy_ns at energy_t (service mode) */
	double energy_work;    /* work_ns at energy_t */
	/* work_ns (above): work at peak rates (lsim_perf_iter_work) of the
	 * steps done, in ns per GPU of a stage; a step whose backend does not
	 * know it counts its whole time. work / (pp x time) is the GPUs'
	 * utilisation. flops and bytes (above): the same steps' model FLOPs
	 * and HBM bytes of the whole model on one GPU of the TP group (its
	 * pp stages share them); 0 for a step whose backend does not know
	 * them. */
	struct lsim_perf *work_perf; /* owned: the roofline, for work, when
				      * the perf backend does not know it */
	struct lsim_billing billing;
	bool failed;	      /* crashed: does nothing, looks alive until detected */
	lsim_event_id fail_ev; /* its pending failure, or 0 */
	bool spot;	      /* can be reclaimed (spot_mtbr) */
	lsim_event_id spot_ev; /* its pending reclaim warning or reclaim, or 0 */
	lsim_time failed_at;  /* -1: never */
	struct lsim_perf *perf; /* owned */
	double kv_block_bytes;	     /* of one block, all layers (0: service mode) */
	int64_t max_model_len;

	/* waiting: a heap in the queue policy's order (instance.c) */
	struct lsim_wait_entry *wait;
	size_t wait_cap; /* wait_len: above */
	uint64_t wait_seq;
	/* running: request indices in admission order (run_len: above) */
	int32_t *run;
	size_t run_cap;
	/* the batch of the step in flight (n_sched: above) */
	int32_t *sched;
	int32_t *sched_n; /* each one's tokens in the batch formed */
	int32_t *pf_chunk, *pf_ctx, *dec_ctx;
	uint64_t *hash_buf;
	size_t hash_cap;

	bool busy;
	bool kick_pending; /* a step start is scheduled at the current time */
	lsim_event_id step_ev; /* the end of the step in flight (pp 1) */
	/* A macro step (sim->macro_steps, instance.c): a run of m_n decode
	 * steps of one batch, m_step[k] its step k (0: the one formed when
	 * the run was planned): its time, end and work, and the running sums
	 * of the changes at the steps' starts (the end of the step before)
	 * of queued_tokens and of the KV blocks the batch takes. m_done of
	 * them ended; m_next
	 * the end of the step in flight unless it is the run's last (an
	 * event), else LSIM_TIME_MAX; m_slot its place in sim->macro (-1:
	 * none); m_tokens the output tokens of its ended steps, not streamed
	 * yet. The first m_settled ended steps have been applied to the
	 * requests, and m_kvp blocks are taken by the others, not yet
	 * allocated. m_more: the run stops at its bound LSIM_RUN_STEPS, not
	 * at a request's last token or the free blocks, so step_end carries
	 * it on (extend_run). (m_slot, m_next, m_kvp, m_n, m_done, m_settled,
	 * m_tokens: above.) */
	bool m_more;
	struct lsim_run_step {
		lsim_time dt, end; /* its time, and when it ends */
		struct lsim_iter_work work; /* s in ns */
		/* the changes of queued_tokens and of the blocks taken at the
		 * starts of steps 1 .. k, summed */
		int32_t cdq, cdb;
	} m_step[LSIM_RUN_STEPS];

	/* lifecycle and statistics */
	lsim_time start, ready, stop;
	lsim_time busy_ns_sampled; /* busy_ns at the last time-series sample */
	lsim_time last_sample;
	int64_t preemptions;
	int64_t prompt_tokens_admitted; /* tokens of prompts at admission */
	double swap_used;		/* host bytes holding swapped KV */
	double swap_bytes;		/* moved out + in */
	int64_t swaps;			/* preemptions by swap */
	int32_t swapping_in;		/* requests whose KV is moving back */
	int32_t handing_over;		/* prefilled requests whose KV still
					 * waits here for a decode instance */
	double kv_out_bytes;		/* KV sent to decode instances */
	bool allreduce_on_links;	/* the step's all-reduce data as flows */
	int32_t ar_flows;		/* of the step in flight, still moving */
	/* pipeline stages (pp > 1): up to pp batches in flight, a ring of
	 * slots from b_head in the order they formed; per stage, the slot it
	 * is computing (-1: free) and the seq of the batch it takes next */
	struct lsim_pp_batch *batches;
	int32_t b_head, n_inflight;
	uint64_t b_seq;
	int32_t *stage_holder;
	uint64_t *stage_next;
	double pp_bytes;		/* activations sent between stages */
	struct lsim_coll_topo pp_topo;	/* the node's fabric, for the stages' send/recv */
	int64_t prefix_hit_tokens;	/* of which found in the prefix cache */
	int64_t routed_since_sample;
};

/*
 * A data-parallel group (vLLM's data_parallel_size, docs/parallelism.md):
 * n ranks, each an instance with its own scheduler and KV cache, behind
 * vLLM's DP load balancer (dp.c): a request goes to the rank of least
 * 4 x waiting + running in the counts the coordinator last published
 * (every publish_period while the group has work) plus the front end's
 * own tally of the requests it sent since. For an MoE model the ranks
 * step in lockstep (instance.c): every step all ranks run a forward pass
 * together, a rank with nothing to do a dummy batch of one token, and the
 * step lasts as long as the slowest rank's; with expert parallelism each
 * rank's MoE time is for its share of all ranks' tokens (perf.h).
 */
struct lsim_dp {
	int32_t n;
	struct lsim_instance **rank;	/* borrowed, [n] */
	bool lockstep;			/* an MoE model: ranks step together */
	lsim_time publish_period;	/* the coordinator's: 100 ms */
	int64_t *pub_wait, *pub_run;	/* the balancer's counts, [n] */
	lsim_event_id pub_ev;		/* the next publication, or 0 */
	/* lockstep: the step in flight, each rank's batch for it and
	 * whether it takes part (live ranks) */
	bool in_flight;
	struct lsim_batch *batch;	/* [n] */
	bool *part;			/* [n] */
	int64_t steps, dummy_steps;	/* group steps; ranks' dummy batches */
};

/* An instance group (one scenario instances[] entry) as the adaptor
 * scales it. */
struct lsim_group {
	int32_t min, max;
	double capacity_rps;
	lsim_time start_lead;	/* expected scale-out to ready */
	lsim_time provision;	/* machine acquisition before the cold start */
	lsim_time engine_init;
	int64_t scale_outs, scale_ins, refused; /* refused: no room in the cluster */
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

struct lsim_sim {
	struct lsim_engine *eng;
	uint64_t seed;
	gsl_rng *service_rng;
	/* Request slots: a slot is reused once its request ended and its
	 * record went to the store, so memory follows the requests in
	 * flight, not the length of the run. */
	struct lsim_req *reqs;
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
	struct lsim_net *net;
	struct lsim_topo topo;
	double *link_util;
	/* scratch of a sample: the links sampled and their utilisations */
	int32_t *sample_link;
	double *sample_util;
	/* Small messages through the network queues: each request from the
	 * front end (beyond the spine) to its instance's node, and each step's
	 * output tokens back (network.messages). */
	bool messages;
	/* Decode steps between batch changes as one event (macro_steps):
	 * the instances with step ends to catch up on, the next of each, and
	 * a bound below them all. */
	bool macro_steps;
	struct lsim_macro_entry {
		struct lsim_instance *in;
		lsim_time t; /* its m_next */
	} *macro;
	size_t n_macro, cap_macro;
	lsim_time macro_min;
	size_t macro_unsettled; /* listed instances with steps to settle */
	lsim_time util_window; /* time constant of the kernels' PCIe load */
	struct lsim_link_sample *link_ts;
	size_t n_link_ts, cap_link_ts;
	struct lsim_link_record *link_recs;
	struct lsim_tenant_record *tenant_recs;
	struct lsim_bg_stream **bg; /* background copy streams (owned) */
	size_t n_bg;
	struct lsim_instance **inst; /* each allocated on its own: stable */
	size_t n_inst, cap_inst;
	size_t cap_info;	     /* inst_info, route_map, info_stale entries */
	/* inst_info as counts-only routers see every instance (identity
	 * route_map), kept between arrivals: the first info_n instances'
	 * entries are current but for those in info_stale, described again
	 * at the next arrival (0: none kept; see lsim_instance_touch) */
	size_t info_n;
	int32_t *info_stale;
	size_t n_info_stale;
	struct lsim_dp **dp;	     /* data-parallel groups (owned) */
	size_t n_dp;
	struct lsim_group *groups;   /* borrowed; n_groups 0: no scaling */
	size_t n_groups;
	struct lsim_fleet_ops fleet;
	double load_bw;		     /* weights load rate without a cluster, B/s */
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
	int32_t *route_map;	    /* scratch: inst_info entry -> instance */
	size_t *rr_model;	    /* round-robin position per model */
	/* Tenants named by a trace column (workload.tenant_column), by first
	 * appearance; owned. */
	char **tenant_names;
	size_t n_tenant_names;
	struct lsim_workload *workload;
	bool workload_done;
	int error; /* first error from a handler (e.g. bad trace line) */
	struct lsim_diag diag;
	/* time series */
	lsim_time sample_period;
	uint64_t n_samples; /* taken, at most LSIM_MAX_SAMPLES */
	struct lsim_ts_sample *ts;
	size_t n_ts, cap_ts;
	/* Run-length encoding of the series (docs/output.md): the rows of
	 * the sample just taken (cur), the last sample equal to the group
	 * recorded last except in t, held back until something changes
	 * (pending), and where that group starts in ts. */
	struct lsim_ts_sample *ts_cur, *ts_pending;
	size_t n_ts_cur, n_ts_pending, cap_ts_cur;
	size_t ts_group, n_ts_group;
	double pue;
	/* power and carbon: each GPU's power from its utilisation (alpha of
	 * the profile's idle-to-tdp curve); grid intensity constant or a
	 * series (borrowed) */
	double power_alpha;
	double carbon_g_per_kwh;
	const struct lsim_carbon_series *carbon;
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
	/* Called at every sample (the CLI draws a progress bar). */
	void (*progress)(void *ctx, const struct lsim_sim *s, lsim_time now);
	void *progress_ctx;
};

/* Checks the simulation's invariants (invariants.c): 0, or LSIM_ESTATE
 * with the broken one described in d. */
int lsim_sim_check(struct lsim_sim *s, struct lsim_diag *d);

/* Request index of the k-th entry of in's waiting queue (k < wait_len),
 * in heap order. */
int32_t lsim_instance_waiting(const struct lsim_instance *in, size_t k);

/* What policies may see of request req. */
void lsim_sim_request_info(const struct lsim_sim *s, int32_t req,
			   struct lsim_request_info *out);

/* Instance lifecycle. perf ownership passes to the instance. */
int lsim_instance_init(struct lsim_instance *in, struct lsim_sim *sim,
		       int32_t id, const struct lsim_engine_cfg *cfg,
		       const struct lsim_gpu_profile *gpu,
		       const struct lsim_model_arch *model, int32_t tp,
		       struct lsim_perf *perf, struct lsim_diag *d);
int lsim_instance_init_service(struct lsim_instance *in, struct lsim_sim *sim,
			       int32_t id, int64_t servers,
			       const struct lsim_service_cfg *svc,
			       const struct lsim_gpu_profile *gpu);
void lsim_instance_release(struct lsim_instance *in);

/* Hands a request to the instance (queued; a step starts if idle). */
void lsim_instance_submit(struct lsim_instance *in, int32_t req);
/* The request is routed to the instance and on its way (reserve) or has
 * arrived or been turned back (unreserve): routers count it meanwhile. */
void lsim_instance_reserve(struct lsim_instance *in, int32_t req);
void lsim_instance_unreserve(struct lsim_instance *in, int32_t req);
/* A request handed over by prefill instance src found no decode
 * instance: src frees the blocks it kept for it. */
void lsim_instance_drop_handoff(struct lsim_instance *src, int32_t req);
/* Blocks the KV cache has (0 in service mode). */
int32_t lsim_instance_kv_blocks(const struct lsim_instance *in);
/* Frees the KV cache of a stopped, empty instance (its size stays). */
void lsim_instance_drop_kv(struct lsim_instance *in);
/* Macro steps: the step ends of every instance's run before t (at_t: and
 * at t) take place now, as each would have at its own time, for the
 * instances and their requests (docs/architecture.md). */
void lsim_sim_catch_up(struct lsim_sim *s, lsim_time t, bool at_t);
/* Macro steps: the instance's side of its run's step ends before now
 * (counters, queued tokens, blocks taken), not its requests'. */
void lsim_instance_advance_run(struct lsim_instance *in, lsim_time now);
static inline void lsim_instance_advance(struct lsim_instance *in, lsim_time now)
{
	if (in->m_slot >= 0 && in->m_next < now)
		lsim_instance_advance_run(in, now);
}
/* The KV blocks an instance's policies see free: its cache's, less those
 * its run's ended steps take and have not allocated yet. */
int32_t lsim_instance_kv_free(const struct lsim_instance *in);
/* The tag (engine.h) of events that read other instances only through
 * what policies see (lsim_instance_info, after lsim_instance_advance) and
 * change them only through lsim_instance_submit: arrivals, request
 * deliveries, step ends. Runs' step ends are not caught up before them. */
#define LSIM_TAG_LIGHT 2u

/* ---- the run ---- */

int lsim_sim_init(struct lsim_sim *s, uint64_t seed, struct lsim_diag *d);
void lsim_sim_release(struct lsim_sim *s);
/* Adds a zeroed instance; returns it (its address never changes). */
struct lsim_instance *lsim_sim_add_instance(struct lsim_sim *s);
/* Frees the instance added last, whose init failed (it holds nothing). */
void lsim_sim_drop_instance(struct lsim_sim *s);

/*
 * dp.c: makes ranks[0 .. n-1] (instances already added) one data-parallel
 * group, stepping in lockstep when lockstep is set; NULL on ENOMEM. The
 * group's balancer then picks among them the rank of each request routed
 * to any of them.
 */
struct lsim_dp *lsim_sim_add_dp(struct lsim_sim *s, struct lsim_instance **ranks,
				int32_t n, bool lockstep);
/* The rank vLLM's DP load balancer sends a request to (see struct
 * lsim_dp), counted in its tally; NULL when no rank is ready. */
struct lsim_instance *lsim_dp_pick(struct lsim_dp *g);
void lsim_dp_release(struct lsim_dp *g);
/* instance.c: starts the group's next lockstep step unless one is in
 * flight. */
void lsim_dp_step(struct lsim_dp *g);
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

/* The PCIe load of the instance's GPUs now: a moving average over about
 * sim->util_window of the largest of their links' utilisations in either
 * direction (0 without links). Updates the average. */
double lsim_instance_pcie_util(struct lsim_instance *in);
/* The topology id of its k-th GPU (0 <= k < n_gpus; stage k / tp). */
int32_t lsim_instance_gpu(const struct lsim_instance *in, int32_t k);
/* Whether any of its GPUs is on cluster node `node`. */
bool lsim_instance_on_node(const struct lsim_instance *in, int32_t node);

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

/* Something routers read of in (its counts, KV size, monitor sample)
 * changed: its entry in the kept view is described again before the
 * next route. Every write of describe's fields calls it; builds with
 * invariants check that none is missed (lsim_sim_check_view). */
static inline void lsim_instance_touch(struct lsim_instance *in)
{
	struct lsim_sim *s = in->sim;
	if (in->info_stale || (size_t)in->id >= s->info_n)
		return;
	in->info_stale = true;
	s->info_stale[s->n_info_stale++] = in->id;
}

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
