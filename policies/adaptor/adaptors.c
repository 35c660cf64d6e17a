/*
 * adaptors.c - adaptor policies deciding how many instances each instance
 * group runs. static keeps the configured instances for the whole run;
 * threshold steps up or down when a metric stays beyond a watermark;
 * target_tracking is the Kubernetes HPA rule; predictive provisions for
 * a Holt-Winters forecast of the arrival rate one start lead ahead;
 * schedule follows a time-of-day table.
 *
 * Each adaptor keeps its state per group (struct lsim_scale_group.group),
 * sized from ctx->n_groups at init and grown if a larger group index
 * shows up. Ready instances are the first g->ready entries of
 * inst[]. Every answer is clamped to [g->min, g->max].
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "llmsim/params.h"
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

/* ---- shared helpers ---- */

#define MAX_GROUPS 65536	  /* a larger group index is not trusted */
#define MAX_SEASON (1 << 22)	  /* seasonal terms kept per group */
#define MAX_HORIZON 100000	  /* forecast steps looked at per call */

/* Per-group state: n entries of size bytes, zeroed when new. */
struct groups {
	void *p;
	int32_t n;
	size_t size;
};

/* The entry of group, growing the array to hold it; NULL if it cannot. */
static void *groups_get(struct groups *gs, int32_t group)
{
	if (group < 0 || group >= MAX_GROUPS)
		return NULL;
	if (group >= gs->n) {
		int32_t m = group + 1;
		char *p = realloc(gs->p, (size_t)m * gs->size);
		if (!p)
			return NULL;
		memset(p + (size_t)gs->n * gs->size, 0,
		       (size_t)(m - gs->n) * gs->size);
		gs->p = p;
		gs->n = m;
	}
	return (char *)gs->p + (size_t)group * gs->size;
}

/* Allocates the groups named at init (at least one). */
static int groups_init(struct groups *gs, size_t size,
		       const struct lsim_policy_ctx *ctx)
{
	int32_t want = ctx->n_groups > 0 ? ctx->n_groups : 1;
	gs->size = size;
	return groups_get(gs, want < MAX_GROUPS ? want - 1 : MAX_GROUPS - 1)
		       ? 0 : LSIM_ENOMEM;
}

static int32_t clamp_count(const struct lsim_scale_group *g, int64_t want)
{
	if (g->min <= g->max) {
		if (want > g->max)
			want = g->max;
		if (want < g->min)
			want = g->min;
	}
	if (want < 0)
		want = 0;
	return want > INT32_MAX ? INT32_MAX : (int32_t)want;
}

/* ceil(x) as a count; up to a relative 1e-9 above an integer counts as
 * it, so that 3 * 0.9 / 0.3 (9.000000000000002 in doubles) asks for 9. */
static int64_t ceil_count(double x)
{
	if (!(x > 0)) /* also NaN */
		return 0;
	if (x >= 1e15)
		return INT32_MAX;
	return (int64_t)ceil(x - 1e-9 * fmax(1.0, x));
}

enum metric { M_GPU_UTIL, M_KV_UTIL, M_QUEUE, M_RATE };
#define METRIC_CHOICES "gpu_util|kv_util|queue|rate"

/*
 * The group's load in metric units: *total summed over the ready
 * instances (rate: the group's arrival rate / capacity, which needs no
 * ready instance) and *mean per ready instance (NaN when none is ready).
 * False when the metric cannot be computed: no ready instance (except
 * rate), or rate without a capacity.
 */
static bool group_metric(int metric, double capacity_rps,
			 const struct lsim_scale_group *g,
			 const struct lsim_instance_info *inst, int32_t n,
			 double *total, double *mean)
{
	int32_t k = g->ready < n ? g->ready : n;
	if (k < 0)
		k = 0;
	double sum = 0;
	if (metric == M_RATE) {
		double cap = capacity_rps > 0 ? capacity_rps : g->capacity_rps;
		if (!(cap > 0))
			return false;
		sum = g->arrival_rate / cap;
		k = g->ready > 0 ? g->ready : 0;
	} else {
		if (k == 0 || !inst)
			return false;
		for (int32_t i = 0; i < k; i++)
			sum += metric == M_GPU_UTIL ? inst[i].mon_gpu_util
			       : metric == M_KV_UTIL ? inst[i].mon_kv_util
						     : (double)inst[i].waiting;
	}
	if (!isfinite(sum) || sum < 0)
		return false;
	*total = sum;
	*mean = k > 0 ? sum / k : NAN;
	return true;
}

/* ---- threshold ---- */

struct thr_group {
	bool above, below;		 /* beyond the high / low watermark */
	lsim_time above_since, below_since; /* since the first such sample */
	bool did_out, did_in;
	lsim_time last_out, last_in;	 /* the last action of each direction */
};

struct thr_state {
	int metric;
	double high, low;
	lsim_time window, cooldown_out, cooldown_in;
	int64_t step;
	double capacity_rps;
	struct groups groups; /* struct thr_group */
};

static int thr_init(void *state, const struct lsim_policy_ctx *ctx)
{
	struct thr_state *s = state;
	if (!(s->low < s->high))
		return LSIM_EINVAL;
	return groups_init(&s->groups, sizeof(struct thr_group), ctx);
}

static void thr_fini(void *state)
{
	struct thr_state *s = state;
	free(s->groups.p);
}

static int32_t thr_desired(void *state, const struct lsim_scale_group *g,
			   const struct lsim_instance_info *inst, int32_t n,
			   lsim_time now)
{
	struct thr_state *s = state;
	struct thr_group *q = groups_get(&s->groups, g->group);
	int64_t live = g->live;
	if (!q)
		return clamp_count(g, live);
	bool out_ok = !q->did_out || now - q->last_out >= s->cooldown_out;
	bool in_ok = !q->did_in || now - q->last_in >= s->cooldown_in;
	double total, mean;
	int64_t want = live;
	if (g->ready <= 0 ||
	    !group_metric(s->metric, s->capacity_rps, g, inst, n, &total, &mean)) {
		/* nothing to measure: forget the hold, but start from zero
		 * when requests come to a group with no instance */
		q->above = q->below = false;
		if (live == 0 && g->arrival_rate > 0 && out_ok)
			want = s->step;
	} else {
		if (mean > s->high) {
			if (!q->above)
				q->above_since = now;
			q->above = true;
			q->below = false;
		} else if (mean < s->low) {
			if (!q->below)
				q->below_since = now;
			q->below = true;
			q->above = false;
		} else {
			q->above = q->below = false;
		}
		if (q->above && now - q->above_since >= s->window && out_ok)
			want = live + s->step;
		else if (q->below && now - q->below_since >= s->window && in_ok)
			want = live - s->step;
	}
	int32_t got = clamp_count(g, want);
	if (want > live && got > live) {
		q->did_out = true;
		q->last_out = now;
	} else if (want < live && got < live) {
		q->did_in = true;
		q->last_in = now;
	}
	return got;
}

static const struct lsim_adaptor_ops thr_ops = {.desired = thr_desired};

static const struct lsim_keydef thr_params[] = {
	{"metric", LSIM_K_ENUM, offsetof(struct thr_state, metric), "gpu_util",
	 LSIM_NOBOUNDS, METRIC_CHOICES,
	 "per ready instance: busy fraction, KV use, waiting requests, or arrival rate / capacity_rps",
	 NULL},
	{"high", LSIM_K_DOUBLE, offsetof(struct thr_state, high), "0.8", 0, 1e9,
	 NULL, "scale out when the metric stays above this", ""},
	{"low", LSIM_K_DOUBLE, offsetof(struct thr_state, low), "0.3", 0, 1e9,
	 NULL, "scale in when the metric stays below this (< high)", ""},
	{"window", LSIM_K_TIME, offsetof(struct thr_state, window), "30s", 0,
	 1e18, NULL, "time the metric must stay beyond a watermark, from the first sample beyond it, before acting",
	 NULL},
	{"step", LSIM_K_INT, offsetof(struct thr_state, step), "1", 1, 100000,
	 NULL, "instances added or removed per action", "instances"},
	{"cooldown_out", LSIM_K_TIME, offsetof(struct thr_state, cooldown_out),
	 "60s", 0, 1e18, NULL, "no further scale-out for this long after one", NULL},
	{"cooldown_in", LSIM_K_TIME, offsetof(struct thr_state, cooldown_in),
	 "300s", 0, 1e18, NULL, "no further scale-in for this long after one", NULL},
	{"capacity_rps", LSIM_K_DOUBLE, offsetof(struct thr_state, capacity_rps),
	 "0", 0, 1e9, NULL,
	 "requests/s one instance serves, for metric rate (0: the group's instances[].capacity_rps)",
	 "req/s"},
};

const struct lsim_policy_type lsim_adapt_threshold = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_ADAPTOR,
	.name = "threshold",
	.summary = "step out/in when a metric stays above/below a watermark for a window, with cooldowns",
	.state_size = sizeof(struct thr_state), .params = thr_params,
	.n_params = sizeof thr_params / sizeof thr_params[0],
	.init = thr_init, .fini = thr_fini, .ops = &thr_ops,
};

/* ---- recommendation windows (target_tracking, predictive) ---- */

struct rec {
	lsim_time t;
	int64_t n;
};

/* Recommendations with their times, oldest at head. */
struct recs {
	struct rec *r;
	size_t head, len, cap;
};

/* Drops the recommendations made at or before `before`. */
static void recs_prune(struct recs *q, lsim_time before)
{
	while (q->len > 0 && q->r[q->head].t <= before) {
		q->head++;
		q->len--;
	}
	if (q->len == 0)
		q->head = 0;
}

static bool recs_push(struct recs *q, lsim_time t, int64_t n)
{
	if (q->head + q->len == q->cap) {
		if (q->head > 0) {
			memmove(q->r, q->r + q->head, q->len * sizeof *q->r);
			q->head = 0;
		} else {
			size_t cap = q->cap ? 2 * q->cap : 16;
			struct rec *p = realloc(q->r, cap * sizeof *p);
			if (!p)
				return false;
			q->r = p;
			q->cap = cap;
		}
	}
	q->r[q->head + q->len++] = (struct rec){t, n};
	return true;
}

/* ---- target_tracking ---- */

struct tt_state {
	int metric;
	double target, tolerance;
	lsim_time stab_in, stab_out;
	double capacity_rps;
	struct groups groups; /* struct recs */
};

static int tt_init(void *state, const struct lsim_policy_ctx *ctx)
{
	struct tt_state *s = state;
	return groups_init(&s->groups, sizeof(struct recs), ctx);
}

static void tt_fini(void *state)
{
	struct tt_state *s = state;
	for (int32_t i = 0; i < s->groups.n; i++)
		free(((struct recs *)s->groups.p + i)->r);
	free(s->groups.p);
}

static int32_t tt_desired(void *state, const struct lsim_scale_group *g,
			  const struct lsim_instance_info *inst, int32_t n,
			  lsim_time now)
{
	struct tt_state *s = state;
	struct recs *q = groups_get(&s->groups, g->group);
	int64_t live = g->live;
	double total, mean;
	if (!q || !group_metric(s->metric, s->capacity_rps, g, inst, n, &total, &mean))
		return clamp_count(g, live); /* no metric: no change (as HPA) */
	/* HPA: ceil(ready * mean / target), no change within the tolerance */
	int64_t rec;
	if (g->ready > 0 && fabs(mean / s->target - 1.0) <= s->tolerance)
		rec = live;
	else
		rec = ceil_count(total / s->target);
	/* forget recommendations older than both windows (keep t > now - w) */
	lsim_time w = s->stab_in > s->stab_out ? s->stab_in : s->stab_out;
	recs_prune(q, now - w);
	if (!recs_push(q, now, rec))
		return clamp_count(g, live);
	/* up: the least recommendation of the scale-out window; down: the
	 * greatest of the scale-in window; both include this one */
	int64_t up = rec, down = rec;
	for (size_t i = 0; i < q->len; i++) {
		const struct rec *r = &q->r[q->head + i];
		if (r->t > now - s->stab_out && r->n < up)
			up = r->n;
		if (r->t > now - s->stab_in && r->n > down)
			down = r->n;
	}
	int64_t want = live;
	if (want < up)
		want = up;
	if (want > down)
		want = down;
	return clamp_count(g, want);
}

static const struct lsim_adaptor_ops tt_ops = {.desired = tt_desired};

static const struct lsim_keydef tt_params[] = {
	{"metric", LSIM_K_ENUM, offsetof(struct tt_state, metric), "gpu_util",
	 LSIM_NOBOUNDS, METRIC_CHOICES,
	 "per ready instance: busy fraction, KV use, waiting requests, or arrival rate / capacity_rps",
	 NULL},
	{"target", LSIM_K_DOUBLE, offsetof(struct tt_state, target), "0.7", 0.001,
	 1e9, NULL, "the metric's target per ready instance", ""},
	{"tolerance", LSIM_K_DOUBLE, offsetof(struct tt_state, tolerance), "0.1",
	 0, 10, NULL, "no change while |metric / target - 1| <= tolerance", ""},
	{"stabilization", LSIM_K_TIME, offsetof(struct tt_state, stab_in),
	 "300s", 0, 1e18, NULL,
	 "scale-in window: the greatest recommendation of the last this long", NULL},
	{"stabilization_out", LSIM_K_TIME, offsetof(struct tt_state, stab_out),
	 "0s", 0, 1e18, NULL,
	 "scale-out window: the least recommendation of the last this long", NULL},
	{"capacity_rps", LSIM_K_DOUBLE, offsetof(struct tt_state, capacity_rps),
	 "0", 0, 1e9, NULL,
	 "requests/s one instance serves, for metric rate (0: the group's instances[].capacity_rps)",
	 "req/s"},
};

const struct lsim_policy_type lsim_adapt_target_tracking = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_ADAPTOR,
	.name = "target_tracking",
	.summary = "Kubernetes HPA: ceil(ready * metric / target), tolerance, stabilisation windows",
	.state_size = sizeof(struct tt_state), .params = tt_params,
	.n_params = sizeof tt_params / sizeof tt_params[0],
	.init = tt_init, .fini = tt_fini, .ops = &tt_ops,
};

/* ---- predictive ---- */

/*
 * Holt-Winters with additive seasonality over the group's arrival-rate
 * samples. Until m samples (one season) exist it is Holt's linear method
 * (level and trend, the trend starting at 0) and season[] keeps the
 * samples; then level = their mean, trend = 0 and season[i] = sample i -
 * level, and every further sample t updates the level, the trend and
 * season[t mod m].
 */
struct pred_group {
	bool started;
	int32_t m;	 /* season in samples; 0: Holt only */
	int64_t t;	 /* samples seen */
	double level, trend;
	double *season;
	struct recs recs; /* for the scale-in window */
};

struct pred_state {
	double alpha, beta, gamma;
	lsim_time season, margin;
	double headroom, capacity_rps;
	lsim_time stab_in;
	struct groups groups; /* struct pred_group */
};

static int pred_init(void *state, const struct lsim_policy_ctx *ctx)
{
	struct pred_state *s = state;
	return groups_init(&s->groups, sizeof(struct pred_group), ctx);
}

static void pred_fini(void *state)
{
	struct pred_state *s = state;
	for (int32_t i = 0; i < s->groups.n; i++) {
		struct pred_group *q = (struct pred_group *)s->groups.p + i;
		free(q->season);
		free(q->recs.r);
	}
	free(s->groups.p);
}

static void pred_observe(const struct pred_state *s, struct pred_group *q,
			 lsim_time period, double y)
{
	if (!q->started) {
		q->started = true;
		double m = period > 0 ? round((double)s->season / (double)period) : 0;
		q->m = m >= 2 && m <= MAX_SEASON ? (int32_t)m : 0;
		if (q->m && !(q->season = calloc((size_t)q->m, sizeof *q->season)))
			q->m = 0;
		q->level = y;
		q->trend = 0;
		if (q->m)
			q->season[0] = y;
		q->t = 1;
		return;
	}
	int64_t t = q->t++;
	if (q->m == 0 || t >= q->m) {
		double st = q->m ? q->season[t % q->m] : 0;
		double l = s->alpha * (y - st) + (1 - s->alpha) * (q->level + q->trend);
		q->trend = s->beta * (l - q->level) + (1 - s->beta) * q->trend;
		q->level = l;
		if (q->m)
			q->season[t % q->m] = s->gamma * (y - l) + (1 - s->gamma) * st;
		return;
	}
	/* first season: Holt, keeping the samples */
	q->season[t] = y;
	double l = s->alpha * y + (1 - s->alpha) * (q->level + q->trend);
	q->trend = s->beta * (l - q->level) + (1 - s->beta) * q->trend;
	q->level = l;
	if (t == q->m - 1) { /* one season: start Holt-Winters */
		double mean = 0;
		for (int32_t i = 0; i < q->m; i++)
			mean += q->season[i];
		mean /= q->m;
		for (int32_t i = 0; i < q->m; i++)
			q->season[i] -= mean;
		q->level = mean;
		q->trend = 0;
	}
}

/* The forecast h >= 1 samples after the last one, at least 0. */
static double pred_forecast(const struct pred_group *q, int64_t h)
{
	double f = q->level + (double)h * q->trend;
	if (q->m && q->t >= q->m)
		f += q->season[(q->t - 1 + h) % q->m];
	return f > 0 ? f : 0;
}

static int32_t pred_desired(void *state, const struct lsim_scale_group *g,
			    const struct lsim_instance_info *inst, int32_t n,
			    lsim_time now)
{
	struct pred_state *s = state;
	struct pred_group *q = groups_get(&s->groups, g->group);
	double y = g->arrival_rate;
	if (!q || !isfinite(y) || y < 0)
		return clamp_count(g, g->live);
	pred_observe(s, q, g->period, y);
	double cap = s->capacity_rps > 0 ? s->capacity_rps : g->capacity_rps;
	if (!(cap > 0))
		return clamp_count(g, g->live); /* documented: no capacity, no change */
	/* a scale-out now is ready start_lead later, and the next decision
	 * is one period later: cover every sample up to then */
	int64_t h_max = 1;
	if (g->period > 0) {
		double ahead = (double)g->start_lead + (double)s->margin;
		double h = ceil((ahead > 0 ? ahead : 0) / (double)g->period) + 1;
		h_max = h < MAX_HORIZON ? (int64_t)h : MAX_HORIZON;
	}
	double peak = 0;
	for (int64_t h = 1; h <= h_max; h++) {
		double f = pred_forecast(q, h);
		if (f > peak)
			peak = f;
	}
	int64_t want = ceil_count(peak * s->headroom / cap);
	/* scale in to the greatest count of the window (as target_tracking) */
	if (s->stab_in > 0) {
		recs_prune(&q->recs, now - s->stab_in);
		if (recs_push(&q->recs, now, want))
			for (size_t i = 0; i < q->recs.len; i++)
				if (q->recs.r[q->recs.head + i].n > want)
					want = q->recs.r[q->recs.head + i].n;
	}
	return clamp_count(g, want);
}

static const struct lsim_adaptor_ops pred_ops = {.desired = pred_desired};

static const struct lsim_keydef pred_params[] = {
	{"alpha", LSIM_K_DOUBLE, offsetof(struct pred_state, alpha), "0.5", 0, 1,
	 NULL, "smoothing of the level", ""},
	{"beta", LSIM_K_DOUBLE, offsetof(struct pred_state, beta), "0.1", 0, 1,
	 NULL, "smoothing of the trend", ""},
	{"gamma", LSIM_K_DOUBLE, offsetof(struct pred_state, gamma), "0.3", 0, 1,
	 NULL, "smoothing of the seasonal terms", ""},
	{"season", LSIM_K_TIME, offsetof(struct pred_state, season), "24h", 0,
	 1e18, NULL,
	 "season length (in samples: season / the group's period; under 2: no seasonality)",
	 NULL},
	{"margin", LSIM_K_TIME, offsetof(struct pred_state, margin), "0s", 0,
	 1e18, NULL, "look this much further ahead than the start lead", NULL},
	{"headroom", LSIM_K_DOUBLE, offsetof(struct pred_state, headroom), "1.2",
	 0.01, 100, NULL, "instances for forecast * headroom requests/s", ""},
	{"capacity_rps", LSIM_K_DOUBLE, offsetof(struct pred_state, capacity_rps),
	 "0", 0, 1e9, NULL,
	 "requests/s one instance serves (0: the group's instances[].capacity_rps; both 0: no change)",
	 "req/s"},
	{"stabilization", LSIM_K_TIME, offsetof(struct pred_state, stab_in),
	 "300s", 0, 1e18, NULL,
	 "scale-in window: the greatest count of the last this long", NULL},
};

const struct lsim_policy_type lsim_adapt_predictive = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_ADAPTOR,
	.name = "predictive",
	.summary = "Holt-Winters forecast of the arrival rate, provisioned one start lead ahead",
	.state_size = sizeof(struct pred_state), .params = pred_params,
	.n_params = sizeof pred_params / sizeof pred_params[0],
	.init = pred_init, .fini = pred_fini, .ops = &pred_ops,
};

/* ---- schedule ---- */

struct sched_entry {
	lsim_time t; /* time of day */
	int32_t count;
};

struct sched_state {
	const char *table;
	lsim_time period, offset;
	struct sched_entry *e;
	int32_t n;
};

static char *trim(char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	size_t len = strlen(p);
	while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
		p[--len] = '\0';
	return p;
}

/* One "time:count" item; 0 or LSIM_EINVAL. */
static int sched_item(char *item, lsim_time period, struct sched_entry *out)
{
	char *colon = strchr(item, ':');
	if (!colon)
		return LSIM_EINVAL;
	*colon = '\0';
	char *when = trim(item), *count = trim(colon + 1);
	double t;
	const char *why;
	if (!when[0] || lsim_units_parse(LSIM_K_TIME, when, &t, &why) != 0 ||
	    !(t >= 0) || !(t < (double)period))
		return LSIM_EINVAL;
	char *end;
	if (!count[0] || count[0] == '-' || count[0] == '+')
		return LSIM_EINVAL;
	long long c = strtoll(count, &end, 10);
	if (*end || c < 0 || c > INT32_MAX)
		return LSIM_EINVAL;
	out->t = (lsim_time)llround(t);
	out->count = (int32_t)c;
	return 0;
}

/* Parses "0h:2, 8h:6, 20h:3": times of day strictly increasing, in
 * [0, period), counts >= 0. */
static int sched_init(void *state, const struct lsim_policy_ctx *ctx)
{
	struct sched_state *s = state;
	if (!s->table || s->period <= 0)
		return LSIM_EINVAL;
	size_t items = 1;
	for (const char *p = s->table; *p; p++)
		items += *p == ',';
	char *copy = strdup(s->table);
	s->e = calloc(items, sizeof *s->e);
	if (!copy || !s->e) {
		free(copy);
		free(s->e);
		s->e = NULL;
		return LSIM_ENOMEM;
	}
	int rc = 0;
	char *p = copy;
	for (size_t i = 0; i < items && rc == 0; i++) {
		char *comma = strchr(p, ',');
		if (comma)
			*comma = '\0';
		rc = sched_item(p, s->period, &s->e[i]);
		if (rc == 0 && i > 0 && s->e[i].t <= s->e[i - 1].t)
			rc = LSIM_EINVAL;
		p = comma ? comma + 1 : p;
	}
	free(copy);
	if (rc != 0) {
		free(s->e);
		s->e = NULL;
		return rc;
	}
	s->n = (int32_t)items;
	return 0;
}

static void sched_fini(void *state)
{
	struct sched_state *s = state;
	free(s->e);
}

static int32_t sched_desired(void *state, const struct lsim_scale_group *g,
			     const struct lsim_instance_info *inst, int32_t n,
			     lsim_time now)
{
	const struct sched_state *s = state;
	if (s->n == 0)
		return clamp_count(g, g->live);
	lsim_time x = (now % s->period + s->offset % s->period) % s->period;
	if (x < 0)
		x += s->period;
	/* the last entry at or before x; before the first: the day before's last */
	int32_t lo = 0, hi = s->n; /* entries [0, lo) start at or before x */
	while (lo < hi) {
		int32_t mid = lo + (hi - lo) / 2;
		if (s->e[mid].t <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return clamp_count(g, s->e[lo > 0 ? lo - 1 : s->n - 1].count);
}

static const struct lsim_adaptor_ops sched_ops = {.desired = sched_desired};

static const struct lsim_keydef sched_params[] = {
	{"table", LSIM_K_STRING, offsetof(struct sched_state, table), NULL,
	 LSIM_NOBOUNDS, NULL,
	 "time of day -> instances per group, \"0h:2,8h:6,20h:3\": times increasing, in [0, period)",
	 NULL},
	{"period", LSIM_K_TIME, offsetof(struct sched_state, period), "24h", 1,
	 1e18, NULL, "the table repeats with this period", NULL},
	{"offset", LSIM_K_TIME, offsetof(struct sched_state, offset), "0s", 0,
	 1e18, NULL, "time of day at simulated time 0", NULL},
};

const struct lsim_policy_type lsim_adapt_schedule = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_ADAPTOR,
	.name = "schedule",
	.summary = "instances per group from a time-of-day table",
	.state_size = sizeof(struct sched_state), .params = sched_params,
	.n_params = sizeof sched_params / sizeof sched_params[0],
	.init = sched_init, .fini = sched_fini, .ops = &sched_ops,
};
