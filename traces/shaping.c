/*
 * shaping.c - workload shaping as a wrapper around any source: a time
 * window, time scaling, thinning (rate scaling down), repetition of the
 * source back to back, and a constant offset (for superposed copies). Streaming: it holds one request at a time.
 */
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>

#include "workload_internal.h"

struct shaper {
	struct lsim_workload base;
	lsim_workload_open_fn open;
	void *ctx;
	struct lsim_shape_params p;
	gsl_rng *rng;
	struct lsim_workload *src;
	uint64_t round;	      /* repetitions started */
	lsim_time offset;     /* start of the current repetition, ns */
	lsim_time last;	      /* last arrival emitted in this repetition (scaled, re-based) */
	lsim_time first;      /* first arrival of the first repetition */
	uint64_t n_round;     /* requests emitted in this repetition */
	lsim_time period;     /* length of one repetition, from the first */
	uint64_t skipped_done; /* bad lines skipped by sources already closed */
};

/* The wrapper reports the bad lines its sources skipped. */
static void sync_skips(struct shaper *s)
{
	if (!s->src)
		return;
	s->base.skipped = s->skipped_done + lsim_workload_skipped(s->src);
	if (s->base.skipped > 0 && !s->base.first_skip.msg[0])
		s->base.first_skip = *lsim_workload_first_skip(s->src);
}

static int shaper_next(struct lsim_workload *w, struct lsim_req_spec *out,
		       struct lsim_diag *d)
{
	struct shaper *s = (struct shaper *)w;
	for (;;) {
		struct lsim_req_spec r;
		int rc = lsim_workload_next(s->src, &r, d);
		sync_skips(s);
		if (rc < 0)
			return rc;
		if (rc == 0 || (s->p.window_end > 0 && r.arrival >= s->p.window_end)) {
			/* end of this repetition */
			if (++s->round >= s->p.repeat || s->n_round == 0)
				return 0;
			if (s->period == 0) {
				/* one mean gap after the last arrival */
				lsim_time span = s->last - s->first;
				lsim_time gap = s->n_round > 1 ? span / (lsim_time)(s->n_round - 1)
							       : LSIM_S;
				s->period = span + (gap > 0 ? gap : 1);
			}
			s->offset += s->period;
			s->n_round = 0;
			s->skipped_done = s->base.skipped;
			lsim_workload_destroy(s->src);
			s->src = NULL;
			rc = s->open(s->ctx, &s->src, d);
			if (rc != 0)
				return rc;
			continue;
		}
		if (r.arrival < s->p.window_start)
			continue;
		lsim_time t = r.arrival - s->p.window_start;
		if (s->p.time_scale != 1.0)
			t = (lsim_time)llround((double)t * s->p.time_scale);
		/* thinning draws one number per request in the window, kept
		 * or not, so the choice does not depend on what came before */
		if (s->p.keep < 1.0 && gsl_rng_uniform(s->rng) >= s->p.keep)
			continue;
		if (s->round == 0 && s->n_round == 0)
			s->first = t;
		s->last = t;
		s->n_round++;
		*out = r;
		out->arrival = s->p.offset + s->offset + t;
		return 1;
	}
}

static void shaper_destroy(struct lsim_workload *w)
{
	struct shaper *s = (struct shaper *)w;
	lsim_workload_destroy(s->src);
	free(s);
}

static const struct lsim_workload_ops shaper_ops = {
	.next = shaper_next,
	.destroy = shaper_destroy,
};

int lsim_workload_shape_create(lsim_workload_open_fn open, void *ctx,
			       const struct lsim_shape_params *p, gsl_rng *rng,
			       struct lsim_workload **out, struct lsim_diag *d)
{
	*out = NULL;
	if (!(p->time_scale > 0) || !isfinite(p->time_scale))
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.time_scale",
				     "time_scale must be a positive number");
	if (!(p->keep > 0 && p->keep <= 1))
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.keep",
				     "keep must be in (0, 1]");
	if (p->repeat < 1)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.repeat",
				     "repeat must be at least 1");
	if (p->window_end > 0 && p->window_end <= p->window_start)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.window_end",
				     "the window ends before it starts");
	if (p->keep < 1 && !rng)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.keep",
				     "thinning needs a random stream");
	struct shaper *s = calloc(1, sizeof *s);
	if (!s)
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "out of memory");
	lsim_workload_init_base(&s->base, &shaper_ops);
	s->open = open;
	s->ctx = ctx;
	s->p = *p;
	s->rng = rng;
	int rc = open(ctx, &s->src, d);
	if (rc != 0) {
		free(s);
		return rc;
	}
	*out = &s->base;
	return 0;
}
