/*
 * abi3_alloc.c - an allocator as a plugin built against ABI 3 would have
 * it: its ops table holds place only (evict was appended at ABI 4). It
 * must still load, and never be asked to evict (the core reading past
 * the end of its table would be undefined behaviour, caught by ASan).
 */
#include <stddef.h>

#include "llmsim/policy.h"

/* struct lsim_allocator_ops as ABI 3 declared it */
struct abi3_allocator_ops {
	int32_t (*place)(void *state, const struct lsim_alloc_request *r,
			 const struct lsim_node_info *nodes, int32_t n);
};

/* The first node with room. */
static int32_t first(void *state, const struct lsim_alloc_request *r,
		     const struct lsim_node_info *nodes, int32_t n)
{
	(void)state;
	(void)r;
	for (int32_t i = 0; i < n; i++)
		if (nodes[i].fits)
			return i;
	return -1;
}

static const struct abi3_allocator_ops ops = {.place = first};

static const struct lsim_policy_type abi3 = {
	.abi = 3,
	.kind = LSIM_KIND_ALLOCATOR,
	.name = "abi3_first",
	.summary = "first fit, built for ABI 3 (no evict op)",
	.ops = &ops,
};

const struct lsim_policy_type *const *lsim_plugin_policies(size_t *n);

const struct lsim_policy_type *const *lsim_plugin_policies(size_t *n)
{
	static const struct lsim_policy_type *const types[] = {&abi3};
	*n = 1;
	return types;
}
