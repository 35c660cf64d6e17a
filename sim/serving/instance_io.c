/*
 * instance_io.c - a step's own host <-> GPU traffic (instances[].io_in_bytes,
 * io_out_bytes): the step's inputs go host -> GPU as a flow on the first
 * GPU's PCIe path before its kernels run, and its outputs GPU -> host after
 * them; the step ends when its outputs are on the host. The flows are of
 * kind inference, so the link classes (docs/links.md, "Traffic classes")
 * act on them. When some tenant has a class of its own for them, the
 * batch's bytes go as one flow per class, each carrying the tokens of the
 * requests in that class, and the step waits for all of them. pp 1 and
 * tp 1 only (checked at load).
 *
 * Weight offload (cpu_offload_gb, vLLM's maybe_offload_to_cpu): each
 * step first copies that many bytes host -> GPU on every GPU of the
 * instance, one flow of kind weights per GPU on its PCIe path, together
 * with the inputs; the kernels start when all have arrived. vLLM copies a
 * module's offloaded parameters on the compute stream right before that
 * module's forward, with no prefetch, so copies and kernels do not
 * overlap: the step takes their sum. pp 1, any tp.
 */
#include "serving/instance_internal.h"

bool lsim_inst_io_on(const struct lsim_instance *in)
{
	return (in->cfg.io_in_bytes > 0 || in->cfg.io_out_bytes > 0 ||
		in->cfg.cpu_offload_gb > 0) &&
	       in->sv->net && in->gpu0 >= 0;
}

/* One flow of bytes host -> GPU k of the instance (up) or back, of a
 * kind, in class cls (0: the kind's), done(in, tokens) at its arrival;
 * false (and the run stopped) if the links refuse. */
static bool gpu_flow(struct lsim_instance *in, int32_t k, bool up, double bytes,
		     enum lsim_flow_kind kind, int32_t cls, lsim_flow_done_fn done,
		     uint64_t tokens)
{
	struct lsim_serving *s = in->sv;
	int32_t path[LSIM_PATH_MAX];
	int32_t gpu = lsim_instance_gpu(in, k);
	int n = up ? lsim_topo_path_host_to_gpu(&s->topo, gpu, path)
		   : lsim_topo_path_gpu_to_host(&s->topo, gpu, path);
	struct lsim_flow_req fr = {
		.path = path, .n_hops = n, .bytes = bytes, .done = done, .ctx = in,
		.arg = tokens, .kind = kind, .cls = cls,
	};
	lsim_flow_id id;
	if (n < 0 || lsim_flow_start(s->net, &fr, &id, &s->diag) != 0) {
		if (!s->error)
			s->error = LSIM_EINVAL;
		lsim_stop(s->eng);
		return false;
	}
	in->io_pending++;
	return true;
}

static bool io_flow(struct lsim_instance *in, bool up, double bytes, int32_t cls,
		    lsim_flow_done_fn done, uint64_t tokens)
{
	return gpu_flow(in, 0, up, bytes, LSIM_FLOW_INFERENCE, cls, done, tokens);
}

/* The step's bytes (per_token x tokens) as one flow, or, when tenants
 * have classes of their own, one per class of the batch's requests. */
static void io_flows(struct lsim_instance *in, bool up, double per_token,
		     lsim_flow_done_fn done, uint64_t tokens)
{
	struct lsim_serving *s = in->sv;
	if (!lsim_net_kind_by_tenant(s->net, LSIM_FLOW_INFERENCE)) {
		io_flow(in, up, per_token * (double)tokens, 0, done, tokens);
		return;
	}
	int32_t nc = lsim_net_n_classes(s->net);
	if (!in->io_cls)
		in->io_cls = calloc((size_t)nc, sizeof *in->io_cls);
	if (!in->io_cls) {
		if (!s->error)
			s->error = LSIM_ENOMEM;
		lsim_stop(s->eng);
		return;
	}
	for (size_t i = 0; i < in->n_sched; i++) {
		const struct lsim_req *r = &s->reqs[in->sched[i]];
		in->io_cls[lsim_net_class_of(s->net, LSIM_FLOW_INFERENCE, true, r->tenant)] +=
			r->sched_tokens;
	}
	/* class 0 is the kind's class when it has none: flows of class 0
	 * and of the kind's own class are the same flows */
	int32_t kc = lsim_net_class_of(s->net, LSIM_FLOW_INFERENCE, false, 0);
	if (kc > 0) {
		in->io_cls[kc] += in->io_cls[0];
		in->io_cls[0] = 0;
	}
	bool ok = true;
	for (int32_t c = 0; c < nc; c++) {
		double t = in->io_cls[c];
		in->io_cls[c] = 0;
		if (ok && t > 0)
			ok = io_flow(in, up, per_token * t, c ? c : kc, done, tokens);
	}
}

static void outputs_home(void *ctx, lsim_flow_id flow, uint64_t tokens)
{
	(void)flow;
	struct lsim_instance *in = ctx;
	if (--in->io_pending == 0 && !in->failed)
		lsim_inst_step_end(in->sv->eng, in, tokens);
}

/* The kernels are done: the outputs go to the host. */
static void kernels_done(struct lsim_engine *eng, void *subject, uint64_t tokens)
{
	struct lsim_instance *in = subject;
	in->step_ev = 0;
	if (in->failed)
		return;
	double out = in->cfg.io_out_bytes * (double)tokens;
	in->io_pending = 0;
	if (out <= 0)
		lsim_inst_step_end(eng, in, tokens);
	else
		io_flows(in, false, in->cfg.io_out_bytes, outputs_home, tokens);
}

static void start_kernels(struct lsim_instance *in, uint64_t tokens)
{
	struct lsim_serving *s = in->sv;
	in->step_ev = lsim_schedule_in(s->eng, in->io_dt, kernels_done, in, tokens);
	if (!in->step_ev && !s->error)
		s->error = LSIM_ENOMEM;
}

static void inputs_in(void *ctx, lsim_flow_id flow, uint64_t tokens)
{
	(void)flow;
	struct lsim_instance *in = ctx;
	if (--in->io_pending == 0 && !in->failed)
		start_kernels(in, tokens);
}

void lsim_inst_io_step(struct lsim_instance *in, lsim_time dt, int64_t tokens)
{
	in->io_dt = dt;
	in->io_pending = 0;
	double bytes = in->cfg.io_in_bytes * (double)tokens;
	double offload = in->cfg.cpu_offload_gb * 1073741824.0;
	for (int32_t k = 0; offload > 0 && k < in->n_gpus; k++)
		if (!gpu_flow(in, k, true, offload, LSIM_FLOW_WEIGHTS, 0, inputs_in,
			      (uint64_t)tokens))
			return;
	if (bytes > 0)
		io_flows(in, true, in->cfg.io_in_bytes, inputs_in, (uint64_t)tokens);
	if (in->io_pending == 0 && !in->sv->error)
		start_kernels(in, (uint64_t)tokens);
}
