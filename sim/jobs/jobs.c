/*
 * jobs.c - training and fine-tuning jobs on the event engine: the GPU pool
 * (typed GPUs on nodes, whole or shared in milli-GPUs, lending to
 * inference), the job state machine (queued, restarting, computing,
 * checkpointing, done) with failures, preemption and per-phase resizes, the
 * plan (predicted GPU demand over time, per type) that backfill and time
 * packing consult, and the records and summary. See docs/jobs.md.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "jobs/jobs.h"
#include "jobs/job_policies.h"
#include "kernel/rng.h"

#define MILLI 1000

enum job_state {
	ST_WAITING,	  /* not arrived yet */
	ST_QUEUED,	  /* waiting for GPUs */
	ST_RESTARTING,	  /* holding GPUs, starting or loading a checkpoint */
	ST_COMPUTING,	  /* running iterations */
	ST_CHECKPOINTING, /* writing a checkpoint, holding GPUs */
	ST_DONE,	  /* finished or rejected */
};

/* What follows the checkpoint being written. */
enum after_ckpt { AFTER_CONT, AFTER_RESIZE, AFTER_RELEASE };

struct job {
	const struct lsim_job_spec *spec;
	int32_t state;
	int32_t phase;
	int64_t done;	   /* iterations completed (at the last boundary) */
	int64_t ckpt_iter; /* iterations in the last checkpoint */
	int64_t total;
	int64_t phase_end; /* iterations at the end of the current phase */
	bool has_ckpt, started, resume, releasing, release_front;
	int32_t after;
	uint64_t type_mask; /* allowed pool types */
	int32_t peak;
	bool varying;	  /* its phases differ in demand */
	lsim_time ckpt_t; /* one checkpoint write (and read) */
	double ckpt_bytes;
	/* on the links (lsim_jobs_use_links): its flows in flight, the
	 * all-reduce of the current iteration or a checkpoint write */
	bool in_comm;
	int32_t flows_left;
	lsim_flow_id *flows;
	int32_t cap_flows;
	/* allocation */
	int32_t type;  /* -1: none */
	int32_t alloc; /* whole GPUs held (1 for a share) */
	int32_t milli; /* milli-GPUs held */
	int32_t *gpus;
	int32_t cap_gpus;
	int32_t run_pos; /* index in the running list, -1 */
	double price_s;	 /* price per GPU-second of the allocation */
	/* the current state */
	int32_t n;	/* GPUs computing (1 for a share) */
	lsim_time it;	/* iteration time of the segment */
	lsim_time seg_start, state_start, state_end, held_since, queued_since;
	int64_t seg_iter0, seg_iter1;
	lsim_event_id ev, fail_ev;
	/* queue order */
	double key;
	uint64_t qseq;
	double since_ckpt_gpu_s; /* compute since the last checkpoint */
	/* its part of the plan's running demand (struct run_plan), as last
	 * computed: what it held then, and the changes after, at absolute
	 * times; dirty: in js->dirty, to be computed again */
	struct pdelta *pd;
	int32_t n_pd;
	int32_t pd_base;
	int32_t pd_type; /* -1: not in the running demand */
	bool dirty;
	struct lsim_job_record rec;
};

struct gpu {
	int32_t node, type;
	int32_t used; /* milli-GPUs in use */
	int32_t owner; /* the job holding it whole, or -1 */
	bool lent;
};

struct node {
	int32_t first, count, type;
	int32_t free_whole; /* GPUs with nothing on them, not lent */
	int32_t lent;
	int32_t promised; /* GPUs still owed to lend requests */
};

struct gtype {
	int32_t total, lent, free_whole;
	int32_t partial; /* GPUs shared and not full */
	const struct lsim_gpu_profile *prof;
	double price_s;
};

struct lend_req {
	int32_t node, n, left;
	lsim_jobs_lend_fn done;
	void *ctx;
};

/* A step function of milli-GPUs in use from now on: u[i] on [t[i], t[i+1]),
 * the last step to infinity. */
struct steps {
	lsim_time *t;
	int64_t *u;
	size_t n, cap;
};

struct seg {
	lsim_time dur;
	int32_t milli;
};

struct delta {
	lsim_time t;
	int32_t d; /* milli-GPUs */
	int32_t type;
};

struct pdelta {
	lsim_time t;
	int64_t d; /* milli-GPUs */
};

/*
 * The predicted demand of the jobs holding GPUs, one type, kept from one
 * plan build to the next: base is the demand at the last build, and
 * (t[i], d[i]) the changes after it, sorted, one per time, none zero. A
 * job's predicted demand in absolute time stays the same until one of
 * its own events, so a build only re-computes the jobs that changed.
 */
struct run_plan {
	lsim_time *t;
	int64_t *d;
	size_t n, cap;
	lsim_time *t2; /* the next build's arrays */
	int64_t *d2;
	size_t cap2;
	int64_t base;
};

struct lsim_jobs {
	struct lsim_engine *eng;
	struct lsim_jobs_cfg cfg;
	struct lsim_net *net; /* NULL: traffic from link_bw and storage_bw */
	const struct lsim_topo *topo;
	const struct lsim_job_scheduler *sched;
	const struct lsim_job_allocator *alloc;
	uint64_t events0;
	/* pool */
	struct gpu *gpus;
	int32_t n_gpus;
	struct node *nodes;
	int32_t n_nodes;
	struct gtype *types;
	int32_t n_types;
	char (*type_names)[32];
	struct lend_req *lends;
	size_t n_lends, cap_lends;
	double lent_gpu_s;
	double lent_before_jobs; /* lent_gpu_s at the first arrival */
	lsim_time lent_since;
	/* jobs */
	struct job *jobs;
	size_t n_jobs, cap_jobs;
	size_t n_ended;
	size_t n_varying; /* jobs not ended whose demand changes over phases */
	const struct lsim_job_list *list; /* streaming arrivals */
	size_t list_base, list_next;
	int32_t *pending;
	size_t n_pending, cap_pending;
	int32_t *running;
	size_t n_running, cap_running;
	uint64_t qseq;
	/* tenants */
	const int32_t *quota;
	size_t n_quota;
	int64_t *tenant_milli;
	size_t n_tenant_milli;
	/* engine hooks */
	bool pass_pending, tick_armed;
	gsl_rng *fail_rng;
	/* plan */
	bool plan_valid;
	struct steps *plan;
	struct delta *deltas;
	size_t cap_deltas;
	int64_t *res_base; /* per type: demand now of jobs queued to resume */
	/* the running jobs' part of the plan, kept between builds (on from
	 * the first build; stale: rebuilt from every job at the next one,
	 * after running out of memory); pend: its changes since the last
	 * build, dirty: the jobs whose profile may have changed since */
	bool run_on, run_stale;
	struct run_plan *run;
	struct delta *pend;
	size_t n_pend, cap_pend;
	int32_t *dirty;
	size_t n_dirty, cap_dirty;
	struct pdelta *pscr;
	size_t cap_pscr;
	struct seg *segs;
	size_t cap_segs;
	/* results */
	struct lsim_job_record *out;
	size_t cap_out;
	double *scratch;
	size_t cap_scratch;
	lsim_time first_arrival, last_end;
	bool any_arrival;
	/* the timeline: every change of state of every job */
	struct lsim_job_event *timeline;
	size_t n_timeline, cap_timeline;
};

static void ev_job(struct lsim_engine *eng, void *subject, uint64_t arg);
static void ev_fail(struct lsim_engine *eng, void *subject, uint64_t arg);
static void ev_pass(struct lsim_engine *eng, void *subject, uint64_t arg);
static void ev_tick(struct lsim_engine *eng, void *subject, uint64_t arg);
static void ev_arrival(struct lsim_engine *eng, void *subject, uint64_t arg);

/* ---- utilities ---- */

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 16;
	while (c < need)
		c *= 2;
	void *q = realloc(*p, c * size);
	if (!q)
		return LSIM_ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

static double ns_to_s(lsim_time t)
{
	return (double)t / 1e9;
}

static lsim_time now_of(const struct lsim_jobs *js)
{
	return lsim_now(js->eng);
}

static double held_gpus(const struct job *jb)
{
	return (double)jb->milli / MILLI;
}

/* The job's predicted demand may have changed: the next plan build
 * computes it again (once the plan keeps the running jobs' demand). */
static void touch(struct lsim_jobs *js, struct job *jb)
{
	if (!js->run_on || js->run_stale || jb->dirty)
		return;
	if (grow((void **)&js->dirty, &js->cap_dirty, js->n_dirty + 1,
		 sizeof *js->dirty)) {
		js->run_stale = true; /* every job, at the next build */
		return;
	}
	jb->dirty = true;
	js->dirty[js->n_dirty++] = (int32_t)(jb - js->jobs);
}

/* Enters state st and notes it in the timeline (lost, not fatal, if
 * memory runs out). */
static void set_state(struct lsim_jobs *js, struct job *jb, enum job_state st)
{
	jb->state = st;
	touch(js, jb);
	if (js->n_timeline == js->cap_timeline) {
		size_t c = js->cap_timeline ? 2 * js->cap_timeline : 256;
		struct lsim_job_event *p = realloc(js->timeline, c * sizeof *p);
		if (!p)
			return;
		js->timeline = p;
		js->cap_timeline = c;
	}
	js->timeline[js->n_timeline++] = (struct lsim_job_event){
		.t = now_of(js), .job = (int32_t)(jb - js->jobs), .state = (int32_t)st,
		.gpus = held_gpus(jb)};
}

/* GPUs that compute: the share of one GPU, or whole GPUs. */
static double compute_gpus(const struct job *jb)
{
	return jb->spec->gpu_milli > 0 ? (double)jb->spec->gpu_milli / MILLI
				       : (double)jb->n;
}

static const struct lsim_gpu_profile *type_prof(const struct lsim_jobs *js,
						int32_t type)
{
	if (type < 0 || type >= js->n_types)
		type = 0;
	return js->types[type].prof;
}

static int64_t phase_end_of(const struct lsim_job_spec *s, int32_t p)
{
	int64_t e = 0;
	for (int32_t q = 0; q <= p && q < s->n_phases; q++)
		e += s->phases[q].iterations;
	return e;
}

/* Phase and its end for a progress of x iterations. */
static void set_progress(struct job *jb, int64_t x)
{
	const struct lsim_job_spec *s = jb->spec;
	int64_t e = 0;
	int32_t p = 0;
	for (; p < s->n_phases; p++) {
		e += s->phases[p].iterations;
		if (x < e || p == s->n_phases - 1)
			break;
	}
	jb->done = x;
	jb->phase = p;
	jb->phase_end = e;
}

static int32_t desired(const struct lsim_jobs *js, const struct job *jb,
		       int32_t p)
{
	return js->alloc->desired(jb->spec, p);
}

/* Milli-GPUs a job asks for in phase p. */
static int32_t desired_milli(const struct lsim_jobs *js, const struct job *jb,
			     int32_t p)
{
	if (jb->spec->gpu_milli > 0)
		return jb->spec->gpu_milli;
	return desired(js, jb, p) * MILLI;
}

static lsim_time iter_time(const struct lsim_jobs *js, const struct job *jb,
			   int32_t p, int32_t n, int32_t type)
{
	lsim_time t = 0;
	/* validated at submission: cannot fail here */
	(void)lsim_job_iter_time(jb->spec, p, n, type_prof(js, type), &js->cfg,
				 &t, NULL);
	return t;
}

static lsim_time restart_time(const struct lsim_jobs *js, const struct job *jb)
{
	if (!jb->started)
		return js->cfg.start_overhead;
	return js->cfg.restart_overhead + (jb->has_ckpt ? jb->ckpt_t : 0);
}

static void request_pass(struct lsim_jobs *js)
{
	js->plan_valid = false;
	if (js->pass_pending)
		return;
	if (lsim_schedule(js->eng, now_of(js), ev_pass, js, 0))
		js->pass_pending = true;
}

static void arm_tick(struct lsim_jobs *js)
{
	if (!js->sched->tick || js->tick_armed || js->cfg.las_quantum <= 0 ||
	    js->n_pending == 0 || js->n_running == 0)
		return;
	lsim_time q = js->cfg.las_quantum;
	lsim_time now = now_of(js);
	lsim_time at = (now / q + 1) * q;
	if (lsim_schedule(js->eng, at, ev_tick, js, 0))
		js->tick_armed = true;
}

/* ---- the pool ---- */

/* Marks empty GPU g lent (callers accrue the lent time first). */
static void lend_gpu(struct lsim_jobs *js, int32_t g)
{
	struct gpu *u = &js->gpus[g];
	struct node *nd = &js->nodes[u->node];
	u->lent = true;
	nd->lent++;
	nd->free_whole--;
	js->types[u->type].lent++;
	js->types[u->type].free_whole--;
}

static void accrue_lent(struct lsim_jobs *js)
{
	lsim_time now = now_of(js);
	int32_t lent = 0;
	for (int32_t t = 0; t < js->n_types; t++)
		lent += js->types[t].lent;
	js->lent_gpu_s += lent * ns_to_s(now - js->lent_since);
	js->lent_since = now;
}

/* A GPU that became empty: owed to a lend request of its node, or free. */
static void gpu_emptied(struct lsim_jobs *js, int32_t g)
{
	struct gpu *u = &js->gpus[g];
	struct node *nd = &js->nodes[u->node];
	if (nd->promised == 0)
		return;
	for (size_t i = 0; i < js->n_lends; i++) {
		struct lend_req *r = &js->lends[i];
		if (r->node != u->node || r->left == 0)
			continue;
		accrue_lent(js);
		lend_gpu(js, g);
		r->left--;
		nd->promised--;
		if (r->left == 0) {
			struct lend_req done = *r;
			memmove(r, r + 1, (js->n_lends - i - 1) * sizeof *r);
			js->n_lends--;
			if (done.done)
				done.done(done.ctx, done.node, done.n);
		}
		return;
	}
}

/* A GPU on which the share of milli fits best (fullest first). */
static int32_t share_gpu(const struct lsim_jobs *js, int32_t type,
			 int32_t milli)
{
	int32_t best = -1;
	for (int32_t g = 0; g < js->n_gpus; g++) {
		const struct gpu *u = &js->gpus[g];
		if (u->type != type || u->lent || u->owner >= 0 ||
		    u->used + milli > MILLI)
			continue;
		if (best < 0 || u->used > js->gpus[best].used)
			best = g;
	}
	return best;
}

/* Takes n whole GPUs of type for job j: the node that fits them most
 * tightly, else the nodes with the most free GPUs first. */
static void take_whole(struct lsim_jobs *js, struct job *jb, int32_t j,
		       int32_t type, int32_t n)
{
	int32_t best = -1;
	for (int32_t i = 0; i < js->n_nodes; i++) {
		const struct node *nd = &js->nodes[i];
		if (nd->type == type && nd->free_whole >= n &&
		    (best < 0 || nd->free_whole < js->nodes[best].free_whole))
			best = i;
	}
	int32_t got = 0;
	while (got < n) {
		int32_t nd_i = best;
		if (nd_i < 0) {
			for (int32_t i = 0; i < js->n_nodes; i++) {
				const struct node *nd = &js->nodes[i];
				if (nd->type == type && nd->free_whole > 0 &&
				    (nd_i < 0 || nd->free_whole >
							 js->nodes[nd_i].free_whole))
					nd_i = i;
			}
			if (nd_i < 0)
				break; /* choose() counted them: cannot happen */
		}
		struct node *nd = &js->nodes[nd_i];
		for (int32_t g = nd->first; g < nd->first + nd->count && got < n;
		     g++) {
			struct gpu *u = &js->gpus[g];
			if (u->lent || u->used != 0)
				continue;
			u->used = MILLI;
			u->owner = j;
			nd->free_whole--;
			js->types[type].free_whole--;
			jb->gpus[got++] = g;
		}
		best = -1;
	}
}

static void give_gpus(struct lsim_jobs *js, struct job *jb)
{
	for (int32_t i = 0; i < jb->alloc; i++) {
		int32_t g = jb->gpus[i];
		struct gpu *u = &js->gpus[g];
		struct gtype *ty = &js->types[u->type];
		if (jb->spec->gpu_milli > 0) {
			bool was_partial = u->used < MILLI;
			u->used -= jb->spec->gpu_milli;
			bool now_partial = u->used > 0;
			ty->partial += (now_partial ? 1 : 0) - (was_partial ? 1 : 0);
			if (u->used == 0) {
				js->nodes[u->node].free_whole++;
				ty->free_whole++;
				gpu_emptied(js, g);
			}
		} else {
			u->used = 0;
			u->owner = -1;
			js->nodes[u->node].free_whole++;
			ty->free_whole++;
			gpu_emptied(js, g);
		}
	}
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

static int enqueue(struct lsim_jobs *js, int32_t j, bool front)
{
	struct job *jb = &js->jobs[j];
	if (grow((void **)&js->pending, &js->cap_pending, js->n_pending + 1,
		 sizeof *js->pending))
		return LSIM_ENOMEM;
	set_state(js, jb, ST_QUEUED);
	jb->resume = front;
	jb->releasing = false;
	jb->qseq = js->qseq++;
	jb->key = front ? 0.0 : js->sched->key(js, j);
	jb->queued_since = now_of(js);
	size_t pos = pending_lower_bound(js, j);
	memmove(js->pending + pos + 1, js->pending + pos,
		(js->n_pending - pos) * sizeof *js->pending);
	js->pending[pos] = j;
	js->n_pending++;
	request_pass(js);
	arm_tick(js);
	return 0;
}

static void dequeue(struct lsim_jobs *js, int32_t j)
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
static int32_t min_gpus(const struct job *jb, int32_t want)
{
	int32_t m = jb->spec->gpus_min;
	return m > 0 && m < want ? m : want;
}

/* Where and how many GPUs pending job jb would get now. */
static bool choose(const struct lsim_jobs *js, const struct job *jb,
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
			if (share_gpu(js, t, jb->spec->gpu_milli) >= 0) {
				*type = t;
				*grant = 1;
				return true;
			}
		}
		return false;
	}
	int32_t want = desired(js, jb, jb->phase);
	if (want > room / MILLI)
		want = room / MILLI;
	int32_t need = min_gpus(jb, desired(js, jb, jb->phase));
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

/* ---- profiles: the predicted GPUs held from now on ---- */

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
					a = desired(js, jb, q);
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
		lsim_time it = iter_time(js, jb, p, n, type);
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
	lsim_time now = now_of(js);
	b->n = 0;
	switch (jb->state) {
	case ST_WAITING:
	case ST_QUEUED: {
		int32_t a = desired(js, jb, jb->phase);
		int32_t m = desired_milli(js, jb, jb->phase);
		seg_add(b, restart_time(js, jb), m);
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
			int32_t a = desired(js, jb, jb->phase);
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

static int steps_reserve(struct steps *f, size_t need)
{
	if (need <= f->cap)
		return 0;
	size_t c = f->cap ? f->cap : 16;
	while (c < need)
		c *= 2;
	lsim_time *t = realloc(f->t, c * sizeof *t);
	if (!t)
		return LSIM_ENOMEM;
	f->t = t;
	int64_t *u = realloc(f->u, c * sizeof *u);
	if (!u)
		return LSIM_ENOMEM;
	f->u = u;
	f->cap = c;
	return 0;
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
	if (grow((void **)&js->deltas, &js->cap_deltas, *nd + b.n,
		 sizeof *js->deltas))
		return LSIM_ENOMEM;
	lsim_time t = now_of(js);
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
	lsim_time now = now_of(js);
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
	if (grow((void **)&js->pscr, &js->cap_pscr, b.n, sizeof *js->pscr))
		return LSIM_ENOMEM;
	lsim_time t = now_of(js);
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
	if (grow((void **)&js->pend, &js->cap_pend, js->n_pend + 1,
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
	if (grow((void **)&js->dirty, &js->cap_dirty, js->n_running + 1,
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
	if (need > a->cap2) {
		size_t c = a->cap2 ? a->cap2 : 16;
		while (c < need)
			c *= 2;
		lsim_time *t2 = realloc(a->t2, c * sizeof *t2);
		if (!t2)
			return LSIM_ENOMEM;
		a->t2 = t2;
		int64_t *d2 = realloc(a->d2, c * sizeof *d2);
		if (!d2)
			return LSIM_ENOMEM;
		a->d2 = d2;
		a->cap2 = c;
	}
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
	lsim_time now = now_of(js);
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
				 now_of(js), &bound);
}

/*
 * Time packing's admission of jb, which fits now (choose() said so). When
 * no job's demand changes over its phases and no job waits to resume, the
 * committed demand only falls after now, so fitting now is enough and the
 * plan is not built.
 */
static bool admit(struct lsim_jobs *js, const struct job *jb, int32_t type)
{
	if (js->n_varying == 0 &&
	    (js->n_pending == 0 || !js->jobs[js->pending[0]].resume))
		return true;
	return plan_fits(js, jb, type);
}

static void plan_add_job(struct lsim_jobs *js, const struct job *jb,
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
		lsim_time s = now_of(js);
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
	plan_add_job(js, &js->jobs[j], type, at);
	return js->plan_valid ? 0 : LSIM_ENOMEM;
}

bool lsim_jobs_plan_fits_now(struct lsim_jobs *js, int32_t j)
{
	int32_t type, grant;
	if (!choose(js, &js->jobs[j], &type, &grant))
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

/* ---- the state machine ---- */

static void accrue_held(struct lsim_jobs *js, struct job *jb)
{
	lsim_time now = now_of(js);
	double s = held_gpus(jb) * ns_to_s(now - jb->held_since);
	jb->rec.alloc_gpu_s += s;
	jb->rec.cost += s * jb->price_s;
	jb->held_since = now;
}

static void running_remove(struct lsim_jobs *js, struct job *jb)
{
	size_t pos = (size_t)jb->run_pos;
	int32_t last = js->running[--js->n_running];
	js->running[pos] = last;
	js->jobs[last].run_pos = (int32_t)pos;
	jb->run_pos = -1;
}

/* ---- traffic on the links (lsim_jobs_use_links) ---- */

/* Whether job j's iterations run one by one with their all-reduce as
 * flows: a model size, whole GPUs, more than one computing. */
static bool ring_on_links(const struct lsim_jobs *js, const struct job *jb)
{
	return js->net && jb->spec->params > 0 && jb->spec->gpu_milli == 0 && jb->n > 1;
}

/* The topology's id of pool GPU g (pool nodes are the topology's). */
static int32_t topo_gpu(const struct lsim_jobs *js, int32_t g)
{
	int32_t node = js->gpus[g].node;
	return node * js->topo->p.gpus_per_node + (g - js->nodes[node].first);
}

/* Stops the job's flows in flight: an all-reduce or a checkpoint write
 * cut short by a failure or a preemption. */
static void abandon_flows(struct lsim_jobs *js, struct job *jb)
{
	for (int32_t k = 0; jb->in_comm && k < jb->cap_flows; k++)
		if (jb->flows[k])
			lsim_flow_cancel(js->net, jb->flows[k], NULL);
	jb->in_comm = false;
	jb->flows_left = 0;
}

static void flow_arrived(void *ctx, lsim_flow_id id, uint64_t arg);

/*
 * Starts job j's flows: from each of its first n GPUs, `bytes` to the next
 * one of the ring (ring) or to the storage service. False (nothing in
 * flight) if they cannot start; the caller then takes the time from the
 * bandwidth parameters.
 */
static bool start_job_flows(struct lsim_jobs *js, int32_t j, int32_t n, bool ring,
			    double bytes)
{
	struct job *jb = &js->jobs[j];
	if (n > jb->cap_flows) {
		lsim_flow_id *f = realloc(jb->flows, (size_t)n * sizeof *f);
		if (!f)
			return false;
		jb->flows = f;
		jb->cap_flows = n;
	}
	memset(jb->flows, 0, (size_t)jb->cap_flows * sizeof *jb->flows);
	jb->in_comm = true;
	jb->flows_left = n;
	for (int32_t k = 0; k < n; k++) {
		int32_t path[LSIM_PATH_MAX];
		int32_t src = topo_gpu(js, jb->gpus[k]);
		int hops = ring ? lsim_topo_path_gpu_to_gpu(js->topo, src,
							    topo_gpu(js, jb->gpus[(k + 1) % n]), path)
				: lsim_topo_path_gpu_to_storage(js->topo, src, path);
		struct lsim_flow_req fr = {
			.path = path, .n_hops = hops, .bytes = bytes,
			.done = flow_arrived, .ctx = js, .arg = (uint64_t)j,
		};
		if (hops < 0 || lsim_flow_start(js->net, &fr, &jb->flows[k], NULL) != 0) {
			abandon_flows(js, jb);
			return false;
		}
	}
	return true;
}

static void release(struct lsim_jobs *js, int32_t j)
{
	struct job *jb = &js->jobs[j];
	if (jb->in_comm)
		abandon_flows(js, jb);
	accrue_held(js, jb);
	if (jb->fail_ev) {
		lsim_cancel(js->eng, jb->fail_ev);
		jb->fail_ev = 0;
	}
	if (jb->ev) {
		lsim_cancel(js->eng, jb->ev);
		jb->ev = 0;
	}
	int32_t t = jb->spec->tenant;
	if (t >= 0 && (size_t)t < js->n_tenant_milli)
		js->tenant_milli[t] -= jb->milli;
	running_remove(js, jb);
	touch(js, jb);
	give_gpus(js, jb);
	jb->alloc = 0;
	jb->milli = 0;
	jb->type = -1;
	jb->releasing = false;
	request_pass(js);
}

/* The end of the job's current state. If the engine runs out of memory the
 * job stays where it is and is reported unfinished. */
static void schedule_ev(struct lsim_jobs *js, struct job *jb, int32_t j,
			lsim_time at)
{
	jb->state_end = at;
	jb->ev = lsim_schedule(js->eng, at, ev_job, js, (uint64_t)j);
	touch(js, jb);
}

static void begin_compute(struct lsim_jobs *js, int32_t j)
{
	struct job *jb = &js->jobs[j];
	const struct lsim_job_spec *s = jb->spec;
	int32_t g = s->phases[jb->phase].gpus;
	jb->n = s->gpu_milli > 0 ? 1 : (jb->alloc < g ? jb->alloc : g);
	jb->it = iter_time(js, jb, jb->phase, jb->n, jb->type);
	int64_t b = jb->phase_end;
	if (s->ckpt_every > 0) {
		int64_t nk = (jb->done / s->ckpt_every + 1) * s->ckpt_every;
		if (nk < b)
			b = nk;
	}
	if (ring_on_links(js, jb)) {
		/* one iteration: its compute (one GPU's time over n), then
		 * its all-reduce as flows (ev_job) */
		lsim_time t1 = iter_time(js, jb, jb->phase, 1, jb->type);
		jb->it = (t1 + jb->n - 1) / jb->n;
		b = jb->done + 1;
	}
	set_state(js, jb, ST_COMPUTING);
	jb->seg_start = now_of(js);
	jb->seg_iter0 = jb->done;
	jb->seg_iter1 = b;
	schedule_ev(js, jb, j, jb->seg_start + (lsim_time)(b - jb->done) * jb->it);
}

static void checkpoint(struct lsim_jobs *js, int32_t j, int32_t after)
{
	struct job *jb = &js->jobs[j];
	set_state(js, jb, ST_CHECKPOINTING);
	jb->state_start = now_of(js);
	jb->after = after;
	if (js->net && jb->ckpt_bytes > 0 && jb->spec->gpu_milli == 0 && jb->alloc > 0) {
		/* every GPU writes its share to the storage service; the
		 * planner's estimate is the uncontended time */
		jb->state_end = jb->state_start + jb->ckpt_t;
		if (start_job_flows(js, j, jb->alloc, false, jb->ckpt_bytes / jb->alloc))
			return;
	}
	schedule_ev(js, jb, j, jb->state_start + jb->ckpt_t);
}

static void finish(struct lsim_jobs *js, int32_t j)
{
	struct job *jb = &js->jobs[j];
	release(js, j);
	set_state(js, jb, ST_DONE);
	jb->rec.status = LSIM_JOB_FINISHED;
	jb->rec.finish = now_of(js);
	jb->rec.iterations = jb->total;
	free(jb->gpus);
	jb->gpus = NULL;
	jb->cap_gpus = 0;
	js->n_ended++;
	js->n_varying -= jb->varying;
	if (jb->rec.finish > js->last_end)
		js->last_end = jb->rec.finish;
}

/* The job reached iteration done at the end of a compute segment. */
static void boundary(struct lsim_jobs *js, int32_t j)
{
	struct job *jb = &js->jobs[j];
	const struct lsim_job_spec *s = jb->spec;
	if (jb->done >= jb->total) {
		finish(js, j);
		return;
	}
	bool periodic = s->ckpt_every > 0 && jb->done % s->ckpt_every == 0;
	if (jb->done == jb->phase_end) {
		int32_t q = jb->phase;
		jb->phase++;
		jb->phase_end += s->phases[jb->phase].iterations;
		if (js->alloc->resize &&
		    s->phases[jb->phase].gpus != s->phases[q].gpus) {
			checkpoint(js, j, AFTER_RESIZE);
			return;
		}
	}
	if (periodic)
		checkpoint(js, j, AFTER_CONT);
	else
		begin_compute(js, j);
}

static void ckpt_done(struct lsim_jobs *js, int32_t j)
{
	struct job *jb = &js->jobs[j];
	/* the write's time: ckpt_t, or as long as its flows took */
	jb->rec.overhead_gpu_s += held_gpus(jb) * ns_to_s(now_of(js) - jb->state_start);
	jb->ckpt_iter = jb->done;
	jb->has_ckpt = true;
	jb->since_ckpt_gpu_s = 0;
	switch (jb->after) {
	case AFTER_CONT:
		begin_compute(js, j);
		break;
	case AFTER_RESIZE:
		jb->rec.resizes++;
		release(js, j);
		enqueue(js, j, true);
		break;
	default: {
		bool front = jb->release_front;
		release(js, j);
		enqueue(js, j, front);
		break;
	}
	}
}

/* Job j's compute segment (and, on the links, its all-reduce) is done. */
static void segment_done(struct lsim_jobs *js, int32_t j)
{
	struct job *jb = &js->jobs[j];
	double gs = compute_gpus(jb) * ns_to_s(now_of(js) - jb->seg_start);
	jb->rec.useful_gpu_s += gs;
	jb->since_ckpt_gpu_s += gs;
	jb->done = jb->seg_iter1;
	boundary(js, j);
}

static void ev_job(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)eng;
	struct lsim_jobs *js = subject;
	int32_t j = (int32_t)arg;
	struct job *jb = &js->jobs[j];
	js->plan_valid = false;
	jb->ev = 0;
	lsim_time now = now_of(js);
	switch (jb->state) {
	case ST_RESTARTING:
		jb->rec.overhead_gpu_s +=
			held_gpus(jb) * ns_to_s(now - jb->state_start);
		begin_compute(js, j);
		break;
	case ST_COMPUTING:
		if (ring_on_links(js, jb)) {
			/* the iteration's gradients go around the ring; it is
			 * not done (kept) until they have: a huge iteration
			 * time makes the progress counts see none of it */
			const struct lsim_job_spec *s = jb->spec;
			double gb = js->cfg.grad_bytes_per_param > 0 ? js->cfg.grad_bytes_per_param
								     : 2.0;
			lsim_time est = iter_time(js, jb, jb->phase, jb->n, jb->type) - jb->it;
			jb->state_end = now + (est > 0 ? est : 0);
			jb->it = LSIM_TIME_MAX / 4;
			touch(js, jb);
			if (start_job_flows(js, j, jb->n, true,
					    2.0 * (jb->n - 1) / jb->n * s->params * gb))
				break;
		}
		segment_done(js, j);
		break;
	case ST_CHECKPOINTING:
		ckpt_done(js, j);
		break;
	default:
		break;
	}
}

/* The last flow of job j's all-reduce or checkpoint arrived. */
static void flow_arrived(void *ctx, lsim_flow_id id, uint64_t arg)
{
	(void)id;
	struct lsim_jobs *js = ctx;
	int32_t j = (int32_t)arg;
	struct job *jb = &js->jobs[j];
	if (!jb->in_comm || --jb->flows_left > 0)
		return;
	jb->in_comm = false;
	js->plan_valid = false;
	if (jb->state == ST_COMPUTING)
		segment_done(js, j);
	else if (jb->state == ST_CHECKPOINTING)
		ckpt_done(js, j);
}

static void draw_failure(struct lsim_jobs *js, struct job *jb, int32_t j)
{
	if (js->cfg.gpu_mtbf <= 0 || !js->fail_rng)
		return;
	double mean = ns_to_s(js->cfg.gpu_mtbf) / (jb->alloc > 0 ? jb->alloc : 1);
	double dt = gsl_ran_exponential(js->fail_rng, mean);
	lsim_time at = now_of(js);
	double lim = ns_to_s(LSIM_TIME_MAX - at) * 0.5;
	at += lsim_time_from_s(dt < lim ? dt : lim);
	jb->fail_ev = lsim_schedule(js->eng, at, ev_fail, js, (uint64_t)j);
}

int lsim_jobs_start(struct lsim_jobs *js, int32_t j)
{
	struct job *jb = &js->jobs[j];
	if (jb->state != ST_QUEUED)
		return 0;
	int32_t type, grant;
	if (!choose(js, jb, &type, &grant))
		return 0;
	if (js->alloc->plan_admission && !jb->resume && !admit(js, jb, type))
		return 0;
	if (grow((void **)&js->running, &js->cap_running, js->n_running + 1,
		 sizeof *js->running))
		return 0;
	if (jb->cap_gpus < grant) {
		int32_t *g = realloc(jb->gpus, (size_t)grant * sizeof *g);
		if (!g)
			return 0;
		jb->gpus = g;
		jb->cap_gpus = grant;
	}
	bool plan_was_valid = js->plan_valid, was_resume = jb->resume;
	dequeue(js, j);
	lsim_time now = now_of(js);
	jb->rec.queued += now - jb->queued_since;
	if (jb->spec->gpu_milli > 0) {
		int32_t g = share_gpu(js, type, jb->spec->gpu_milli);
		struct gpu *u = &js->gpus[g];
		struct gtype *ty = &js->types[type];
		bool was_partial = u->used > 0 && u->used < MILLI;
		if (u->used == 0) {
			js->nodes[u->node].free_whole--;
			ty->free_whole--;
		}
		u->used += jb->spec->gpu_milli;
		bool now_partial = u->used < MILLI;
		ty->partial += (now_partial ? 1 : 0) - (was_partial ? 1 : 0);
		jb->gpus[0] = g;
		jb->alloc = 1;
		jb->milli = jb->spec->gpu_milli;
	} else {
		take_whole(js, jb, j, type, grant);
		jb->alloc = grant;
		jb->milli = grant * MILLI;
	}
	jb->type = type;
	jb->rec.gpu_type = type;
	jb->price_s = js->types[type].price_s;
	jb->held_since = now;
	int32_t t = jb->spec->tenant;
	if (t >= 0 && (size_t)t < js->n_tenant_milli)
		js->tenant_milli[t] += jb->milli;
	jb->run_pos = (int32_t)js->n_running;
	js->running[js->n_running++] = j;
	if (jb->started)
		jb->rec.restarts++;
	else
		jb->rec.first_start = now;
	set_state(js, jb, ST_RESTARTING);
	jb->state_start = now;
	lsim_time rt = restart_time(js, jb);
	jb->started = true;
	jb->resume = false;
	schedule_ev(js, jb, j, now + rt);
	draw_failure(js, jb, j);
	if (plan_was_valid) {
		/* the job's demand joins the plan of this pass (a resume was
		 * in it already, as starting now) */
		js->plan_valid = true;
		if (!was_resume)
			plan_add_job(js, jb, type, now);
	}
	arm_tick(js);
	return 1;
}

bool lsim_jobs_can_start(struct lsim_jobs *js, int32_t j)
{
	const struct job *jb = &js->jobs[j];
	int32_t type, grant;
	if (jb->state != ST_QUEUED || !choose(js, jb, &type, &grant))
		return false;
	if (js->alloc->plan_admission && !jb->resume)
		return admit(js, jb, type);
	return true;
}

/* Work since the last checkpoint is lost; the job queues to restart. */
int lsim_jobs_fail(struct lsim_jobs *js, int32_t j)
{
	if (j < 0 || (size_t)j >= js->n_jobs)
		return LSIM_EINVAL;
	struct job *jb = &js->jobs[j];
	lsim_time now = now_of(js);
	if (jb->in_comm)
		abandon_flows(js, jb);
	switch (jb->state) {
	case ST_COMPUTING: {
		lsim_time el = now - jb->seg_start;
		int64_t len = jb->seg_iter1 - jb->seg_iter0;
		int64_t k = jb->it > 0 ? el / jb->it : len;
		if (k > len)
			k = len;
		double gs = compute_gpus(jb) * ns_to_s(el);
		jb->rec.useful_gpu_s += gs;
		jb->since_ckpt_gpu_s += gs;
		jb->done = jb->seg_iter0 + k;
		break;
	}
	case ST_CHECKPOINTING:
	case ST_RESTARTING:
		jb->rec.overhead_gpu_s +=
			held_gpus(jb) * ns_to_s(now - jb->state_start);
		break;
	default:
		return LSIM_ESTATE;
	}
	js->plan_valid = false;
	jb->rec.failures++;
	jb->rec.lost_iterations += jb->done - jb->ckpt_iter;
	jb->rec.lost_gpu_s += jb->since_ckpt_gpu_s;
	jb->rec.useful_gpu_s -= jb->since_ckpt_gpu_s;
	jb->since_ckpt_gpu_s = 0;
	set_progress(jb, jb->ckpt_iter);
	release(js, j);
	return enqueue(js, j, true);
}

int lsim_jobs_preempt(struct lsim_jobs *js, int32_t j, bool front)
{
	if (j < 0 || (size_t)j >= js->n_jobs)
		return LSIM_EINVAL;
	struct job *jb = &js->jobs[j];
	lsim_time now = now_of(js);
	switch (jb->state) {
	case ST_COMPUTING: {
		lsim_time el = now - jb->seg_start;
		int64_t len = jb->seg_iter1 - jb->seg_iter0;
		int64_t k = jb->it > 0 ? el / jb->it : len;
		if (k > len)
			k = len;
		double kept = compute_gpus(jb) * ns_to_s(k * jb->it);
		jb->rec.useful_gpu_s += kept;
		jb->since_ckpt_gpu_s += kept;
		jb->rec.lost_gpu_s += compute_gpus(jb) * ns_to_s(el - k * jb->it);
		jb->done = jb->seg_iter0 + k;
		if (jb->in_comm)
			abandon_flows(js, jb);
		else
			lsim_cancel(js->eng, jb->ev);
		jb->ev = 0;
		jb->rec.preemptions++;
		if (jb->done >= jb->total) {
			finish(js, j);
			return 0;
		}
		jb->releasing = true;
		jb->release_front = front;
		checkpoint(js, j, AFTER_RELEASE);
		break;
	}
	case ST_CHECKPOINTING:
		if (jb->releasing)
			return 0;
		jb->rec.preemptions++;
		jb->releasing = true;
		jb->release_front = front;
		if (jb->after == AFTER_RESIZE)
			jb->rec.resizes++;
		jb->after = AFTER_RELEASE;
		touch(js, jb);
		break;
	case ST_RESTARTING:
		jb->rec.preemptions++;
		jb->rec.overhead_gpu_s +=
			held_gpus(jb) * ns_to_s(now - jb->state_start);
		release(js, j);
		return enqueue(js, j, front);
	default:
		return LSIM_ESTATE;
	}
	js->plan_valid = false;
	return 0;
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
	int32_t need = min_gpus(jb, desired(js, jb, jb->phase));
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

static void ev_fail(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)eng;
	struct lsim_jobs *js = subject;
	js->jobs[arg].fail_ev = 0;
	lsim_jobs_fail(js, (int32_t)arg);
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
	arm_tick(js);
}

static void ev_tick(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)eng;
	(void)arg;
	struct lsim_jobs *js = subject;
	js->tick_armed = false;
	js->plan_valid = false;
	js->sched->tick(js);
	arm_tick(js);
}

/* ---- arrival and rejection ---- */

static bool can_ever_fit(const struct lsim_jobs *js, const struct job *jb)
{
	int32_t need = jb->spec->gpu_milli > 0 ? 1 : min_gpus(jb, jb->peak);
	if (js->alloc->resize && jb->spec->gpu_milli == 0) {
		/* each phase must fit on its own */
		need = 0;
		for (int32_t p = 0; p < jb->spec->n_phases; p++) {
			int32_t g = min_gpus(jb, desired(js, jb, p));
			if (g > need)
				need = g;
		}
	}
	int32_t t = jb->spec->tenant;
	if (js->quota && t >= 0 && (size_t)t < js->n_quota && js->quota[t] >= 0) {
		int64_t m = jb->spec->gpu_milli > 0 ? jb->spec->gpu_milli
						    : (int64_t)need * MILLI;
		if (m > (int64_t)js->quota[t] * MILLI)
			return false;
	}
	for (int32_t ty = 0; ty < js->n_types; ty++)
		if ((jb->type_mask >> ty & 1) && js->types[ty].total >= need)
			return true;
	return false;
}

static void arrive(struct lsim_jobs *js, int32_t j)
{
	struct job *jb = &js->jobs[j];
	lsim_time now = now_of(js);
	if (!js->any_arrival || now < js->first_arrival) {
		js->first_arrival = now;
		/* capacity counts from here: lending before it is not in it */
		accrue_lent(js);
		js->lent_before_jobs = js->lent_gpu_s;
	}
	js->any_arrival = true;
	jb->rec.arrival = now;
	if (!can_ever_fit(js, jb)) {
		set_state(js, jb, ST_DONE);
		jb->rec.status = LSIM_JOB_REJECTED;
		jb->rec.finish = now;
		js->n_ended++;
		js->n_varying -= jb->varying;
		return;
	}
	enqueue(js, j, false);
}

static void ev_arrival(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)eng;
	struct lsim_jobs *js = subject;
	js->plan_valid = false;
	int32_t j = (int32_t)arg;
	/* the next arrival first, so that a pass at this instant sees every
	 * job arriving at it */
	size_t next = (size_t)j + 1;
	if (next < js->list_base + js->list->n) {
		lsim_schedule(js->eng, js->jobs[next].spec->arrival, ev_arrival,
			      js, (uint64_t)next);
	}
	arrive(js, j);
}

/* ---- creation and submission ---- */

int lsim_jobs_check(const struct lsim_jobs *js, char *why, size_t n)
{
	size_t queued = 0, holding = 0, done = 0;
	for (size_t j = 0; j < js->n_jobs; j++) {
		int st = js->jobs[j].state;
		queued += st == ST_QUEUED;
		holding += st == ST_RESTARTING || st == ST_COMPUTING ||
			   st == ST_CHECKPOINTING;
		done += st == ST_DONE;
	}
	if (queued != js->n_pending || holding != js->n_running ||
	    done != js->n_ended) {
		snprintf(why, n,
			 "jobs: %zu queued, %zu holding GPUs, %zu ended, but the "
			 "lists hold %zu pending, %zu running, %zu ended",
			 queued, holding, done, js->n_pending, js->n_running,
			 js->n_ended);
		return LSIM_ESTATE;
	}
	for (int32_t g = 0; g < js->n_gpus; g++) {
		int32_t used = js->gpus[g].used;
		if (used < 0 || used > MILLI) {
			snprintf(why, n, "jobs: GPU %d has %d milli-GPUs in use",
				 (int)g, (int)used);
			return LSIM_ESTATE;
		}
	}
	return 0;
}

void lsim_jobs_cfg_defaults(struct lsim_jobs_cfg *c)
{
	memset(c, 0, sizeof *c);
	c->scheduler = "fcfs";
	c->allocator = "static";
	c->grad_bytes_per_param = 2.0;
	c->ckpt_bytes_per_param = 14.0;
	c->backfill_depth = 100;
	c->las_threshold = 3600.0;
	c->las_multiplier = 10.0;
	c->las_levels = 2;
	c->las_quantum = 60 * LSIM_S;
}

int lsim_job_iter_time(const struct lsim_job_spec *s, int32_t p, int32_t n,
		       const struct lsim_gpu_profile *gpu,
		       const struct lsim_jobs_cfg *c, lsim_time *out,
		       struct lsim_diag *d)
{
	if (p < 0 || p >= s->n_phases)
		return lsim_diag_set(d, LSIM_EINVAL, "", s->src_line, 0, "phase",
				     "job %llu has no phase %d",
				     (unsigned long long)s->id, p);
	int32_t g = s->phases[p].gpus;
	if (n < 1)
		n = 1;
	if (s->params > 0) {
		if (!gpu || !(gpu->bf16_flops > 0))
			return lsim_diag_set(d, LSIM_EINVAL, "", s->src_line, 0,
					     "params",
					     "job %llu gives a model size but its GPU "
					     "type has no peak FLOP/s (no profile)",
					     (unsigned long long)s->id);
		double eff = c->efficiency > 0 ? c->efficiency : gpu->mfu_max;
		if (!(eff > 0))
			return lsim_diag_set(d, LSIM_EINVAL, "", s->src_line, 0,
					     "efficiency",
					     "no efficiency: set one or use a profile "
					     "with mfu_max");
		double peak = gpu->bf16_flops * eff;
		if (s->gpu_milli > 0)
			peak *= (double)s->gpu_milli / MILLI;
		double t = 6.0 * s->params * s->tokens_per_iter / ((double)n * peak);
		if (n > 1) {
			double bw = c->link_bw > 0 ? c->link_bw : gpu->nvlink_bw;
			if (!(bw > 0))
				return lsim_diag_set(d, LSIM_EINVAL, "", s->src_line,
						     0, "link_bw",
						     "job %llu runs on %d GPUs but no "
						     "all-reduce bandwidth is known",
						     (unsigned long long)s->id, n);
			double gb = c->grad_bytes_per_param > 0
					    ? c->grad_bytes_per_param
					    : 2.0;
			t += 2.0 * (n - 1) / n * s->params * gb / bw +
			     ns_to_s(c->link_latency);
		}
		*out = lsim_time_from_s(t);
		return 0;
	}
	lsim_time it = s->iter_time;
	if (n >= g || s->gpu_milli > 0)
		*out = it;
	else
		*out = (it * g + n - 1) / n;
	return 0;
}

static uint64_t type_mask_of(const struct lsim_jobs *js, const char *types)
{
	if (!types || !*types)
		return js->n_types >= 64 ? ~0ULL : (1ULL << js->n_types) - 1;
	uint64_t m = 0;
	const char *p = types;
	while (*p) {
		const char *e = strchr(p, '|');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		for (int32_t t = 0; t < js->n_types; t++)
			if (strlen(js->type_names[t]) == len &&
			    strncmp(js->type_names[t], p, len) == 0)
				m |= 1ULL << t;
		if (!e)
			break;
		p = e + 1;
	}
	return m;
}

static int check_spec(const struct lsim_jobs *js, const struct lsim_job_spec *s,
		      uint64_t mask, struct lsim_diag *d)
{
	unsigned long long id = (unsigned long long)s->id;
	if (s->n_phases < 1 || !s->phases)
		return lsim_diag_set(d, LSIM_EINVAL, "", s->src_line, 0, "phases",
				     "job %llu has no phases", id);
	for (int32_t p = 0; p < s->n_phases; p++)
		if (s->phases[p].iterations < 1 || s->phases[p].gpus < 1)
			return lsim_diag_set(d, LSIM_EINVAL, "", s->src_line, 0,
					     "phases",
					     "job %llu: phase %d needs >= 1 GPU and "
					     ">= 1 iteration",
					     id, p);
	if (s->gpu_milli < 0 || s->gpu_milli >= MILLI)
		return lsim_diag_set(d, LSIM_EINVAL, "", s->src_line, 0,
				     "gpu_milli",
				     "job %llu: gpu_milli must be in 0..999", id);
	if (s->gpu_milli > 0 && (s->n_phases != 1 || s->phases[0].gpus != 1))
		return lsim_diag_set(d, LSIM_EINVAL, "", s->src_line, 0,
				     "gpu_milli",
				     "job %llu: a GPU share is one phase on 1 GPU",
				     id);
	if (s->gpus_min < 0 || s->gpus_min > lsim_job_peak_gpus(s))
		return lsim_diag_set(d, LSIM_EINVAL, "", s->src_line, 0,
				     "gpus_min",
				     "job %llu: gpus_min must be in 0..peak", id);
	if (!(s->params >= 0) || !isfinite(s->params) || s->iter_time < 0 ||
	    s->ckpt_every < 0 || !(s->ckpt_bytes >= 0) || s->tenant < 0)
		return lsim_diag_set(d, LSIM_EINVAL, "", s->src_line, 0, "job",
				     "job %llu has a negative or non-finite value",
				     id);
	if (s->params > 0 && !(s->tokens_per_iter > 0))
		return lsim_diag_set(d, LSIM_EINVAL, "", s->src_line, 0,
				     "tokens_per_iter",
				     "job %llu: a model size needs tokens per "
				     "iteration", id);
	/* every phase must have an iteration time on every allowed type
	 * (with fewer GPUs the same numbers are needed) */
	for (int32_t t = 0; t < js->n_types; t++) {
		if (!(mask >> t & 1))
			continue;
		for (int32_t p = 0; p < s->n_phases; p++) {
			lsim_time it;
			int rc = lsim_job_iter_time(s, p, s->phases[p].gpus,
						    js->types[t].prof, &js->cfg,
						    &it, d);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static int add_job(struct lsim_jobs *js, const struct lsim_job_spec *s,
		   struct lsim_diag *d)
{
	uint64_t mask = type_mask_of(js, s->gpu_types);
	int rc = check_spec(js, s, mask, d);
	if (rc)
		return rc;
	if (grow((void **)&js->jobs, &js->cap_jobs, js->n_jobs + 1,
		 sizeof *js->jobs))
		return LSIM_ENOMEM;
	if (s->tenant >= 0 && (size_t)s->tenant >= js->n_tenant_milli) {
		size_t n = (size_t)s->tenant + 1;
		int64_t *t = realloc(js->tenant_milli, n * sizeof *t);
		if (!t)
			return LSIM_ENOMEM;
		memset(t + js->n_tenant_milli, 0,
		       (n - js->n_tenant_milli) * sizeof *t);
		js->tenant_milli = t;
		js->n_tenant_milli = n;
	}
	struct job *jb = &js->jobs[js->n_jobs++];
	memset(jb, 0, sizeof *jb);
	jb->spec = s;
	jb->state = ST_WAITING;
	jb->type_mask = mask;
	jb->peak = lsim_job_peak_gpus(s);
	for (int32_t p = 1; p < s->n_phases; p++)
		jb->varying |= s->phases[p].gpus != s->phases[0].gpus;
	js->n_varying += jb->varying;
	jb->total = lsim_job_total_iterations(s);
	set_progress(jb, 0);
	jb->type = -1;
	jb->run_pos = -1;
	jb->pd_type = -1;
	double bytes = s->ckpt_bytes > 0 ? s->ckpt_bytes
					 : s->params * js->cfg.ckpt_bytes_per_param;
	jb->ckpt_bytes = bytes;
	jb->ckpt_t = js->cfg.storage_bw > 0 && bytes > 0
			     ? lsim_time_from_s(bytes / js->cfg.storage_bw)
			     : 0;
	struct lsim_job_record *r = &jb->rec;
	r->id = s->id;
	r->tenant = s->tenant;
	r->status = LSIM_JOB_UNFINISHED;
	r->gpus_peak = jb->peak;
	r->gpu_milli = s->gpu_milli;
	r->gpu_type = -1;
	r->arrival = s->arrival;
	r->first_start = -1;
	r->finish = -1;
	return 0;
}

int lsim_jobs_submit_list(struct lsim_jobs *js, const struct lsim_job_list *l,
			  struct lsim_diag *d)
{
	if (js->list)
		return lsim_diag_set(d, LSIM_ESTATE, "", 0, 0, "jobs",
				     "a job list was already submitted");
	size_t base = js->n_jobs, varying = js->n_varying;
	for (size_t i = 0; i < l->n; i++) {
		if (i > 0 && l->jobs[i].arrival < l->jobs[i - 1].arrival) {
			js->n_jobs = base;
			js->n_varying = varying;
			return lsim_diag_set(d, LSIM_EINVAL, "", l->jobs[i].src_line,
					     0, "arrival",
					     "job list not sorted by arrival at job %zu",
					     i);
		}
		int rc = add_job(js, &l->jobs[i], d);
		if (rc) {
			js->n_jobs = base;
			js->n_varying = varying;
			return rc;
		}
	}
	js->list = l;
	js->list_base = base;
	if (!js->quota && l->quota && l->n_tenants) {
		js->quota = l->quota;
		js->n_quota = l->n_tenants;
	}
	if (l->n > 0 && !lsim_schedule(js->eng, l->jobs[0].arrival, ev_arrival,
				       js, (uint64_t)base))
		return LSIM_ENOMEM;
	return 0;
}

int32_t lsim_jobs_submit(struct lsim_jobs *js, const struct lsim_job_spec *s,
			 struct lsim_diag *d)
{
	int rc = add_job(js, s, d);
	if (rc)
		return rc;
	int32_t j = (int32_t)(js->n_jobs - 1);
	arrive(js, j);
	return j;
}

int lsim_jobs_create(struct lsim_engine *eng, const struct lsim_pool_spec *pool,
		     const struct lsim_jobs_cfg *cfg, struct lsim_jobs **out,
		     struct lsim_diag *d)
{
	*out = NULL;
	const struct lsim_job_scheduler *sc = lsim_job_scheduler_find(cfg->scheduler);
	if (!sc)
		return lsim_diag_set(d, LSIM_ENOENT, "", 0, 0, "scheduler",
				     "unknown job scheduler '%s' (known: %s)",
				     cfg->scheduler ? cfg->scheduler : "",
				     lsim_job_scheduler_names());
	const struct lsim_job_allocator *al = lsim_job_allocator_find(cfg->allocator);
	if (!al)
		return lsim_diag_set(d, LSIM_ENOENT, "", 0, 0, "allocator",
				     "unknown job allocator '%s' (known: %s)",
				     cfg->allocator ? cfg->allocator : "",
				     lsim_job_allocator_names());
	if (pool->n_types < 1 || pool->n_types > 64 || pool->n_nodes < 1)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "pool",
				     "a pool needs 1..64 GPU types and >= 1 node");
	if (!(cfg->storage_bw >= 0) || cfg->gpu_mtbf < 0 ||
	    cfg->start_overhead < 0 || cfg->restart_overhead < 0)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "jobs",
				     "negative bandwidth, overhead or MTBF");
	struct lsim_jobs *js = calloc(1, sizeof *js);
	if (!js)
		return LSIM_ENOMEM;
	js->eng = eng;
	js->cfg = *cfg;
	js->sched = sc;
	js->alloc = al;
	js->events0 = lsim_events_processed(eng);
	js->n_types = pool->n_types;
	js->n_nodes = pool->n_nodes;
	js->lent_since = 0;
	js->quota = cfg->tenant_quota;
	js->n_quota = cfg->n_tenant_quota;
	for (int32_t i = 0; i < pool->n_nodes; i++)
		js->n_gpus += pool->node_gpus[i];
	js->types = calloc((size_t)js->n_types, sizeof *js->types);
	js->type_names = calloc((size_t)js->n_types, sizeof *js->type_names);
	js->plan = calloc((size_t)js->n_types, sizeof *js->plan);
	js->run = calloc((size_t)js->n_types, sizeof *js->run);
	js->res_base = calloc((size_t)js->n_types, sizeof *js->res_base);
	js->nodes = calloc((size_t)js->n_nodes, sizeof *js->nodes);
	js->gpus = calloc(js->n_gpus > 0 ? (size_t)js->n_gpus : 1,
			  sizeof *js->gpus);
	if (!js->types || !js->type_names || !js->plan || !js->run ||
	    !js->res_base || !js->nodes || !js->gpus) {
		lsim_jobs_destroy(js);
		return LSIM_ENOMEM;
	}
	for (int32_t t = 0; t < js->n_types; t++) {
		memcpy(js->type_names[t], pool->types[t], sizeof js->type_names[t]);
		const struct lsim_gpu_profile *pr = cfg->gpu;
		if (cfg->type_profiles && cfg->type_profiles[t])
			pr = cfg->type_profiles[t];
		js->types[t].prof = pr;
		double price = cfg->price_per_gpu_hour > 0 ? cfg->price_per_gpu_hour
			       : pr			  ? pr->price_per_hour
							  : 0.0;
		js->types[t].price_s = price / 3600.0;
	}
	int32_t g = 0;
	for (int32_t i = 0; i < js->n_nodes; i++) {
		struct node *nd = &js->nodes[i];
		nd->first = g;
		nd->count = pool->node_gpus[i];
		nd->type = pool->node_type[i];
		nd->free_whole = nd->count;
		js->types[nd->type].total += nd->count;
		js->types[nd->type].free_whole += nd->count;
		for (int32_t k = 0; k < nd->count; k++, g++) {
			js->gpus[g].node = i;
			js->gpus[g].type = nd->type;
			js->gpus[g].owner = -1;
		}
	}
	if (cfg->gpu_mtbf > 0) {
		js->fail_rng = lsim_rng_create(cfg->seed, 0, LSIM_STREAM_FAILURES);
		if (!js->fail_rng) {
			lsim_jobs_destroy(js);
			return LSIM_ENOMEM;
		}
	}
	*out = js;
	return 0;
}

void lsim_jobs_destroy(struct lsim_jobs *js)
{
	if (!js)
		return;
	for (size_t i = 0; i < js->n_jobs; i++) {
		free(js->jobs[i].gpus);
		free(js->jobs[i].flows);
		free(js->jobs[i].pd);
	}
	free(js->jobs);
	free(js->pending);
	free(js->running);
	free(js->gpus);
	free(js->nodes);
	free(js->types);
	free(js->type_names);
	if (js->plan) {
		for (int32_t t = 0; t < js->n_types; t++) {
			free(js->plan[t].t);
			free(js->plan[t].u);
		}
	}
	free(js->plan);
	if (js->run) {
		for (int32_t t = 0; t < js->n_types; t++) {
			free(js->run[t].t);
			free(js->run[t].d);
			free(js->run[t].t2);
			free(js->run[t].d2);
		}
	}
	free(js->run);
	free(js->res_base);
	free(js->pend);
	free(js->dirty);
	free(js->pscr);
	free(js->deltas);
	free(js->segs);
	free(js->lends);
	free(js->tenant_milli);
	free(js->out);
	free(js->timeline);
	free(js->scratch);
	if (js->fail_rng)
		gsl_rng_free(js->fail_rng);
	free(js);
}

/* ---- lending ---- */

/* GPUs of node that jobs being preempted will empty. */
static int32_t coming_on_node(const struct lsim_jobs *js, int32_t node)
{
	const struct node *nd = &js->nodes[node];
	int32_t c = 0;
	for (int32_t g = nd->first; g < nd->first + nd->count; g++) {
		const struct gpu *u = &js->gpus[g];
		if (u->lent || u->used == 0)
			continue;
		if (u->owner >= 0) {
			c += js->jobs[u->owner].releasing;
			continue;
		}
		/* shared: empties when every sharer leaves */
		bool all = true;
		for (size_t i = 0; i < js->n_running && all; i++) {
			const struct job *o = &js->jobs[js->running[i]];
			if (o->spec->gpu_milli > 0 && o->gpus[0] == g)
				all = o->releasing;
		}
		c += all;
	}
	return c;
}

int lsim_jobs_reclaim(struct lsim_jobs *js, int32_t node, int32_t n,
		      lsim_jobs_lend_fn done, void *ctx)
{
	if (node < 0 || node >= js->n_nodes || n < 1)
		return LSIM_EINVAL;
	struct node *nd = &js->nodes[node];
	if (n > nd->count - nd->lent - nd->promised)
		return LSIM_ERANGE;
	if (grow((void **)&js->lends, &js->cap_lends, js->n_lends + 1,
		 sizeof *js->lends))
		return LSIM_ENOMEM;
	accrue_lent(js);
	int32_t left = n;
	for (int32_t g = nd->first; g < nd->first + nd->count && left > 0; g++) {
		const struct gpu *u = &js->gpus[g];
		if (u->lent || u->used != 0)
			continue;
		lend_gpu(js, g);
		left--;
	}
	js->plan_valid = false;
	if (left == 0) {
		if (done)
			done(ctx, node, n);
		return 0;
	}
	js->lends[js->n_lends++] = (struct lend_req){node, n, left, done, ctx};
	nd->promised += left;
	/* preempt the jobs on the node, newest start first, until enough of
	 * its GPUs are on their way back */
	while (nd->promised > coming_on_node(js, node)) {
		int32_t victim = -1;
		for (size_t i = 0; i < js->n_running; i++) {
			int32_t j = js->running[i];
			const struct job *jb = &js->jobs[j];
			if (jb->releasing)
				continue;
			bool on = false;
			for (int32_t k = 0; k < jb->alloc && !on; k++)
				on = js->gpus[jb->gpus[k]].node == node;
			if (!on)
				continue;
			const struct job *vb = victim >= 0 ? &js->jobs[victim] : NULL;
			if (!vb || jb->rec.first_start > vb->rec.first_start ||
			    (jb->rec.first_start == vb->rec.first_start &&
			     j > victim))
				victim = j;
		}
		if (victim < 0)
			break;
		lsim_jobs_preempt(js, victim, true);
	}
	return 0;
}

int lsim_jobs_give_back(struct lsim_jobs *js, int32_t node, int32_t n)
{
	if (node < 0 || node >= js->n_nodes || n < 1)
		return LSIM_EINVAL;
	struct node *nd = &js->nodes[node];
	if (n > nd->lent)
		return LSIM_ERANGE;
	accrue_lent(js);
	for (int32_t g = nd->first + nd->count - 1; g >= nd->first && n > 0; g--) {
		struct gpu *u = &js->gpus[g];
		if (!u->lent)
			continue;
		u->lent = false;
		nd->lent--;
		nd->free_whole++;
		js->types[u->type].lent--;
		js->types[u->type].free_whole++;
		n--;
	}
	request_pass(js);
	return 0;
}

/* ---- observers ---- */

int32_t lsim_jobs_free_gpus(const struct lsim_jobs *js)
{
	int32_t f = 0;
	for (int32_t t = 0; t < js->n_types; t++)
		f += js->types[t].free_whole;
	return f;
}

void lsim_jobs_occupancy(const struct lsim_jobs *js, struct lsim_jobs_occupancy *o)
{
	memset(o, 0, sizeof *o);
	for (int32_t t = 0; t < js->n_types; t++) {
		o->total += js->types[t].total;
		o->lent += js->types[t].lent;
		o->free += js->types[t].free_whole;
	}
	o->held = o->total - o->lent - o->free;
	o->pending = (int32_t)js->n_pending;
	if (js->n_pending == 0)
		return;
	/* free GPUs the job at the head of the queue cannot use: on nodes
	 * with fewer free than it needs (a gang must fit one node when it is
	 * no larger than a node) */
	const struct job *head = &js->jobs[js->pending[0]];
	int32_t need = head->rec.gpus_peak;
	for (int32_t n = 0; n < js->n_nodes; n++) {
		const struct node *nd = &js->nodes[n];
		if (need <= nd->count && nd->free_whole < need)
			o->fragmented += nd->free_whole;
	}
}

bool lsim_jobs_pool_full(const struct lsim_jobs *js)
{
	for (int32_t t = 0; t < js->n_types; t++)
		if (js->types[t].free_whole > 0 || js->types[t].partial > 0)
			return false;
	return true;
}

int32_t lsim_jobs_lent_gpus(const struct lsim_jobs *js)
{
	int32_t f = 0;
	for (int32_t t = 0; t < js->n_types; t++)
		f += js->types[t].lent;
	return f;
}

size_t lsim_jobs_submitted(const struct lsim_jobs *js)
{
	return js->n_jobs;
}

size_t lsim_jobs_ended(const struct lsim_jobs *js)
{
	return js->n_ended;
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
		a += held_gpus(jb) * ns_to_s(now_of(js) - jb->held_since);
	return a;
}

int32_t lsim_jobs_held(const struct lsim_jobs *js, int32_t j)
{
	return js->jobs[j].alloc;
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

/* ---- results ---- */

const struct lsim_job_event *lsim_jobs_timeline(const struct lsim_jobs *js,
					       size_t *n)
{
	*n = js->n_timeline;
	return js->timeline;
}

const struct lsim_job_record *lsim_jobs_records(struct lsim_jobs *js, size_t *n)
{
	*n = 0;
	if (grow((void **)&js->out, &js->cap_out, js->n_jobs, sizeof *js->out))
		return NULL;
	lsim_time now = now_of(js);
	for (size_t i = 0; i < js->n_jobs; i++) {
		const struct job *jb = &js->jobs[i];
		struct lsim_job_record *r = &js->out[i];
		*r = jb->rec;
		if (jb->state == ST_DONE)
			continue;
		r->status = LSIM_JOB_UNFINISHED;
		r->iterations = jb->done;
		if (jb->state == ST_COMPUTING && jb->it > 0) {
			int64_t k = (now - jb->seg_start) / jb->it;
			int64_t len = jb->seg_iter1 - jb->seg_iter0;
			r->iterations = jb->seg_iter0 + (k < len ? k : len);
		}
		if (jb->run_pos >= 0) {
			double s = held_gpus(jb) * ns_to_s(now - jb->held_since);
			r->alloc_gpu_s += s;
			r->cost += s * jb->price_s;
		}
		if (jb->state == ST_QUEUED)
			r->queued += now - jb->queued_since;
	}
	*n = js->n_jobs;
	return js->out;
}

static void quantiles(double *v, size_t n, double *mean, double *p50,
		      double *p90, double *p99)
{
	*mean = *p50 = *p90 = *p99 = 0;
	if (n == 0)
		return;
	gsl_sort(v, 1, n);
	*mean = gsl_stats_mean(v, 1, n);
	*p50 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.50);
	*p90 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.90);
	*p99 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.99);
}

int lsim_jobs_summary(struct lsim_jobs *js, struct lsim_jobs_summary *o)
{
	memset(o, 0, sizeof *o);
	size_t n;
	const struct lsim_job_record *r = lsim_jobs_records(js, &n);
	if (!r && js->n_jobs)
		return LSIM_ENOMEM;
	if (grow((void **)&js->scratch, &js->cap_scratch, 2 * n + 1,
		 sizeof *js->scratch))
		return LSIM_ENOMEM;
	double *jct = js->scratch, *q = js->scratch + n;
	size_t nf = 0;
	lsim_time end = js->last_end;
	o->n_jobs = n;
	for (size_t i = 0; i < n; i++) {
		switch (r[i].status) {
		case LSIM_JOB_FINISHED:
			jct[nf] = ns_to_s(r[i].finish - r[i].arrival);
			q[nf] = ns_to_s(r[i].queued);
			nf++;
			o->n_finished++;
			break;
		case LSIM_JOB_REJECTED:
			o->n_rejected++;
			break;
		default:
			o->n_unfinished++;
			if (now_of(js) > end)
				end = now_of(js);
			break;
		}
		o->alloc_gpu_s += r[i].alloc_gpu_s;
		o->useful_gpu_s += r[i].useful_gpu_s;
		o->lost_gpu_s += r[i].lost_gpu_s;
		o->overhead_gpu_s += r[i].overhead_gpu_s;
		o->lost_iterations += r[i].lost_iterations;
		o->restarts += r[i].restarts;
		o->failures += r[i].failures;
		o->preemptions += r[i].preemptions;
		o->resizes += r[i].resizes;
		o->cost += r[i].cost;
	}
	quantiles(jct, nf, &o->jct_mean_s, &o->jct_p50_s, &o->jct_p90_s,
		  &o->jct_p99_s);
	quantiles(q, nf, &o->queue_mean_s, &o->queue_p50_s, &o->queue_p90_s,
		  &o->queue_p99_s);
	if (js->any_arrival && end > js->first_arrival) {
		o->makespan_s = ns_to_s(end - js->first_arrival);
		accrue_lent(js);
		int32_t total = 0;
		for (int32_t t = 0; t < js->n_types; t++)
			total += js->types[t].total;
		double cap = total * o->makespan_s -
			     (js->lent_gpu_s - js->lent_before_jobs);
		o->capacity_gpu_s = cap > 0 ? cap : 0;
	}
	if (o->capacity_gpu_s > 0) {
		o->util_alloc = o->alloc_gpu_s / o->capacity_gpu_s;
		o->util_useful = o->useful_gpu_s / o->capacity_gpu_s;
	}
	o->events = lsim_events_processed(js->eng) - js->events0;
	return 0;
}

void lsim_jobs_use_links(struct lsim_jobs *js, struct lsim_net *net,
			 const struct lsim_topo *topo)
{
	js->net = topo ? net : NULL;
	js->topo = topo;
}
