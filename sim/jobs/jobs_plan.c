/*
 * jobs_plan.c - the plan of the jobs module: each job's profile (the GPUs
 * it is predicted to hold from now on, with no failures), and per GPU type
 * the predicted demand over time of the jobs holding GPUs and of those
 * queued to resume, as a step function, built from every job or kept
 * between passes; the reservations and admission checks that backfill and
 * time packing make on it.
 */
#include <stdlib.h>
#include <string.h>

#include "jobs/jobs_internal.h"

/* ---- profiles: the predicted GPUs held from now on ---- */

static int64_t phase_end_of(const struct lsim_job_spec *s, int32_t p)
{
	int64_t e = 0;
	for (int32_t q = 0; q <= p && q < s->n_phases; q++)
		e += s->phases[q].iterations;
	return e;
}

/* Milli-GPUs a job asks for in phase p. */
static int32_t desired_milli(const struct lsim_jobs *js, const struct job *jb,
			     int32_t p)
{
	if (jb->spec->gpu_milli > 0)
		return jb->spec->gpu_milli;
	return lsim_jobs_desired(js, jb, p) * MILLI;
}

struct segbuf {
	struct seg *s;
	size_t n, cap;
	bool oom;
};

static void seg_add(struct segbuf *b, lsim_time dur, int32_t milli)
{
	if (dur <= 0)
		return;
	if (b->n > 0 && b->s[b->n - 1].milli == milli) {
		b->s[b->n - 1].dur += dur;
		return;
	}
	if (b->n == b->cap) {
		size_t c = b->cap ? b->cap * 2 : 16;
		struct seg *q = realloc(b->s, c * sizeof *q);
		if (!q) {
			b->oom = true;
			return;
		}
		b->s = q;
		b->cap = c;
	}
	b->s[b->n].dur = dur;
	b->s[b->n].milli = milli;
	b->n++;
}

/* Number of periodic checkpoint boundaries m with x < m < e. */
static int64_t ckpts_inside(int64_t k, int64_t x, int64_t e)
{
	if (k <= 0 || e <= x + 1)
		return 0;
	int64_t c = (e - 1) / k - x / k;
	return c > 0 ? c : 0;
}

/*
 * From a boundary at iteration x that ends phase p (x == end of p) or lies
 * inside it, the rest of the job holding `milli` (whole GPUs a) on `type`:
 * what the state machine of this file does, with no failures.
 */
static void walk(const struct lsim_jobs *js, const struct job *jb, int32_t p,
		 int64_t x, bool at_boundary, int32_t a, int32_t milli,
		 int32_t type, struct segbuf *b)
{
	const struct lsim_job_spec *s = jb->spec;
	int64_t k = s->ckpt_every;
	int64_t e = phase_end_of(s, p);
	for (;;) {
		if (at_boundary) {
			if (x >= jb->total)
				return;
			if (x == e) {
				int32_t q = p + 1;
				bool rs = js->alloc->resize &&
					  s->phases[q].gpus != s->phases[p].gpus;
				if (rs) {
					seg_add(b, jb->ckpt_t, milli);
					a = lsim_jobs_desired(js, jb, q);
					milli = desired_milli(js, jb, q);
					seg_add(b,
						js->cfg.restart_overhead + jb->ckpt_t,
						milli);
				} else if (k > 0 && x % k == 0) {
					seg_add(b, jb->ckpt_t, milli);
				}
				p = q;
				e += s->phases[q].iterations;
			} else {
				seg_add(b, jb->ckpt_t, milli);
			}
		}
		int32_t g = s->phases[p].gpus;
		int32_t n = s->gpu_milli > 0 ? 1 : (a < g ? a : g);
		lsim_time it = lsim_jobs_iter_time_on(js, jb, p, n, type);
		int64_t c = ckpts_inside(k, x, e);
		seg_add(b, (lsim_time)(e - x) * it + c * jb->ckpt_t, milli);
		x = e;
		at_boundary = true;
	}
}

/* The plan type of a job not holding GPUs: its last, else its first. */
static int32_t plan_type(const struct lsim_jobs *js, const struct job *jb)
{
	if (jb->rec.gpu_type >= 0 && (jb->type_mask >> jb->rec.gpu_type & 1))
		return jb->rec.gpu_type;
	for (int32_t t = 0; t < js->n_types; t++)
		if (jb->type_mask >> t & 1)
			return t;
	return 0;
}

static void profile(const struct lsim_jobs *js, const struct job *jb,
		    int32_t type, struct segbuf *b)
{
	lsim_time now = lsim_jobs_now(js);
	b->n = 0;
	switch (jb->state) {
	case ST_WAITING:
	case ST_QUEUED: {
		int32_t a = lsim_jobs_desired(js, jb, jb->phase);
		int32_t m = desired_milli(js, jb, jb->phase);
		seg_add(b, lsim_jobs_restart_time(js, jb), m);
		walk(js, jb, jb->phase, jb->done, false, a, m, type, b);
		break;
	}
	case ST_RESTARTING: {
		seg_add(b, jb->state_end - now, jb->milli);
		walk(js, jb, jb->phase, jb->done, false, jb->alloc, jb->milli,
		     jb->type, b);
		break;
	}
	case ST_COMPUTING:
		/* the rest of the segment, then the boundary at its end */
		seg_add(b, jb->state_end - now, jb->milli);
		walk(js, jb, jb->phase, jb->seg_iter1, true, jb->alloc,
		     jb->milli, jb->type, b);
		break;
	case ST_CHECKPOINTING: {
		seg_add(b, jb->state_end - now, jb->milli);
		if (jb->after == AFTER_CONT) {
			walk(js, jb, jb->phase, jb->done, false, jb->alloc,
			     jb->milli, jb->type, b);
		} else if (jb->after == AFTER_RESIZE) {
			int32_t a = lsim_jobs_desired(js, jb, jb->phase);
			int32_t m = desired_milli(js, jb, jb->phase);
			seg_add(b, js->cfg.restart_overhead + jb->ckpt_t, m);
			walk(js, jb, jb->phase, jb->done, false, a, m, jb->type,
			     b);
		}
		break;
	}
	default:
		break;
	}
}

/* ---- the plan ---- */

/* Grows the arrays of times *pt and values *pu, of *cap entries each, to
 * hold need (a step function's, or the running demand's next arrays). */
static int grow_steps(lsim_time **pt, int64_t **pu, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 16;
	while (c < need)
		c *= 2;
	lsim_time *t = realloc(*pt, c * sizeof *t);
	if (!t)
		return LSIM_ENOMEM;
	*pt = t;
	int64_t *u = realloc(*pu, c * sizeof *u);
	if (!u)
		return LSIM_ENOMEM;
	*pu = u;
	*cap = c;
	return 0;
}

static int steps_reserve(struct steps *f, size_t need)
{
	return grow_steps(&f->t, &f->u, &f->cap, need);
}

static int steps_reset(struct steps *f, lsim_time now)
{
	if (steps_reserve(f, 1))
		return LSIM_ENOMEM;
	f->n = 1;
	f->t[0] = now;
	f->u[0] = 0;
	return 0;
}

/* Index of the step holding time t (t >= t[0]). */
static size_t steps_find(const struct steps *f, lsim_time t)
{
	size_t lo = 0, hi = f->n;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (f->t[mid] <= t)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Splits the step holding t so that a step starts at t; returns its index. */
static int steps_split(struct steps *f, lsim_time t, size_t *at)
{
	size_t i = steps_find(f, t);
	if (f->t[i] == t) {
		*at = i;
		return 0;
	}
	if (steps_reserve(f, f->n + 1))
		return LSIM_ENOMEM;
	memmove(f->t + i + 2, f->t + i + 1, (f->n - i - 1) * sizeof *f->t);
	memmove(f->u + i + 2, f->u + i + 1, (f->n - i - 1) * sizeof *f->u);
	f->t[i + 1] = t;
	f->u[i + 1] = f->u[i];
	f->n++;
	*at = i + 1;
	return 0;
}

static int steps_add(struct steps *f, lsim_time from, lsim_time to, int64_t m)
{
	if (to <= from || m == 0)
		return 0;
	if (from < f->t[0])
		from = f->t[0];
	size_t a, z;
	if (steps_split(f, from, &a))
		return LSIM_ENOMEM;
	if (to == LSIM_TIME_MAX) {
		z = f->n;
	} else {
		if (steps_split(f, to, &z))
			return LSIM_ENOMEM;
	}
	for (size_t i = a; i < z; i++)
		f->u[i] += m;
	return 0;
}

/*
 * Whether the segments fit on f under cap when started at s. If not,
 * *bound is the earliest start that can avoid the conflict found (every
 * start in [s, bound) meets it), LSIM_TIME_MAX if none can.
 */
static bool fits_at(const struct steps *f, int64_t cap, const struct seg *sg,
		    size_t n, lsim_time s, lsim_time *bound)
{
	lsim_time o = 0;
	for (size_t q = 0; q < n; q++) {
		lsim_time a = s + o, z = a + sg[q].dur;
		o += sg[q].dur;
		if (sg[q].dur <= 0)
			continue;
		for (size_t i = steps_find(f, a); i < f->n && f->t[i] < z; i++) {
			if (f->u[i] + sg[q].milli <= cap)
				continue;
			if (sg[q].milli > cap || i + 1 == f->n)
				*bound = LSIM_TIME_MAX;
			else
				*bound = f->t[i + 1] - (a - s);
			return false;
		}
	}
	return true;
}

static int64_t type_cap(const struct lsim_jobs *js, int32_t t)
{
	return (int64_t)(js->types[t].total - js->types[t].lent) * MILLI;
}

static int delta_cmp(const void *pa, const void *pb)
{
	const struct delta *a = pa, *b = pb;
	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return 0;
}

static struct segbuf js_segbuf(struct lsim_jobs *js)
{
	struct segbuf b = {js->segs, 0, js->cap_segs, false};
	return b;
}

static void js_keep_segbuf(struct lsim_jobs *js, const struct segbuf *b)
{
	js->segs = b->s;
	js->cap_segs = b->cap;
}

/* Adds a job's profile from now: what it holds now to base[type], each
 * later change as a delta (only those need sorting). */
static int add_profile_deltas(struct lsim_jobs *js, const struct job *jb,
			      int32_t type, int64_t *base, size_t *nd)
{
	struct segbuf b = js_segbuf(js);
	profile(js, jb, type, &b);
	js_keep_segbuf(js, &b);
	if (b.oom)
		return LSIM_ENOMEM;
	if (b.n == 0)
		return 0;
	if (lsim_grow((void **)&js->deltas, &js->cap_deltas, *nd + b.n,
			   sizeof *js->deltas))
		return LSIM_ENOMEM;
	lsim_time t = lsim_jobs_now(js);
	base[type] += b.s[0].milli;
	for (size_t i = 0; i < b.n; i++) {
		t += b.s[i].dur;
		int32_t next = i + 1 < b.n ? b.s[i + 1].milli : 0;
		js->deltas[(*nd)++] =
			(struct delta){t, next - b.s[i].milli, type};
	}
	return 0;
}

/* The plan from scratch: every running job's and resume's profile, sorted
 * (cfg.plan_rebuild; the reference the kept plan below is tested
 * against). */
static int plan_build_full(struct lsim_jobs *js)
{
	lsim_time now = lsim_jobs_now(js);
	size_t nd = 0;
	int64_t *base = calloc((size_t)js->n_types, sizeof *base);
	if (!base)
		return LSIM_ENOMEM;
	int rc = 0;
	for (size_t i = 0; i < js->n_running && !rc; i++) {
		const struct job *jb = &js->jobs[js->running[i]];
		rc = add_profile_deltas(js, jb, jb->type, base, &nd);
	}
	for (size_t i = 0; i < js->n_pending && !rc; i++) {
		const struct job *jb = &js->jobs[js->pending[i]];
		if (!jb->resume)
			break; /* resumes come first */
		rc = add_profile_deltas(js, jb, plan_type(js, jb), base, &nd);
	}
	if (rc) {
		free(base);
		return rc;
	}
	if (nd > 1)
		qsort(js->deltas, nd, sizeof *js->deltas, delta_cmp);
	size_t k = 0;
	for (int32_t t = 0; t < js->n_types; t++) {
		struct steps *f = &js->plan[t];
		if (steps_reset(f, now)) {
			free(base);
			return LSIM_ENOMEM;
		}
		int64_t u = base[t];
		f->u[0] = u;
		for (; k < nd && js->deltas[k].type == t; k++) {
			const struct delta *d = &js->deltas[k];
			u += d->d;
			bool last = k + 1 == nd || js->deltas[k + 1].type != t ||
				    js->deltas[k + 1].t != d->t;
			if (!last)
				continue;
			if (d->t <= now) {
				f->u[0] = u;
			} else if (f->u[f->n - 1] != u) {
				if (steps_reserve(f, f->n + 1)) {
					free(base);
					return LSIM_ENOMEM;
				}
				f->t[f->n] = d->t;
				f->u[f->n] = u;
				f->n++;
			}
		}
	}
	free(base);
	js->plan_valid = true;
	return 0;
}

/* ---- the plan kept between builds ---- */

/* The profile of running job jb from now: its demand now (*base) and its
 * changes after (js->pscr[0 .. *n)). */
static int running_profile(struct lsim_jobs *js, const struct job *jb,
			   int64_t *base, size_t *n)
{
	struct segbuf b = js_segbuf(js);
	profile(js, jb, jb->type, &b);
	js_keep_segbuf(js, &b);
	*base = 0;
	*n = 0;
	if (b.oom)
		return LSIM_ENOMEM;
	if (b.n == 0)
		return 0;
	if (lsim_grow((void **)&js->pscr, &js->cap_pscr, b.n, sizeof *js->pscr))
		return LSIM_ENOMEM;
	lsim_time t = lsim_jobs_now(js);
	*base = b.s[0].milli;
	for (size_t i = 0; i < b.n; i++) {
		t += b.s[i].dur;
		int32_t next = i + 1 < b.n ? b.s[i + 1].milli : 0;
		js->pscr[i] = (struct pdelta){t, (int64_t)next - b.s[i].milli};
	}
	*n = b.n;
	return 0;
}

/* A change of d at t to the running demand of type: into the base if it
 * is not after now, else pending for the next merge. */
static int run_change(struct lsim_jobs *js, int32_t type, lsim_time now,
		      lsim_time t, int64_t d)
{
	if (d == 0)
		return 0;
	if (t <= now) {
		js->run[type].base += d;
		return 0;
	}
	if (lsim_grow((void **)&js->pend, &js->cap_pend, js->n_pend + 1,
			   sizeof *js->pend))
		return LSIM_ENOMEM;
	js->pend[js->n_pend++] = (struct delta){t, (int32_t)d, type};
	return 0;
}

/* Adds (sign 1) or takes out (-1) jb's cached profile. */
static int run_apply(struct lsim_jobs *js, const struct job *jb, lsim_time now,
		     int64_t sign)
{
	js->run[jb->pd_type].base += sign * (int64_t)jb->pd_base;
	for (int32_t i = 0; i < jb->n_pd; i++)
		if (run_change(js, jb->pd_type, now, jb->pd[i].t, sign * jb->pd[i].d))
			return LSIM_ENOMEM;
	return 0;
}

/* Whether jb's cached profile, from now on, is the one just computed
 * (base, js->pscr[0 .. n)). */
static bool same_profile(const struct lsim_jobs *js, const struct job *jb,
			 lsim_time now, int64_t base, size_t n)
{
	if (jb->pd_type != jb->type)
		return false;
	int64_t v = jb->pd_base;
	int32_t i = 0;
	while (i < jb->n_pd && jb->pd[i].t <= now)
		v += jb->pd[i++].d;
	if (v != base || (size_t)(jb->n_pd - i) != n)
		return false;
	for (size_t k = 0; k < n; k++, i++)
		if (jb->pd[i].t != js->pscr[k].t || jb->pd[i].d != js->pscr[k].d)
			return false;
	return true;
}

/* Brings jb's part of the running demand up to date. */
static int run_refresh(struct lsim_jobs *js, struct job *jb, lsim_time now)
{
	bool running = jb->run_pos >= 0;
	int64_t base = 0;
	size_t n = 0;
	if (running && running_profile(js, jb, &base, &n))
		return LSIM_ENOMEM;
	if (jb->pd_type >= 0) {
		if (running && same_profile(js, jb, now, base, n))
			return 0;
		if (run_apply(js, jb, now, -1))
			return LSIM_ENOMEM;
		jb->pd_type = -1;
	}
	if (!running || (size_t)jb->n_pd != n) {
		free(jb->pd);
		jb->pd = NULL;
		jb->n_pd = 0;
	}
	if (!running)
		return 0;
	if (n > 0 && !jb->pd) {
		jb->pd = malloc(n * sizeof *jb->pd);
		if (!jb->pd)
			return LSIM_ENOMEM;
	}
	if (n > 0)
		memcpy(jb->pd, js->pscr, n * sizeof *jb->pd);
	jb->n_pd = (int32_t)n;
	jb->pd_base = (int32_t)base;
	jb->pd_type = jb->type;
	return run_apply(js, jb, now, 1);
}

/* Whether running job jb's predicted demand in absolute time can move
 * without an event of its own: no event ends its state, because its flows
 * are in flight (they may take longer than predicted) or the engine ran
 * out of memory. */
static bool run_volatile(const struct job *jb)
{
	return jb->run_pos >= 0 && jb->ev == 0;
}

/* Empties the running demand and marks every running job to be added:
 * the first build, or the one after running out of memory. */
static int run_reset(struct lsim_jobs *js)
{
	for (int32_t t = 0; t < js->n_types; t++) {
		js->run[t].n = 0;
		js->run[t].base = 0;
	}
	js->n_pend = 0;
	js->n_dirty = 0;
	for (size_t j = 0; j < js->n_jobs; j++) {
		struct job *jb = &js->jobs[j];
		jb->pd_type = -1;
		jb->dirty = false;
	}
	js->run_on = true;
	js->run_stale = false;
	if (lsim_grow((void **)&js->dirty, &js->cap_dirty, js->n_running + 1,
			   sizeof *js->dirty)) {
		js->run_stale = true;
		return LSIM_ENOMEM;
	}
	for (size_t i = 0; i < js->n_running; i++) {
		struct job *jb = &js->jobs[js->running[i]];
		jb->dirty = true;
		js->dirty[js->n_dirty++] = js->running[i];
	}
	return 0;
}

/* Takes in the dirty jobs' changes; volatile jobs stay dirty. */
static int run_update(struct lsim_jobs *js, lsim_time now)
{
	if ((!js->run_on || js->run_stale) && run_reset(js))
		return LSIM_ENOMEM;
	size_t keep = 0;
	for (size_t q = 0; q < js->n_dirty; q++) {
		int32_t j = js->dirty[q];
		struct job *jb = &js->jobs[j];
		jb->dirty = false;
		if (run_refresh(js, jb, now)) {
			js->run_stale = true;
			return LSIM_ENOMEM;
		}
		if (run_volatile(jb)) {
			jb->dirty = true;
			js->dirty[keep++] = j;
		}
	}
	js->n_dirty = keep;
	return 0;
}

/*
 * Type's plan f from now: the running demand merged with its pending
 * changes p[0 .. np) (which become part of it) and with the resumes'
 * profiles r[0 .. nr) (which do not), both sorted by time, and rbase, the
 * resumes' demand now. Steps only where the demand changes, as
 * plan_build_full makes them.
 */
static int run_merge(struct lsim_jobs *js, int32_t type, lsim_time now,
		     const struct delta *p, size_t np, const struct delta *r,
		     size_t nr, int64_t rbase, struct steps *f)
{
	struct run_plan *a = &js->run[type];
	size_t need = a->n + np;
	if (grow_steps(&a->t2, &a->d2, &a->cap2, need))
		return LSIM_ENOMEM;
	if (steps_reserve(f, need + nr + 1))
		return LSIM_ENOMEM;
	size_t i = 0, k = 0, q = 0, w = 0;
	int64_t base = a->base;
	while (i < a->n && a->t[i] <= now)
		base += a->d[i++];
	while (k < np && p[k].t <= now)
		base += p[k++].d;
	int64_t u = base + rbase;
	while (q < nr && r[q].t <= now)
		u += r[q++].d;
	f->n = 1;
	f->t[0] = now;
	f->u[0] = u;
	for (;;) {
		bool any = false;
		lsim_time t = 0;
		if (i < a->n) {
			t = a->t[i];
			any = true;
		}
		if (k < np && (!any || p[k].t < t)) {
			t = p[k].t;
			any = true;
		}
		if (q < nr && (!any || r[q].t < t)) {
			t = r[q].t;
			any = true;
		}
		if (!any)
			break;
		int64_t dp = 0, dr = 0;
		while (i < a->n && a->t[i] == t)
			dp += a->d[i++];
		while (k < np && p[k].t == t)
			dp += p[k++].d;
		while (q < nr && r[q].t == t)
			dr += r[q++].d;
		if (dp != 0) {
			a->t2[w] = t;
			a->d2[w] = dp;
			w++;
		}
		u += dp + dr;
		if (f->u[f->n - 1] != u) {
			f->t[f->n] = t;
			f->u[f->n] = u;
			f->n++;
		}
	}
	lsim_time *tt = a->t;
	int64_t *td = a->d;
	size_t tc = a->cap;
	a->t = a->t2;
	a->d = a->d2;
	a->cap = a->cap2;
	a->t2 = tt;
	a->d2 = td;
	a->cap2 = tc;
	a->n = w;
	a->base = base;
	return 0;
}

/* The plan: the running jobs' demand kept from the last build, the
 * changes of the jobs touched since, and the resumes' profiles. */
static int plan_build(struct lsim_jobs *js)
{
	if (js->plan_valid)
		return 0;
	if (js->cfg.plan_rebuild)
		return plan_build_full(js);
	lsim_time now = lsim_jobs_now(js);
	if (run_update(js, now))
		return LSIM_ENOMEM;
	size_t nd = 0;
	memset(js->res_base, 0, (size_t)js->n_types * sizeof *js->res_base);
	for (size_t i = 0; i < js->n_pending; i++) {
		const struct job *jb = &js->jobs[js->pending[i]];
		if (!jb->resume)
			break; /* resumes come first */
		if (add_profile_deltas(js, jb, plan_type(js, jb), js->res_base, &nd)) {
			js->run_stale = true;
			return LSIM_ENOMEM;
		}
	}
	if (nd > 1)
		qsort(js->deltas, nd, sizeof *js->deltas, delta_cmp);
	if (js->n_pend > 1)
		qsort(js->pend, js->n_pend, sizeof *js->pend, delta_cmp);
	size_t k = 0, q = 0;
	for (int32_t t = 0; t < js->n_types; t++) {
		size_t k0 = k, q0 = q;
		while (k < js->n_pend && js->pend[k].type == t)
			k++;
		while (q < nd && js->deltas[q].type == t)
			q++;
		if (run_merge(js, t, now, js->pend + k0, k - k0, js->deltas + q0,
			      q - q0, js->res_base[t], &js->plan[t])) {
			js->run_stale = true;
			return LSIM_ENOMEM;
		}
	}
	js->n_pend = 0;
	js->plan_valid = true;
	return 0;
}

/* Whether jb's predicted demand fits on the plan from now on. */
static bool plan_fits(struct lsim_jobs *js, const struct job *jb, int32_t type)
{
	if (plan_build(js))
		return false;
	struct segbuf b = js_segbuf(js);
	profile(js, jb, type, &b);
	js_keep_segbuf(js, &b);
	lsim_time bound;
	return !b.oom && fits_at(&js->plan[type], type_cap(js, type), b.s, b.n,
				 lsim_jobs_now(js), &bound);
}

/*
 * Time packing's admission of jb, which fits now (lsim_jobs_choose() said so). When
 * no job's demand changes over its phases and no job waits to resume, the
 * committed demand only falls after now, so fitting now is enough and the
 * plan is not built.
 */
bool lsim_jobs_admit(struct lsim_jobs *js, const struct job *jb, int32_t type)
{
	if (js->n_varying == 0 &&
	    (js->n_pending == 0 || !js->jobs[js->pending[0]].resume))
		return true;
	return plan_fits(js, jb, type);
}

void lsim_jobs_plan_add_job(struct lsim_jobs *js, const struct job *jb,
			    int32_t type, lsim_time at)
{
	struct segbuf b = js_segbuf(js);
	profile(js, jb, type, &b);
	js_keep_segbuf(js, &b);
	if (b.oom) {
		js->plan_valid = false;
		return;
	}
	lsim_time t = at;
	for (size_t i = 0; i < b.n; i++) {
		if (steps_add(&js->plan[type], t, t + b.s[i].dur, b.s[i].milli)) {
			js->plan_valid = false;
			return;
		}
		t += b.s[i].dur;
	}
}

lsim_time lsim_jobs_plan_earliest(struct lsim_jobs *js, int32_t j,
				  int32_t *type)
{
	const struct job *jb = &js->jobs[j];
	lsim_time best = LSIM_TIME_MAX;
	if (plan_build(js))
		return best;
	for (int32_t t = 0; t < js->n_types; t++) {
		if (!(jb->type_mask >> t & 1))
			continue;
		struct segbuf b = js_segbuf(js);
		profile(js, jb, t, &b);
		js_keep_segbuf(js, &b);
		if (b.oom)
			return LSIM_TIME_MAX;
		lsim_time s = lsim_jobs_now(js);
		for (;;) {
			lsim_time bound;
			if (fits_at(&js->plan[t], type_cap(js, t), b.s, b.n, s,
				    &bound))
				break;
			s = bound;
			if (s == LSIM_TIME_MAX || s >= best)
				break;
		}
		if (s < best) {
			best = s;
			if (type)
				*type = t;
		}
	}
	return best;
}

int lsim_jobs_plan_reserve(struct lsim_jobs *js, int32_t j, lsim_time at,
			   int32_t type)
{
	if (plan_build(js))
		return LSIM_ENOMEM;
	lsim_jobs_plan_add_job(js, &js->jobs[j], type, at);
	return js->plan_valid ? 0 : LSIM_ENOMEM;
}

bool lsim_jobs_plan_fits_now(struct lsim_jobs *js, int32_t j)
{
	int32_t type, grant;
	if (!lsim_jobs_choose(js, &js->jobs[j], &type, &grant))
		return false;
	return plan_fits(js, &js->jobs[j], type);
}

int lsim_jobs_plan_check(struct lsim_jobs *js)
{
	js->plan_valid = false;
	int rc = plan_build(js);
	struct steps *kept = calloc((size_t)js->n_types, sizeof *kept);
	if (!kept)
		rc = LSIM_ENOMEM;
	for (int32_t t = 0; rc == 0 && t < js->n_types; t++) {
		const struct steps *f = &js->plan[t];
		rc = steps_reserve(&kept[t], f->n);
		if (rc == 0) {
			memcpy(kept[t].t, f->t, f->n * sizeof *f->t);
			memcpy(kept[t].u, f->u, f->n * sizeof *f->u);
			kept[t].n = f->n;
		}
	}
	js->plan_valid = false;
	if (rc == 0)
		rc = plan_build_full(js);
	for (int32_t t = 0; rc == 0 && t < js->n_types; t++) {
		const struct steps *f = &js->plan[t], *k = &kept[t];
		if (f->n != k->n || memcmp(f->t, k->t, f->n * sizeof *f->t) ||
		    memcmp(f->u, k->u, f->n * sizeof *f->u))
			rc = LSIM_ESTATE;
	}
	js->plan_valid = false;
	for (int32_t t = 0; kept && t < js->n_types; t++) {
		free(kept[t].t);
		free(kept[t].u);
	}
	free(kept);
	return rc;
}

lsim_time lsim_jobs_predicted(const struct lsim_jobs *js, int32_t j)
{
	const struct job *jb = &js->jobs[j];
	struct segbuf b = {NULL, 0, 0, false};
	int32_t type = jb->run_pos >= 0 ? jb->type : plan_type(js, jb);
	profile(js, jb, type, &b);
	lsim_time sum = 0;
	for (size_t i = 0; i < b.n; i++)
		sum += b.s[i].dur;
	free(b.s);
	return sum;
}
