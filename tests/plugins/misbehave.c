/*
 * misbehave.c - a plugin whose policies each break their contract in one
 * way, for the bad-input catalogue (tests/bad_inputs): a run using one must
 * stop with exit 2 and a message naming the policy and the plugin.
 *
 *   nan_queue     scheduler queue order: a NaN key
 *   off_router    scheduler router: an instance index past the last one
 *   odd_qos       QoS manager: a reject reason no QoS manager may give
 *   minus_scale   adaptor: -1 instances
 *   past_sync     synchronizer: a negative dispatch delay
 *   fail_start    queue order whose init fails
 */
#include <math.h>
#include <stddef.h>

#include "llmsim/policy.h"

static double nan_key(void *state, const struct lsim_request_info *r)
{
	(void)state;
	return r->id >= 3 ? NAN : (double)r->id;
}

static int32_t off_route(void *state, const struct lsim_request_info *r,
			 const struct lsim_instance_info *inst, int32_t n)
{
	(void)state;
	(void)r;
	(void)inst;
	return n;
}

static int32_t odd_admit(void *state, const struct lsim_request_info *r,
			 const struct lsim_instance_info *target, lsim_time now)
{
	(void)state;
	(void)target;
	(void)now;
	return r->id == 5 ? 42 : 0;
}

static int32_t minus_desired(void *state, const struct lsim_scale_group *g,
			     const struct lsim_instance_info *inst, int32_t n, lsim_time now)
{
	(void)state;
	(void)g;
	(void)inst;
	(void)n;
	(void)now;
	return -1;
}

static lsim_time past_delay(void *state, const struct lsim_request_info *r)
{
	(void)state;
	(void)r;
	return -1000;
}

static bool never_retry(void *state, const struct lsim_request_info *r, int32_t attempts)
{
	(void)state;
	(void)r;
	(void)attempts;
	return false;
}

static int fail_init(void *state, const struct lsim_policy_ctx *ctx)
{
	(void)state;
	(void)ctx;
	return LSIM_EINVAL;
}

static const struct lsim_scheduler_ops nan_queue_ops = {.queue_key = nan_key};
static const struct lsim_scheduler_ops off_router_ops = {.route = off_route};
static const struct lsim_qos_ops odd_qos_ops = {.admit = odd_admit};
static const struct lsim_adaptor_ops minus_scale_ops = {.desired = minus_desired};
static const struct lsim_synchronizer_ops past_sync_ops = {
	.dispatch_delay = past_delay, .retry = never_retry,
};

#define TYPE(var, k, nm, o, i)                                                   \
	static const struct lsim_policy_type var = {                             \
		.abi = LSIM_POLICY_ABI, .kind = k, .name = nm,                   \
		.summary = "breaks its contract (tests)", .init = i, .ops = o,  \
	}

TYPE(nan_queue, LSIM_KIND_SCHEDULER, "nan_queue", &nan_queue_ops, NULL);
TYPE(off_router, LSIM_KIND_SCHEDULER, "off_router", &off_router_ops, NULL);
TYPE(odd_qos, LSIM_KIND_QOS, "odd_qos", &odd_qos_ops, NULL);
TYPE(minus_scale, LSIM_KIND_ADAPTOR, "minus_scale", &minus_scale_ops, NULL);
TYPE(past_sync, LSIM_KIND_SYNCHRONIZER, "past_sync", &past_sync_ops, NULL);
TYPE(fail_start, LSIM_KIND_SCHEDULER, "fail_start", &nan_queue_ops, fail_init);

const struct lsim_policy_type *const *lsim_plugin_policies(size_t *n);

const struct lsim_policy_type *const *lsim_plugin_policies(size_t *n)
{
	static const struct lsim_policy_type *const types[] = {
		&nan_queue, &off_router, &odd_qos, &minus_scale, &past_sync, &fail_start,
	};
	*n = sizeof types / sizeof types[0];
	return types;
}
