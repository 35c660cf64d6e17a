/*
 * allocators.c - allocator policies that place a replica's tensor-parallel
 * group on one node: first_fit (lowest-numbered node that fits), best_fit
 * (the node left with the fewest free GPUs, packing tightly) and spread
 * (the node with the fewest replicas, then the most free GPUs), and
 * lru_idle: first_fit placement that, when nothing fits, evicts the idle
 * serverless instance unused longest (docs/serverless.md). The core has
 * already checked GPU kind, free GPUs and memory (`fits`).
 */
#include <stddef.h>

#include "registry.h"

static int32_t first_fit(void *state, const struct lsim_alloc_request *r,
			 const struct lsim_node_info *nodes, int32_t n)
{
	for (int32_t i = 0; i < n; i++)
		if (nodes[i].fits)
			return i;
	return -1;
}

static int32_t best_fit(void *state, const struct lsim_alloc_request *r,
			const struct lsim_node_info *nodes, int32_t n)
{
	int32_t best = -1;
	for (int32_t i = 0; i < n; i++)
		if (nodes[i].fits &&
		    (best < 0 || nodes[i].gpus_free < nodes[best].gpus_free))
			best = i;
	return best;
}

static int32_t spread(void *state, const struct lsim_alloc_request *r,
		      const struct lsim_node_info *nodes, int32_t n)
{
	int32_t best = -1;
	for (int32_t i = 0; i < n; i++) {
		if (!nodes[i].fits)
			continue;
		if (best < 0 || nodes[i].instances < nodes[best].instances ||
		    (nodes[i].instances == nodes[best].instances &&
		     nodes[i].gpus_free > nodes[best].gpus_free))
			best = i;
	}
	return best;
}

/* The candidate idle longest (the smallest idle_since; the lowest id on a
 * tie): least-recently-used eviction. */
static int32_t lru_idle(void *state, const struct lsim_alloc_request *r,
			const struct lsim_evict_candidate *c, int32_t n)
{
	int32_t best = -1;
	for (int32_t i = 0; i < n; i++)
		if (best < 0 || c[i].idle_since < c[best].idle_since ||
		    (c[i].idle_since == c[best].idle_since && c[i].instance < c[best].instance))
			best = i;
	return best;
}

/* The candidate that served fewest requests (least frequently used); on
 * a tie the one idle longest, then the lowest id. */
static int32_t lfu_idle(void *state, const struct lsim_alloc_request *r,
			const struct lsim_evict_candidate *c, int32_t n)
{
	int32_t best = -1;
	for (int32_t i = 0; i < n; i++)
		if (best < 0 || c[i].served < c[best].served ||
		    (c[i].served == c[best].served &&
		     (c[i].idle_since < c[best].idle_since ||
		      (c[i].idle_since == c[best].idle_since && c[i].instance < c[best].instance))))
			best = i;
	return best;
}

static const struct lsim_allocator_ops lru_idle_ops = {.place = first_fit, .evict = lru_idle};
static const struct lsim_allocator_ops lfu_idle_ops = {.place = first_fit, .evict = lfu_idle};
static const struct lsim_allocator_ops first_fit_ops = {.place = first_fit};
static const struct lsim_allocator_ops best_fit_ops = {.place = best_fit};
static const struct lsim_allocator_ops spread_ops = {.place = spread};

const struct lsim_policy_type lsim_alloc_first_fit = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_ALLOCATOR,
	.name = "first_fit", .summary = "the lowest-numbered node that fits",
	.ops = &first_fit_ops,
};

const struct lsim_policy_type lsim_alloc_best_fit = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_ALLOCATOR,
	.name = "best_fit",
	.summary = "the fitting node left with the fewest free GPUs (tight packing)",
	.ops = &best_fit_ops,
};

const struct lsim_policy_type lsim_alloc_spread = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_ALLOCATOR,
	.name = "spread",
	.summary = "the fitting node with the fewest replicas, then the most free GPUs",
	.ops = &spread_ops,
};

const struct lsim_policy_type lsim_alloc_lru_idle = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_ALLOCATOR,
	.name = "lru_idle",
	.summary = "first_fit; with no room, evicts the idle serverless instance unused longest",
	.ops = &lru_idle_ops,
};

const struct lsim_policy_type lsim_alloc_lfu_idle = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_ALLOCATOR,
	.name = "lfu_idle",
	.summary = "first_fit; with no room, evicts the idle serverless instance that served fewest requests",
	.ops = &lfu_idle_ops,
};
