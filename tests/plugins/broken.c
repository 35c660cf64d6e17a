/*
 * broken.c - plugins whose type objects are malformed, built three times
 * (tests/meson.build), one defect each, for the bad-input catalogue: the
 * loader must refuse each with exit 2 before calling into it.
 *
 *   -DBROKEN_NULL_NAME      a policy whose name is NULL
 *   -DBROKEN_PARAM_OFFSET   a parameter whose offset lies past state_size
 *   -DBROKEN_DATA_ENTRY     lsim_plugin_policies is an array, not a function
 */
#include <stddef.h>
#include <stdint.h>

#include "llmsim/policy.h"

struct state {
	double weight;
};

static double key(void *state, const struct lsim_request_info *r)
{
	(void)state;
	return (double)r->arrival;
}

static const struct lsim_scheduler_ops ops = {.queue_key = key};

static const struct lsim_keydef params[] = {
#ifdef BROKEN_PARAM_OFFSET
	/* written 64 bytes past the 8-byte state */
	{"weight", LSIM_K_DOUBLE, 64, "1", LSIM_NOBOUNDS, NULL, "a weight", NULL},
#else
	{"weight", LSIM_K_DOUBLE, offsetof(struct state, weight), "1", LSIM_NOBOUNDS, NULL,
	 "a weight", NULL},
#endif
};

static const struct lsim_policy_type broken = {
	.abi = LSIM_POLICY_ABI,
	.kind = LSIM_KIND_SCHEDULER,
#ifdef BROKEN_NULL_NAME
	.name = NULL,
#else
	.name = "broken",
#endif
	.summary = "a malformed policy type",
	.state_size = sizeof(struct state),
	.params = params,
	.n_params = 1,
	.ops = &ops,
};

#ifdef BROKEN_DATA_ENTRY
/* the entry point's name on data: calling it would jump into the array */
const uint8_t lsim_plugin_policies[16] = {0};
const struct lsim_policy_type *lsim_broken_type(void);
const struct lsim_policy_type *lsim_broken_type(void)
{
	return &broken;
}
#else
const struct lsim_policy_type *const *lsim_plugin_policies(size_t *n);

const struct lsim_policy_type *const *lsim_plugin_policies(size_t *n)
{
	static const struct lsim_policy_type *const types[] = {&broken};
	*n = 1;
	return types;
}
#endif
