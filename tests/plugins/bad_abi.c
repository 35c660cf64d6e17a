/*
 * bad_abi.c - a plugin that claims a future ABI version, to test that
 * llmsim refuses it with a clear message.
 */
#include <stddef.h>

#include "llmsim/policy.h"

static double key(void *state, const struct lsim_request_info *r)
{
	(void)state;
	return (double)r->arrival;
}

static const struct lsim_scheduler_ops ops = {.queue_key = key};

static const struct lsim_policy_type future = {
	.abi = LSIM_POLICY_ABI + 1,
	.kind = LSIM_KIND_SCHEDULER,
	.name = "future",
	.summary = "built for an ABI this llmsim does not have",
	.ops = &ops,
};

const struct lsim_policy_type *const *lsim_plugin_policies(size_t *n);

const struct lsim_policy_type *const *lsim_plugin_policies(size_t *n)
{
	static const struct lsim_policy_type *const types[] = {&future};
	*n = 1;
	return types;
}
