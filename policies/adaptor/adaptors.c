/*
 * adaptors.c - adaptor policies deciding how many instances run. static
 * keeps the configured instances for the whole run.
 */
#include "registry.h"

static int32_t static_desired(void *state, const struct lsim_scale_group *g,
			      const struct lsim_instance_info *inst, int32_t n,
			      lsim_time now)
{
	return g->live;
}

static const struct lsim_adaptor_ops static_ops = {.desired = static_desired};

const struct lsim_policy_type lsim_adapt_static = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_ADAPTOR,
	.name = "static", .summary = "keep the configured instances for the whole run",
	.ops = &static_ops,
};
