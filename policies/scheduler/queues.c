/*
 * queues.c - scheduler policies that order an instance's waiting queue:
 * fcfs (arrival), sjf (shortest predicted job first: prompt plus predicted
 * output tokens), priority (the QoS class's priority, then arrival) and
 * edf (earliest deadline: arrival + the class's TTFT target).
 */
#include <stddef.h>

#include "registry.h"

static double fcfs_key(void *state, const struct lsim_request_info *r)
{
	return (double)r->arrival;
}

static const struct lsim_scheduler_ops fcfs_ops = {.queue_key = fcfs_key};

const struct lsim_policy_type lsim_queue_fcfs = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_SCHEDULER,
	.name = "fcfs", .summary = "serve the waiting queue in arrival order",
	.ops = &fcfs_ops,
};

struct sjf_state {
	double prompt_weight;
};

static double sjf_key(void *state, const struct lsim_request_info *r)
{
	const struct sjf_state *s = state;
	double out = r->predicted_output > 0 ? r->predicted_output : 0;
	return s->prompt_weight * r->prompt_tokens + out;
}

static const struct lsim_scheduler_ops sjf_ops = {.queue_key = sjf_key};

static const struct lsim_keydef sjf_params[] = {
	{"prompt_weight", LSIM_K_DOUBLE, offsetof(struct sjf_state, prompt_weight),
	 "0.0", 0, 1e3, NULL,
	 "weight of a prompt token relative to an output token in the job size",
	 "output tokens per prompt token"},
};

const struct lsim_policy_type lsim_queue_sjf = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_SCHEDULER,
	.name = "sjf",
	.summary = "shortest predicted job first (profiler's output prediction)",
	.state_size = sizeof(struct sjf_state), .params = sjf_params,
	.n_params = 1, .ops = &sjf_ops,
};

static double prio_key(void *state, const struct lsim_request_info *r)
{
	/* Priority first; arrival breaks ties within a priority (arrival is
	 * below 2^53 ns, so the sum keeps both exact for priorities < 1000). */
	return (double)r->priority * 9.0e15 + (double)r->arrival;
}

static const struct lsim_scheduler_ops prio_ops = {.queue_key = prio_key};

const struct lsim_policy_type lsim_queue_priority = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_SCHEDULER,
	.name = "priority",
	.summary = "serve the most urgent QoS class first, FCFS within a class",
	.ops = &prio_ops,
};

static double edf_key(void *state, const struct lsim_request_info *r)
{
	return (double)r->deadline;
}

static const struct lsim_scheduler_ops edf_ops = {.queue_key = edf_key};

const struct lsim_policy_type lsim_queue_edf = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_SCHEDULER,
	.name = "edf",
	.summary = "earliest deadline first (arrival + the class's TTFT target)",
	.ops = &edf_ops,
};
