/*
 * instance_pipe.c - a serving instance's communication within a step (its
 * all-reduces as flows on the links) and its pipeline stages (pp > 1:
 * batches in flight through the stages, activations sent between them);
 * the rest of the instance is instance.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "serving/instance_internal.h"
#include "serving/memplan.h"

/* ---- a step's communication ----
 * Without pipeline stages or all-reduce flows a step is one event (its
 * compute time from the perf model). With all-reduce flows (pp 1) the
 * step's compute is followed by its tensor-parallel ring all-reduce as
 * flows between its GPUs. With pipeline stages, see "the pipeline" below. */

bool lsim_inst_ring_on(const struct lsim_instance *in)
{
	return in->allreduce_on_links && in->tp > 1 && in->sv->net && in->gpu0 >= 0;
}

bool lsim_inst_pp_flows(const struct lsim_instance *in)
{
	return in->sv->net && in->gpu0 >= 0;
}

void lsim_serving_coll_topo(const struct lsim_serving *s, const struct lsim_gpu_profile *g,
			    struct lsim_coll_topo *out)
{
	lsim_coll_topo_from_profile(g, out);
	if (s->net)
		out->gpus_per_switch = s->topo.p.gpus_per_switch;
}

bool lsim_inst_gpu_flow(struct lsim_serving *s, int32_t src, int32_t dst, double bytes,
			double cap, lsim_flow_done_fn done, void *ctx, uint64_t arg)
{
	int32_t path[LSIM_PATH_MAX];
	int n = lsim_topo_path_gpu_to_gpu(&s->topo, src, dst, path);
	struct lsim_flow_req fr = {
		.path = path, .n_hops = n, .bytes = bytes, .rate_cap = cap,
		.done = done, .ctx = ctx, .arg = arg,
		.kind = LSIM_FLOW_COLLECTIVE,
	};
	lsim_flow_id id;
	if (n >= 0 && lsim_flow_start(s->net, &fr, &id, &s->diag) == 0)
		return true;
	if (!s->error) /* a path missing: the run stops with the error */
		s->error = LSIM_ESTATE;
	lsim_stop(s->eng);
	return false;
}

/* Starts tp flows of `bytes` each, from the instance's GPUs first + k to
 * its GPUs to + k (ring: to + (k + 1) % tp), each at most `cap` bytes/s
 * (0: no cap), done(in, arg) at each arrival; false (and the run
 * stopped) if the links refuse. */
static bool start_flows(struct lsim_instance *in, int32_t first, int32_t to,
			bool ring, double bytes, double cap, lsim_flow_done_fn done,
			uint64_t arg)
{
	for (int32_t k = 0; k < in->tp; k++) {
		int32_t dst = to + (ring ? (k + 1) % in->tp : k);
		if (!lsim_inst_gpu_flow(in->sv, lsim_instance_gpu(in, first + k),
					lsim_instance_gpu(in, dst), bytes, cap, done, in, arg))
			return false;
	}
	return true;
}

static void ring_moved(void *ctx, lsim_flow_id flow, uint64_t arg)
{
	(void)flow;
	(void)arg;
	struct lsim_instance *in = ctx;
	if (--in->ar_flows == 0 && !in->failed)
		lsim_inst_step_end(in->sv->eng, in, 0);
}

/* The step's compute is done (pp 1); its all-reduce data goes around the
 * ring of the group's GPUs (each sends to the next), and the step ends
 * when the last flow arrives. */
void lsim_inst_compute_done(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)eng;
	struct lsim_instance *in = subject;
	if (in->failed)
		return;
	in->ar_flows = in->tp;
	start_flows(in, 0, 0, true,
		    lsim_perf_allreduce_bytes(in->model, in->tp, (int64_t)arg),
		    lsim_perf_ring_rate_cap(in->perf, (int64_t)arg), ring_moved, 0);
}

/* ---- the pipeline (pp > 1) ----
 * As vLLM's V1 engine (docs/parallelism.md, "Pipeline parallelism"): up
 * to pp batches are in flight, a new one formed whenever fewer are (its
 * batch queue); a request's tokens in flight count as scheduled, so a
 * decode waits for its batch while a prefill's next chunk joins the next
 * batch. Each stage takes the batches in the order they formed, one at a
 * time: it computes its layers (stage_times: the perf model's stage_time
 * of vLLM's layer split, plus at tp > 1 the all-gathers of what it
 * received), runs its layers' share of the tensor-parallel ring
 * all-reduce as flows between its tp GPUs (allreduce_on_links), is free
 * again, and sends the batch's activations (hidden states and residual,
 * bf16) to the next stage, rank k to rank k, 1/tp of them each: as flows
 * on the links with a cluster (then NCCL's send/recv latency), else the
 * collective model's send/recv (lsim_inst_pp_send_s). The last stage ends the
 * batch. The instance is busy while any batch is in flight. */

static void pipe_computed(struct lsim_engine *eng, void *subject, uint64_t arg);

/* Stage b->stage computes batch k (its stage_ns). */
static void pipe_compute(struct lsim_instance *in, int32_t k)
{
	lsim_time t = in->batches[k].stage_ns[in->batches[k].stage];
	if (!lsim_schedule_in(in->sv->eng, t < 1 ? 1 : t, pipe_computed, in, (uint64_t)k) &&
	    !in->sv->error)
		in->sv->error = LSIM_ENOMEM;
}

static void pipe_gathered(void *ctx, lsim_flow_id flow, uint64_t arg)
{
	(void)flow;
	struct lsim_instance *in = ctx;
	if (--in->batches[arg].flows == 0 && !in->failed)
		pipe_compute(in, (int32_t)arg);
}

/* Stage st takes the next batch in order if it has arrived and the stage
 * is free. A stage after the first at tp > 1 first all-gathers what its
 * ranks received (two all-gathers of tokens x hidden x 2 B): with a
 * cluster as ring flows between its GPUs, each capped at the NCCL model's
 * rate (their latency is in its compute, stage_times), else in its
 * compute. */
static void pipe_try_start(struct lsim_instance *in, int32_t st)
{
	if (in->stage_holder[st] >= 0)
		return;
	for (int32_t i = 0; i < in->n_inflight; i++) {
		int32_t k = (in->b_head + i) % in->pp;
		struct lsim_pp_batch *b = &in->batches[k];
		if (!b->waiting || b->stage != st || b->seq != in->stage_next[st])
			continue;
		b->waiting = false;
		in->stage_holder[st] = k;
		struct lsim_coll_est e;
		double bytes = (double)b->tokens * in->model->hidden * 2.0;
		if (st > 0 && in->tp > 1 && lsim_inst_pp_flows(in) &&
		    lsim_coll_time(&in->pp_topo, LSIM_COLL_ALLGATHER, in->tp, bytes, &e) == 0) {
			double ring = lsim_coll_ring_bytes(LSIM_COLL_ALLGATHER, in->tp, bytes);
			b->flows = in->tp;
			start_flows(in, st * in->tp, st * in->tp, true, 2.0 * ring,
				    lsim_coll_ring_cap(LSIM_COLL_ALLGATHER, in->tp, bytes, &e),
				    pipe_gathered, (uint64_t)k);
			return;
		}
		pipe_compute(in, k);
		return;
	}
}

static void pipe_arrive(struct lsim_instance *in, int32_t k, int32_t st)
{
	struct lsim_pp_batch *b = &in->batches[k];
	b->stage = st;
	b->waiting = true;
	pipe_try_start(in, st);
}

static void pipe_arrived(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)eng;
	struct lsim_instance *in = subject;
	if (!in->failed)
		pipe_arrive(in, (int32_t)arg, in->batches[arg].stage + 1);
}

/* The send's data has moved on the links; NCCL's send/recv latency
 * (b->send_lat) follows. */
static void pipe_sent(void *ctx, lsim_flow_id flow, uint64_t arg)
{
	(void)flow;
	struct lsim_instance *in = ctx;
	struct lsim_pp_batch *b = &in->batches[arg];
	if (--b->flows > 0 || in->failed)
		return;
	if (b->send_lat <= 0) {
		pipe_arrive(in, (int32_t)arg, b->stage + 1);
		return;
	}
	if (!lsim_schedule_in(in->sv->eng, b->send_lat, pipe_arrived, in, arg) &&
	    !in->sv->error)
		in->sv->error = LSIM_ENOMEM;
}

/* Whether GPUs a and b of one node talk over NVLink (or a mesh link),
 * and whether they sit behind one PCIe switch: the hop's class in the
 * collective model (collective.h). */
static int hop_class(const struct lsim_coll_topo *t, int32_t a, int32_t b)
{
	bool fast = t->fabric == LSIM_FABRIC_NVSWITCH || t->fabric == LSIM_FABRIC_MESH ||
		    (t->fabric == LSIM_FABRIC_NVLINK_PAIRS && a / 2 == b / 2);
	if (fast)
		return 2; /* a fast hop crosses no switch (collective.c) */
	return a / t->gpus_per_switch == b / t->gpus_per_switch ? 1 : 0;
}

/*
 * The time in seconds of stage st's send of its activations to stage
 * st + 1 on the NCCL model (collective.h): tp sends at once, rank k to
 * rank k (GPUs st tp + k to (st + 1) tp + k of the node), bytes each.
 * Each is timed as the model's send/recv between GPUs 0 and j of the
 * same class (NVLink or PCIe, one switch or two); sends that leave or
 * enter the same PCIe switch over its uplink (or all of them through host
 * memory when P2P is off) share it, so the busiest switch's count of
 * sends multiplies the bytes. *lat gets the send/recv's latency alone.
 * Negative: the model cannot time a send of this class.
 */
double lsim_inst_pp_send_s(const struct lsim_instance *in, int32_t st, double bytes, double *lat)
{
	const struct lsim_coll_topo *t = &in->pp_topo;
	int32_t tp = in->tp, gps = t->gpus_per_switch;
	int32_t first = st * tp, last = (st + 2) * tp; /* the GPUs involved */
	int share = 1;
	for (int32_t sw = first / gps; sw <= (last - 1) / gps; sw++) {
		int up = 0, down = 0;
		for (int32_t k = 0; k < tp; k++) {
			int32_t a = first + k, b = a + tp;
			int c = hop_class(t, a, b);
			if (c == 2 || (c == 1 && t->p2p))
				continue; /* NVLink, or P2P inside one switch */
			up += a / gps == sw;
			down += b / gps == sw;
		}
		int m = up > down ? up : down;
		if (m > share)
			share = m;
	}
	double worst = 0.0;
	*lat = 0.0;
	for (int32_t k = 0; k < tp; k++) {
		int32_t a = first + k, b = a + tp;
		int c = hop_class(t, a, b), j = 1;
		while (j < 63 && hop_class(t, 0, j) != c)
			j++;
		struct lsim_coll_est e;
		int mult = c == 2 || (c == 1 && t->p2p) ? 1 : share;
		if (hop_class(t, 0, j) != c ||
		    lsim_coll_time(t, LSIM_COLL_SENDRECV, j + 1, bytes * mult, &e) != 0)
			return -1.0; /* checked for every boundary at init */
		if (e.time_s > worst) {
			worst = e.time_s;
			*lat = e.latency_s;
		}
	}
	return worst;
}


/* Stage st is done with batch k: the stage takes the next batch; the
 * batch goes on to the next stage, or ends. */
static void pipe_stage_done(struct lsim_instance *in, int32_t k)
{
	struct lsim_serving *s = in->sv;
	struct lsim_pp_batch *b = &in->batches[k];
	int32_t st = b->stage;
	in->stage_holder[st] = -1;
	in->stage_next[st]++;
	pipe_try_start(in, st);
	if (st < in->pp - 1) {
		/* hidden states and residual, bf16, 1/tp of them a rank */
		double bytes = 2.0 * 2.0 * (double)b->tokens * in->model->hidden / in->tp;
		in->pp_bytes += bytes * in->tp;
		double lat;
		double sec = lsim_inst_pp_send_s(in, st, bytes, &lat);
		if (lsim_inst_pp_flows(in)) {
			/* the data as flows on the links, NCCL's latency after;
			 * alone on its links a flow moves at the model's rate */
			b->send_lat = (lsim_time)ceil(lat * 1e9);
			b->flows = in->tp;
			start_flows(in, st * in->tp, (st + 1) * in->tp, false, bytes,
				    lsim_coll_rate(bytes, sec, lat), pipe_sent,
				    (uint64_t)k);
			return;
		}
		lsim_time t = (lsim_time)ceil(sec * 1e9);
		if (!lsim_schedule_in(s->eng, t, pipe_arrived, in, (uint64_t)k) && !s->error)
			s->error = LSIM_ENOMEM;
		return;
	}
	/* the last stage: batches end in the order they formed, so this is
	 * the oldest */
	lsim_time now = lsim_now(s->eng);
	lsim_inst_finish_batch(in, b->reqs, b->toks, b->n, b->start, in->tp);
	lsim_inst_add_work(in, &b->work);
	in->b_head = (in->b_head + 1) % in->pp;
	if (--in->n_inflight == 0) {
		in->busy_ns += now - in->step_start;
		in->busy = false;
	}
	lsim_inst_schedule_step(in);
}

static void pipe_ring_moved(void *ctx, lsim_flow_id flow, uint64_t arg)
{
	(void)flow;
	struct lsim_instance *in = ctx;
	if (--in->batches[arg].flows == 0 && !in->failed)
		pipe_stage_done(in, (int32_t)arg);
}

static void pipe_computed(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)eng;
	struct lsim_instance *in = subject;
	if (in->failed)
		return;
	struct lsim_pp_batch *b = &in->batches[arg];
	if (!lsim_inst_ring_on(in)) {
		pipe_stage_done(in, (int32_t)arg);
		return;
	}
	b->flows = in->tp;
	start_flows(in, b->stage * in->tp, b->stage * in->tp, true,
		    lsim_perf_allreduce_bytes(in->model, in->tp, b->tokens) *
			    lsim_memplan_stage_layers(in->model->n_layers, in->pp, b->stage) /
			    in->model->n_layers,
		    lsim_perf_ring_rate_cap(in->perf, b->tokens), pipe_ring_moved, arg);
}

/* The batch just formed (in->sched) enters the pipeline at stage 0 (its
 * stage times already in its slot's stage_ns). */
void lsim_inst_pipe_issue(struct lsim_instance *in, int64_t tokens, struct lsim_iter_work work)
{
	int32_t k = (in->b_head + in->n_inflight) % in->pp;
	struct lsim_pp_batch *b = &in->batches[k];
	memcpy(b->reqs, in->sched, in->n_sched * sizeof *b->reqs);
	memcpy(b->toks, in->sched_n, in->n_sched * sizeof *b->toks);
	b->n = in->n_sched;
	b->seq = in->b_seq++;
	b->tokens = tokens;
	b->work = work;
	b->start = lsim_now(in->sv->eng);
	b->flows = 0;
	in->n_sched = 0;
	in->n_inflight++;
	pipe_arrive(in, k, 0);
}

/* Whether a new step (or, pipelined, a new batch) may form now. */
