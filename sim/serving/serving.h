/*
 * serving.h - one serving instance (a vLLM engine on a TP x PP group of
 * GPUs), its requests' state, its data-parallel group, and what the
 * instances of a run share: struct lsim_serving, owned by the run, with a
 * table of callbacks (struct lsim_instance_hooks) through which an
 * instance reports to its owner, the way a libuv handle calls back. The
 * serving room (instance.c, dp.c) includes nothing of the run.
 */
#ifndef LLMSIM_SERVING_H
#define LLMSIM_SERVING_H

#include <gsl/gsl_rng.h>
#include <stdbool.h>
#include <stdint.h>

#include "cluster/collective.h"
#include "cluster/cost.h"
#include "cluster/hw.h"
#include "cluster/links.h"
#include "llmsim/engine.h"
#include "llmsim/policy.h"
#include "report/report.h"
#include "serving/kvcache.h"
#include "serving/kvhost.h"
#include "serving/lora.h"
#include "serving/perf.h"

struct lsim_wait_entry;
struct lsim_dp;

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
	int32_t dp;	     /* ranks of its data-parallel group (0 or 1: none;
			      * MoE only: a dense model's ranks are independent) */
	/* bytes per token of a step moved host -> GPU before its kernels and
	 * GPU -> host after them, as flows (instance_io.c; 0: none) */
	double io_in_bytes, io_out_bytes;
	/* KV offload (kv_offload: host, docs/memory.md): prefix-cache blocks
	 * evicted from the GPU are copied to kv_offload_space bytes of host
	 * memory (per instance) and reloaded from there on a later hit */
	int kv_offload; /* 0 none, 1 host */
	double kv_offload_space;
	/* weight offload (vLLM's cpu_offload_gb): GiB of each GPU's weights
	 * kept in host memory and copied to the GPU at every step, as flows
	 * of kind weights before its kernels (instance_io.c; 0: none) */
	double cpu_offload_gb;
	/* LoRA (enable_lora, docs/lora.md): adapters in max_loras GPU slots
	 * (preallocated at max_lora_rank, out of the KV cache) and
	 * max_cpu_loras in host memory; one adapter's parameters and bytes
	 * on one GPU at the workload's rank (lsim_lora_params) */
	bool enable_lora;
	int64_t max_loras, max_lora_rank, max_cpu_loras;
	int64_t lora_rank;
	double lora_adapter_params, lora_adapter_bytes;
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
	bool lora_waited;	      /* a step of it waited for an adapter copy */
	int32_t lora;		      /* its LoRA adapter (-1: the base model) */
};


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
/*
 * GPU sharing (docs/sharing.md): instances co-located on one GPU by MPS
 * or by time slicing, each with its own memory plan. The step time of
 * an iteration is decided when it starts, from how many of the members
 * have work then (k, the instance itself included): MPS, each member's
 * own share of the SMs and 1/k of the memory bandwidth; time slicing, the
 * whole GPU 1/k of the time, each slice of time_slice paying switch more.
 */
#define LSIM_SHARE_MAX 8
/* MIG slices are isolated (their step times ignore the neighbours); they
 * share the GPU's power and price all the same. */
enum lsim_share_mode { LSIM_SHARE_MPS = 1, LSIM_SHARE_TIME_SLICE = 2, LSIM_SHARE_MIG = 3 };
struct lsim_share {
	int mode;			/* enum lsim_share_mode */
	int32_t n;			/* members */
	struct lsim_instance *member[LSIM_SHARE_MAX];
	/* each member's part of the GPU's idle power and price (sum 1):
	 * MIG g/7, MPS gpu_fraction, time slicing 1/n, over their sum */
	double weight[LSIM_SHARE_MAX];
	double slice_s, switch_s;	/* time slicing: the slice and its switch */
};

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

	struct lsim_serving *sv; /* what it shares with the instances of its run */
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

	/* GPU sharing: the members of its GPU (NULL: a GPU, or a MIG slice,
	 * of its own); MPS: share_perf[k - 1] times its steps while k members
	 * have work ([0] unused: perf, the whole bandwidth) */
	const struct lsim_share *share;
	struct lsim_perf *share_perf[LSIM_SHARE_MAX];
	/* shared (MIG, MPS): the roofline of the whole GPU, whose peak rates
	 * its work (work_ns) is counted at, so that the members' work adds up
	 * to the GPU's utilisation; share_u and share_w: its part of the
	 * GPU's utilisation and power over its last energy interval */
	struct lsim_perf *gpu_work_perf;
	double share_u, share_w;
	bool busy;
	bool kick_pending; /* a step start is scheduled at the current time */
	lsim_event_id step_ev; /* the end of the step in flight (pp 1) */
	lsim_time io_dt;       /* the kernels' time of the step in flight (io) */
	int32_t io_pending;    /* its io flows still moving */
	double *io_cls;	       /* per traffic class: the step's tokens (per tenant io) */
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
	/* KV offload: the host tier (NULL: off), evicted blocks' bytes not yet
	 * sent to it, bytes sent and reloaded, prompt tokens found there */
	struct lsim_kvhost *kvhost;
	double kv_offload_pending;
	double kv_offload_bytes, kv_reload_bytes;
	int64_t kv_host_hit_tokens;
	/* LoRA adapters (enable_lora; NULL: off) */
	struct lsim_lora *lora;
	struct lsim_wait_entry *lora_skip; /* scratch: requests skipped in a step */
	size_t lora_skip_cap;
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
	/* expert parallelism on the links: the step's dispatch and combine flows
	 * still moving, and what each pair of ranks sends (bytes, cap) */
	int32_t a2a_flows;
	double a2a_bytes, a2a_cap;
};

struct lsim_serving;

/*
 * How an instance reports to its owner (the run): each callback gets the
 * owner's ctx. None may be NULL once an instance takes requests.
 */
struct lsim_instance_hooks {
	/* The queue policy's key of request req as it joins a waiting queue
	 * (lower first); 0, or an error (the owner records it) */
	int (*queue_key)(void *ctx, int32_t req, double *key);
	/* Request req ended (finished, or failed for good). */
	void (*request_done)(void *ctx, int32_t req);
	/* Request req finished its prefill on prefill instance from: it goes
	 * to a decode instance of its model, its KV following. */
	void (*handoff)(void *ctx, struct lsim_instance *from, int32_t req);
	/* A step's output tokens go back to the front end. */
	void (*stream_tokens)(void *ctx, const struct lsim_instance *in, int32_t tokens);
	/* A draining instance went idle. */
	void (*idle)(void *ctx, struct lsim_instance *in);
	/* Request req, whose KV was on failed (a prefill instance), is lost
	 * there: routed again or failed. */
	void (*requeue)(void *ctx, struct lsim_instance *failed, int32_t req);
};

/*
 * What the instances of a run share with it: the engine, the request
 * slots, the links, the first error, macro-step bookkeeping, the view
 * routers keep, and the power terms. The run owns it (the first member of
 * struct lsim_sim) and fills it; instances read it and write only what
 * each field says.
 */
struct lsim_serving {
	struct lsim_engine *eng;
	gsl_rng *service_rng; /* service mode's drawn times */
	/* Request slots (the run's; it grows them): indices, never pointers */
	struct lsim_req *reqs;
	/* The cluster's links (NULL without a cluster section) and topology */
	struct lsim_net *net;
	struct lsim_topo topo;
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
	/* inst_info as counts-only routers see every instance (identity
	 * route_map), kept between arrivals: the first info_n instances'
	 * entries are current but for those in info_stale, described again
	 * at the next arrival (0: none kept; see lsim_instance_touch) */
	size_t info_n;
	int32_t *info_stale;
	size_t n_info_stale;
	int error; /* first error from a handler (e.g. bad trace line) */
	struct lsim_diag diag;
	double pue;
	/* power and carbon: each GPU's power from its utilisation (alpha of
	 * the profile's idle-to-tdp curve); grid intensity constant or a
	 * series (borrowed) */
	double power_alpha;
	double carbon_g_per_kwh;
	const struct lsim_carbon_series *carbon;
	const struct lsim_instance_hooks *hooks;
	void *owner; /* the hooks' ctx */
};

/* Request index of the k-th entry of in's waiting queue (k < wait_len),
 * in heap order. */
int32_t lsim_instance_waiting(const struct lsim_instance *in, size_t k);

/* Instance lifecycle. perf ownership passes to the instance. */
int lsim_instance_init(struct lsim_instance *in, struct lsim_serving *sv,
		       int32_t id, const struct lsim_engine_cfg *cfg,
		       const struct lsim_gpu_profile *gpu,
		       const struct lsim_model_arch *model, int32_t tp,
		       struct lsim_perf *perf, struct lsim_diag *d);
int lsim_instance_init_service(struct lsim_instance *in, struct lsim_serving *sv,
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
void lsim_serving_catch_up(struct lsim_serving *s, lsim_time t, bool at_t);
/* The collective model's topology of GPUs of profile g in s's run: the
 * profile's fabric, and with a cluster the cluster's GPUs per PCIe
 * switch, so that the closed form counts the switches its flows cross. */
void lsim_serving_coll_topo(const struct lsim_serving *s, const struct lsim_gpu_profile *g,
			    struct lsim_coll_topo *out);
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

/* Makes ranks[0 .. n-1] one data-parallel group (each rank's dp and
 * dp_rank set), stepping in lockstep when lockstep is set; NULL on ENOMEM
 * or n < 1. */
struct lsim_dp *lsim_dp_create(struct lsim_instance **ranks, int32_t n, bool lockstep);
/* The rank vLLM's DP load balancer sends a request to (see struct
 * lsim_dp), counted in its tally; NULL when no rank is ready. */
struct lsim_instance *lsim_dp_pick(struct lsim_dp *g);
void lsim_dp_release(struct lsim_dp *g);
/* instance.c: starts the group's next lockstep step unless one is in
 * flight. */
void lsim_dp_step(struct lsim_dp *g);

/* The PCIe load of the instance's GPUs now: a moving average over about
 * sim->util_window of the largest of their links' utilisations in either
 * direction (0 without links). Updates the average. */
double lsim_instance_pcie_util(struct lsim_instance *in);
/* The topology id of its k-th GPU (0 <= k < n_gpus; stage k / tp). */
int32_t lsim_instance_gpu(const struct lsim_instance *in, int32_t k);
/* Whether any of its GPUs is on cluster node `node`. */
bool lsim_instance_on_node(const struct lsim_instance *in, int32_t node);

/* Something routers read of in (its counts, KV size, monitor sample)
 * changed: its entry in the kept view is described again before the
 * next route. Every write of describe's fields calls it; builds with
 * invariants check that none is missed (lsim_sim_check_view). */
static inline void lsim_instance_touch(struct lsim_instance *in)
{
	struct lsim_serving *s = in->sv;
	if (in->info_stale || (size_t)in->id >= s->info_n)
		return;
	in->info_stale = true;
	s->info_stale[s->n_info_stale++] = in->id;
}

#endif
