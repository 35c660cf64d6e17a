/*
 * jobs.c - training and fine-tuning jobs on the event engine, the model:
 * the GPU pool (typed GPUs on nodes, whole or shared in milli-GPUs), the
 * job state machine (restarting, computing, checkpointing, done) with its
 * phases, failures, preemption and per-phase resizes, the jobs' traffic on
 * the links, and lending GPUs to inference. The pending queue and the
 * policies' accessors are in jobs_sched.c, the plan in jobs_plan.c,
 * creation and submission in jobs_submit.c, records and summary in
 * jobs_report.c. See docs/jobs.md.
 */
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>

#include "jobs/jobs_internal.h"

static void ev_job(struct lsim_engine *eng, void *subject, uint64_t arg);
static void ev_fail(struct lsim_engine *eng, void *subject, uint64_t arg);

/* ---- utilities ---- */

/* The job's predicted demand may have changed: the next plan build
 * computes it again (once the plan keeps the running jobs' demand). */
static void touch(struct lsim_jobs *js, struct job *jb)
{
	if (!js->run_on || js->run_stale || jb->dirty)
		return;
	if (lsim_grow((void **)&js->dirty, &js->cap_dirty, js->n_dirty + 1,
			   sizeof *js->dirty)) {
		js->run_stale = true; /* every job, at the next build */
		return;
	}
	jb->dirty = true;
	js->dirty[js->n_dirty++] = (int32_t)(jb - js->jobs);
}

/* Enters state st and notes it in the timeline (lost, not fatal, if
 * memory runs out). */
void lsim_jobs_set_state(struct lsim_jobs *js, struct job *jb, enum job_state st)
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
		.t = lsim_jobs_now(js), .job = (int32_t)(jb - js->jobs),
		.state = (int32_t)st, .gpus = lsim_jobs_held_gpus(jb)};
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

/* Phase and its end for a progress of x iterations. */
void lsim_jobs_set_progress(struct job *jb, int64_t x)
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

int32_t lsim_jobs_desired(const struct lsim_jobs *js, const struct job *jb,
			  int32_t p)
{
	return js->alloc->desired(jb->spec, p);
}

lsim_time lsim_jobs_iter_time_on(const struct lsim_jobs *js, const struct job *jb,
				 int32_t p, int32_t n, int32_t type)
{
	lsim_time t = 0;
	/* validated at submission: cannot fail here */
	(void)lsim_job_iter_time(jb->spec, p, n, type_prof(js, type), &js->cfg,
				 &t, NULL);
	return t;
}

lsim_time lsim_jobs_restart_time(const struct lsim_jobs *js, const struct job *jb)
{
	if (!jb->started)
		return js->cfg.start_overhead;
	return js->cfg.restart_overhead + (jb->has_ckpt ? jb->ckpt_t : 0);
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

void lsim_jobs_accrue_lent(struct lsim_jobs *js)
{
	lsim_time now = lsim_jobs_now(js);
	int32_t lent = 0;
	for (int32_t t = 0; t < js->n_types; t++)
		lent += js->types[t].lent;
	js->lent_gpu_s += lent * lsim_time_to_s(now - js->lent_since);
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
		lsim_jobs_accrue_lent(js);
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
int32_t lsim_jobs_share_gpu(const struct lsim_jobs *js, int32_t type,
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
				break; /* lsim_jobs_choose() counted them:
					* cannot happen */
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

/* ---- the state machine ---- */

static void accrue_held(struct lsim_jobs *js, struct job *jb)
{
	lsim_time now = lsim_jobs_now(js);
	double s = lsim_jobs_held_gpus(jb) * lsim_time_to_s(now - jb->held_since);
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
			.kind = ring ? LSIM_FLOW_COLLECTIVE : LSIM_FLOW_CHECKPOINT,
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
	lsim_jobs_request_pass(js);
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
	jb->it = lsim_jobs_iter_time_on(js, jb, jb->phase, jb->n, jb->type);
	int64_t b = jb->phase_end;
	if (s->ckpt_every > 0) {
		int64_t nk = (jb->done / s->ckpt_every + 1) * s->ckpt_every;
		if (nk < b)
			b = nk;
	}
	if (ring_on_links(js, jb)) {
		/* one iteration: its compute (one GPU's time over n), then
		 * its all-reduce as flows (ev_job) */
		lsim_time t1 = lsim_jobs_iter_time_on(js, jb, jb->phase, 1, jb->type);
		jb->it = (t1 + jb->n - 1) / jb->n;
		b = jb->done + 1;
	}
	lsim_jobs_set_state(js, jb, ST_COMPUTING);
	jb->seg_start = lsim_jobs_now(js);
	jb->seg_iter0 = jb->done;
	jb->seg_iter1 = b;
	schedule_ev(js, jb, j, jb->seg_start + (lsim_time)(b - jb->done) * jb->it);
}

static void checkpoint(struct lsim_jobs *js, int32_t j, int32_t after)
{
	struct job *jb = &js->jobs[j];
	lsim_jobs_set_state(js, jb, ST_CHECKPOINTING);
	jb->state_start = lsim_jobs_now(js);
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
	lsim_jobs_set_state(js, jb, ST_DONE);
	jb->rec.status = LSIM_JOB_FINISHED;
	jb->rec.finish = lsim_jobs_now(js);
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
	jb->rec.overhead_gpu_s += lsim_jobs_held_gpus(jb) *
				  lsim_time_to_s(lsim_jobs_now(js) - jb->state_start);
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
		lsim_jobs_enqueue(js, j, true);
		break;
	default: {
		bool front = jb->release_front;
		release(js, j);
		lsim_jobs_enqueue(js, j, front);
		break;
	}
	}
}

/* Job j's compute segment (and, on the links, its all-reduce) is done. */
static void segment_done(struct lsim_jobs *js, int32_t j)
{
	struct job *jb = &js->jobs[j];
	double gs = compute_gpus(jb) * lsim_time_to_s(lsim_jobs_now(js) - jb->seg_start);
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
	lsim_time now = lsim_jobs_now(js);
	switch (jb->state) {
	case ST_RESTARTING:
		jb->rec.overhead_gpu_s +=
			lsim_jobs_held_gpus(jb) * lsim_time_to_s(now - jb->state_start);
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
			lsim_time est = lsim_jobs_iter_time_on(js, jb, jb->phase, jb->n,
							       jb->type) - jb->it;
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
	double mean = lsim_time_to_s(js->cfg.gpu_mtbf) / (jb->alloc > 0 ? jb->alloc : 1);
	double dt = gsl_ran_exponential(js->fail_rng, mean);
	lsim_time at = lsim_jobs_now(js);
	double lim = lsim_time_to_s(LSIM_TIME_MAX - at) * 0.5;
	at += lsim_time_from_s(dt < lim ? dt : lim);
	jb->fail_ev = lsim_schedule(js->eng, at, ev_fail, js, (uint64_t)j);
}

int lsim_jobs_start(struct lsim_jobs *js, int32_t j)
{
	struct job *jb = &js->jobs[j];
	if (jb->state != ST_QUEUED)
		return 0;
	int32_t type, grant;
	if (!lsim_jobs_choose(js, jb, &type, &grant))
		return 0;
	if (js->alloc->plan_admission && !jb->resume && !lsim_jobs_admit(js, jb, type))
		return 0;
	if (lsim_grow((void **)&js->running, &js->cap_running, js->n_running + 1,
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
	lsim_jobs_dequeue(js, j);
	lsim_time now = lsim_jobs_now(js);
	jb->rec.queued += now - jb->queued_since;
	if (jb->spec->gpu_milli > 0) {
		int32_t g = lsim_jobs_share_gpu(js, type, jb->spec->gpu_milli);
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
	lsim_jobs_set_state(js, jb, ST_RESTARTING);
	jb->state_start = now;
	lsim_time rt = lsim_jobs_restart_time(js, jb);
	jb->started = true;
	jb->resume = false;
	schedule_ev(js, jb, j, now + rt);
	draw_failure(js, jb, j);
	if (plan_was_valid) {
		/* the job's demand joins the plan of this pass (a resume was
		 * in it already, as starting now) */
		js->plan_valid = true;
		if (!was_resume)
			lsim_jobs_plan_add_job(js, jb, type, now);
	}
	lsim_jobs_arm_tick(js);
	return 1;
}

/* Iterations of the compute segment complete el after its start (all of
 * them at an iteration time of 0). */
static int64_t seg_iterations(const struct job *jb, lsim_time el)
{
	int64_t len = jb->seg_iter1 - jb->seg_iter0;
	int64_t k = jb->it > 0 ? el / jb->it : len;
	if (k > len)
		k = len;
	return k;
}

/* Work since the last checkpoint is lost; the job queues to restart. */
int lsim_jobs_fail(struct lsim_jobs *js, int32_t j)
{
	if (j < 0 || (size_t)j >= js->n_jobs)
		return LSIM_EINVAL;
	struct job *jb = &js->jobs[j];
	lsim_time now = lsim_jobs_now(js);
	if (jb->in_comm)
		abandon_flows(js, jb);
	switch (jb->state) {
	case ST_COMPUTING: {
		lsim_time el = now - jb->seg_start;
		int64_t k = seg_iterations(jb, el);
		double gs = compute_gpus(jb) * lsim_time_to_s(el);
		jb->rec.useful_gpu_s += gs;
		jb->since_ckpt_gpu_s += gs;
		jb->done = jb->seg_iter0 + k;
		break;
	}
	case ST_CHECKPOINTING:
	case ST_RESTARTING:
		jb->rec.overhead_gpu_s +=
			lsim_jobs_held_gpus(jb) * lsim_time_to_s(now - jb->state_start);
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
	lsim_jobs_set_progress(jb, jb->ckpt_iter);
	release(js, j);
	return lsim_jobs_enqueue(js, j, true);
}

int lsim_jobs_preempt(struct lsim_jobs *js, int32_t j, bool front)
{
	if (j < 0 || (size_t)j >= js->n_jobs)
		return LSIM_EINVAL;
	struct job *jb = &js->jobs[j];
	lsim_time now = lsim_jobs_now(js);
	switch (jb->state) {
	case ST_COMPUTING: {
		lsim_time el = now - jb->seg_start;
		int64_t k = seg_iterations(jb, el);
		double kept = compute_gpus(jb) * lsim_time_to_s(k * jb->it);
		jb->rec.useful_gpu_s += kept;
		jb->since_ckpt_gpu_s += kept;
		jb->rec.lost_gpu_s += compute_gpus(jb) * lsim_time_to_s(el - k * jb->it);
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
			lsim_jobs_held_gpus(jb) * lsim_time_to_s(now - jb->state_start);
		release(js, j);
		return lsim_jobs_enqueue(js, j, front);
	default:
		return LSIM_ESTATE;
	}
	js->plan_valid = false;
	return 0;
}

static void ev_fail(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)eng;
	struct lsim_jobs *js = subject;
	js->jobs[arg].fail_ev = 0;
	lsim_jobs_fail(js, (int32_t)arg);
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
	if (lsim_grow((void **)&js->lends, &js->cap_lends, js->n_lends + 1,
			   sizeof *js->lends))
		return LSIM_ENOMEM;
	lsim_jobs_accrue_lent(js);
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
	lsim_jobs_accrue_lent(js);
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
	lsim_jobs_request_pass(js);
	return 0;
}

void lsim_jobs_use_links(struct lsim_jobs *js, struct lsim_net *net,
			 const struct lsim_topo *topo)
{
	js->net = topo ? net : NULL;
	js->topo = topo;
}
