/*
 * synchronizers.c - synchronizer policies: the control plane between the
 * scheduler and the instances. none is a perfect control plane (requests
 * reach their instance the instant they are admitted); fixed adds a
 * constant dispatch latency (the request travels over the control plane).
 */
#include <stddef.h>

#include "registry.h"

static lsim_time none_delay(void *state, const struct lsim_request_info *r)
{
	return 0;
}

static const struct lsim_synchronizer_ops none_ops = {.dispatch_delay = none_delay};

const struct lsim_policy_type lsim_sync_none = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_SYNCHRONIZER,
	.name = "none", .summary = "a perfect control plane: no dispatch delay, no failures",
	.ops = &none_ops,
};

struct fixed_state {
	lsim_time delay;
};

static lsim_time fixed_delay(void *state, const struct lsim_request_info *r)
{
	return ((const struct fixed_state *)state)->delay;
}

static const struct lsim_synchronizer_ops fixed_ops = {.dispatch_delay = fixed_delay};

static const struct lsim_keydef fixed_params[] = {
	{"delay", LSIM_K_TIME, offsetof(struct fixed_state, delay), "1ms", 0, 1e12,
	 NULL, "control-plane latency from admission to the instance", ""},
};

const struct lsim_policy_type lsim_sync_fixed = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_SYNCHRONIZER,
	.name = "fixed", .summary = "a constant control-plane dispatch latency",
	.state_size = sizeof(struct fixed_state), .params = fixed_params,
	.n_params = 1, .ops = &fixed_ops,
};
