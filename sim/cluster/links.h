/*
 * links.h - the link model: directed links with bandwidth and latency,
 * flows that share them max-min fairly (progressive filling, re-solving
 * after each change only the flows at or above the level where the
 * allocation can change), FIFO message queues for small messages, and a
 * topology builder for a GPU cluster (PCIe, host root complex, NVLink,
 * NIC, ToR, spine, storage). Private to the core; docs/links.md describes
 * the model, the algorithm and its cost.
 *
 * Units: bandwidths in bytes/s, sizes in bytes (double), times in lsim_time
 * nanoseconds. Everything of one network hangs off one struct lsim_net,
 * driven by the engine it was created with.
 */
#ifndef LLMSIM_LINKS_H
#define LLMSIM_LINKS_H

#include <stdbool.h>
#include <stdint.h>

#include "llmsim/engine.h"
#include "llmsim/llmsim.h"

/* Most links a flow or message path may cross. */
#define LSIM_PATH_MAX 16

/* What a link stands for (labels only: every kind behaves the same). */
enum lsim_link_kind {
	LSIM_LINK_PCIE,	   /* GPU <-> its PCIe switch, one direction */
	LSIM_LINK_HOST,	   /* PCIe switch uplink / root complex, shared */
	LSIM_LINK_NVLINK,  /* GPU <-> NVSwitch, one direction */
	LSIM_LINK_NIC,	   /* node <-> ToR, one direction */
	LSIM_LINK_TOR,	   /* ToR <-> spine uplinks, one direction */
	LSIM_LINK_SPINE,   /* the spine layer as one shared resource */
	LSIM_LINK_STORAGE, /* the storage service's egress */
	LSIM_LINK_KIND_COUNT
};

const char *lsim_link_kind_name(enum lsim_link_kind k);

struct lsim_net;

/* A flow handle; 0 is never valid. Stale handles are detected. */
typedef uint64_t lsim_flow_id;

/*
 * Called once when a flow has delivered all its bytes, after the network
 * has forgotten it (id is already stale). The callback may start, cancel
 * or query flows and send messages; it must not destroy the network.
 */
typedef void (*lsim_flow_done_fn)(void *ctx, lsim_flow_id flow,
				  uint64_t user_arg);

/* Called when a message is delivered at the end of its path. */
typedef void (*lsim_msg_done_fn)(void *ctx, uint64_t user_arg);

/* Uses eng (borrowed; it must outlive the network). NULL if out of memory. */
struct lsim_net *lsim_net_create(struct lsim_engine *eng);
/* Frees everything; pending flow and message events are cancelled. */
void lsim_net_destroy(struct lsim_net *net);

/* ---- links ---- */

/*
 * Adds a directed link (a half-duplex or shared resource is one link used
 * by paths in both directions). bw > 0 bytes/s, latency >= 0 ns. Writes its
 * id (0, 1, 2, ... in order of creation) to *id.
 */
int lsim_link_add(struct lsim_net *net, enum lsim_link_kind kind, double bw,
		  lsim_time latency, int32_t *id, struct lsim_diag *d);
int32_t lsim_net_n_links(const struct lsim_net *net);

/* A link's state and statistics, up to now. */
struct lsim_link_info {
	enum lsim_link_kind kind;
	double bw;	    /* bytes/s */
	lsim_time latency;
	int32_t n_flows;    /* flows moving data across it */
	double util;	    /* current sum of flow rates / bw */
	double bytes;	    /* bytes carried by flows (finished exactly) */
	lsim_time busy_ns;  /* time with at least one flow on it */
	double util_ns;	    /* integral of util over time, in ns */
	double msg_bytes;   /* bytes of messages serialized on it */
	int64_t n_msgs;
	lsim_time msg_busy_ns; /* time spent serializing messages */
};

int lsim_link_get(const struct lsim_net *net, int32_t link,
		  struct lsim_link_info *out);

/*
 * Mean utilisation of the link by flows since the previous sample of this
 * link (or since time 0), then marks now as the last sample. At the same
 * time as the previous sample, returns the current utilisation. A negative
 * value means a bad link id.
 */
double lsim_link_sample_util(struct lsim_net *net, int32_t link);

/*
 * lsim_link_sample_util of every link whose sample may not be 0: those
 * that had a flow since the previous call and those whose sample then was
 * not 0, in increasing id order; their ids go to links[] and their samples
 * to util[] (both room for lsim_net_n_links), and the count is returned.
 * Every other link's sample would be exactly 0 (no flow moved its
 * statistics). The same samples as calling lsim_link_sample_util on every
 * link at each call, without touching the idle ones: a cluster has tens of
 * thousands of links and few of them carry flows.
 */
int32_t lsim_net_sample_active(struct lsim_net *net, int32_t *links, double *util);

/* Sum of the latencies along a path. */
lsim_time lsim_path_latency(const struct lsim_net *net, const int32_t *path,
			    int32_t n);

/* ---- flows ---- */

/* What a flow carries; the network maps each kind to a traffic class
 * (lsim_net_map_kind), class 0 unless mapped. */
enum lsim_flow_kind {
	LSIM_FLOW_INFERENCE,  /* a request's inputs and outputs, pipeline stages */
	LSIM_FLOW_KV,	      /* KV swap and KV transfer */
	LSIM_FLOW_WEIGHTS,    /* weight loads (cold start) */
	LSIM_FLOW_COLLECTIVE, /* all-reduce and other collectives */
	LSIM_FLOW_CHECKPOINT, /* training checkpoints */
	LSIM_FLOW_BACKGROUND, /* background copies */
	LSIM_FLOW_LORA,	      /* LoRA adapters copied to GPU slots */
	LSIM_FLOW_KIND_COUNT
};

const char *lsim_flow_kind_name(enum lsim_flow_kind k);
/* The kind named s ("inference", "kv", ...); LSIM_EINVAL if none. */
int lsim_flow_kind_parse(const char *s, enum lsim_flow_kind *out);

struct lsim_flow_req {
	const int32_t *path; /* link ids, source to destination, no repeats */
	int32_t n_hops;	     /* 1 .. LSIM_PATH_MAX */
	double bytes;	     /* >= 0 */
	double rate_cap;     /* bytes/s; <= 0: none */
	lsim_flow_done_fn done; /* may be NULL */
	void *ctx;
	uint64_t arg;
	enum lsim_flow_kind kind; /* its class unless cls > 0 */
	int32_t cls;		  /* > 0: this traffic class */
	/* for_tenant: made for a request of this tenant; its class is the
	 * one lsim_net_map_tenant gave (kind, tenant), if any, before its
	 * kind's */
	bool for_tenant;
	int32_t tenant;
};

/*
 * Starts a flow now. Its data starts to move after the path's latency;
 * from then on it drains at its max-min fair share. Never calls the done
 * callback from inside this call.
 */
int lsim_flow_start(struct lsim_net *net, const struct lsim_flow_req *req,
		    lsim_flow_id *id, struct lsim_diag *d);

/* Stops a flow without calling its callback; *delivered (may be NULL)
 * receives the bytes it moved. LSIM_ESTATE for a stale handle. */
int lsim_flow_cancel(struct lsim_net *net, lsim_flow_id id,
		     double *delivered);

enum lsim_flow_state {
	LSIM_FLOW_LATENT, /* within its path latency: no data moving yet */
	LSIM_FLOW_ACTIVE, /* sharing bandwidth */
};

struct lsim_flow_info {
	enum lsim_flow_state state;
	double bytes;	   /* requested */
	double bytes_left; /* at now */
	double rate;	   /* bytes/s (0 while latent) */
	lsim_time start;   /* when lsim_flow_start was called */
	lsim_time finish;  /* its completion event's time (LSIM_TIME_MAX
			    * while latent or stalled) */
	uint64_t recomputed; /* times its rate was re-solved */
	uint64_t rate_changes; /* times its rate (and event) changed */
};

int lsim_flow_get(const struct lsim_net *net, lsim_flow_id id,
		  struct lsim_flow_info *out);

/* ---- traffic classes (docs/links.md, "Traffic classes") ---- */

/* Strict priority levels: 0 is the most urgent. */
#define LSIM_QOS_LEVELS 8
/* The level of class 0, the class of every flow nothing else claims. */
#define LSIM_QOS_DEFAULT_LEVEL 1

/*
 * A traffic class: its flows share each link's bandwidth after every
 * flow of a more urgent level has had its share, weighted max-min fairly
 * with the other flows of their level (rate = weight x the level's
 * filling). With rate > 0, a token bucket limits the class's flows
 * together: while it holds tokens they are not limited by it, and tokens
 * drain at (their total rate - rate); once empty they are held to `rate`
 * in total, and it refills at (rate - their total rate), up to burst.
 */
struct lsim_link_class {
	int32_t level;	/* 0 .. LSIM_QOS_LEVELS - 1 */
	double weight;	/* > 0 */
	double rate;	/* bytes/s; 0: no bucket */
	double burst;	/* bytes, >= 0; the bucket starts full */
};

/*
 * Adds a class (ids 1, 2, ...; class 0 is level LSIM_QOS_DEFAULT_LEVEL,
 * weight 1, no bucket). Only before the first flow starts. A network with
 * classes solves rates with the priority-aware solver (links_qos.c); one
 * without runs the plain max-min solver. A class with a bucket adds a
 * link of its own at the end (not counted by lsim_net_n_links), so links
 * cannot be added after it, and its flows' paths have at most
 * LSIM_PATH_MAX - 1 links.
 */
int lsim_net_add_class(struct lsim_net *net, const struct lsim_link_class *c,
		       int32_t *id, struct lsim_diag *d);
/* Flows of this kind (whose request names no class) join class cls. */
int lsim_net_map_kind(struct lsim_net *net, enum lsim_flow_kind kind,
		      int32_t cls, struct lsim_diag *d);

struct lsim_class_info {
	struct lsim_link_class c;
	bool limited;	/* its bucket is empty: held to rate */
	double tokens;	/* bytes, as of now */
	double rate_sum; /* bytes/s, its flows' rates added up */
};

int lsim_net_class_get(const struct lsim_net *net, int32_t cls,
		       struct lsim_class_info *out);
int32_t lsim_net_n_classes(const struct lsim_net *net);

/* Flows of this kind made for this tenant's requests (for_tenant) join
 * class cls, in preference to the kind's class. */
int lsim_net_map_tenant(struct lsim_net *net, enum lsim_flow_kind kind, int32_t tenant,
			int32_t cls, struct lsim_diag *d);
/* Whether some tenant of this kind has a class of its own. */
bool lsim_net_kind_by_tenant(const struct lsim_net *net, enum lsim_flow_kind kind);
/* The class a flow of this kind (made for tenant when for_tenant) joins
 * unless it names one. */
int32_t lsim_net_class_of(const struct lsim_net *net, enum lsim_flow_kind kind,
			  bool for_tenant, int32_t tenant);

/* ---- messages ---- */

/*
 * Sends a message of `bytes` along path: on each link, messages are
 * serialized one after another in FIFO order (bytes / bw each), then take
 * the link's latency; store-and-forward from link to link. Messages do not
 * share bandwidth with flows (docs/links.md). done is called at delivery.
 * Without done, nothing happens at delivery: the message counts as
 * delivered once it enters its last link, and takes no event there.
 * The event that moves it from one link to the next has the engine's tag
 * LSIM_TAG_INTERNAL; the one that delivers it (calls done) has tag.
 */
int lsim_msg_send(struct lsim_net *net, const int32_t *path, int32_t n_hops,
		  double bytes, lsim_msg_done_fn done, void *ctx, uint64_t arg,
		  uint32_t tag, struct lsim_diag *d);

/* ---- counters ---- */

struct lsim_net_stats {
	uint64_t flows_started, flows_finished, flows_cancelled;
	int64_t flows_active;	  /* started, not finished or cancelled */
	double bytes_requested;	  /* by finished flows */
	double bytes_delivered;	  /* by finished flows, from their rates */
	double max_residual;	  /* largest |bytes left| at a completion */
	uint64_t recomputations;  /* rate recomputations (settle events) */
	uint64_t flows_recomputed; /* flows re-solved by them, summed */
	uint64_t links_recomputed; /* links they visited, summed */
	uint64_t rate_changes;	  /* flows whose rate changed (events moved) */
	uint64_t msgs_sent, msgs_delivered; /* delivered: see lsim_msg_send */
};

void lsim_net_get_stats(const struct lsim_net *net, struct lsim_net_stats *out);
/* Invariants (checked after every event in builds with invariants): no
 * link carries more than its bandwidth, no flow has more bytes left than
 * it started with or fewer than none. Returns 0, or LSIM_ESTATE with the
 * broken rule in why. */
int lsim_net_check(const struct lsim_net *net, char *why, size_t n);

/* ---- topology ---- */

/*
 * A cluster: `nodes` nodes of `gpus_per_node` GPUs. Per GPU, a PCIe link
 * each way to its PCIe switch, whose uplink to the host root complex (one
 * shared link, both directions) serves `gpus_per_switch` GPUs; optionally an
 * NVLink each way to the node's NVSwitch (with nvlink_pairs, to the bridge
 * of its pair: GPUs 2k and 2k+1). Per node a NIC link each way to
 * its ToR switch; `nodes_per_tor` nodes per ToR; per ToR an uplink each way
 * to the spine of bandwidth nodes_per_tor * nic_bw / oversubscription;
 * optionally the spine layer as one shared link; a storage service link
 * into the spine. Bandwidths are per direction, bytes/s.
 */
struct lsim_topo_params {
	int32_t nodes;
	int32_t gpus_per_node;
	int32_t gpus_per_switch;
	int32_t nodes_per_tor;
	double pcie_bw;
	double host_bw;
	double nvlink_bw;	/* 0: no NVLink (GPU-GPU goes via the host) */
	/* NVLink bridges join GPUs 2k and 2k+1 of a node only (PCIe cards
	 * such as the H100 PCIe): other GPUs of the node go via PCIe. false:
	 * every GPU's NVLink goes to the node's NVSwitch. */
	bool nvlink_pairs;
	/* PCIe peer-to-peer is off between the GPUs (GeForce boards): GPU
	 * data is staged through host memory, so a pair under one switch
	 * crosses its uplink. false (P2P on): the switch routes it between
	 * its downstream ports without the uplink. */
	bool no_p2p;
	double nic_bw;
	double oversubscription; /* ToR downlink : uplink capacity, > 0 */
	double spine_bw;	 /* 0: non-blocking spine (no link) */
	double storage_bw;
	lsim_time pcie_latency;
	lsim_time host_latency;
	lsim_time nvlink_latency;
	lsim_time nic_latency;	/* NIC, cable and ToR port */
	lsim_time tor_latency;	/* ToR uplink, cable and spine port */
	lsim_time spine_latency;
	lsim_time storage_latency;
};

/* Fills p with an 8-GPU, NVLink node cluster in the style of a DGX H100
 * (figures and sources in docs/links.md). */
void lsim_topo_params_default(struct lsim_topo_params *p);

/* The link ids of a built cluster; -1 where a link does not exist. */
struct lsim_topo {
	struct lsim_topo_params p;
	int32_t n_gpus, n_switches, n_tors;
	int32_t switches_per_node;
	int32_t *pcie_up, *pcie_down;	  /* per GPU: GPU -> switch, back */
	int32_t *nvlink_up, *nvlink_down; /* per GPU: GPU -> NVSwitch, back */
	int32_t *host;			  /* per switch (node-major) */
	int32_t *nic_out, *nic_in;	  /* per node: node -> ToR, back */
	int32_t *tor_up, *tor_down;	  /* per ToR: ToR -> spine, back */
	int32_t spine;
	int32_t storage;    /* storage service egress (reads) */
	int32_t storage_in; /* and ingress (writes: checkpoints) */
};

/* Adds the cluster's links to net. GPUs are numbered node-major:
 * gpu = node * gpus_per_node + local index. On failure t holds nothing
 * and the links already added stay in net, unused. */
int lsim_topo_build(struct lsim_topo *t, struct lsim_net *net,
		    const struct lsim_topo_params *p, struct lsim_diag *d);
void lsim_topo_release(struct lsim_topo *t);

int32_t lsim_topo_node_of(const struct lsim_topo *t, int32_t gpu);

/* The ends of a link, as the report names them ("gpu 3", "node 0 switch 1",
 * "node 0 host" (the root complex), "node 0 nvswitch", "node 0 bridge 1",
 * "node 0", "tor 0", "spine", "storage"), at most LSIM_LINK_END_LEN bytes
 * with the NUL. */
#define LSIM_LINK_END_LEN 48
typedef char lsim_link_end[LSIM_LINK_END_LEN];

/* Writes the ends of each of t's links into from[id] and to[id] for ids
 * below n_links; other entries are left as they are. A switch's uplink
 * (kind host) is shared by both directions: from is the switch. */
void lsim_topo_link_ends(const struct lsim_topo *t, int32_t n_links,
			 lsim_link_end *from, lsim_link_end *to);

/*
 * Paths, written to out[LSIM_PATH_MAX]; each returns the hop count, or
 * LSIM_EINVAL for a GPU index out of range (or src == dst).
 *   storage -> GPU: storage, [spine], tor_down, nic_in, host, pcie_down
 *   GPU -> storage: pcie_up, host, nic_out, tor_up, [spine], storage_in
 *   GPU -> host:    pcie_up, host
 *   host -> GPU:    host, pcie_down
 *   GPU -> GPU, one node: nvlink_up, nvlink_down; without NVLink
 *                   pcie_up, pcie_down under one switch with P2P on,
 *                   else pcie_up, host(src), [host(dst) if another
 *                   switch], pcie_down
 *   GPU -> GPU, two nodes: pcie_up, host, nic_out, [tor_up, [spine],
 *                   tor_down if another ToR], nic_in, host, pcie_down
 */
int lsim_topo_path_storage_to_gpu(const struct lsim_topo *t, int32_t gpu,
				  int32_t *out);
int lsim_topo_path_gpu_to_storage(const struct lsim_topo *t, int32_t gpu,
				  int32_t *out);
int lsim_topo_path_gpu_to_host(const struct lsim_topo *t, int32_t gpu,
			       int32_t *out);
int lsim_topo_path_host_to_gpu(const struct lsim_topo *t, int32_t gpu,
			       int32_t *out);
int lsim_topo_path_gpu_to_gpu(const struct lsim_topo *t, int32_t src,
			      int32_t dst, int32_t *out);

#endif
