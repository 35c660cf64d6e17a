/*
 * allocators.c - allocator policies that place a replica's tensor-parallel
 * group on one node: first_fit (lowest-numbered node that fits), best_fit
 * (the node left with the fewest free GPUs, packing tightly) and spread
 * (the node with the fewest replicas, then the most free GPUs). The core
 * has already checked GPU kind, free GPUs and memory (`fits`).
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
