/*
 * jobs_sched.c - the scheduling glue of the jobs module: the pending queue
 * (in the scheduler's order, resumes first), the choice of where and how
 * many GPUs a pending job gets, the scheduler's passes and ticks,
 * preemption on behalf of a pending job, and the accessors the schedulers
 * and allocators of policies/jobs read the jobs through.
 */
#include <stdlib.h>
#include <string.h>

#include "jobs/jobs_internal.h"

static void ev_pass(struct lsim_engine *eng, void *subject, uint64_t arg);
static void ev_tick(struct lsim_engine *eng, void *subject, uint64_t arg);

/* ---- passes and ticks ---- */

void lsim_jobs_request_pass(struct lsim_jobs *js)
{
	js->plan_valid = false;
	if (js->pass_pending)
		return;
	if (lsim_schedule(js->eng, lsim_jobs_now(js), ev_pass, js, 0))
		js->pass_pending = true;
}

void lsim_jobs_arm_tick(struct lsim_jobs *js)
{
	if (!js->sched->tick || js->tick_armed || js->cfg.las_quantum <= 0 ||
	    js->n_pending == 0 || js->n_running == 0)
		return;
	lsim_time q = js->cfg.las_quantum;
	lsim_time now = lsim_jobs_now(js);
	lsim_time at = (now / q + 1) * q;
	if (lsim_schedule(js->eng, at, ev_tick, js, 0))
		js->tick_armed = true;
}

/* ---- queues ---- */

static bool before(const struct lsim_jobs *js, int32_t a, int32_t b)
{
	const struct job *x = &js->jobs[a], *y = &js->jobs[b];
	if (x->resume != y->resume)
		return x->resume;
	if (x->key != y->key)
		return x->key < y->key;
	return x->qseq < y->qseq;
}

static size_t pending_lower_bound(const struct lsim_jobs *js, int32_t j)
{
	size_t lo = 0, hi = js->n_pending;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (before(js, js->pending[mid], j))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int lsim_jobs_enqueue(struct lsim_jobs *js, int32_t j, bool front)
{
	struct job *jb = &js->jobs[j];
	if (lsim_grow((void **)&js->pending, &js->cap_pending, js->n_pending + 1,
			   sizeof *js->pending))
		return LSIM_ENOMEM;
	lsim_jobs_set_state(js, jb, ST_QUEUED);
	jb->resume = front;
	jb->releasing = false;
	jb->qseq = js->qseq++;
	jb->key = front ? 0.0 : js->sched->key(js, j);
	jb->queued_since = lsim_jobs_now(js);
	size_t pos = pending_lower_bound(js, j);
	memmove(js->pending + pos + 1, js->pending + pos,
		(js->n_pending - pos) * sizeof *js->pending);
	js->pending[pos] = j;
	js->n_pending++;
	lsim_jobs_request_pass(js);
	lsim_jobs_arm_tick(js);
	return 0;
}

void lsim_jobs_dequeue(struct lsim_jobs *js, int32_t j)
{
	size_t pos = pending_lower_bound(js, j);
	/* keys are unique with qseq, so pos holds j */
	memmove(js->pending + pos, js->pending + pos + 1,
		(js->n_pending - pos - 1) * sizeof *js->pending);
	js->n_pending--;
}

/* ---- allocation choice ---- */

static int32_t tenant_room_milli(const struct lsim_jobs *js,
				 const struct job *jb)
{
	int32_t t = jb->spec->tenant;
	if (!js->quota || t < 0 || (size_t)t >= js->n_quota || js->quota[t] < 0)
		return INT32_MAX;
	int64_t used = (size_t)t < js->n_tenant_milli ? js->tenant_milli[t] : 0;
	int64_t room = (int64_t)js->quota[t] * MILLI - used;
	return room < 0 ? 0 : room > INT32_MAX ? INT32_MAX : (int32_t)room;
}

/* Fewest GPUs the job runs on when it wants want. */
int32_t lsim_jobs_min_gpus(const struct job *jb, int32_t want)
{
	int32_t m = jb->spec->gpus_min;
	return m > 0 && m < want ? m : want;
}

/* Where and how many GPUs pending job jb would get now. */
bool lsim_jobs_choose(const struct lsim_jobs *js, const struct job *jb,
		      int32_t *type, int32_t *grant)
{
	int32_t room = tenant_room_milli(js, jb);
	if (jb->spec->gpu_milli > 0) {
		if (jb->spec->gpu_milli > room)
			return false;
		for (int32_t t = 0; t < js->n_types; t++) {
			if (!(jb->type_mask >> t & 1))
				continue;
			if (js->types[t].partial == 0 &&
			    js->types[t].free_whole == 0)
				continue;
			if (lsim_jobs_share_gpu(js, t, jb->spec->gpu_milli) >= 0) {
				*type = t;
				*grant = 1;
				return true;
			}
		}
		return false;
	}
	int32_t want = lsim_jobs_desired(js, jb, jb->phase);
	if (want > room / MILLI)
		want = room / MILLI;
	int32_t need = lsim_jobs_min_gpus(jb, lsim_jobs_desired(js, jb, jb->phase));
	if (want < need)
		return false;
	for (int32_t t = 0; t < js->n_types; t++) {
		if (!(jb->type_mask >> t & 1))
			continue;
		/* a node owing GPUs to lending has none free: they are lent
		 * as they empty */
		int32_t f = js->types[t].free_whole;
		if (f >= need) {
			*type = t;
			*grant = f < want ? f : want;
			return true;
		}
	}
	return false;
}

/* ---- for the schedulers and allocators ---- */

bool lsim_jobs_can_start(struct lsim_jobs *js, int32_t j)
{
	const struct job *jb = &js->jobs[j];
	int32_t type, grant;
	if (jb->state != ST_QUEUED || !lsim_jobs_choose(js, jb, &type, &grant))
		return false;
	if (js->alloc->plan_admission && !jb->resume)
		return lsim_jobs_admit(js, jb, type);
	return true;
}

struct cand {
	double key;
	int32_t j, type, gpus;
};

static int cand_cmp(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;
	if (a->key != b->key)
		return a->key > b->key ? -1 : 1; /* worst first */
	return a->j > b->j ? -1 : a->j < b->j; /* then the later job */
}

int lsim_jobs_preempt_for(struct lsim_jobs *js, int32_t j,
			  double (*key)(const struct lsim_jobs *js, int32_t j))
{
	const struct job *jb = &js->jobs[j];
	if (jb->state != ST_QUEUED || jb->spec->gpu_milli > 0)
		return 0;
	int32_t need = lsim_jobs_min_gpus(jb, lsim_jobs_desired(js, jb, jb->phase));
	struct cand *c = malloc((js->n_running + 1) * sizeof *c);
	if (!c)
		return LSIM_ENOMEM;
	int32_t best_t = -1;
	size_t best_k = 0;
	for (int32_t t = 0; t < js->n_types; t++) {
		if (!(jb->type_mask >> t & 1) || js->types[t].total < need)
			continue;
		int32_t have = js->types[t].free_whole;
		size_t nc = 0;
		for (size_t i = 0; i < js->n_running; i++) {
			int32_t v = js->running[i];
			const struct job *vb = &js->jobs[v];
			if (vb->type != t || vb->spec->gpu_milli > 0)
				continue;
			if (vb->releasing) {
				have += vb->alloc;
				continue;
			}
			double k = key(js, v);
			if (k > jb->key)
				c[nc++] = (struct cand){k, v, t, vb->alloc};
		}
		if (have >= need)
			continue; /* it fits once releases end */
		qsort(c, nc, sizeof *c, cand_cmp);
		size_t k = 0;
		while (have < need && k < nc)
			have += c[k++].gpus;
		if (have >= need && (best_t < 0 || k < best_k)) {
			best_t = t;
			best_k = k;
		}
	}
	int n = 0;
	if (best_t >= 0) {
		/* collect again for the chosen type (c holds the last one) */
		size_t nc = 0;
		for (size_t i = 0; i < js->n_running; i++) {
			int32_t v = js->running[i];
			const struct job *vb = &js->jobs[v];
			if (vb->type != best_t || vb->spec->gpu_milli > 0 ||
			    vb->releasing)
				continue;
			double k = key(js, v);
			if (k > jb->key)
				c[nc++] = (struct cand){k, v, best_t, vb->alloc};
		}
		qsort(c, nc, sizeof *c, cand_cmp);
		for (size_t k = 0; k < best_k; k++, n++)
			lsim_jobs_preempt(js, c[k].j, false);
	}
	free(c);
	return n;
}

static void ev_pass(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)eng;
	(void)arg;
	struct lsim_jobs *js = subject;
	js->pass_pending = false;
	js->plan_valid = false;
	js->sched->pass(js);
	js->plan_valid = false;
	lsim_jobs_arm_tick(js);
}

static void ev_tick(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)eng;
	(void)arg;
	struct lsim_jobs *js = subject;
	js->tick_armed = false;
	js->plan_valid = false;
	js->sched->tick(js);
	lsim_jobs_arm_tick(js);
}

bool lsim_jobs_pool_full(const struct lsim_jobs *js)
{
	for (int32_t t = 0; t < js->n_types; t++)
		if (js->types[t].free_whole > 0 || js->types[t].partial > 0)
			return false;
	return true;
}

const struct lsim_jobs_cfg *lsim_jobs_config(const struct lsim_jobs *js)
{
	return &js->cfg;
}

struct lsim_engine *lsim_jobs_engine(const struct lsim_jobs *js)
{
	return js->eng;
}

size_t lsim_jobs_n_pending(const struct lsim_jobs *js)
{
	return js->n_pending;
}

int32_t lsim_jobs_pending(const struct lsim_jobs *js, size_t i)
{
	return i < js->n_pending ? js->pending[i] : -1;
}

size_t lsim_jobs_n_running(const struct lsim_jobs *js)
{
	return js->n_running;
}

int32_t lsim_jobs_running(const struct lsim_jobs *js, size_t i)
{
	return i < js->n_running ? js->running[i] : -1;
}

const struct lsim_job_spec *lsim_jobs_spec(const struct lsim_jobs *js,
					   int32_t j)
{
	return js->jobs[j].spec;
}

bool lsim_jobs_is_resume(const struct lsim_jobs *js, int32_t j)
{
	return js->jobs[j].resume;
}

bool lsim_jobs_is_releasing(const struct lsim_jobs *js, int32_t j)
{
	return js->jobs[j].releasing;
}

double lsim_jobs_attained(const struct lsim_jobs *js, int32_t j)
{
	const struct job *jb = &js->jobs[j];
	double a = jb->rec.alloc_gpu_s;
	if (jb->run_pos >= 0)
		a += lsim_jobs_held_gpus(jb) *
		     lsim_time_to_s(lsim_jobs_now(js) - jb->held_since);
	return a;
}

int32_t lsim_jobs_held(const struct lsim_jobs *js, int32_t j)
{
	return js->jobs[j].alloc;
}
