/*
 * profilers.c - profiler policies that predict a request's output length
 * at arrival: oracle (the true length), mean (running mean of finished
 * requests), bucket (a quantile of the outputs seen per prompt-length
 * bucket, learned online).
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"

/* ---- oracle ---- */

static int32_t oracle_predict(void *state, const struct lsim_request_info *r)
{
	return r->true_output;
}

static const struct lsim_profiler_ops oracle_ops = {.predict = oracle_predict};

const struct lsim_policy_type lsim_prof_oracle = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_PROFILER,
	.name = "oracle", .summary = "knows every request's true output length",
	.flags = LSIM_POLICY_ORACLE, .ops = &oracle_ops,
};

/* ---- mean ---- */

struct mean_state {
	int64_t prior;
	double sum;
	int64_t n;
};

static int32_t mean_predict(void *state, const struct lsim_request_info *r)
{
	const struct mean_state *s = state;
	if (s->n == 0)
		return (int32_t)s->prior;
	return (int32_t)llround(s->sum / (double)s->n);
}

static void mean_observe(void *state, const struct lsim_request_info *r,
			 int32_t out, lsim_time service)
{
	struct mean_state *s = state;
	s->sum += out;
	s->n++;
}

static const struct lsim_profiler_ops mean_ops = {mean_predict, mean_observe};

static const struct lsim_keydef mean_params[] = {
	{"prior", LSIM_K_INT, offsetof(struct mean_state, prior), "256", 1, 1e7,
	 NULL, "prediction before any request has finished", "tokens"},
};

const struct lsim_policy_type lsim_prof_mean = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_PROFILER,
	.name = "mean", .summary = "running mean output length of finished requests",
	.state_size = sizeof(struct mean_state), .params = mean_params,
	.n_params = 1, .ops = &mean_ops,
};

/* ---- bucket ---- */

#define BUCKET_MAX 64
#define BUCKET_SAMPLES 512 /* reservoir per bucket */

struct bucket_state {
	int64_t buckets;
	int64_t max_prompt;
	double quantile;
	int64_t prior;
	/* per bucket: the latest outputs in arrival order (ring) and the same
	 * values kept sorted, so a prediction is O(1) and an observation
	 * O(BUCKET_SAMPLES) memmove */
	int32_t *ring;
	int32_t *sorted;
	int32_t count[BUCKET_MAX];
	int32_t next[BUCKET_MAX];
};

static int bucket_init(void *state, const struct lsim_policy_ctx *ctx)
{
	struct bucket_state *s = state;
	s->ring = calloc((size_t)s->buckets * BUCKET_SAMPLES, sizeof *s->ring);
	s->sorted = calloc((size_t)s->buckets * BUCKET_SAMPLES, sizeof *s->sorted);
	return s->ring && s->sorted ? 0 : LSIM_ENOMEM;
}

static void bucket_fini(void *state)
{
	struct bucket_state *s = state;
	free(s->ring);
	free(s->sorted);
}

/* Buckets are equal-width in log2(prompt) up to max_prompt. */
static int which_bucket(const struct bucket_state *s, int32_t prompt)
{
	double x = log2((double)(prompt > 1 ? prompt : 1)) /
		   log2((double)s->max_prompt);
	int b = (int)(x * (double)s->buckets);
	if (b < 0)
		b = 0;
	if (b >= s->buckets)
		b = (int)s->buckets - 1;
	return b;
}

/* First index in v[0..n) whose value is >= x. */
static int32_t lower_bound(const int32_t *v, int32_t n, int32_t x)
{
	int32_t lo = 0, hi = n;
	while (lo < hi) {
		int32_t mid = lo + (hi - lo) / 2;
		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int32_t bucket_predict(void *state, const struct lsim_request_info *r)
{
	const struct bucket_state *s = state;
	int b = which_bucket(s, r->prompt_tokens);
	int32_t n = s->count[b];
	if (n == 0)
		return (int32_t)s->prior;
	int32_t k = (int32_t)floor(s->quantile * (double)(n - 1) + 0.5);
	return s->sorted[(size_t)b * BUCKET_SAMPLES + (size_t)k];
}

static void bucket_observe(void *state, const struct lsim_request_info *r,
			   int32_t out, lsim_time service)
{
	struct bucket_state *s = state;
	int b = which_bucket(s, r->prompt_tokens);
	int32_t *ring = s->ring + (size_t)b * BUCKET_SAMPLES;
	int32_t *sorted = s->sorted + (size_t)b * BUCKET_SAMPLES;
	int32_t n = s->count[b];
	if (n == BUCKET_SAMPLES) { /* drop the oldest value from the window */
		int32_t i = lower_bound(sorted, n, ring[s->next[b]]);
		memmove(sorted + i, sorted + i + 1, (size_t)(n - i - 1) * sizeof *sorted);
		n--;
	}
	int32_t i = lower_bound(sorted, n, out);
	memmove(sorted + i + 1, sorted + i, (size_t)(n - i) * sizeof *sorted);
	sorted[i] = out;
	s->count[b] = n + 1;
	ring[s->next[b]] = out;
	s->next[b] = (s->next[b] + 1) % BUCKET_SAMPLES;
}

static const struct lsim_profiler_ops bucket_ops = {bucket_predict, bucket_observe};

#define B(f) offsetof(struct bucket_state, f)
static const struct lsim_keydef bucket_params[] = {
	{"buckets", LSIM_K_INT, B(buckets), "8", 1, BUCKET_MAX, NULL,
	 "prompt-length buckets (log-spaced)", "buckets"},
	{"max_prompt", LSIM_K_INT, B(max_prompt), "32768", 2, 1e8, NULL,
	 "prompt length of the top bucket's upper edge", "tokens"},
	{"quantile", LSIM_K_DOUBLE, B(quantile), "0.5", 0, 1, NULL,
	 "quantile of the bucket's recent outputs used as the prediction", ""},
	{"prior", LSIM_K_INT, B(prior), "256", 1, 1e7, NULL,
	 "prediction for a bucket with no history", "tokens"},
};
#undef B

const struct lsim_policy_type lsim_prof_bucket = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_PROFILER,
	.name = "bucket",
	.summary = "per prompt-length bucket, a quantile of the last 512 outputs",
	.state_size = sizeof(struct bucket_state), .params = bucket_params,
	.n_params = 4, .init = bucket_init, .fini = bucket_fini,
	.ops = &bucket_ops,
};
