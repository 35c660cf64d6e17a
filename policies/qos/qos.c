/*
 * qos.c - QoS-manager policies deciding admission at arrival: none (admit
 * everything), admission (reject a request whose target queue is at a
 * bound, or whose predicted TTFT misses its class's target), token_bucket
 * (a rate limit per QoS class). Per-class SLO attainment and goodput are
 * reported by the core for every policy.
 */
#include <stddef.h>
#include <stdlib.h>

#include "registry.h"

/* ---- none ---- */

static int32_t none_admit(void *state, const struct lsim_request_info *r,
			  const struct lsim_instance_info *t, lsim_time now)
{
	return LSIM_REJECT_NONE;
}

static const struct lsim_qos_ops none_ops = {.admit = none_admit};

const struct lsim_policy_type lsim_qos_none = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_QOS,
	.flags = LSIM_POLICY_COUNTS_ONLY,
	.name = "none", .summary = "admit every request (SLOs are still measured)",
	.ops = &none_ops,
};

/* ---- admission ---- */

struct adm_state {
	int64_t max_waiting;
	double tokens_per_s;
	double slack;
};

static int32_t adm_admit(void *state, const struct lsim_request_info *r,
			 const struct lsim_instance_info *t, lsim_time now)
{
	const struct adm_state *s = state;
	if (s->max_waiting > 0 && t->waiting >= s->max_waiting)
		return LSIM_REJECT_QUEUE_FULL;
	if (s->tokens_per_s > 0 && r->deadline != INT64_MAX) {
		/* The work ahead of it plus its own prompt, at the given
		 * processing rate, against the class's TTFT target. */
		double wait_s = (double)(t->queued_tokens + r->prompt_tokens) /
				s->tokens_per_s;
		double target_s = (double)(r->deadline - r->arrival) / 1e9;
		if (wait_s > s->slack * target_s)
			return LSIM_REJECT_SLO_MISS;
	}
	return LSIM_REJECT_NONE;
}

static const struct lsim_qos_ops adm_ops = {.admit = adm_admit};

#define A(f) offsetof(struct adm_state, f)
static const struct lsim_keydef adm_params[] = {
	{"max_waiting", LSIM_K_INT, A(max_waiting), "0", 0, 1e9, NULL,
	 "reject when the target's waiting queue holds this many (0: no bound)", "requests"},
	{"tokens_per_s", LSIM_K_DOUBLE, A(tokens_per_s), "0", 0, 1e9, NULL,
	 "assumed processing rate of an instance for the TTFT prediction (0: off)", "tokens/s"},
	{"slack", LSIM_K_DOUBLE, A(slack), "1.0", 0.01, 100, NULL,
	 "reject when predicted TTFT exceeds slack x the class's TTFT target", ""},
};
#undef A

const struct lsim_policy_type lsim_qos_admission = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_QOS,
	.name = "admission",
	.summary = "reject at a queue bound or when predicted to miss the TTFT target",
	.state_size = sizeof(struct adm_state), .params = adm_params,
	.n_params = 3, .ops = &adm_ops,
};

/* ---- token_bucket ---- */

struct tb_state {
	double rate;
	double burst;
	double *tokens; /* per class */
	lsim_time *last;
	int32_t n;
};

static int tb_init(void *state, const struct lsim_policy_ctx *ctx)
{
	struct tb_state *s = state;
	s->n = ctx->n_classes > 0 ? ctx->n_classes : 1;
	s->tokens = calloc((size_t)s->n, sizeof *s->tokens);
	s->last = calloc((size_t)s->n, sizeof *s->last);
	if (!s->tokens || !s->last)
		return LSIM_ENOMEM;
	for (int32_t i = 0; i < s->n; i++)
		s->tokens[i] = s->burst;
	return 0;
}

static void tb_fini(void *state)
{
	struct tb_state *s = state;
	free(s->tokens);
	free(s->last);
}

static int32_t tb_admit(void *state, const struct lsim_request_info *r,
			const struct lsim_instance_info *t, lsim_time now)
{
	struct tb_state *s = state;
	int32_t c = r->qos_class >= 0 && r->qos_class < s->n ? r->qos_class : 0;
	s->tokens[c] += s->rate * (double)(now - s->last[c]) / 1e9;
	if (s->tokens[c] > s->burst)
		s->tokens[c] = s->burst;
	s->last[c] = now;
	if (s->tokens[c] < 1.0 - 1e-9)
		return LSIM_REJECT_RATE_LIMIT;
	s->tokens[c] -= 1.0;
	return LSIM_REJECT_NONE;
}

static const struct lsim_qos_ops tb_ops = {.admit = tb_admit};

#define B(f) offsetof(struct tb_state, f)
static const struct lsim_keydef tb_params[] = {
	{"rate", LSIM_K_DOUBLE, B(rate), NULL, 1e-9, 1e9, NULL,
	 "requests admitted per second per class, sustained", "requests/s"},
	{"burst", LSIM_K_DOUBLE, B(burst), "1", 1, 1e9, NULL,
	 "bucket size: requests admitted back to back", "requests"},
};
#undef B

const struct lsim_policy_type lsim_qos_token_bucket = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_QOS,
	.flags = LSIM_POLICY_COUNTS_ONLY,
	.name = "token_bucket",
	.summary = "rate-limit each QoS class with a token bucket",
	.state_size = sizeof(struct tb_state), .params = tb_params,
	.n_params = 2, .init = tb_init, .fini = tb_fini, .ops = &tb_ops,
};
