/*
 * test_pipeline.c - pipeline parallelism (the pipeline of sim/serving/instance.c,
 * the stage times of the perf backends, vLLM's layer split of
 * sim/serving/memplan.c): stage times against hand sums of the per-layer table's
 * rows; PP 2 and PP 4 runs whose first tokens and makespans are the hand
 * sum of stage compute and the collective model's send/recv (and, at TP
 * 2, its all-gathers); the pipeline's throughput in closed form in both
 * of its regimes (the slowest stage binds, or the cycle of pp batches in
 * flight does); a prefill's chunks pipelined as vLLM's V1 scheduler
 * pipelines them; and every request finishing once under KV pressure.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster/collective.h"
#include "serving/memplan.h"
#include "run/scenario.h"
#include "run/sim.h"

#define LLAMA "calibrate/perf/llmservingsim/RTXPRO6000/meta-llama/Llama-3.1-8B/bf16"

/* Llama-3.1-8B's shapes with a layer count of the test's choosing (the
 * table's per-layer rows do not depend on it): 31 layers split [16, 15]
 * over two stages, 30 split [7, 8, 8, 7] over four. */
static struct lsim_model_arch llama(int layers)
{
	struct lsim_model_arch m = {
		.name = "llama", .n_layers = layers, .hidden = 4096, .n_heads = 32,
		.n_kv_heads = 8, .head_dim = 128, .intermediate = 14336, .vocab = 128256,
		.gated_mlp = true, .params = 8.03e9, .bytes_per_param = 2,
		.max_context = 131072,
	};
	return m;
}

/* Workstation cards on PCIe 5: two GPUs behind each PCIe switch, peer to
 * peer on or off (through host memory). */
static struct lsim_gpu_profile card(bool p2p, double pcie_bw)
{
	struct lsim_gpu_profile g = {
		.name = "card", .tdp_w = 600, .idle_w = 100, .hbm_bytes = 96e9,
		.pcie_bw = pcie_bw, .fabric = LSIM_FABRIC_PCIE, .compute_capability = 12.0,
		.gpu_p2p = p2p, .pcie_switch_gpus = 2,
	};
	return g;
}

#define CPU_S 50e-6

static struct lsim_perf *table(int tp, int layers, const struct lsim_coll_topo *ct)
{
	char dir[1024];
	const char *root = getenv("LSIM_SOURCE_ROOT");
	assert_non_null(root);
	snprintf(dir, sizeof dir, "%s/%s", root, LLAMA);
	struct lsim_table_params prm = {
		.tp = tp, .n_layers = layers, .cpu_overhead_s = CPU_S, .coll = ct,
		.act_bytes = 4096 * 2.0, .logit_bytes = 128256 * 2.0,
	};
	struct lsim_perf *p = NULL;
	struct lsim_diag d = {0};
	int rc = lsim_perf_table_create(dir, &prm, &p, &d);
	if (rc != 0)
		fprintf(stderr, "%s: %s\n", d.key, d.msg);
	assert_int_equal(rc, 0);
	return p;
}

/* The row (name, x) of tp<tp>/<file> in whole ns, as the table loads it
 * (nearbyint of time_us x 1000). */
static double row_ns(int tp, const char *file, const char *name, int x)
{
	char path[1024], line[256];
	snprintf(path, sizeof path, "%s/%s/tp%d/%s", getenv("LSIM_SOURCE_ROOT"), LLAMA, tp,
		 file);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	double v = -1;
	size_t len = strlen(name);
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, name, len) && line[len] == ',' && atoi(line + len + 1) == x) {
			v = nearbyint(atof(strchr(line + len + 1, ',') + 1) * 1000.0);
			break;
		}
	fclose(f);
	assert_true(v > 0);
	return v;
}

/* One decoder layer's time for batch b (with its all-reduces at tp 2):
 * the table at two layers less the table at one. */
static double layer_ns(int tp, const struct lsim_coll_topo *ct, const struct lsim_batch *b)
{
	struct lsim_perf *p1 = table(tp, 1, ct), *p2 = table(tp, 2, ct);
	double l = (double)(lsim_perf_iter_time(p2, b) - lsim_perf_iter_time(p1, b));
	lsim_perf_destroy(p1);
	lsim_perf_destroy(p2);
	assert_true(l > 0);
	return l;
}

/* One collective's whole time by the model, in whole ns as the table
 * truncates it; 0 without tensor parallelism. */
static double coll_ns(const struct lsim_coll_topo *ct, enum lsim_coll_op op, int tp,
		      double bytes)
{
	struct lsim_coll_est e;
	if (tp < 2 || !ct)
		return 0.0;
	assert_int_equal(lsim_coll_time(ct, op, tp, bytes, &e), 0);
	return floor(e.time_s * 1e9);
}

/* Hand sums of a stage of `layers` layers for a batch of `tokens` tokens
 * in `seqs` sequences: the embedding (with its all-reduce at tp 2) and
 * the CPU overhead first, the final norm, LM head (with the all-gather
 * of its logits at tp 2) and sampler last. */
static lsim_time stage_hand(int tp, const struct lsim_coll_topo *ct, const struct lsim_batch *b,
			    int tokens, int seqs, int layers, bool first, bool last)
{
	double t = layers * layer_ns(tp, ct, b);
	if (first)
		t += row_ns(tp, "dense.csv", "embedding", tokens) + CPU_S * 1e9 +
		     coll_ns(ct, LSIM_COLL_ALLREDUCE, tp, tokens * 4096 * 2.0);
	if (last)
		t += row_ns(tp, "dense.csv", "final_layernorm", tokens) +
		     row_ns(tp, "per_sequence.csv", "lm_head", seqs) +
		     row_ns(tp, "per_sequence.csv", "sampler", seqs) +
		     coll_ns(ct, LSIM_COLL_ALLGATHER, tp, seqs * 128256 * 2.0);
	return (lsim_time)t;
}

/* vLLM's get_pp_indices (vllm/model_executor/models/utils.py): L / pp
 * layers each, the remainder one each to partitions[-2], [-3], ... */
static void test_layer_split(void **state)
{
	(void)state;
	static const struct {
		int layers, pp, want[4];
	} cases[] = {
		{32, 2, {16, 16}},   {31, 2, {16, 15}},	  {30, 4, {7, 8, 8, 7}},
		{33, 4, {8, 8, 9, 8}}, {35, 4, {9, 9, 9, 8}}, {80, 3, {27, 27, 26}},
		{126, 4, {31, 32, 32, 31}},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		for (int st = 0; st < cases[i].pp; st++)
			assert_int_equal(lsim_memplan_stage_layers(cases[i].layers, cases[i].pp, st),
					 cases[i].want[st]);
}

/* The table's stage times are the hand sums of its rows, and the stages
 * of a split add up to the iteration exactly. */
static void test_table_stages(void **state)
{
	(void)state;
	struct lsim_perf *p = table(1, 31, NULL);
	int32_t chunk = 16, ctx0 = 0;
	struct lsim_batch b = {.n_prefill = 1, .prefill_chunk = &chunk, .prefill_ctx = &ctx0};
	lsim_time s0 = p->ops->stage_time(p, &b, 16, true, false);
	lsim_time s1 = p->ops->stage_time(p, &b, 15, false, true);
	assert_int_equal(s0, stage_hand(1, NULL, &b, 16, 1, 16, true, false));
	assert_int_equal(s1, stage_hand(1, NULL, &b, 16, 1, 15, false, true));
	assert_int_equal(s0 + s1, lsim_perf_iter_time(p, &b));
	/* a middle stage: its layers alone */
	assert_int_equal(p->ops->stage_time(p, &b, 8, false, false),
			 stage_hand(1, NULL, &b, 16, 1, 8, false, false));
	lsim_perf_destroy(p);
	/* at tp 2 the embedding's all-reduce is the first stage's and the
	 * logits' all-gather the last's, for a prefill of 16 tokens and for
	 * 8 decodes (8 sequences' logits) */
	struct lsim_gpu_profile pc = card(true, 63e9);
	struct lsim_coll_topo ct2;
	lsim_coll_topo_from_profile(&pc, &ct2);
	p = table(2, 31, &ct2);
	int32_t dc[8] = {16, 16, 16, 16, 16, 16, 16, 16};
	struct lsim_batch d8 = {.n_decode = 8, .decode_ctx = dc};
	assert_int_equal(p->ops->stage_time(p, &b, 16, true, false),
			 stage_hand(2, &ct2, &b, 16, 1, 16, true, false));
	assert_int_equal(p->ops->stage_time(p, &b, 15, false, true),
			 stage_hand(2, &ct2, &b, 16, 1, 15, false, true));
	assert_int_equal(p->ops->stage_time(p, &d8, 16, true, false),
			 stage_hand(2, &ct2, &d8, 8, 8, 16, true, false));
	assert_int_equal(p->ops->stage_time(p, &d8, 15, false, true),
			 stage_hand(2, &ct2, &d8, 8, 8, 15, false, true));
	assert_int_equal(p->ops->stage_time(p, &d8, 16, true, false) +
				 p->ops->stage_time(p, &d8, 15, false, true),
			 lsim_perf_iter_time(p, &d8));
	lsim_perf_destroy(p);
	/* the roofline's stages add up to its iteration within a ns each */
	struct lsim_model_arch m = llama(31);
	struct lsim_gpu_profile g = card(true, 63e9);
	g.bf16_flops = 500e12;
	g.hbm_bw = 1.8e12;
	g.mfu_max = 0.7;
	g.mbu = 0.8;
	struct lsim_roofline_params rp = {.tp = 1, .cpu_overhead_s = CPU_S};
	struct lsim_diag d = {0};
	assert_int_equal(lsim_perf_roofline_create(&m, &g, &rp, &p, &d), 0);
	lsim_time r = lsim_perf_iter_time(p, &b);
	lsim_time r0 = p->ops->stage_time(p, &b, 16, true, false);
	lsim_time r1 = p->ops->stage_time(p, &b, 15, false, true);
	assert_true(llabs(r0 + r1 - r) <= 1);
	/* the first adds the embedding and the CPU, the last the LM head */
	assert_true(r0 > p->ops->stage_time(p, &b, 16, false, false) + CPU_S * 1e9);
	assert_true(r1 > p->ops->stage_time(p, &b, 15, false, false));
	/* at tp 2 too; the first stage's share beyond its layers is the
	 * embedding's and, at tp 2 only, its all-reduce: tp 2's exceeds tp
	 * 1's by that all-reduce (to a ns or two of rounding) */
	lsim_time first1 = r0 - p->ops->stage_time(p, &b, 16, false, false);
	lsim_perf_destroy(p);
	struct lsim_coll_topo ct;
	lsim_coll_topo_from_profile(&g, &ct);
	rp.tp = 2;
	assert_int_equal(lsim_perf_roofline_create(&m, &g, &rp, &p, &d), 0);
	r = lsim_perf_iter_time(p, &b);
	r0 = p->ops->stage_time(p, &b, 16, true, false);
	r1 = p->ops->stage_time(p, &b, 15, false, true);
	assert_true(llabs(r0 + r1 - r) <= 1);
	lsim_time first2 = r0 - p->ops->stage_time(p, &b, 16, false, false);
	struct lsim_coll_est e;
	assert_int_equal(lsim_coll_time(&ct, LSIM_COLL_ALLREDUCE, 2, 16 * 4096 * 2.0, &e), 0);
	assert_true(fabs((double)(first2 - first1) - e.time_s * 1e9) <= 2.0);
	assert_true(r1 - p->ops->stage_time(p, &b, 15, false, false) >
		    coll_ns(&ct, LSIM_COLL_ALLGATHER, 2, 128256 * 2.0));
	lsim_perf_destroy(p);
}

/* Writes rows ("t,p,o" in seconds) to a CSV and runs them through one
 * instance of the table at (tp, pp) on gpu g. */
static void run_rows(struct lsim_sim *s, const char *rows, int tp, int pp, int layers,
		     const struct lsim_gpu_profile *g, const struct lsim_model_arch *m,
		     int64_t budget, int64_t blocks)
{
	char path[] = "/tmp/lsim_pp_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fprintf(f, "t,p,o\n%s", rows);
	fclose(f);
	struct lsim_diag d = {0};
	assert_int_equal(lsim_sim_init(s, 1, &d), 0);
	s->sample_period = 0;
	s->retain_requests = true;
	struct lsim_engine_cfg cfg = {
		.max_num_seqs = 64, .max_num_batched_tokens = budget, .block_size = 16,
		.num_gpu_blocks = blocks, .gpu_memory_utilization = 0.9,
		.enable_chunked_prefill = true, .pp = pp,
	};
	struct lsim_coll_topo ct;
	lsim_coll_topo_from_profile(g, &ct);
	struct lsim_instance *in = lsim_sim_add_instance(s);
	assert_non_null(in);
	int rc = lsim_instance_init(in, &s->sv, 0, &cfg, g, m, tp,
				    table(tp, layers, tp > 1 ? &ct : NULL), &d);
	if (rc != 0)
		fprintf(stderr, "%s: %s\n", d.key, d.msg);
	assert_int_equal(rc, 0);
	struct lsim_csv_map map = {"t", LSIM_TF_SECONDS, "p", "o"};
	struct lsim_workload *w = NULL;
	assert_int_equal(lsim_workload_csv_open(path, &map, &w, &d), 0);
	assert_int_equal(lsim_sim_run(s, w, 0, &d), 0);
	unlink(path);
}

/* The collective model's send/recv between GPUs 0 and n - 1 of the
 * node, in whole ns as the pipeline charges it (rounded up). */
static lsim_time send_ns(const struct lsim_gpu_profile *g, int n, double bytes)
{
	struct lsim_coll_topo ct;
	lsim_coll_topo_from_profile(g, &ct);
	struct lsim_coll_est e;
	assert_int_equal(lsim_coll_time(&ct, LSIM_COLL_SENDRECV, n, bytes, &e), 0);
	assert_int_equal(e.algo, LSIM_COLL_P2P);
	return (lsim_time)ceil(e.time_s * 1e9);
}

/* Two all-gathers (hidden states, residual) of tokens x 4096 x 2 B over
 * tp GPUs: what a stage after the first adds at tp > 1. */
static lsim_time gathers_ns(const struct lsim_gpu_profile *g, int tp, int tokens)
{
	struct lsim_coll_topo ct;
	lsim_coll_topo_from_profile(g, &ct);
	struct lsim_coll_est e;
	assert_int_equal(lsim_coll_time(&ct, LSIM_COLL_ALLGATHER, tp, tokens * 4096 * 2.0, &e), 0);
	return 2 * (lsim_time)ceil(e.time_s * 1e9);
}

/* PP 2 on two cards behind one switch (GPUs 0 and 1, peer to peer), no
 * cluster: one request of 16 prompt tokens and 2 output tokens. Its
 * first token is stage 0's prefill (embedding, 16 layers, CPU), the send
 * of 16 x 4096 x 2 x 2 B, and stage 1's (15 layers, final norm, LM head,
 * sampler); its second as much again for the decode at context 16. */
static void test_pp2_hand_sum(void **state)
{
	(void)state;
	struct lsim_model_arch m = llama(31);
	struct lsim_gpu_profile g = card(true, 63e9);
	struct lsim_sim s;
	run_rows(&s, "0,16,2\n", 1, 2, 31, &g, &m, 2048, 1000);
	int32_t chunk = 16, ctx0 = 0, dctx = 16;
	struct lsim_batch pf = {.n_prefill = 1, .prefill_chunk = &chunk, .prefill_ctx = &ctx0};
	struct lsim_batch dec = {.n_decode = 1, .decode_ctx = &dctx};
	lsim_time ttft = stage_hand(1, NULL, &pf, 16, 1, 16, true, false) +
			 send_ns(&g, 2, 16 * 4096 * 4.0) +
			 stage_hand(1, NULL, &pf, 16, 1, 15, false, true);
	lsim_time step = stage_hand(1, NULL, &dec, 1, 1, 16, true, false) +
			 send_ns(&g, 2, 4096 * 4.0) + stage_hand(1, NULL, &dec, 1, 1, 15, false, true);
	const struct lsim_req *r = &s.sv.reqs[0];
	assert_int_equal(r->status, LSIM_REQ_FINISHED);
	assert_int_equal(r->first_token, ttft);
	assert_int_equal(r->finish, ttft + step);
	assert_int_equal(s.inst[0]->iterations, 2);
	assert_true(s.inst[0]->pp_bytes == 17 * 4096 * 4.0);
	lsim_sim_release(&s);
}

/* TP 2 x PP 4 (GPUs 0-7, two behind each switch, peer to peer off: all
 * through host memory), 30 layers split [7, 8, 8, 7]: each rank sends
 * half the activations to its peer of the next stage; both ranks' sends
 * leave one switch and enter the next, so each takes twice its bytes on
 * the model's send/recv between GPUs of two switches (GPUs 0 and 2), and
 * each stage after the first all-gathers them. Stage compute from the
 * TP 2 table, with its two all-reduces per layer. */
static void test_pp4_hand_sum(void **state)
{
	(void)state;
	struct lsim_model_arch m = llama(30);
	struct lsim_gpu_profile g = card(false, 63e9);
	struct lsim_coll_topo ct;
	lsim_coll_topo_from_profile(&g, &ct);
	struct lsim_sim s;
	run_rows(&s, "0,16,2\n", 2, 4, 30, &g, &m, 2048, 1000);
	int32_t chunk = 16, ctx0 = 0, dctx = 16;
	struct lsim_batch pf = {.n_prefill = 1, .prefill_chunk = &chunk, .prefill_ctx = &ctx0};
	struct lsim_batch dec = {.n_decode = 1, .decode_ctx = &dctx};
	static const int layers[4] = {7, 8, 8, 7};
	lsim_time ttft = 0, step = 0;
	for (int st = 0; st < 4; st++) {
		ttft += stage_hand(2, &ct, &pf, 16, 1, layers[st], st == 0, st == 3);
		step += stage_hand(2, &ct, &dec, 1, 1, layers[st], st == 0, st == 3);
		if (st > 0) {
			ttft += gathers_ns(&g, 2, 16) + send_ns(&g, 3, 2 * 16 * 4096 * 4.0 / 2);
			step += gathers_ns(&g, 2, 1) + send_ns(&g, 3, 2 * 4096 * 4.0 / 2);
		}
	}
	/* the sharing is real: one send alone is faster */
	assert_true(send_ns(&g, 3, 2 * 16 * 4096 * 2.0) > send_ns(&g, 3, 16 * 4096 * 2.0));
	const struct lsim_req *r = &s.sv.reqs[0];
	assert_int_equal(r->status, LSIM_REQ_FINISHED);
	assert_int_equal(r->first_token, ttft);
	assert_int_equal(r->finish, ttft + step);
	assert_true(s.inst[0]->pp_bytes == 3 * 17 * 4096 * 4.0);
	lsim_sim_release(&s);
}

/*
 * N prefills of 16 tokens at t = 0, one per batch (token budget 16), one
 * output token each: identical batches through PP 2, stage times s0 and
 * s1 and the send c, T = s0 + c + s1 a batch's latency, m = max(s0, s1).
 * At most two batches in flight, a new one formed when one ends:
 *   T <= 2m (the slowest stage binds):   F_i = T + i m
 *   T >  2m (the cycle of two binds):    F_{2q+j} = (q + 1) T + j m
 * so the steady interval is max(m, T / 2), and the makespan F_{N-1}.
 * A fast link gives the first regime, a slow one the second.
 */
static void pipeline_closed_form(double pcie_bw, bool want_stage_bound)
{
	struct lsim_model_arch m = llama(31);
	struct lsim_gpu_profile g = card(true, pcie_bw);
	enum { N = 9 };
	char rows[N * 16] = "";
	for (int i = 0; i < N; i++)
		strcat(rows, "0,16,1\n");
	struct lsim_sim s;
	run_rows(&s, rows, 1, 2, 31, &g, &m, 16, 1000);
	int32_t chunk = 16, ctx0 = 0;
	struct lsim_batch pf = {.n_prefill = 1, .prefill_chunk = &chunk, .prefill_ctx = &ctx0};
	lsim_time s0 = stage_hand(1, NULL, &pf, 16, 1, 16, true, false);
	lsim_time s1 = stage_hand(1, NULL, &pf, 16, 1, 15, false, true);
	lsim_time c = send_ns(&g, 2, 16 * 4096 * 4.0);
	lsim_time T = s0 + c + s1, mx = s0 > s1 ? s0 : s1;
	assert_true((T <= 2 * mx) == want_stage_bound);
	lsim_time last = 0;
	for (int i = 0; i < N; i++) {
		const struct lsim_req *r = &s.sv.reqs[i];
		lsim_time f = want_stage_bound ? T + i * mx : (i / 2 + 1) * T + (i % 2) * mx;
		assert_int_equal(r->status, LSIM_REQ_FINISHED);
		assert_int_equal(r->first_token, f);
		assert_int_equal(r->finish, f);
		last = f > last ? f : last;
	}
	assert_int_equal(s.inst[0]->iterations, N);
	assert_int_equal(lsim_now(s.sv.eng), last); /* the makespan */
	lsim_sim_release(&s);
}

static void test_throughput_stage_bound(void **state)
{
	(void)state;
	pipeline_closed_form(63e9, true);
}

static void test_throughput_cycle_bound(void **state)
{
	(void)state;
	/* 0.25 GB/s: the 262 kB send takes longer than the stages differ */
	pipeline_closed_form(0.25e9, false);
}

/* vLLM V1 under PP: a prefill with chunks left gets its next chunk in
 * the next batch while the one before is in flight. A 48-token prompt at
 * a budget of 16: chunks A (context 0) and B (16) form at t = 0, C (32)
 * when A ends. Stage k of a chunk starts when it arrives and the stage
 * is free: */
static void test_chunks_pipelined(void **state)
{
	(void)state;
	struct lsim_model_arch m = llama(31);
	struct lsim_gpu_profile g = card(true, 63e9);
	struct lsim_sim s;
	run_rows(&s, "0,48,1\n", 1, 2, 31, &g, &m, 16, 1000);
	int32_t chunk = 16, ctx[3] = {0, 16, 32};
	lsim_time s0[3], s1[3];
	for (int k = 0; k < 3; k++) {
		struct lsim_batch b = {.n_prefill = 1, .prefill_chunk = &chunk,
				       .prefill_ctx = &ctx[k]};
		s0[k] = stage_hand(1, NULL, &b, 16, 1, 16, true, false);
		s1[k] = stage_hand(1, NULL, &b, 16, 1, 15, false, true);
	}
	lsim_time c = send_ns(&g, 2, 16 * 4096 * 4.0);
#define MAX(a, b) ((a) > (b) ? (a) : (b))
	lsim_time fa = s0[0] + c + s1[0];
	lsim_time a0 = s0[0];		   /* A leaves stage 0 */
	lsim_time b0 = a0 + s0[1];	   /* B leaves stage 0 */
	lsim_time fb = MAX(b0 + c, fa) + s1[1];
	lsim_time c0 = MAX(fa, b0) + s0[2]; /* C forms when A ends */
	lsim_time fc = MAX(c0 + c, fb) + s1[2];
#undef MAX
	const struct lsim_req *r = &s.sv.reqs[0];
	assert_int_equal(r->status, LSIM_REQ_FINISHED);
	assert_int_equal(r->first_token, fc);
	/* one chunk at a time would take three whole passes */
	assert_true(fc < fa + (s0[1] + c + s1[1]) + (s0[2] + c + s1[2]));
	assert_int_equal(s.inst[0]->iterations, 3);
	lsim_sim_release(&s);
}

/* Conservation: requests of mixed lengths through TP 1 x PP 4 with a KV
 * cache small enough to preempt: each finishes once, with all its output
 * tokens, and every block comes back. */
static void test_conservation(void **state)
{
	(void)state;
	struct lsim_model_arch m = llama(30);
	struct lsim_gpu_profile g = card(true, 63e9);
	char rows[4096] = "";
	int n = 0;
	for (int i = 0; i < 40; i++, n++) {
		char row[64];
		snprintf(row, sizeof row, "%.3f,%d,%d\n", 0.002 * i, 20 + (i * 37) % 300,
			 1 + (i * 13) % 40);
		strcat(rows, row);
	}
	struct lsim_sim s;
	run_rows(&s, rows, 1, 4, 30, &g, &m, 256, 60);
	int64_t out = 0, want = 0;
	for (int i = 0; i < n; i++) {
		const struct lsim_req *r = &s.sv.reqs[i];
		assert_int_equal(r->status, LSIM_REQ_FINISHED);
		assert_int_equal(r->generated, r->output);
		assert_int_equal(r->sched_tokens, 0);
		assert_true(r->first_token > r->arrival && r->finish >= r->first_token);
		out += r->generated;
		want += 1 + (i * 13) % 40;
	}
	assert_int_equal(out, want);
	assert_int_equal(s.n_reqs, (size_t)n);
	const struct lsim_instance *in = s.inst[0];
	assert_int_equal(in->n_inflight, 0);
	assert_int_equal(in->outstanding, 0);
	assert_true(in->preemptions > 0);
	assert_int_equal(lsim_kv_free(in->kv), 60);
	lsim_sim_release(&s);
}

/* A profile whose fabric cannot carry the sends is refused. */
static void test_refused(void **state)
{
	(void)state;
	struct lsim_model_arch m = llama(30);
	struct lsim_gpu_profile g = card(true, 0); /* no PCIe bandwidth */
	struct lsim_sim s;
	struct lsim_diag d = {0};
	assert_int_equal(lsim_sim_init(&s, 1, &d), 0);
	struct lsim_engine_cfg cfg = {
		.max_num_seqs = 8, .max_num_batched_tokens = 64, .block_size = 16,
		.num_gpu_blocks = 100, .gpu_memory_utilization = 0.9, .pp = 2,
	};
	struct lsim_instance *in = lsim_sim_add_instance(&s);
	assert_int_equal(lsim_instance_init(in, &s.sv, 0, &cfg, &g, &m, 1, table(1, 30, NULL), &d),
			 LSIM_EINVAL);
	assert_string_equal(d.key, "pp");
	lsim_sim_drop_instance(&s);
	lsim_sim_release(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layer_split),
		cmocka_unit_test(test_table_stages),
		cmocka_unit_test(test_pp2_hand_sum),
		cmocka_unit_test(test_pp4_hand_sum),
		cmocka_unit_test(test_throughput_stage_bound),
		cmocka_unit_test(test_throughput_cycle_bound),
		cmocka_unit_test(test_chunks_pipelined),
		cmocka_unit_test(test_conservation),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
