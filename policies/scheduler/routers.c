/*
 * routers.c - scheduler policies that choose the instance a request goes
 * to: round_robin, random, least_outstanding, least_tokens, kv_aware and
 * power_of_two. Each is O(instances) per request at most; ties go to the
 * lowest index so results are deterministic.
 */
#include <gsl/gsl_rng.h>
#include <stddef.h>

#include "registry.h"

/* ---- round_robin ---- */

struct rr_state {
	int32_t next;
};

static int32_t rr_route(void *state, const struct lsim_request_info *r,
			const struct lsim_instance_info *inst, int32_t n)
{
	struct rr_state *s = state;
	int32_t i = s->next % n;
	s->next = (i + 1) % n;
	return i;
}

static const struct lsim_scheduler_ops rr_ops = {.route = rr_route};

const struct lsim_policy_type lsim_sched_round_robin = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_SCHEDULER,
	.name = "round_robin", .summary = "route to instances in turn",
	.state_size = sizeof(struct rr_state), .ops = &rr_ops,
};

/* ---- random ---- */

struct rand_state {
	gsl_rng *rng;
};

static int rand_init(void *state, const struct lsim_policy_ctx *ctx)
{
	((struct rand_state *)state)->rng = ctx->rng;
	return 0;
}

static int32_t rand_route(void *state, const struct lsim_request_info *r,
			  const struct lsim_instance_info *inst, int32_t n)
{
	struct rand_state *s = state;
	return (int32_t)gsl_rng_uniform_int(s->rng, (unsigned long)n);
}

static const struct lsim_scheduler_ops rand_ops = {.route = rand_route};

const struct lsim_policy_type lsim_sched_random = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_SCHEDULER,
	.name = "random", .summary = "route to a uniformly random instance",
	.state_size = sizeof(struct rand_state), .init = rand_init,
	.ops = &rand_ops,
};

/* ---- least_outstanding ---- */

static int32_t lo_route(void *state, const struct lsim_request_info *r,
			const struct lsim_instance_info *inst, int32_t n)
{
	int32_t best = 0;
	for (int32_t i = 1; i < n; i++)
		if (inst[i].outstanding < inst[best].outstanding)
			best = i;
	return best;
}

static const struct lsim_scheduler_ops lo_ops = {.route = lo_route};

const struct lsim_policy_type lsim_sched_least_outstanding = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_SCHEDULER,
	.name = "least_outstanding",
	.summary = "route to the instance with the fewest unfinished requests",
	.ops = &lo_ops,
};

/* ---- least_tokens ---- */

static int32_t lt_route(void *state, const struct lsim_request_info *r,
			const struct lsim_instance_info *inst, int32_t n)
{
	int32_t best = 0;
	for (int32_t i = 1; i < n; i++)
		if (inst[i].queued_tokens < inst[best].queued_tokens)
			best = i;
	return best;
}

static const struct lsim_scheduler_ops lt_ops = {.route = lt_route};

const struct lsim_policy_type lsim_sched_least_tokens = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_SCHEDULER,
	.name = "least_tokens",
	.summary = "route to the instance with the least queued work in tokens",
	.ops = &lt_ops,
};

/* ---- kv_aware ---- */

static int32_t kv_route(void *state, const struct lsim_request_info *r,
			const struct lsim_instance_info *inst, int32_t n)
{
	/* Most free KV blocks net of what its queue will claim. */
	int32_t best = 0;
	double best_v = 0;
	for (int32_t i = 0; i < n; i++) {
		double total = inst[i].kv_total_blocks > 0 ? inst[i].kv_total_blocks : 1;
		double v = (inst[i].kv_free_blocks - (double)inst[i].waiting) / total;
		if (i == 0 || v > best_v) {
			best = i;
			best_v = v;
		}
	}
	return best;
}

static const struct lsim_scheduler_ops kv_ops = {.route = kv_route};

const struct lsim_policy_type lsim_sched_kv_aware = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_SCHEDULER,
	.name = "kv_aware",
	.summary = "route to the instance with the largest free share of KV cache",
	.ops = &kv_ops,
};

/* ---- power_of_two ---- */

struct p2_state {
	int64_t choices;
	gsl_rng *rng;
};

static int p2_init(void *state, const struct lsim_policy_ctx *ctx)
{
	((struct p2_state *)state)->rng = ctx->rng;
	return 0;
}

static int32_t p2_route(void *state, const struct lsim_request_info *r,
			const struct lsim_instance_info *inst, int32_t n)
{
	struct p2_state *s = state;
	int32_t best = -1;
	for (int64_t k = 0; k < s->choices; k++) {
		int32_t i = (int32_t)gsl_rng_uniform_int(s->rng, (unsigned long)n);
		if (best < 0 || inst[i].outstanding < inst[best].outstanding)
			best = i;
	}
	return best;
}

static const struct lsim_scheduler_ops p2_ops = {.route = p2_route};

static const struct lsim_keydef p2_params[] = {
	{"choices", LSIM_K_INT, offsetof(struct p2_state, choices), "2", 1, 64,
	 NULL, "instances sampled per request", "instances"},
};

const struct lsim_policy_type lsim_sched_power_of_two = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_SCHEDULER,
	.name = "power_of_two",
	.summary = "sample d instances at random, route to the least loaded",
	.state_size = sizeof(struct p2_state), .params = p2_params,
	.n_params = 1, .init = p2_init, .ops = &p2_ops,
};
