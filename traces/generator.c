/*
 * generator.c - the synthetic workload: Poisson, gamma- or Weibull-renewal,
 * on/off Markov-modulated, diurnal and spiky arrivals, and prompt/output
 * lengths drawn from fixed, uniform, lognormal, empirical or Zipf
 * distributions or from joint (prompt, output) pairs. Also holds the
 * generic lsim_workload_next and lsim_workload_destroy that dispatch
 * through the vtable of every source (see workload_internal.h), and the
 * trace readers' policy for bad lines (fail or skip and count).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_sf_gamma.h>

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

void lsim_workload_set_on_error(struct lsim_workload *w, enum lsim_on_error mode)
{
	if (w)
		w->on_error = mode == LSIM_ON_ERROR_SKIP ? LSIM_ON_ERROR_SKIP
							 : LSIM_ON_ERROR_FAIL;
}

uint64_t lsim_workload_skipped(const struct lsim_workload *w)
{
	return w ? w->skipped : 0;
}

const struct lsim_diag *lsim_workload_first_skip(const struct lsim_workload *w)
{
	/* all zero (empty message) while nothing has been skipped */
	return w ? &w->first_skip : NULL;
}

bool lsim_wl_skip_line(struct lsim_workload *w, int rc, struct lsim_diag *d)
{
	if (rc != LSIM_EFORMAT || w->on_error != LSIM_ON_ERROR_SKIP)
		return false;
	if (w->skipped++ == 0)
		w->first_skip = *d;
	memset(d, 0, sizeof *d);
	return true;
}

double lsim_workload_fraction(struct lsim_workload *w)
{
	if (!w)
		return -1;
	if (w->done)
		return 1;
	return w->ops->fraction ? w->ops->fraction(w) : -1;
}

void lsim_workload_destroy(struct lsim_workload *w)
{
	if (w)
		w->ops->destroy(w);
}

/* ---- the generator ---- */

/* Arrivals past this many seconds leave the int64 nanosecond clock. */
#define MAX_ARRIVAL_S 9.2e9

#define LSIM_PI 3.14159265358979323846

/* Zipf ranges up to this many values minus one use a CDF table. */
#define ZIPF_TABLE_SPAN 1000000

struct len_state {
	enum lsim_len_kind kind;
	double fixed;		/* FIXED */
	int64_t lo;		/* UNIFORM, ZIPF: integer range [lo, lo + n - 1] */
	unsigned long n;	/* UNIFORM, ZIPF: size of the range */
	double mu, sigma;	/* LOGNORMAL: of the log of the length */
	const int32_t *values;	/* EMPIRICAL */
	size_t n_values;
	double zexp;		/* ZIPF: exponent */
	double *zcdf;		/* ZIPF: owned CDF over the range, or NULL */
	double zh_lo, zh_hi;	/* ZIPF without a table: H(lo + 1/2) - h(lo), H(hi + 1/2) */
	int32_t clamp_lo, clamp_hi; /* clamp_hi 0 = none */
};

struct generator {
	struct lsim_workload base;
	enum lsim_arrival_kind arrival;
	double exp_mean;	    /* POISSON: 1 / rate; thinning: 1 / bound */
	double gamma_k, gamma_theta; /* GAMMA: shape, scale */
	double wb_k, wb_scale;	    /* WEIBULL: shape, scale */
	double rate;		    /* DIURNAL, SPIKES: base rate */
	double bound;		    /* DIURNAL, SPIKES: thinning bound on the rate */
	double amplitude, period_s; /* DIURNAL */
	lsim_time spike_every, spike_length; /* SPIKES */
	double spike_factor;
	double rate_on, rate_off;   /* MMPP */
	double mean_on_s, mean_off_s;
	bool mmpp_off;		    /* MMPP: in the off state */
	bool mmpp_started;	    /* MMPP: the first sojourn is drawn */
	double t_switch_s;	    /* MMPP: end of the current sojourn */
	uint64_t count;		    /* 0: none */
	lsim_time duration;	    /* 0: none */
	gsl_rng *arr_rng, *len_rng; /* borrowed */
	double t_s;		    /* last arrival (or candidate), seconds */
	uint64_t emitted;
	struct len_state prompt, output;
	const int32_t *pairs;	    /* joint lengths, borrowed, or NULL */
	size_t n_pairs;
};

/* Whether n distinct values can be drawn with gsl_rng_uniform_int from r. */
static bool fits_rng(const gsl_rng *r, unsigned long n)
{
	return n >= 1 && n - 1 <= gsl_rng_max(r) - gsl_rng_min(r);
}

/*
 * Zipf by rejection-inversion (Hormann and Derflinger 1996) for ranges too
 * wide for a table: h(x) = x^-a, H its antiderivative with H(1) = 0.
 */
static double zipf_helper1(double x) /* log1p(x) / x, 1 at 0 */
{
	return fabs(x) > 1e-8 ? log1p(x) / x : 1 - x * (0.5 - x / 3);
}

static double zipf_helper2(double x) /* expm1(x) / x, 1 at 0 */
{
	return fabs(x) > 1e-8 ? expm1(x) / x : 1 + x * (0.5 + x / 6);
}

static double zipf_H(double a, double x)
{
	double lx = log(x);
	return zipf_helper2((1 - a) * lx) * lx;
}

static double zipf_Hinv(double a, double y)
{
	double t = y * (1 - a);
	if (t < -1)
		t = -1;
	return exp(zipf_helper1(t) * y);
}

static double zipf_h(double a, double x)
{
	return exp(-a * log(x));
}

static int setup_zipf(struct len_state *s, const struct lsim_len_dist *L,
		      const char *which, struct lsim_diag *d)
{
	char key[64];
	if (!isfinite(L->a) || L->a <= 0 || L->a > 1e3) {
		snprintf(key, sizeof key, "workload.%s.exponent", which);
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, key,
				     "zipf exponent %g must be in (0, 1000]",
				     L->a);
	}
	int32_t lo = L->min > 1 ? L->min : 1;
	if (L->max <= 0 || L->max < lo) {
		snprintf(key, sizeof key, "workload.%s.max", which);
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, key,
				     "zipf needs max (%d) set and at least min %d",
				     (int)L->max, (int)lo);
	}
	s->zexp = L->a;
	s->lo = lo;
	s->n = (unsigned long)((int64_t)L->max - lo + 1);
	if (s->n - 1 <= ZIPF_TABLE_SPAN) {
		s->zcdf = malloc(s->n * sizeof *s->zcdf);
		if (!s->zcdf)
			return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "",
					     "out of memory");
		double sum = 0;
		for (unsigned long i = 0; i < s->n; i++) {
			sum += pow((double)(s->lo + (int64_t)i), -s->zexp);
			s->zcdf[i] = sum;
		}
		for (unsigned long i = 0; i < s->n; i++)
			s->zcdf[i] /= sum;
		s->zcdf[s->n - 1] = 1.0; /* the search always ends */
	} else {
		s->zh_lo = zipf_H(s->zexp, (double)lo + 0.5) -
			   zipf_h(s->zexp, (double)lo);
		s->zh_hi = zipf_H(s->zexp, (double)L->max + 0.5);
	}
	return 0;
}

static int64_t draw_zipf(const struct len_state *s, gsl_rng *r)
{
	int64_t hi = s->lo + (int64_t)s->n - 1;
	if (s->zcdf) {
		double u = gsl_rng_uniform(r); /* [0, 1) */
		unsigned long a = 0, b = s->n - 1; /* first i with cdf[i] > u */
		while (a < b) {
			unsigned long m = a + (b - a) / 2;
			if (s->zcdf[m] > u)
				b = m;
			else
				a = m + 1;
		}
		return s->lo + (int64_t)a;
	}
	for (;;) {
		double u = s->zh_hi + gsl_rng_uniform(r) * (s->zh_lo - s->zh_hi);
		double x = zipf_Hinv(s->zexp, u);
		double kd = floor(x + 0.5);
		int64_t k = kd < (double)s->lo ? s->lo
			    : kd > (double)hi  ? hi
					       : (int64_t)kd;
		if (u >= zipf_H(s->zexp, (double)k + 0.5) -
				 zipf_h(s->zexp, (double)k))
			return k;
	}
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
	case LSIM_LEN_ZIPF: {
		int rc = setup_zipf(s, L, which, d);
		if (rc != 0)
			return rc;
		break;
	}
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
	case LSIM_LEN_ZIPF: v = (double)draw_zipf(s, r); break;
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

/*
 * Whether time t_s (s) ends the workload: 1 past the duration (or past the
 * clock's range with a duration), a negative code past the clock's range
 * without one, 0 otherwise.
 */
static int past_end(const struct generator *g, double t_s,
		    struct lsim_diag *d)
{
	if (!(t_s < MAX_ARRIVAL_S)) {
		if (g->duration > 0)
			return 1; /* past any representable duration */
		return lsim_diag_set(d, LSIM_ERANGE, "", 0, 0, "workload.rate",
				     "arrival %llu at %g s is beyond the simulated clock's range",
				     (unsigned long long)g->emitted, t_s);
	}
	if (g->duration > 0 && lsim_time_from_s(t_s) > g->duration)
		return 1;
	return 0;
}

/* The rate of a thinned process at t_s, at most g->bound. */
static double thin_rate(const struct generator *g, double t_s)
{
	if (g->arrival == LSIM_ARRIVAL_DIURNAL)
		return g->rate * (1 + g->amplitude *
					      sin(2 * LSIM_PI * t_s / g->period_s));
	lsim_time t = lsim_time_from_s(t_s);
	return t % g->spike_every < g->spike_length ? g->rate * g->spike_factor
						    : g->rate;
}

/* Advances g->t_s to the next arrival: 1, 0 at the end, or an error. */
static int next_arrival(struct generator *g, struct lsim_diag *d)
{
	int rc;
	switch (g->arrival) {
	case LSIM_ARRIVAL_POISSON:
		g->t_s += gsl_ran_exponential(g->arr_rng, g->exp_mean);
		break;
	case LSIM_ARRIVAL_GAMMA:
		g->t_s += gsl_ran_gamma(g->arr_rng, g->gamma_k, g->gamma_theta);
		break;
	case LSIM_ARRIVAL_WEIBULL:
		g->t_s += gsl_ran_weibull(g->arr_rng, g->wb_scale, g->wb_k);
		break;
	case LSIM_ARRIVAL_MMPP:
		if (!g->mmpp_started) {
			g->mmpp_started = true;
			g->t_switch_s = gsl_ran_exponential(g->arr_rng,
							    g->mean_on_s);
		}
		for (;;) {
			double r = g->mmpp_off ? g->rate_off : g->rate_on;
			if (r > 0) {
				double c = g->t_s + gsl_ran_exponential(
							    g->arr_rng, 1.0 / r);
				if (c < g->t_switch_s) {
					g->t_s = c;
					break;
				}
			}
			/* no arrival before the switch: memorylessness lets
			 * the next state start afresh at the switch time */
			g->t_s = g->t_switch_s;
			if ((rc = past_end(g, g->t_s, d)) != 0)
				return rc < 0 ? rc : 0;
			g->mmpp_off = !g->mmpp_off;
			g->t_switch_s = g->t_s + gsl_ran_exponential(
					g->arr_rng, g->mmpp_off ? g->mean_off_s
								: g->mean_on_s);
		}
		break;
	case LSIM_ARRIVAL_DIURNAL:
	case LSIM_ARRIVAL_SPIKES:
		/* Lewis-Shedler thinning of a Poisson process at g->bound */
		for (;;) {
			g->t_s += gsl_ran_exponential(g->arr_rng, g->exp_mean);
			if ((rc = past_end(g, g->t_s, d)) != 0)
				return rc < 0 ? rc : 0;
			if (gsl_rng_uniform(g->arr_rng) * g->bound <
			    thin_rate(g, g->t_s))
				break;
		}
		break;
	}
	if ((rc = past_end(g, g->t_s, d)) != 0)
		return rc < 0 ? rc : 0;
	return 1;
}

static int gen_next(struct lsim_workload *w, struct lsim_req_spec *out,
		    struct lsim_diag *d)
{
	struct generator *g = (struct generator *)w;
	if (g->count > 0 && g->emitted >= g->count)
		return 0;
	int rc = next_arrival(g, d);
	if (rc <= 0)
		return rc;
	out->arrival = lsim_time_from_s(g->t_s);
	if (g->n_pairs > 0) {
		size_t i = (size_t)gsl_rng_uniform_int(g->len_rng,
							(unsigned long)g->n_pairs);
		out->prompt_tokens = g->pairs[2 * i];
		out->output_tokens = g->pairs[2 * i + 1];
	} else {
		out->prompt_tokens = draw_len(&g->prompt, g->len_rng);
		out->output_tokens = draw_len(&g->output, g->len_rng);
	}
	g->emitted++;
	return 1;
}

static void gen_destroy(struct lsim_workload *w)
{
	struct generator *g = (struct generator *)w;
	if (!g)
		return;
	free(g->prompt.zcdf);
	free(g->output.zcdf);
	free(g);
}

/* The further of its requests against count and its time against
 * duration: it stops at whichever comes first. */
static double gen_fraction(struct lsim_workload *w)
{
	const struct generator *g = (const struct generator *)w;
	double f = -1;
	if (g->count > 0)
		f = (double)g->emitted / (double)g->count;
	if (g->duration > 0) {
		double t = g->t_s / lsim_time_to_s(g->duration);
		f = t > f ? t : f;
	}
	return f > 1 ? 1 : f;
}

static const struct lsim_workload_ops gen_ops = {
	.next = gen_next,
	.destroy = gen_destroy,
	.fraction = gen_fraction,
};

/*
 * Shape k of the Weibull distribution with coefficient of variation cv:
 * the root of lnG(1 + 2/k) - 2 lnG(1 + 1/k) = ln(1 + cv^2), decreasing in
 * k, by bisection on log k. Returns 0, or -1 if cv lies outside what k in
 * [0.01, 1e6] covers (about 1.3e-6 to 1e28).
 */
static int weibull_shape(double cv, double *k)
{
	double target = log1p(cv * cv);
	double lo = 0.01, hi = 1e6;
#define WB_F(x) (gsl_sf_lngamma(1 + 2 / (x)) - 2 * gsl_sf_lngamma(1 + 1 / (x)) - target)
	if (!(WB_F(lo) > 0 && WB_F(hi) < 0))
		return -1;
	for (int i = 0; i < 200 && hi / lo - 1 > 1e-15; i++) {
		double mid = sqrt(lo * hi);
		if (WB_F(mid) > 0)
			lo = mid;
		else
			hi = mid;
	}
#undef WB_F
	*k = sqrt(lo * hi);
	return 0;
}

static int check_time(lsim_time t, const char *key, struct lsim_diag *d)
{
	if (t <= 0)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, key,
				     "must be a positive time");
	return 0;
}

static int setup_arrivals(struct generator *g, const struct lsim_gen_params *p,
			  struct lsim_diag *d)
{
	int rc;
	g->arrival = p->arrival;
	if (p->arrival != LSIM_ARRIVAL_MMPP &&
	    (!isfinite(p->rate) || p->rate <= 0))
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.rate",
				     "rate %g must be a positive number of requests per second",
				     p->rate);
	g->rate = p->rate;
	switch (p->arrival) {
	case LSIM_ARRIVAL_POISSON:
		g->exp_mean = 1.0 / p->rate;
		break;
	case LSIM_ARRIVAL_GAMMA:
		if (!isfinite(p->cv) || p->cv <= 0)
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.cv",
					     "coefficient of variation %g must be positive",
					     p->cv);
		g->gamma_k = 1.0 / (p->cv * p->cv);
		g->gamma_theta = 1.0 / (p->rate * g->gamma_k);
		if (!(g->gamma_k > 0 && isfinite(g->gamma_k) &&
		      g->gamma_theta > 0 && isfinite(g->gamma_theta)))
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.cv",
					     "rate %g and cv %g give no usable gamma distribution",
					     p->rate, p->cv);
		break;
	case LSIM_ARRIVAL_WEIBULL:
		if (!isfinite(p->cv) || p->cv <= 0 ||
		    weibull_shape(p->cv, &g->wb_k) != 0)
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.cv",
					     "coefficient of variation %g must be positive and within what weibull supports (about 1.3e-6 to 1e28)",
					     p->cv);
		g->wb_scale = exp(-log(p->rate) - gsl_sf_lngamma(1 + 1 / g->wb_k));
		if (!(g->wb_scale > 0 && isfinite(g->wb_scale)))
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.cv",
					     "rate %g and cv %g give no usable weibull distribution",
					     p->rate, p->cv);
		break;
	case LSIM_ARRIVAL_MMPP:
		if (!isfinite(p->rate_on) || p->rate_on < 0 || p->rate_on > 1e12)
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.rate_on",
					     "on-state rate %g must be in [0, 1e12]",
					     p->rate_on);
		if (!isfinite(p->rate_off) || p->rate_off < 0 || p->rate_off > 1e12)
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.rate_off",
					     "off-state rate %g must be in [0, 1e12]",
					     p->rate_off);
		if (p->rate_on == 0 && p->rate_off == 0)
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.rate_on",
					     "rate_on and rate_off are both 0: no request would ever arrive");
		if ((rc = check_time(p->mean_on, "workload.mean_on", d)) != 0 ||
		    (rc = check_time(p->mean_off, "workload.mean_off", d)) != 0)
			return rc;
		g->rate_on = p->rate_on;
		g->rate_off = p->rate_off;
		g->mean_on_s = lsim_time_to_s(p->mean_on);
		g->mean_off_s = lsim_time_to_s(p->mean_off);
		break;
	case LSIM_ARRIVAL_DIURNAL:
		if (!isfinite(p->amplitude) || p->amplitude < 0 || p->amplitude >= 1)
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.amplitude",
					     "amplitude %g must be in [0, 1)",
					     p->amplitude);
		if ((rc = check_time(p->period, "workload.period", d)) != 0)
			return rc;
		g->amplitude = p->amplitude;
		g->period_s = lsim_time_to_s(p->period);
		g->bound = p->rate * (1 + p->amplitude);
		g->exp_mean = 1.0 / g->bound;
		break;
	case LSIM_ARRIVAL_SPIKES:
		if ((rc = check_time(p->spike_every, "workload.spike_every", d)) != 0 ||
		    (rc = check_time(p->spike_length, "workload.spike_length", d)) != 0)
			return rc;
		if (p->spike_length > p->spike_every)
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.spike_length",
					     "spike_length must not exceed spike_every");
		if (!isfinite(p->spike_factor) || p->spike_factor < 0 ||
		    p->spike_factor > 1e9 || p->rate * p->spike_factor > 1e15)
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.spike_factor",
					     "spike factor %g must be in [0, 1e9] (and rate x factor at most 1e15)",
					     p->spike_factor);
		g->spike_every = p->spike_every;
		g->spike_length = p->spike_length;
		g->spike_factor = p->spike_factor;
		g->bound = p->rate * (p->spike_factor > 1 ? p->spike_factor : 1);
		g->exp_mean = 1.0 / g->bound;
		break;
	default:
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.arrival",
				     "unknown arrival process %d", (int)p->arrival);
	}
	return 0;
}

static int setup_pairs(struct generator *g, const struct lsim_gen_params *p,
		       const gsl_rng *rng, struct lsim_diag *d)
{
	if (!p->pairs)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.pairs",
				     "%zu pairs given but no array", p->n_pairs);
	if (!fits_rng(rng, (unsigned long)p->n_pairs))
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.pairs",
				     "%zu pairs are more than the random generator can pick from",
				     p->n_pairs);
	for (size_t i = 0; i < 2 * p->n_pairs; i++)
		if (p->pairs[i] < (i % 2 ? 0 : 1))
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.pairs",
					     "pair %zu has %s length %d; prompts need at least 1 "
					     "token, outputs at least 0 (a failed request)",
					     i / 2, i % 2 ? "output" : "prompt",
					     (int)p->pairs[i]);
	g->pairs = p->pairs;
	g->n_pairs = p->n_pairs;
	return 0;
}

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
	struct generator *g = calloc(1, sizeof *g);
	if (!g)
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "",
				     "out of memory");
	lsim_workload_init_base(&g->base, &gen_ops);
	int rc = setup_arrivals(g, p, d);
	if (rc == 0 && p->duration < 0)
		rc = lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.duration",
				   "duration must not be negative");
	if (rc == 0 && p->count == 0 && p->duration == 0)
		rc = lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.count",
				   "set count or duration, or the workload never ends");
	g->count = p->count;
	g->duration = p->duration;
	if (rc == 0 && p->n_pairs > 0)
		rc = setup_pairs(g, p, lengths_rng, d);
	else if (rc == 0) {
		rc = setup_len(&g->prompt, &p->prompt, "prompt", lengths_rng, d);
		if (rc == 0)
			rc = setup_len(&g->output, &p->output, "output",
				       lengths_rng, d);
	}
	if (rc != 0) {
		gen_destroy(&g->base);
		return rc;
	}
	g->arr_rng = arrivals_rng;
	g->len_rng = lengths_rng;
	*out = &g->base;
	return 0;
}
