/*
 * launch.cu - kernel launch cost: an empty kernel launched 100 times per
 * repetition, eager (host time of the launch calls: the CPU-side cost the
 * simulator charges per kernel; and GPU time between events: the launch
 * throughput) and as a captured CUDA graph of 100 kernels (GPU time per
 * kernel); plus one launch + synchronise round trip on the host clock.
 */
#include "common.cuh"

namespace {

__global__ void empty(void)
{
}

const int BATCH = 100;

struct graph_t {
	cudaGraph_t g = nullptr;
	cudaGraphExec_t x = nullptr;
	graph_t() = default;
	graph_t(const graph_t &) = delete;
	graph_t &operator=(const graph_t &) = delete;
	~graph_t()
	{
		if (x)
			cudaGraphExecDestroy(x);
		if (g)
			cudaGraphDestroy(g);
	}
};

int add(bench_ctx *c, const char *variant, std::vector<double> &t)
{
	struct lsim_calib_row r;
	lsim_calib_row_clear(&r);
	snprintf(r.bench, sizeof r.bench, "launch");
	snprintf(r.variant, sizeof r.variant, "%s", variant);
	if (bench_row(c, &r, t))
		return -1;
	struct lsim_calib_row *last = &c->raw->rows[c->raw->n_rows - 1];
	last->value = last->median_s;
	snprintf(last->unit, sizeof last->unit, "s");
	bench_note(c, "launch %s: %.2f us", variant, last->median_s * 1e6);
	return 0;
}

} /* namespace */

int bench_launch(bench_ctx *c)
{
	stream_t s;
	event_t e0, e1;
	CK(c, cudaStreamCreateWithFlags(&s.s, cudaStreamNonBlocking));
	CK(c, cudaEventCreate(&e0.e));
	CK(c, cudaEventCreate(&e1.e));
	const int warm = 5, reps = c->quick ? 10 : 50;
	std::vector<double> host, gpu, graph, sync;
	for (int i = 0; i < warm + reps; i++) {
		CK(c, cudaEventRecord(e0.e, s.s));
		double t0 = bench_now();
		for (int j = 0; j < BATCH; j++)
			empty<<<1, 1, 0, s.s>>>();
		double t1 = bench_now();
		CK(c, cudaGetLastError());
		CK(c, cudaEventRecord(e1.e, s.s));
		CK(c, cudaEventSynchronize(e1.e));
		float ms = 0;
		CK(c, cudaEventElapsedTime(&ms, e0.e, e1.e));
		if (i >= warm) {
			host.push_back((t1 - t0) / BATCH);
			gpu.push_back(ms * 1e-3 / BATCH);
		}
	}
	graph_t g;
	CK(c, cudaStreamBeginCapture(s.s, cudaStreamCaptureModeThreadLocal));
	for (int j = 0; j < BATCH; j++)
		empty<<<1, 1, 0, s.s>>>();
	CK(c, cudaStreamEndCapture(s.s, &g.g));
	CK(c, cudaGraphInstantiate(&g.x, g.g, 0));
	for (int i = 0; i < warm + reps; i++) {
		CK(c, cudaEventRecord(e0.e, s.s));
		CK(c, cudaGraphLaunch(g.x, s.s));
		CK(c, cudaEventRecord(e1.e, s.s));
		CK(c, cudaEventSynchronize(e1.e));
		float ms = 0;
		CK(c, cudaEventElapsedTime(&ms, e0.e, e1.e));
		if (i >= warm)
			graph.push_back(ms * 1e-3 / BATCH);
	}
	for (int i = 0; i < warm + reps; i++) {
		double t0 = bench_now();
		empty<<<1, 1, 0, s.s>>>();
		CK(c, cudaStreamSynchronize(s.s));
		if (i >= warm)
			sync.push_back(bench_now() - t0);
	}
	if (add(c, "eager", host) || add(c, "eager_gpu", gpu) ||
	    add(c, "graph", graph) || add(c, "sync", sync))
		return -1;
	return 0;
}
