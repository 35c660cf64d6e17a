/*
 * routers.c - scheduler policies that choose the instance a request goes
 * to: round_robin, random, least_outstanding, least_load, least_tokens,
 * kv_aware, power_of_two and prefix_affinity. Each is O(instances) per request at most; ties go to the
 * lowest index so results are deterministic.
 */
#include <gsl/gsl_rng.h>
#include <stddef.h>
#include <string.h>

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
	.flags = LSIM_POLICY_COUNTS_ONLY,
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
	.flags = LSIM_POLICY_COUNTS_ONLY,
	.name = "random", .summary = "route to a uniformly random instance",
	.state_size = sizeof(struct rand_state), .init = rand_init,
	.ops = &rand_ops,
};

/* ---- least_outstanding ---- */

/*
 * Ties go to the tied instances in turn (as NGINX's least_conn does):
 * the scan starts after the instance chosen last, so an idle cluster is
 * served round robin rather than by its first instance.
 */
struct lo_state {
	int32_t next;
};

/* The instance with the fewest outstanding requests, the first of the
 * tied ones from start on. */
static int32_t least_outstanding(const struct lsim_instance_info *inst, int32_t n,
				 int32_t start)
{
	/* (the least so far in a register: each step waits on a compare,
	 * not on a load from the entry it picked) */
	int32_t best = start;
	int64_t least = inst[start].outstanding;
	for (int32_t i = start + 1; i < n; i++) {
		int64_t v = inst[i].outstanding;
		if (v < least) {
			least = v;
			best = i;
		}
	}
	for (int32_t i = 0; i < start; i++) {
		int64_t v = inst[i].outstanding;
		if (v < least) {
			least = v;
			best = i;
		}
	}
	return best;
}

static int32_t lo_route(void *state, const struct lsim_request_info *r,
			const struct lsim_instance_info *inst, int32_t n)
{
	struct lo_state *s = state;
	int32_t best = least_outstanding(inst, n, s->next < n ? s->next : 0);
	s->next = best + 1;
	return best;
}

static const struct lsim_scheduler_ops lo_ops = {.route = lo_route};

const struct lsim_policy_type lsim_sched_least_outstanding = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_SCHEDULER,
	.flags = LSIM_POLICY_COUNTS_ONLY,
	.name = "least_outstanding",
	.summary = "route to the instance with the fewest unfinished requests",
	.state_size = sizeof(struct lo_state), .ops = &lo_ops,
};

/* ---- least_load ---- */

/*
 * vLLM's data-parallel balancer score, waiting_weight x waiting +
 * running_weight x running (4 and 1 in DPLBAsyncMPClient), on the live
 * counts: a request waits while its prompt is not yet scheduled, so the
 * score weighs a queued prompt above a request that is decoding. Requests
 * on their way count as waiting. Ties in turn, as least_outstanding.
 */
struct ll_state {
	int32_t next;
	double w_wait, w_run;
};

static int32_t ll_route(void *state, const struct lsim_request_info *r,
			const struct lsim_instance_info *inst, int32_t n)
{
	struct ll_state *s = state;
	int32_t start = s->next < n ? s->next : 0;
	int32_t best = start;
	double least = 0;
	for (int32_t k = 0; k < n; k++) {
		int32_t i = start + k < n ? start + k : start + k - n;
		double v = s->w_wait * (double)inst[i].waiting +
			   s->w_run * (double)inst[i].running;
		if (k == 0 || v < least) {
			least = v;
			best = i;
		}
	}
	s->next = best + 1;
	return best;
}

static const struct lsim_scheduler_ops ll_ops = {.route = ll_route};

static const struct lsim_keydef ll_params[] = {
	{"waiting_weight", LSIM_K_DOUBLE, offsetof(struct ll_state, w_wait), "4", 0, 1e6,
	 NULL, "weight of a request waiting for its prompt to be scheduled", NULL},
	{"running_weight", LSIM_K_DOUBLE, offsetof(struct ll_state, w_run), "1", 0, 1e6,
	 NULL, "weight of a running (prefilling or decoding) request", NULL},
};

const struct lsim_policy_type lsim_sched_least_load = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_SCHEDULER,
	.flags = LSIM_POLICY_COUNTS_ONLY,
	.name = "least_load",
	.summary = "route to the least waiting_weight x waiting + running_weight x running "
		   "(vLLM's data-parallel balancer)",
	.state_size = sizeof(struct ll_state), .params = ll_params,
	.n_params = 2, .ops = &ll_ops,
};

/* ---- least_tokens ---- */

struct lt_state {
	int32_t next;
};

static int32_t lt_route(void *state, const struct lsim_request_info *r,
			const struct lsim_instance_info *inst, int32_t n)
{
	struct lt_state *s = state; /* ties in turn, as least_outstanding */
	int32_t start = s->next < n ? s->next : 0;
	int32_t best = start;
	int64_t least = inst[start].queued_tokens;
	for (int32_t k = 1; k < n; k++) {
		int32_t i = start + k < n ? start + k : start + k - n;
		int64_t v = inst[i].queued_tokens;
		if (v < least) {
			least = v;
			best = i;
		}
	}
	s->next = best + 1;
	return best;
}

static const struct lsim_scheduler_ops lt_ops = {.route = lt_route};

const struct lsim_policy_type lsim_sched_least_tokens = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_SCHEDULER,
	.name = "least_tokens",
	.summary = "route to the instance with the least queued work in tokens",
	.state_size = sizeof(struct lt_state), .ops = &lt_ops,
};

/* ---- kv_aware ---- */

struct kv_state {
	int32_t next;
};

static int32_t kv_route(void *state, const struct lsim_request_info *r,
			const struct lsim_instance_info *inst, int32_t n)
{
	/* The largest share of KV blocks left free once the work already
	 * routed to it has its blocks: free blocks less the blocks of its
	 * queued tokens (prompts still to compute, in transit included, and
	 * predicted output still to generate). Ties in turn. */
	struct kv_state *s = state;
	int32_t start = s->next < n ? s->next : 0;
	int32_t best = start;
	double best_v = 0;
	for (int32_t k = 0; k < n; k++) {
		int32_t i = start + k < n ? start + k : start + k - n;
		double total = inst[i].kv_total_blocks > 0 ? inst[i].kv_total_blocks : 1;
		double claimed = inst[i].kv_block_tokens > 0
					 ? (double)inst[i].queued_tokens / inst[i].kv_block_tokens
					 : (double)inst[i].waiting;
		double v = (inst[i].kv_free_blocks - claimed) / total;
		if (k == 0 || v > best_v) {
			best = i;
			best_v = v;
		}
	}
	s->next = best + 1;
	return best;
}

static const struct lsim_scheduler_ops kv_ops = {.route = kv_route};

const struct lsim_policy_type lsim_sched_kv_aware = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_SCHEDULER,
	.name = "kv_aware",
	.summary = "route to the instance with the largest free share of KV cache",
	.state_size = sizeof(struct kv_state), .ops = &kv_ops,
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
	/* d distinct instances in a uniformly random order, as Finagle's
	 * and Ray Serve's P2C draw them (with replacement an instance is
	 * compared with itself one time in n); d >= n compares all of them.
	 * The k-th draw is the t-th instance not drawn yet, t uniform below
	 * n - k (the drawn ones kept sorted to skip them). Ties go to the
	 * first drawn. */
	struct p2_state *s = state;
	int32_t d = s->choices < n ? (int32_t)s->choices : n;
	int32_t sorted[64];
	int32_t best = -1;
	for (int32_t k = 0; k < d; k++) {
		int32_t t = (int32_t)gsl_rng_uniform_int(s->rng, (unsigned long)(n - k));
		int32_t m = 0;
		for (; m < k && sorted[m] <= t; m++)
			t++;
		memmove(sorted + m + 1, sorted + m, (size_t)(k - m) * sizeof *sorted);
		sorted[m] = t;
		if (best < 0 || inst[t].outstanding < inst[best].outstanding)
			best = t;
	}
	return best;
}

static const struct lsim_scheduler_ops p2_ops = {.route = p2_route};

static const struct lsim_keydef p2_params[] = {
	{"choices", LSIM_K_INT, offsetof(struct p2_state, choices), "2", 1, 64,
	 NULL, "distinct instances sampled per request", "instances"},
};

const struct lsim_policy_type lsim_sched_power_of_two = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_SCHEDULER,
	.flags = LSIM_POLICY_COUNTS_ONLY,
	.name = "power_of_two",
	.summary = "sample d instances at random, route to the least loaded",
	.state_size = sizeof(struct p2_state), .params = p2_params,
	.n_params = 1, .init = p2_init, .ops = &p2_ops,
};

/* ---- prefix_affinity ---- */

/*
 * Requests whose first `blocks` prefix ids agree go to the same instance
 * (rendezvous hashing of those ids over the instances), so a conversation's
 * turns find their KV blocks again; when that instance has more than
 * `max_load` x the least loaded one's outstanding requests (+ 1), the least
 * loaded takes the request instead. Requests without prefix ids go to the
 * least loaded instance.
 */
struct pa_state {
	int64_t blocks;
	double max_load;
	int32_t next; /* ties of the least loaded in turn */
};

static uint64_t pa_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static int32_t pa_route(void *state, const struct lsim_request_info *r,
			const struct lsim_instance_info *inst, int32_t n)
{
	struct pa_state *s = state;
	int32_t least = least_outstanding(inst, n, s->next < n ? s->next : 0);
	if (r->n_prefix_ids <= 0) {
		s->next = least + 1;
		return least;
	}
	int32_t k = r->n_prefix_ids < s->blocks ? r->n_prefix_ids : (int32_t)s->blocks;
	uint64_t key = 0;
	for (int32_t i = 0; i < k; i++)
		key = pa_mix(key ^ r->prefix_ids[i]);
	int32_t best = 0;
	uint64_t best_w = 0;
	for (int32_t i = 0; i < n; i++) {
		uint64_t w = pa_mix(key ^ ((uint64_t)i * 0xd6e8feb86659fd93ULL));
		if (i == 0 || w > best_w) {
			best = i;
			best_w = w;
		}
	}
	double limit = s->max_load * (double)(inst[least].outstanding + 1);
	if ((double)inst[best].outstanding <= limit)
		return best;
	s->next = least + 1;
	return least;
}

static const struct lsim_scheduler_ops pa_ops = {.route = pa_route};

static const struct lsim_keydef pa_params[] = {
	{"blocks", LSIM_K_INT, offsetof(struct pa_state, blocks), "2", 1, 1e6, NULL,
	 "leading prefix ids that pick the instance", "ids"},
	{"max_load", LSIM_K_DOUBLE, offsetof(struct pa_state, max_load), "2", 1, 1e6,
	 NULL, "fall back to the least loaded beyond this multiple of its load", ""},
};

const struct lsim_policy_type lsim_sched_prefix_affinity = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_SCHEDULER,
	.flags = LSIM_POLICY_COUNTS_ONLY,
	.name = "prefix_affinity",
	.summary = "same leading prefix ids, same instance (load-bounded)",
	.state_size = sizeof(struct pa_state), .params = pa_params,
	.n_params = 2, .ops = &pa_ops,
};
