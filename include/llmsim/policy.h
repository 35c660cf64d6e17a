/*
 * policy.h - the policy ABI: how the seven components of the framework
 * (monitor, scheduler, allocator, profiler, synchronizer, QoS manager,
 * adaptor; Dang et al., section 3) plug into the simulator.
 *
 * A policy is one constant type object (struct lsim_policy_type): ABI
 * version, kind, name, summary, the size of its state, its parameter table,
 * init/fini and a table of kind-specific operations. The core allocates
 * state_size zeroed bytes, binds the parameters from the scenario into it
 * (each parameter's offset is into the state), calls init, then the ops,
 * then fini. Policies see the simulation only through the arguments of
 * their ops; they never open files and never print.
 *
 * Built-ins are listed in policies/registry.c. A plugin is a shared object
 * exporting
 *     const struct lsim_policy_type *const *lsim_plugin_policies(size_t *n);
 * returning its types (borrowed for the life of the process); the scenario
 * names it with `plugin: ./my.so` and, when it holds several, `name:`.
 *
 * Ownership: every pointer passed to an op is borrowed for the duration of
 * the call. Fields are only ever appended to these structs. A plugin built
 * against an ABI from LSIM_POLICY_ABI_OLDEST to LSIM_POLICY_ABI loads (the
 * core reads an op appended at version v only from a type whose abi is at
 * least v); one built against an older or a newer ABI is rejected.
 */
#ifndef LLMSIM_POLICY_H
#define LLMSIM_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "llmsim/llmsim.h"
#include "llmsim/params.h"

/* 2: lsim_instance_info and lsim_monitor_sample gained PCIe utilisation;
 *    the adaptor decides per instance group (lsim_scale_group).
 * 3: lsim_instance_info counts requests routed to an instance and not yet
 *    arrived (in_transit) in outstanding, waiting and queued_tokens, and
 *    gives the KV block size (kv_block_tokens).
 * 4: the allocator may evict idle serverless instances (evict, appended to
 *    lsim_allocator_ops; nothing a version-3 type sees changed, so those
 *    still load and their allocators never evict). */
#define LSIM_POLICY_ABI 4u
/* The oldest ABI a plugin may be built against and still load. */
#define LSIM_POLICY_ABI_OLDEST 3u

enum lsim_policy_kind {
	LSIM_KIND_MONITOR,
	LSIM_KIND_SCHEDULER,
	LSIM_KIND_ALLOCATOR,
	LSIM_KIND_PROFILER,
	LSIM_KIND_SYNCHRONIZER,
	LSIM_KIND_QOS,
	LSIM_KIND_ADAPTOR,
	LSIM_KIND_COUNT
};

const char *lsim_policy_kind_name(enum lsim_policy_kind k);

/* What a policy may know about a request. */
struct lsim_request_info {
	uint64_t id;
	lsim_time arrival;
	int32_t prompt_tokens;
	int32_t predicted_output; /* from the profiler; -1 before prediction */
	int32_t true_output;	  /* the real output length, only for policies
				   * whose type sets LSIM_POLICY_ORACLE; else -1 */
	int32_t qos_class;	  /* index into the scenario's QoS classes */
	int32_t priority;	  /* smaller = more urgent (from the class) */
	lsim_time deadline;	  /* arrival + the class's TTFT target; INT64_MAX if none */
	const uint64_t *prefix_ids; /* the trace's prefix-block ids (Mooncake), or NULL */
	int32_t n_prefix_ids;
	int32_t prefix_block_tokens; /* tokens per prefix id */
};

/* What a router may know about one instance, at the time of the call
 * (queued_tokens and kv_free_blocks are -1 for a policy whose type sets
 * LSIM_POLICY_COUNTS_ONLY). A request routed to the instance counts from
 * the moment it is routed: while it still travels there (a network
 * message, a synchronizer's dispatch delay) it is in outstanding, in
 * waiting and, with its prompt and predicted output, in queued_tokens, as
 * it will be on arrival; in_transit says how many such requests there are.
 * Routers that see simultaneous arrivals therefore spread them. */
struct lsim_instance_info {
	int32_t id;
	int64_t outstanding;	/* routed, not finished (in transit included) */
	int64_t waiting;	/* queued or on the way, not admitted */
	int64_t running;	/* admitted sequences */
	int64_t queued_tokens;	/* prompt tokens of waiting requests + remaining
				 * predicted work of running ones */
	int32_t kv_free_blocks;
	int32_t kv_total_blocks;
	/* the monitor's latest view (smoothed by an ewma monitor) */
	double mon_gpu_util;	 /* busy fraction */
	double mon_kv_util;	 /* used / total KV blocks */
	double mon_arrival_rate; /* requests routed to it per second */
	double mon_pcie_util;	 /* PCIe load of its GPUs (0 without links) */
	int64_t in_transit;	 /* routed to it, not arrived yet (ABI 3) */
	int32_t kv_block_tokens; /* tokens per KV block (0 in service mode) */
};

/* Handed to init. */
struct lsim_policy_ctx {
	uint64_t seed;	     /* the stream seed of this policy */
	void *rng;	     /* a gsl_rng * of its own stream */
	int32_t n_instances; /* instances at start */
	int32_t n_classes;   /* QoS classes in the scenario (>= 1) */
	int32_t n_groups;    /* instance groups (adaptors keep state per group) */
};

/* ---- kind-specific operations ---- */

/*
 * Scheduler. A router fills route(); a queue order fills queue_key() (the
 * other is NULL). Routers return an index into inst[0..n-1]. Queues serve
 * the smallest key first, ties in arrival order; preempted requests always
 * go back to the front, most recently preempted first (as vLLM does).
 */
struct lsim_scheduler_ops {
	int32_t (*route)(void *state, const struct lsim_request_info *r,
			 const struct lsim_instance_info *inst, int32_t n);
	double (*queue_key)(void *state, const struct lsim_request_info *r);
};

/* Profiler: predicts output length at arrival; learns at finish. */
struct lsim_profiler_ops {
	int32_t (*predict)(void *state, const struct lsim_request_info *r);
	void (*observe)(void *state, const struct lsim_request_info *r,
			int32_t output_tokens, lsim_time service);
};

/*
 * Allocator: places one replica of tp GPUs at a time (at start, and when
 * instances are added). nodes[] describes every node; `fits` says the core
 * checked its GPU kind, free GPUs and memory. Returns the index of a node
 * that fits, or -1 for none.
 */
struct lsim_node_info {
	int32_t id;	    /* node index in cluster order */
	int32_t group;	    /* its entry in the scenario's cluster list */
	int32_t gpus_total;
	int32_t gpus_free;
	int32_t instances;  /* replicas placed on it so far */
	bool fits;
};

struct lsim_alloc_request {
	int32_t tp;	     /* GPUs wanted (tp x pp), all in one node */
	int32_t replica;     /* index of the replica within its group */
	double bytes_per_gpu; /* (weights + the minimum KV reserve) / GPUs */
};

/*
 * An idle instance of a serverless group (docs/serverless.md) that could
 * be stopped to make room: ready, no request outstanding, of another
 * group, on a node of the GPU kind wanted.
 */
struct lsim_evict_candidate {
	int32_t instance;     /* its id */
	int32_t group;	      /* its instances[] entry */
	int32_t node;	      /* the node of its first GPU */
	int32_t gpus;	      /* GPUs it holds */
	lsim_time idle_since; /* its last request ended (or it became ready) */
	lsim_time ready;      /* it became ready */
	int64_t served;	      /* requests routed to it so far */
};

struct lsim_allocator_ops {
	int32_t (*place)(void *state, const struct lsim_alloc_request *r,
			 const struct lsim_node_info *nodes, int32_t n);
	/* Optional (ABI 4; NULL: never evicts). No node fits r: returns the
	 * index into c[0..n-1] of the idle instance to stop (its GPUs are
	 * freed and placement is tried again), or -1 to stop none (the
	 * scale-out waits until GPUs free up). */
	int32_t (*evict)(void *state, const struct lsim_alloc_request *r,
			 const struct lsim_evict_candidate *c, int32_t n);
};

/*
 * QoS manager: admission control at arrival, after the router chose
 * `target`. Returns 0 to admit or a reason (enum lsim_reject_reason) to
 * reject; the reason is recorded with the request.
 */
enum lsim_reject_reason {
	LSIM_REJECT_NONE = 0,
	LSIM_REJECT_NEVER_FITS = 1,   /* larger than the instance's KV cache or max_model_len */
	LSIM_REJECT_QUEUE_FULL = 2,   /* the target's waiting queue is at its bound */
	LSIM_REJECT_SLO_MISS = 3,     /* predicted to miss its class's TTFT target */
	LSIM_REJECT_RATE_LIMIT = 4,   /* its class's token bucket is empty */
	/* Not a QoS decision: with workload.zero_output: fail, a trace request
	 * with no output tokens (a failure logged by the trace) ends failed. */
	LSIM_FAIL_IN_TRACE = 5,
	/* Not a QoS decision: no instance serves the request's model. */
	LSIM_REJECT_NO_INSTANCE = 6,
	/* Not a QoS decision: its instance failed more often than the
	 * synchronizer retries (status failed). */
	LSIM_FAIL_INSTANCE = 7,
};

struct lsim_qos_ops {
	int32_t (*admit)(void *state, const struct lsim_request_info *r,
			 const struct lsim_instance_info *target, lsim_time now);
};

/*
 * Monitor: called at every sample (each `output.sample_period`) for each
 * instance with the raw values of the period just ended; writes the values
 * it reports to out (the time series in the report and the mon_* fields
 * routers see). out starts as a copy of raw.
 */
struct lsim_monitor_sample {
	lsim_time t;
	int32_t instance;
	double gpu_util;
	double kv_util;
	double queue_len;
	double arrival_rate;
	double pcie_util; /* mean PCIe load of its GPUs over the period */
};

struct lsim_monitor_ops {
	void (*observe)(void *state, const struct lsim_monitor_sample *raw,
			struct lsim_monitor_sample *out);
};

/*
 * Adaptor: at every monitor sample, for each instance group (the replicas
 * of one scenario instances[] entry), how many instances it should have.
 * The core clamps the answer to [min, max], starts new instances (which go
 * through provisioning and a cold start before they are ready) and drains
 * surplus ones (no new requests; they stop when their requests are done).
 */
struct lsim_scale_group {
	int32_t group;	      /* index in the scenario's instances[] */
	int32_t live;	      /* instances provisioning, loading or ready */
	int32_t ready;	      /* of which ready */
	int32_t min, max;     /* the group's limits */
	lsim_time start_lead; /* expected time from a scale-out to ready */
	double arrival_rate;  /* requests routed to the group per second, over
			       * the last sample period */
	double capacity_rps;  /* requests per second one instance is meant to
			       * serve (instances[].capacity_rps; 0: not given) */
	lsim_time period;     /* time between two calls */
};

struct lsim_adaptor_ops {
	/* inst: the group's live instances (n = g->live), monitor's view: the
	 * g->ready ready ones first, then those still starting */
	int32_t (*desired)(void *state, const struct lsim_scale_group *g,
			   const struct lsim_instance_info *inst, int32_t n,
			   lsim_time now);
};

/*
 * Synchronizer: consistency of the control plane and recovery from
 * failures. dispatch_delay is the time between a request's admission and
 * its arrival at the instance (0 = perfect). When an instance fails
 * (scenario failures section), it goes on looking alive until
 * detection_delay after the failure; then the requests it held are
 * re-queued if retry says so (else they fail), and a replacement starts.
 * When the coordinator fails, new requests wait election_time. NULL
 * entries: detected at once, retried up to 3 times, no election time.
 */
struct lsim_synchronizer_ops {
	lsim_time (*dispatch_delay)(void *state, const struct lsim_request_info *r);
	lsim_time (*detection_delay)(void *state, lsim_time failed_at);
	/* attempts: failures the request has met so far (>= 1) */
	bool (*retry)(void *state, const struct lsim_request_info *r, int32_t attempts);
	lsim_time (*election_time)(void *state);
};

/* ---- the type object ---- */

enum lsim_policy_flags {
	LSIM_POLICY_ORACLE = 1u << 0, /* sees true_output */
	/* A router or QoS manager that reads only the counts (outstanding,
	 * waiting, running), the KV total and the monitor's fields of
	 * lsim_instance_info: queued_tokens and kv_free_blocks are -1 for
	 * it, and the simulator need not bring instances simulated lazily
	 * (macro steps) up to date for each request it routes. */
	LSIM_POLICY_COUNTS_ONLY = 1u << 1,
};

struct lsim_policy_type {
	uint32_t abi; /* LSIM_POLICY_ABI */
	enum lsim_policy_kind kind;
	const char *name;
	const char *summary; /* one line */
	uint32_t flags;
	size_t state_size;
	const struct lsim_keydef *params; /* offsets into the state */
	size_t n_params;
	int (*init)(void *state, const struct lsim_policy_ctx *ctx); /* may be NULL */
	void (*fini)(void *state);				      /* may be NULL */
	const void *ops; /* struct lsim_<kind>_ops */
};

/* The entry point a plugin exports. */
typedef const struct lsim_policy_type *const *(*lsim_plugin_entry_fn)(size_t *n);
#define LSIM_PLUGIN_ENTRY "lsim_plugin_policies"

#endif
