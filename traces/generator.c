/*
 * generator.c - the synthetic workload: Poisson or gamma-renewal arrivals
 * and prompt/output lengths drawn from fixed, uniform, lognormal or
 * empirical distributions. Also holds the generic lsim_workload_next and
 * lsim_workload_destroy that dispatch through the vtable of every source
 * (see workload_internal.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>

#include "workload_internal.h"

/* ---- the generic source ---- */

void lsim_workload_init_base(struct lsim_workload *w,
			     const struct lsim_workload_ops *ops)
{
	memset(w, 0, sizeof *w);
	w->ops = ops;
}

int lsim_workload_next(struct lsim_workload *w, struct lsim_req_spec *out,
		       struct lsim_diag *d)
{
	if (!w || !out)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "",
				     "lsim_workload_next: NULL argument");
	if (w->err) {
		if (d)
			*d = w->err_diag;
		return w->err;
	}
	if (w->done)
		return 0;
	struct lsim_req_spec r;
	memset(&r, 0, sizeof r);
	int rc = w->ops->next(w, &r, &w->err_diag);
	if (rc < 0) {
		if (!w->err_diag.msg[0]) /* e.g. out of memory */
			lsim_diag_set(&w->err_diag, rc, "", 0, 0, "", "%s",
				      lsim_strerror(rc));
		w->err = rc;
		if (d)
			*d = w->err_diag;
		return rc;
	}
	if (rc == 0) {
		w->done = true;
		return 0;
	}
	r.id = w->next_id++;
	*out = r;
	return 1;
}

void lsim_workload_destroy(struct lsim_workload *w)
{
	if (w)
		w->ops->destroy(w);
}

/* ---- the generator ---- */

/* Arrivals past this many seconds leave the int64 nanosecond clock. */
#define MAX_ARRIVAL_S 9.2e9

struct len_state {
	enum lsim_len_kind kind;
	double fixed;		/* FIXED */
	int64_t lo;		/* UNIFORM: integer range [lo, lo + n - 1] */
	unsigned long n;	/* UNIFORM: size of the range */
	double mu, sigma;	/* LOGNORMAL: of the log of the length */
	const int32_t *values;	/* EMPIRICAL */
	size_t n_values;
	int32_t clamp_lo, clamp_hi; /* clamp_hi 0 = none */
};

struct generator {
	struct lsim_workload base;
	enum lsim_arrival_kind arrival;
	double exp_mean;	    /* POISSON: 1 / rate */
	double gamma_k, gamma_theta; /* GAMMA: shape, scale */
	uint64_t count;		    /* 0: none */
	lsim_time duration;	    /* 0: none */
	gsl_rng *arr_rng, *len_rng; /* borrowed */
	double t_s;		    /* last arrival, seconds */
	uint64_t emitted;
	struct len_state prompt, output;
};

/* Whether n distinct values can be drawn with gsl_rng_uniform_int from r. */
static bool fits_rng(const gsl_rng *r, unsigned long n)
{
	return n >= 1 && n - 1 <= gsl_rng_max(r) - gsl_rng_min(r);
}

static int setup_len(struct len_state *s, const struct lsim_len_dist *L,
		     const char *which, const gsl_rng *rng,
		     struct lsim_diag *d)
{
	char key[64];
	memset(s, 0, sizeof *s);
	s->kind = L->kind;
	switch (L->kind) {
	case LSIM_LEN_FIXED:
		if (!isfinite(L->a) || L->a < 1 || L->a > INT32_MAX) {
			snprintf(key, sizeof key, "workload.%s.value", which);
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, key,
					     "fixed length %g must be in [1, %d]",
					     L->a, INT32_MAX);
		}
		s->fixed = L->a;
		break;
	case LSIM_LEN_UNIFORM: {
		snprintf(key, sizeof key, "workload.%s.low", which);
		if (!isfinite(L->a) || L->a < 1 || L->a > INT32_MAX)
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, key,
					     "uniform low %g must be in [1, %d]",
					     L->a, INT32_MAX);
		snprintf(key, sizeof key, "workload.%s.high", which);
		if (!isfinite(L->b) || L->b > INT32_MAX)
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, key,
					     "uniform high %g must be at most %d",
					     L->b, INT32_MAX);
		int64_t lo = (int64_t)ceil(L->a), hi = (int64_t)floor(L->b);
		if (L->a > L->b || lo > hi)
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, key,
					     "uniform low %g exceeds high %g or no integer lies between them",
					     L->a, L->b);
		s->lo = lo;
		s->n = (unsigned long)(hi - lo + 1);
		if (!fits_rng(rng, s->n))
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, key,
					     "uniform range of %lu values is wider than the random generator's",
					     s->n);
		break;
	}
	case LSIM_LEN_LOGNORMAL:
		snprintf(key, sizeof key, "workload.%s.mean", which);
		if (!isfinite(L->a) || L->a <= 0 || L->a > INT32_MAX)
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, key,
					     "lognormal mean %g must be in (0, %d]",
					     L->a, INT32_MAX);
		snprintf(key, sizeof key, "workload.%s.stddev", which);
		if (!isfinite(L->b) || L->b < 0 || L->b > 1e12)
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, key,
					     "lognormal standard deviation %g must be in [0, 1e12]",
					     L->b);
		{
			double var = log1p((L->b * L->b) / (L->a * L->a));
			s->sigma = sqrt(var);
			s->mu = log(L->a) - var / 2;
		}
		break;
	case LSIM_LEN_EMPIRICAL:
		snprintf(key, sizeof key, "workload.%s.values", which);
		if (!L->values || L->n_values == 0)
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, key,
					     "empirical lengths need a non-empty list of values");
		if (!fits_rng(rng, (unsigned long)L->n_values))
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, key,
					     "%zu values are more than the random generator can pick from",
					     L->n_values);
		s->values = L->values;
		s->n_values = L->n_values;
		break;
	default:
		snprintf(key, sizeof key, "workload.%s.dist", which);
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, key,
				     "unknown length distribution %d", (int)L->kind);
	}
	s->clamp_lo = L->min > 1 ? L->min : 1;
	s->clamp_hi = L->max;
	if (L->max < 0 || (L->max > 0 && L->max < s->clamp_lo)) {
		snprintf(key, sizeof key, "workload.%s.max", which);
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, key,
				     "max %d must be 0 (none) or at least min %d",
				     (int)L->max, (int)s->clamp_lo);
	}
	return 0;
}

static int32_t draw_len(const struct len_state *s, gsl_rng *r)
{
	double v = 1;
	switch (s->kind) {
	case LSIM_LEN_FIXED: v = s->fixed; break;
	case LSIM_LEN_UNIFORM:
		v = (double)(s->lo + (int64_t)gsl_rng_uniform_int(r, s->n));
		break;
	case LSIM_LEN_LOGNORMAL: v = gsl_ran_lognormal(r, s->mu, s->sigma); break;
	case LSIM_LEN_EMPIRICAL:
		v = s->values[gsl_rng_uniform_int(r, (unsigned long)s->n_values)];
		break;
	}
	v = round(v);
	if (!(v >= s->clamp_lo)) /* also catches NaN */
		v = s->clamp_lo;
	if (s->clamp_hi > 0 && v > s->clamp_hi)
		v = s->clamp_hi;
	if (v > INT32_MAX)
		v = INT32_MAX;
	return (int32_t)v;
}

static int gen_next(struct lsim_workload *w, struct lsim_req_spec *out,
		    struct lsim_diag *d)
{
	struct generator *g = (struct generator *)w;
	if (g->count > 0 && g->emitted >= g->count)
		return 0;
	double dt = g->arrival == LSIM_ARRIVAL_POISSON
			    ? gsl_ran_exponential(g->arr_rng, g->exp_mean)
			    : gsl_ran_gamma(g->arr_rng, g->gamma_k, g->gamma_theta);
	g->t_s += dt;
	if (!(g->t_s < MAX_ARRIVAL_S)) {
		if (g->duration > 0)
			return 0; /* past any representable duration */
		return lsim_diag_set(d, LSIM_ERANGE, "", 0, 0, "workload.rate",
				     "arrival %llu at %g s is beyond the simulated clock's range",
				     (unsigned long long)g->emitted, g->t_s);
	}
	lsim_time t = lsim_time_from_s(g->t_s);
	if (g->duration > 0 && t > g->duration)
		return 0;
	out->arrival = t;
	out->prompt_tokens = draw_len(&g->prompt, g->len_rng);
	out->output_tokens = draw_len(&g->output, g->len_rng);
	g->emitted++;
	return 1;
}

static void gen_destroy(struct lsim_workload *w)
{
	free(w);
}

static const struct lsim_workload_ops gen_ops = {
	.next = gen_next,
	.destroy = gen_destroy,
};

int lsim_workload_generator_create(const struct lsim_gen_params *p,
				   gsl_rng *arrivals_rng, gsl_rng *lengths_rng,
				   struct lsim_workload **out,
				   struct lsim_diag *d)
{
	if (!out)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "",
				     "lsim_workload_generator_create: NULL out");
	*out = NULL;
	if (!p || !arrivals_rng || !lengths_rng)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "",
				     "lsim_workload_generator_create: NULL argument");
	struct generator g;
	memset(&g, 0, sizeof g);
	g.arrival = p->arrival;
	if (!isfinite(p->rate) || p->rate <= 0)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.rate",
				     "rate %g must be a positive number of requests per second",
				     p->rate);
	switch (p->arrival) {
	case LSIM_ARRIVAL_POISSON:
		g.exp_mean = 1.0 / p->rate;
		break;
	case LSIM_ARRIVAL_GAMMA:
		if (!isfinite(p->cv) || p->cv <= 0)
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.cv",
					     "coefficient of variation %g must be positive",
					     p->cv);
		g.gamma_k = 1.0 / (p->cv * p->cv);
		g.gamma_theta = 1.0 / (p->rate * g.gamma_k);
		if (!(g.gamma_k > 0 && isfinite(g.gamma_k) &&
		      g.gamma_theta > 0 && isfinite(g.gamma_theta)))
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.cv",
					     "rate %g and cv %g give no usable gamma distribution",
					     p->rate, p->cv);
		break;
	default:
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.arrival",
				     "unknown arrival process %d", (int)p->arrival);
	}
	if (p->duration < 0)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.duration",
				     "duration must not be negative");
	if (p->count == 0 && p->duration == 0)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.count",
				     "set count or duration, or the workload never ends");
	g.count = p->count;
	g.duration = p->duration;
	int rc = setup_len(&g.prompt, &p->prompt, "prompt", lengths_rng, d);
	if (rc == 0)
		rc = setup_len(&g.output, &p->output, "output", lengths_rng, d);
	if (rc != 0)
		return rc;
	g.arr_rng = arrivals_rng;
	g.len_rng = lengths_rng;
	struct generator *h = malloc(sizeof *h);
	if (!h)
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "",
				     "out of memory");
	*h = g;
	lsim_workload_init_base(&h->base, &gen_ops);
	*out = &h->base;
	return 0;
}
