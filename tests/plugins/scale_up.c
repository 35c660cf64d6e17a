/*
 * scale_up.c - an adaptor plugin that always wants one more instance, to
 * test that a run stops with a clear error while scaling is unsupported.
 */
#include <stddef.h>

#include "llmsim/policy.h"

static int32_t more(void *state, const struct lsim_scale_group *g,
		    const struct lsim_instance_info *inst, int32_t n, lsim_time now)
{
	(void)state;
	(void)inst;
	(void)n;
	(void)now;
	return g->live + 1;
}

static const struct lsim_adaptor_ops ops = {.desired = more};

static const struct lsim_policy_type scale_up = {
	.abi = LSIM_POLICY_ABI,
	.kind = LSIM_KIND_ADAPTOR,
	.name = "scale_up",
	.summary = "always asks for one more instance",
	.ops = &ops,
};

const struct lsim_policy_type *const *lsim_plugin_policies(size_t *n);

const struct lsim_policy_type *const *lsim_plugin_policies(size_t *n)
{
	static const struct lsim_policy_type *const types[] = {&scale_up};
	*n = 1;
	return types;
}
