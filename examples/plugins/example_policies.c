/*
 * example_policies.c - an example policy plugin: two scheduler policies
 * built as a shared object that a scenario loads with
 *
 *   scheduler:
 *     queue: {plugin: ../build/examples/libexample_policies.so,
 *             name: shortest_prompt}
 *
 * shortest_prompt orders a waiting queue by prompt length (a queue order
 * that needs no profiler); hash_affinity routes a request to instance
 * (id * stride) mod n, a stand-in for session affinity. It uses only the
 * public headers.
 */
#include <stddef.h>

#include "llmsim/policy.h"

static double shortest_prompt_key(void *state, const struct lsim_request_info *r)
{
	(void)state;
	return (double)r->prompt_tokens;
}

static const struct lsim_scheduler_ops shortest_prompt_ops = {
	.queue_key = shortest_prompt_key,
};

static const struct lsim_policy_type shortest_prompt = {
	.abi = LSIM_POLICY_ABI,
	.kind = LSIM_KIND_SCHEDULER,
	.name = "shortest_prompt",
	.summary = "serve the waiting request with the shortest prompt first",
	.ops = &shortest_prompt_ops,
};

struct affinity_state {
	int64_t stride;
};

static int32_t affinity_route(void *state, const struct lsim_request_info *r,
			      const struct lsim_instance_info *inst, int32_t n)
{
	(void)inst;
	const struct affinity_state *s = state;
	return (int32_t)((r->id * (uint64_t)s->stride) % (uint64_t)n);
}

static const struct lsim_scheduler_ops affinity_ops = {.route = affinity_route};

static const struct lsim_keydef affinity_params[] = {
	{"stride", LSIM_K_INT, offsetof(struct affinity_state, stride), "1", 1,
	 1e6, NULL, "multiplier of the request id before the modulo", ""},
};

static const struct lsim_policy_type hash_affinity = {
	.abi = LSIM_POLICY_ABI,
	.kind = LSIM_KIND_SCHEDULER,
	.name = "hash_affinity",
	.summary = "route request id * stride modulo the instance count",
	.state_size = sizeof(struct affinity_state),
	.params = affinity_params,
	.n_params = 1,
	.ops = &affinity_ops,
};

const struct lsim_policy_type *const *lsim_plugin_policies(size_t *n);

const struct lsim_policy_type *const *lsim_plugin_policies(size_t *n)
{
	static const struct lsim_policy_type *const types[] = {
		&shortest_prompt, &hash_affinity,
	};
	*n = sizeof types / sizeof types[0];
	return types;
}
