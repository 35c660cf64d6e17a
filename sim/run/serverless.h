/*
 * serverless.h - serverless serving (docs/serverless.md): instance groups
 * that scale to zero after a keep-alive and from zero on the next
 * request, eviction of idle instances by the allocator to make room, the
 * storage tiers a cold start loads weights from (per node a host-DRAM
 * cache and a local SSD, then the remote storage service), and the
 * metrics a serverless study reports. Private to the core.
 */
#ifndef LLMSIM_SERVERLESS_H
#define LLMSIM_SERVERLESS_H

#include <stdbool.h>
#include <stdint.h>

#include "llmsim/engine.h"
#include "report/report.h"

struct lsim_sim;
struct lsim_instance;
struct lsim_policy;
struct lsim_serverless;

/* Tiers a cold start loads from, fastest first. */
enum lsim_sl_tier { LSIM_TIER_HOST, LSIM_TIER_SSD, LSIM_TIER_REMOTE, LSIM_TIER_COUNT };

/* One node's storage tiers (all 0: only the remote storage service). */
struct lsim_sl_node_cfg {
	double host_cache;   /* bytes of host DRAM for weights (0: none) */
	double ssd_bw;	     /* B/s read (0: no SSD) */
	double ssd_capacity; /* bytes */
	lsim_time ssd_latency;
	bool ssd_preload;    /* every group's weights on the SSD at start */
};

/* One instance group as serverless serving sees it. */
struct lsim_sl_group_cfg {
	bool serverless;	 /* scales to and from zero */
	lsim_time keep_alive;	 /* idle this long: scaled in */
	double weight_bytes;	 /* its checkpoint, all GPUs together */
	int32_t gpu_kind;	 /* same number: same GPU kind */
};

/*
 * Attaches serverless serving to s (after its network and fleet are set
 * up, before the run): adds each node's SSD link to the network. alloc
 * (borrowed) is the allocator whose evict op picks victims.
 */
int lsim_sl_create(struct lsim_sim *s, const struct lsim_sl_node_cfg *nodes,
		   int32_t n_nodes, const struct lsim_sl_group_cfg *groups,
		   int32_t n_groups, const struct lsim_policy *alloc,
		   struct lsim_diag *d);
void lsim_sl_destroy(struct lsim_serverless *sl);

/* The node whose local SSD link is `link`, or -1. */
int32_t lsim_sl_ssd_node(const struct lsim_sim *s, int32_t link);

/* Is group g scaled by demand and keep-alive (not by the adaptor)? */
bool lsim_sl_managed(const struct lsim_sim *s, int32_t g);
/* No instance of the request's model is live: a serverless group of the
 * model (model < 0: any model; the first serverless group) starts one
 * (evicting idle ones if need be, or waiting for GPUs).
 * True: hold the request (it is marked as delayed by a load). */
bool lsim_sl_demand(struct lsim_sim *s, int32_t req, int32_t model);
/* The request is held while an instance of its model loads. */
void lsim_sl_mark_held(struct lsim_sim *s, int32_t req);
/* The request was routed to in (NULL: not routed now): a held one's wait
 * is a cold-start delay; in is busy again. */
void lsim_sl_routed(struct lsim_sim *s, int32_t req, const struct lsim_instance *in);
/* The instance may have gone idle (a request ended, it became ready):
 * its keep-alive starts. */
void lsim_sl_maybe_idle(struct lsim_sim *s, struct lsim_instance *in);
/* An instance stopped and freed its GPUs: waiting scale-outs try again. */
void lsim_sl_gpus_freed(struct lsim_sim *s);
/* The cold start's path for the instance's k-th GPU from the fastest tier
 * that holds its weights (chosen at k = 0); the hop count, or < 0. */
int lsim_sl_load_path(struct lsim_sim *s, struct lsim_instance *in, int32_t k,
		      int32_t *path);
/* The instance's last load flow ended: the cache entry it read from is
 * unpinned and (unless its machine failed) the node's caches keep a copy. */
void lsim_sl_loaded(struct lsim_sim *s, struct lsim_instance *in);
/* The serverless summary (with GPU-seconds from the instance records). */
int lsim_sl_summary(const struct lsim_sim *s, const struct lsim_inst_record *insts,
		    size_t n_insts, struct lsim_serverless_summary *out);

#endif
