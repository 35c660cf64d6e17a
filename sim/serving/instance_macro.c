/*
 * instance_macro.c - macro steps of a serving instance (serving.h): a
 * run of decode steps of one batch planned at once and taken lazily, as
 * the section below describes; the rest of the instance is instance.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "serving/instance_internal.h"

static void settle(struct lsim_instance *in);
static void advance(struct lsim_instance *in, lsim_time t, bool at_t);

/* ---- macro steps ----
 * With sv->macro_steps, a step whose batch is all decode, on an instance
 * with nothing waiting, is planned with the steps that follow it while
 * the batch cannot change: up to the step at which its first request
 * finishes, and no further than the free KV blocks go (no step of the run
 * may need to preempt). Their times come from the perf model at once (a
 * pure function of the batch: each step's contexts are one token longer),
 * LSIM_RUN_STEPS at a time: a request joining cuts the run, and the steps
 * planned beyond the cut are work thrown away (with no bound, more than
 * half of those planned in the end-to-end benchmark). A run that reaches
 * the end of its plan with the batch unchanged goes on (lsim_inst_extend_run): one
 * event per LSIM_RUN_STEPS steps, but none of the batch's formation, and
 * its tokens still stream back at the run's end. (Plans of 16 steps
 * execute 8% more instructions in the benchmark than 32; 64, 0.4% fewer.)
 * Only the run's last step end is an event (lsim_inst_step_end). The ends before it
 * take place lazily, with the same effects as step_end and schedule_step
 * would have had, once the clock has passed them (a step end at the same
 * instant as another event counts as after it), in two parts:
 *   - advance: the instance's own state (counters, queued tokens, the
 *     blocks its batch takes). The plan gives each step's end and the
 *     running sums of the changes of queued tokens and KV blocks
 *     (m_step[].end, .cdq, .cdb), so this touches no request and, but
 *     for the work (a sum of doubles, added step by step), takes the
 *     same time for any number of steps;
 *   - settle: the requests' own state (tokens, GPU time, KV blocks and
 *     their prefix-cache entries), each request's steps in order. A
 *     request's values are the same as step by step; only the order in
 *     which the batch's requests take their blocks differs, so block
 *     numbers may, never counts or contents.
 * Both happen for every instance (lsim_serving_catch_up) before a sample, at
 * the end of the run and before every event not tagged LSIM_TAG_LIGHT or
 * LSIM_TAG_INTERNAL (the engine's before-event hook), and for one
 * instance at its own events (the run's end, a cut). Light events read
 * other instances only as policies see them, advancing them first
 * (lsim_instance_advance, lsim_instance_kv_free counting the blocks taken
 * and not allocated yet) unless the policies read only counts.
 * Whatever could change the batch (a request or a swapped or handed-over
 * KV joining) cuts the run at the end of the step in flight. The tokens of
 * the run's steps stream back as one message at its end. */

/* Blocks the batch takes for the run's first n steps beyond those it
 * holds: the last ends with computed + n tokens. */
static int64_t run_blocks(const struct lsim_instance *in, int32_t n)
{
	int64_t need = 0;
	for (size_t i = 0; i < in->n_sched; i++) {
		const struct lsim_req *r = &in->sv->reqs[in->sched[i]];
		int32_t more = lsim_inst_ceil_div((int64_t)r->computed + n, in->cfg.block_size) -
			       r->nblocks;
		if (more > 0)
			need += more;
	}
	return need;
}

/* The run's n steps (times dts, works in ns, or from step 1 on in s
 * as the perf model gives them: in_s): their ends, from the run's start
 * at start, and the changes at each step's start: a request still
 * predicted to generate more has one token less of work, and one whose
 * next token starts a block takes that block. Returns the run's span. */
static lsim_time plan_steps(struct lsim_instance *in, int32_t n, lsim_time start,
			    const lsim_time *dts, const struct lsim_iter_work *works, bool in_s)
{
	int32_t bs = (int32_t)in->cfg.block_size;
	int32_t stop[LSIM_RUN_STEPS + 1] = {0}; /* requests whose work stops falling */
	int32_t db[LSIM_RUN_STEPS] = {0};
	for (size_t i = 0; i < in->n_sched; i++) {
		const struct lsim_req *r = &in->sv->reqs[in->sched[i]];
		int32_t left = r->predicted > r->generated ? r->predicted - r->generated : 0;
		stop[left < n ? left : n]++;
		/* after step k the request holds computed + k tokens and takes
		 * room for one more: a new block when that one starts it */
		for (int64_t k = (int64_t)r->nblocks * bs - r->computed; k < n; k += bs)
			if (k >= 1)
				db[k]++;
	}
	int32_t falling = (int32_t)in->n_sched, cdq = 0, cdb = 0;
	lsim_time end = start;
	for (int32_t k = 0; k < n; k++) {
		if (k > 0) {
			falling -= stop[k - 1];
			cdq -= falling;
			cdb += db[k];
		}
		end += dts[k];
		/* field by field: a whole struct through the stack costs a
		 * store-forwarding stall per step */
		struct lsim_run_step *st = &in->m_step[k];
		double ws = works[k].s;
		if (k > 0 && in_s) /* (as step_time gives it: work_ns) */
			ws = ws < 0 || ws * 1e9 > (double)dts[k] ? (double)dts[k] : ws * 1e9;
		st->dt = dts[k];
		st->end = end;
		st->work.s = ws;
		st->work.flops = works[k].s < 0 ? 0.0 : works[k].flops;
		st->work.bytes = works[k].s < 0 ? 0.0 : works[k].bytes;
		st->cdq = cdq;
		st->cdb = cdb;
	}
	return end - start;
}

/* In the sim's list of instances with a step end to catch up on, at t. */
static bool macro_enlist(struct lsim_instance *in, lsim_time t)
{
	struct lsim_serving *s = in->sv;
	if (in->m_slot < 0) {
		if (lsim_grow((void **)&s->macro, &s->cap_macro, s->n_macro + 1,
			 sizeof *s->macro) != 0)
			return false;
		in->m_slot = (int32_t)s->n_macro;
		s->macro[s->n_macro++].in = in;
	}
	s->macro[in->m_slot].t = t;
	if (t < s->macro_min)
		s->macro_min = t;
	return true;
}

static void macro_delist(struct lsim_instance *in)
{
	struct lsim_serving *s = in->sv;
	in->m_next = LSIM_TIME_MAX;
	if (in->m_slot < 0)
		return;
	s->macro[in->m_slot] = s->macro[--s->n_macro];
	s->macro[in->m_slot].in->m_slot = in->m_slot;
	in->m_slot = -1;
}

/* The step started at start (time dt, batch b of decodes only) starts a
 * run if it may; returns the time to the run's end (dt alone: no run). */
lsim_time lsim_inst_plan_run(struct lsim_instance *in, struct lsim_batch *b,
			  lsim_time dt, lsim_time start)
{
	struct lsim_serving *s = in->sv;
	if (in->wait_len > 0 || in->swapping_in > 0 || in->n_sched != in->run_len ||
	    in->role == LSIM_ROLE_PREFILL || lsim_inst_pcie_slowed(in))
		return dt;
	int32_t n = INT32_MAX; /* steps up to the first request's last */
	for (size_t i = 0; i < in->n_sched; i++) {
		const struct lsim_req *r = &s->reqs[in->sched[i]];
		if (r->output - r->generated < n)
			n = r->output - r->generated;
	}
	int64_t free_blocks = lsim_instance_kv_free(in);
	if (n > 1 && run_blocks(in, n) > free_blocks) {
		int32_t lo = 1, hi = n; /* run_blocks(lo) fits, (hi) does not */
		while (hi - lo > 1) {
			int32_t mid = lo + (hi - lo) / 2;
			if (run_blocks(in, mid) <= free_blocks)
				lo = mid;
			else
				hi = mid;
		}
		n = lo;
	}
	bool more = n > LSIM_RUN_STEPS;
	if (more)
		n = LSIM_RUN_STEPS; /* its end carries it on (lsim_inst_extend_run) */
	if (n < 2)
		return dt;
	if (!macro_enlist(in, start + dt)) {
		/* out of memory: the run fails (step by step from here would
		 * stream other token messages than a run with memory) */
		lsim_inst_fail_nomem(s);
		return dt;
	}
	settle(in); /* the last run's steps (settled at its end or cut) */
	lsim_time dts[LSIM_RUN_STEPS];
	struct lsim_iter_work works[LSIM_RUN_STEPS];
	dts[0] = dt;
	works[0] = in->step_work;
	for (int32_t i = 0; i < b->n_decode; i++)
		in->dec_ctx[i]++; /* the run's second step */
	bool in_s = !in->work_perf && in->perf->ops->decode_run &&
		    (!in->gpu_work_perf || in->gpu_work_perf->ops->decode_run);
	if (in_s) {
		in->perf->ops->decode_run(in->perf, b, n - 1, dts + 1, works + 1);
		if (in->gpu_work_perf) { /* shared: work at the whole GPU's peaks */
			lsim_time scratch[LSIM_RUN_STEPS];
			in->gpu_work_perf->ops->decode_run(in->gpu_work_perf, b, n - 1,
							   scratch + 1, works + 1);
		}
	} else {
		for (int32_t k = 1; k < n; k++) {
			dts[k] = lsim_inst_step_time(in, b, 0, &works[k], NULL);
			for (int32_t i = 0; i < b->n_decode; i++)
				in->dec_ctx[i]++;
		}
	}
	lsim_time span = plan_steps(in, n, start, dts, works, in_s);
	in->m_n = n;
	in->m_done = 0;
	in->m_settled = 0;
	in->m_kvp = 0;
	in->m_next = start + dt;
	in->m_more = more;
	return span;
}

/* The run's last planned step ends now, it stopped at its bound, and its
 * batch goes on (nothing joined: a join cuts the run and clears m_more):
 * rather than step_end and schedule_step forming the same batch again
 * and a run of it, the run goes on from the step ending now, its first
 * step in a new plan; its end takes place as the run's others do. The
 * requests are settled up to that step's start (lsim_inst_catch_up), so their
 * state is what plan_run saw when it formed it. False (nothing changed)
 * where no run could start (the batch changes, the blocks would not
 * last two steps, PCIe contention): step_end goes on as for any step. */
bool lsim_inst_extend_run(struct lsim_instance *in)
{
	struct lsim_serving *s = in->sv;
	in->m_more = false;
	lsim_time dt = in->m_step[in->m_n - 1].dt, now = lsim_now(s->eng);
	for (size_t i = 0; i < in->n_sched; i++)
		in->dec_ctx[i] = s->reqs[in->sched[i]].computed;
	struct lsim_batch b = {.n_decode = (int)in->n_sched, .decode_ctx = in->dec_ctx};
	lsim_time span = lsim_inst_plan_run(in, &b, dt, in->step_start);
	if (in->m_slot < 0)
		return false; /* no run: plan_run changed nothing */
	in->step_ev = lsim_schedule_tag(s->eng, in->step_start + span, lsim_inst_step_end, in,
					(uint64_t)in->n_sched, LSIM_TAG_LIGHT);
	if (!in->step_ev) {
		lsim_inst_fail_nomem(s);
		return true;
	}
	/* the step ending now; settled later, as the run's others are (the
	 * instance stays listed until then) */
	advance(in, now, true);
	s->macro[in->m_slot].t = in->m_next;
	return true;
}

/* The instance's side of the step ends of its run before t (at_t: and at
 * t): lsim_inst_step_end, then schedule_step forming the same batch (nothing waits,
 * nobody finishes). */
static void advance(struct lsim_instance *in, lsim_time t, bool at_t)
{
	if (!(in->m_next < t || (at_t && in->m_next == t)))
		return;
	if (in->m_settled == in->m_done)
		in->sv->macro_unsettled++;
	/* the steps that end: each adds its work (in order: sums of
	 * doubles); the rest is the difference of the plan's running sums */
	int32_t d = in->m_done, k = d;
	double work_ns = in->work_ns, flops = in->flops, bytes = in->bytes;
	struct lsim_iter_work step_work = in->step_work;
	do {
		work_ns += step_work.s;
		flops += step_work.flops;
		bytes += step_work.bytes;
		step_work = in->m_step[++k].work;
	} while (k + 1 < in->m_n &&
		 (in->m_step[k].end < t || (at_t && in->m_step[k].end == t)));
	const struct lsim_run_step *first = &in->m_step[d], *last = &in->m_step[k];
	int64_t steps = k - d;
	in->busy_ns += in->m_step[k - 1].end - in->step_start;
	in->work_ns = work_ns;
	in->flops = flops;
	in->bytes = bytes;
	in->queued_tokens += last->cdq - first->cdq;
	in->m_kvp += last->cdb - first->cdb;
	in->m_tokens += (int32_t)(in->n_sched * steps);
	in->iterations += steps;
	in->tokens += (int64_t)in->n_sched * steps;
	in->step_start = in->m_step[k - 1].end;
	in->step_work = step_work;
	in->m_done = k;
	in->m_next = k + 1 < in->m_n ? last->end : LSIM_TIME_MAX;
}

/* Counts the instance's ended steps as settled. */
static void mark_settled(struct lsim_instance *in)
{
	if (in->m_settled != in->m_done)
		in->sv->macro_unsettled--;
	in->m_settled = in->m_done;
	in->m_kvp = 0;
}

/* Adds the n steps' GPU times g, in order, to each of the requests'
 * GPU time: the same steps for all, so four requests' sums run side by
 * side as the lanes of a vector (IEEE lane by lane: each lane's sum is
 * the scalar one), four dependent chains of additions instead of one. */
static void add_gpu_ns(struct lsim_serving *s, const int32_t *req, size_t n_req,
		       const double *g, int32_t n)
{
	typedef double v4d __attribute__((vector_size(32)));
	size_t i = 0;
	for (; i + 4 <= n_req; i += 4) {
		struct lsim_req *a = &s->reqs[req[i]], *b = &s->reqs[req[i + 1]],
				*c = &s->reqs[req[i + 2]], *d = &s->reqs[req[i + 3]];
		v4d v = {a->gpu_ns, b->gpu_ns, c->gpu_ns, d->gpu_ns};
		for (int32_t j = 0; j < n; j++)
			v += g[j];
		a->gpu_ns = v[0];
		b->gpu_ns = v[1];
		c->gpu_ns = v[2];
		d->gpu_ns = v[3];
	}
	for (; i < n_req; i++) {
		struct lsim_req *r = &s->reqs[req[i]];
		double x = r->gpu_ns;
		for (int32_t j = 0; j < n; j++)
			x += g[j];
		r->gpu_ns = x;
	}
}

/* The requests' side of the steps advance took: for each request, its
 * steps in order, as finish_batch and schedule_step would have done them
 * (a token each, none the request's last, then room for the next). */
static void settle(struct lsim_instance *in)
{
	int32_t from = in->m_settled, to = in->m_done;
	if (from == to)
		return;
	struct lsim_serving *s = in->sv;
	int32_t planned = in->m_kvp, taken = 0;
	mark_settled(in);
	int32_t bs = (int32_t)in->cfg.block_size;
	double kv_block_bytes = in->kv_block_bytes;
	double share = 1.0 / (double)in->n_sched;
	double gpu_ns[LSIM_RUN_STEPS]; /* each request's share of step k + 1 */
	for (int32_t k = from; k < to; k++)
		gpu_ns[k] = share * (double)in->m_step[k].dt * in->n_gpus;
	add_gpu_ns(s, in->sched, in->n_sched, gpu_ns + from, to - from);
	bool prefix = in->cfg.enable_prefix_caching;
	for (size_t i = 0; i < in->n_sched; i++) {
		struct lsim_req *r = &s->reqs[in->sched[i]];
		int32_t held = r->nblocks;
		if (share > r->max_share)
			r->max_share = share;
		/* Segments of steps that end where a block fills or a new one
		 * is needed: within one, a step only adds a token (the
		 * blocks, and so the largest KV, stay as they are); at its
		 * last step the block work happens as it would have step by
		 * step. */
		for (int32_t k = from; k < to;) {
			/* steps until computed + 1 passes the blocks held, or
			 * computed reaches the next block to register */
			int32_t len = r->nblocks * bs - r->computed;
			if (prefix && (r->hashed + 1) * bs - r->computed < len)
				len = (r->hashed + 1) * bs - r->computed;
			if (len < 1)
				len = 1;
			if (len > to - k)
				len = to - k;
			k += len;
			if (r->nblocks * kv_block_bytes > r->max_kv_bytes)
				r->max_kv_bytes = r->nblocks * kv_block_bytes;
			r->computed += len;
			r->generated += len;
			if (prefix && r->computed >= (r->hashed + 1) * bs)
				lsim_inst_register_full_blocks(in, r);
			if (r->computed + 1 > r->nblocks * bs &&
			    !lsim_inst_ensure_blocks(in, r, r->computed + 1)) {
				/* the plan counted the blocks: only an
				 * allocation failure gets here */
				lsim_inst_fail_nomem(s);
				return;
			}
		}
		r->sched_tokens = 1;
		taken += r->nblocks - held;
	}
	if (taken != planned && !s->error) {
		/* what policies saw of its free blocks was wrong: a bug */
		s->error = lsim_diag_set(&s->diag, LSIM_ESTATE, "", 0, 0, "",
					 "instance %d: a macro step's plan counted %d KV "
					 "blocks, its requests took %d",
					 (int)in->id, (int)planned, (int)taken);
		lsim_stop(s->eng);
	}
}

/* Both sides, before t (at_t: and at t). */
void lsim_inst_catch_up(struct lsim_instance *in, lsim_time t, bool at_t)
{
	struct lsim_serving *s = in->sv;
	if (in->failed || !in->kv) {
		/* crashed or evicted: its run's later steps never end */
		if (in->m_tokens > 0)
			s->hooks->stream_tokens(s->owner, in, in->m_tokens);
		in->m_tokens = 0;
		mark_settled(in); /* what its requests had left is gone */
		macro_delist(in);
		return;
	}
	advance(in, t, at_t);
	settle(in);
	if (in->m_next == LSIM_TIME_MAX)
		macro_delist(in);
	else
		s->macro[in->m_slot].t = in->m_next;
}

void lsim_serving_catch_up(struct lsim_serving *s, lsim_time t, bool at_t)
{
	if (s->macro_unsettled == 0 &&
	    (s->macro_min > t || (!at_t && s->macro_min == t)))
		return;
	lsim_time min = LSIM_TIME_MAX;
	for (size_t i = 0; i < s->n_macro;) {
		struct lsim_instance *in = s->macro[i].in;
		lsim_inst_catch_up(in, t, at_t);
		if (in->m_slot != (int32_t)i)
			continue; /* delisted: slot i holds another */
		if (s->macro[i].t < min)
			min = s->macro[i].t;
		i++;
	}
	s->macro_min = min;
}

void lsim_instance_advance_run(struct lsim_instance *in, lsim_time now)
{
	if (in->failed || !in->kv) {
		lsim_inst_catch_up(in, now, false);
		return;
	}
	advance(in, now, false);
	in->sv->macro[in->m_slot].t = in->m_next;
}

int32_t lsim_instance_kv_free(const struct lsim_instance *in)
{
	return in->kv ? lsim_kv_free(in->kv) - in->m_kvp : 0;
}

/* The run ends with the step in flight: its end becomes the event. */
void lsim_inst_macro_cut(struct lsim_instance *in)
{
	in->m_more = false; /* (its last step may be in flight) */
	if (in->m_slot < 0)
		return; /* no run */
	struct lsim_serving *s = in->sv;
	lsim_inst_catch_up(in, lsim_now(s->eng), false);
	if (in->m_slot < 0)
		return; /* in its last step */
	in->m_n = in->m_done + 1;
	if (lsim_reschedule(s->eng, in->step_ev, in->m_next) != 0 && !s->error) {
		s->error = LSIM_ESTATE;
		lsim_stop(s->eng);
	}
	macro_delist(in);
}

