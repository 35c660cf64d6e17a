/*
 * test_dp.c - data-parallel groups and expert parallelism (sim/serving/dp.c, the
 * lockstep steps of sim/serving/instance.c, the expert-parallel MoE term of
 * sim/serving/perf_table.c): the table's EP step against a hand sum of its CSV
 * rows and the collective model's all-to-all; two MoE ranks stepping in
 * lockstep, each step as long as the slower rank's; an idle rank's dummy
 * batches; and vLLM's DP load balancer on a hand-made sequence.
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

#define QWEN_MOE "calibrate/perf/llmservingsim/RTXPRO6000/Qwen/Qwen3-30B-A3B-Instruct-2507/bf16"

/* Two RTX PRO 6000s: PCIe 5, peer-to-peer, one GPU per switch. */
static const struct lsim_coll_topo pcie = {
	.fabric = LSIM_FABRIC_PCIE, .pcie_bw = 48e9, .gpus_per_switch = 1, .p2p = true,
	.arch = 2,
};

static struct lsim_perf *qwen(int ep)
{
	char dir[1024];
	const char *root = getenv("LSIM_SOURCE_ROOT");
	assert_non_null(root);
	snprintf(dir, sizeof dir, "%s/%s", root, QWEN_MOE);
	struct lsim_table_params prm = {
		.tp = 1, .n_layers = 48, .coll = &pcie, .act_bytes = 2048 * 2.0, .ep = ep,
	};
	struct lsim_perf *p = NULL;
	struct lsim_diag d = {0};
	int rc = lsim_perf_table_create(dir, &prm, &p, &d);
	if (rc != 0)
		fprintf(stderr, "%s: %s\n", d.key, d.msg);
	assert_int_equal(rc, 0);
	return p;
}

static int64_t lerp_ns(int64_t y0, int64_t y1, double t)
{
	return (int64_t)((double)y0 + t * (double)(y1 - y0));
}

/* A layer's dispatch and combine of an EP 2 step: vLLM's default
 * backend's all-gather and reduce-scatter of `bytes` in all, whole ns
 * each. */
static lsim_time exchange_ns(double bytes)
{
	struct lsim_coll_est ag, rs;
	assert_int_equal(lsim_coll_time(&pcie, LSIM_COLL_ALLGATHER, 2, bytes, &ag), 0);
	assert_int_equal(lsim_coll_time(&pcie, LSIM_COLL_REDUCESCATTER, 2, bytes, &rs), 0);
	return (lsim_time)(ag.time_s * 1e9) + (lsim_time)(rs.time_s * 1e9);
}

/* 16 decodes at context 1024 on a rank of EP 2 whose partner has 16
 * too: its experts' work is moe(32 / 2 = 16 tokens, distinct among its
 * 64 experts round(64 (1 - (120/128)^32)) = 56), and per layer an
 * all-gather and a reduce-scatter of 2 ranks x 16 tokens x 2048 x 2 B =
 * 131072 B: each ring LL, 6.6 + 1.0 us at min(87.7, 48 / 3) x 2/1 = 32
 * GB/s on all 4 channels, 7.6 + 131072 / 32e3 us = 11.696 us. Everything
 * else as at EP 1 (test_perf.c's test_table_moe). */
static void test_table_ep_hand_sum(void **state)
{
	(void)state;
	struct lsim_perf *p1 = qwen(0), *p2 = qwen(2);
	int32_t ctx[16];
	for (int i = 0; i < 16; i++)
		ctx[i] = 1024;
	struct lsim_batch b = {.n_decode = 16, .decode_ctx = ctx};
	double act = nearbyint(64.0 * (1.0 - pow(120.0 / 128.0, 32.0)));
	assert_true(act == 56.0);
	/* rows 16,32 (229.664 us) and 16,64 (424.116 us) */
	int64_t moe_ep = lerp_ns(229664, 424116, (56.0 - 32.0) / 32.0);
	int64_t moe_1 = lerp_ns(424116, 817612, (82.0 - 64.0) / 64.0); /* EP 1: 16 tokens, 82 */
	lsim_time x = exchange_ns(2 * 16 * 2048 * 2.0);
	assert_int_equal(x, 2 * 11696);
	lsim_time t1 = lsim_perf_iter_time(p1, &b);
	b.moe_tokens = 32;
	b.a2a_tokens = 16;
	lsim_time t2 = lsim_perf_iter_time(p2, &b);
	assert_int_equal(t2, t1 + 48 * (moe_ep - moe_1 + x));
	/* no partner's tokens given: the batch's own 16, over EP 2 */
	b.moe_tokens = b.a2a_tokens = 0;
	double act16 = nearbyint(64.0 * (1.0 - pow(120.0 / 128.0, 16.0)));
	assert_true(act16 == 41.0);
	/* 16 / 2 = 8 tokens: rows 8,32 (225.589 us) and 8,64 (423.073 us) */
	int64_t moe_own = lerp_ns(225589, 423073, (41.0 - 32.0) / 32.0);
	assert_int_equal(lsim_perf_iter_time(p2, &b), t1 + 48 * (moe_own - moe_1 + x));
	lsim_perf_destroy(p1);
	lsim_perf_destroy(p2);
}

/* Refusals: EP over a dense profile, and experts that do not split. */
static void test_table_ep_refused(void **state)
{
	(void)state;
	char dir[1024];
	snprintf(dir, sizeof dir, "%s/%s", getenv("LSIM_SOURCE_ROOT"),
		 "calibrate/perf/llmservingsim/RTXPRO6000/meta-llama/Llama-3.1-8B/bf16");
	struct lsim_table_params prm = {
		.tp = 1, .n_layers = 32, .coll = &pcie, .act_bytes = 8192, .ep = 2,
	};
	struct lsim_perf *p = NULL;
	struct lsim_diag d = {0};
	assert_int_equal(lsim_perf_table_create(dir, &prm, &p, &d), LSIM_EINVAL);
	assert_string_equal(d.key, "enable_expert_parallel");
	assert_non_null(strstr(d.msg, "needs an MoE model"));
	snprintf(dir, sizeof dir, "%s/%s", getenv("LSIM_SOURCE_ROOT"), QWEN_MOE);
	prm.ep = 3;
	prm.n_layers = 48;
	assert_int_equal(lsim_perf_table_create(dir, &prm, &p, &d), LSIM_EINVAL);
	assert_non_null(strstr(d.msg, "do not split evenly"));
	prm.ep = 2;
	prm.coll = NULL;
	assert_int_equal(lsim_perf_table_create(dir, &prm, &p, &d), LSIM_EINVAL);
	assert_non_null(strstr(d.msg, "none was given"));
}

static const struct lsim_model_arch moe_model = {
	.name = "moe", .n_layers = 48, .hidden = 2048, .n_heads = 32, .n_kv_heads = 4,
	.head_dim = 128, .intermediate = 768, .vocab = 151936, .params = 30.5e9,
	.bytes_per_param = 2, .max_context = 40960, .n_experts = 128,
	.experts_per_token = 8,
};
static const struct lsim_gpu_profile gpu = {.name = "g", .tdp_w = 600, .idle_w = 100};

/* Runs rows ("t,p,o" in seconds) through n ranks of one data-parallel
 * group (lockstep as given), each with the Qwen table at EP n. */
static struct lsim_dp *run_group(struct lsim_sim *s, const char *rows, int n, bool lockstep)
{
	char path[] = "/tmp/lsim_dp_XXXXXX";
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
		.max_num_seqs = 64, .max_num_batched_tokens = 2048, .block_size = 16,
		.num_gpu_blocks = 1000, .gpu_memory_utilization = 0.9,
		.enable_chunked_prefill = true,
	};
	struct lsim_instance *ranks[4];
	for (int i = 0; i < n; i++) {
		ranks[i] = lsim_sim_add_instance(s);
		assert_int_equal(lsim_instance_init(ranks[i], &s->sv, i, &cfg, &gpu, &moe_model, 1,
						    qwen(n), &d), 0);
	}
	struct lsim_dp *g = lsim_sim_add_dp(s, ranks, n, lockstep);
	assert_non_null(g);
	struct lsim_csv_map map = {"t", LSIM_TF_SECONDS, "p", "o"};
	struct lsim_workload *w = NULL;
	assert_int_equal(lsim_workload_csv_open(path, &map, &w, &d), 0);
	assert_int_equal(lsim_sim_run(s, w, 0, &d), 0);
	unlink(path);
	return g;
}

/* A prefill of p tokens (context 0) on a rank of the EP-2 table, in a step
 * with t_all tokens over both ranks and t_max on the larger. */
static lsim_time prefill(int32_t p, int64_t t_all, int64_t t_max)
{
	struct lsim_perf *x = qwen(2);
	int32_t chunk = p, ctx0 = 0;
	struct lsim_batch b = {.n_prefill = 1, .prefill_chunk = &chunk, .prefill_ctx = &ctx0,
			       .moe_tokens = t_all, .a2a_tokens = t_max};
	lsim_time t = lsim_perf_iter_time(x, &b);
	lsim_perf_destroy(x);
	return t;
}

static lsim_time decode(int32_t ctx, int64_t t_all, int64_t t_max)
{
	struct lsim_perf *x = qwen(2);
	struct lsim_batch b = {.n_decode = 1, .decode_ctx = &ctx, .moe_tokens = t_all,
			       .a2a_tokens = t_max};
	lsim_time t = lsim_perf_iter_time(x, &b);
	lsim_perf_destroy(x);
	return t;
}

/* Two requests at t = 0, one to each rank (the balancer: the first to
 * rank 0, the second to rank 1 whose score 0 beats rank 0's 4): the
 * first step prefills 300 tokens on rank 0 and 20 on rank 1 together;
 * both first tokens come at the slower rank's end, rank 0's, each rank's
 * experts serving its share of all 320 tokens. Then decode steps of one
 * token each, until rank 1's request (2 tokens) ends: rank 1 then runs
 * dummy batches while rank 0 decodes its last token. */
static void test_lockstep_steps(void **state)
{
	(void)state;
	struct lsim_sim s;
	struct lsim_dp *g = run_group(&s, "0,300,3\n0,20,2\n", 2, true);
	const struct lsim_req *a = &s.sv.reqs[0], *b = &s.sv.reqs[1];
	assert_int_equal(a->status, LSIM_REQ_FINISHED);
	assert_int_equal(b->status, LSIM_REQ_FINISHED);
	assert_int_equal(a->instance, 0);
	assert_int_equal(b->instance, 1);
	lsim_time r0 = prefill(300, 320, 300), r1 = prefill(20, 320, 300);
	assert_true(r0 > r1);
	assert_int_equal(a->first_token, r0);
	assert_int_equal(b->first_token, r0);
	/* step 2: one decode on each rank (contexts 300 and 20) */
	lsim_time d0 = decode(300, 2, 1), d1 = decode(20, 2, 1);
	lsim_time step2 = d0 > d1 ? d0 : d1;
	assert_int_equal(b->finish, r0 + step2);
	/* step 3: rank 0's last decode; rank 1 a dummy batch (1 token, context 1) */
	lsim_time e0 = decode(301, 2, 1), e1 = decode(1, 2, 1);
	assert_int_equal(a->finish, r0 + step2 + (e0 > e1 ? e0 : e1));
	assert_int_equal(g->steps, 3);
	assert_int_equal(g->dummy_steps, 1);
	assert_int_equal(s.inst[0]->iterations, 3);
	assert_int_equal(s.inst[1]->iterations, 2);
	/* the idle rank's GPU was busy through its dummy step too */
	assert_int_equal(s.inst[1]->busy_ns, a->finish);
	lsim_sim_release(&s);
}

/* One request: rank 1 runs a dummy batch every step, and its experts
 * still serve their share of rank 0's tokens, so each step lasts
 * max(rank 0's, the dummy's) with t_all = tokens + 1. */
static void test_dummy_rank(void **state)
{
	(void)state;
	struct lsim_sim s;
	struct lsim_dp *g = run_group(&s, "0,100,2\n", 2, true);
	const struct lsim_req *a = &s.sv.reqs[0];
	lsim_time p0 = prefill(100, 101, 100), p1 = decode(1, 101, 100);
	lsim_time step1 = p0 > p1 ? p0 : p1;
	assert_int_equal(a->first_token, step1);
	lsim_time q0 = decode(100, 2, 1), q1 = decode(1, 2, 1);
	assert_int_equal(a->finish, step1 + (q0 > q1 ? q0 : q1));
	assert_int_equal(g->steps, 2);
	assert_int_equal(g->dummy_steps, 2);
	assert_int_equal(s.inst[1]->iterations, 0);
	assert_int_equal(s.inst[1]->tokens, 0);
	lsim_sim_release(&s);
	/* a group without lockstep (a dense model's): the idle rank does
	 * nothing, and the request's steps are its own alone */
	g = run_group(&s, "0,100,2\n", 2, false);
	assert_int_equal(s.sv.reqs[0].first_token, prefill(100, 0, 0));
	assert_int_equal(s.inst[1]->busy_ns, 0);
	assert_int_equal(g->steps, 0);
	lsim_sim_release(&s);
}

/* vLLM's balancer on a hand-made sequence: published counts (waiting,
 * running) per rank, score 4 x waiting + running, the least wins (ties:
 * the lowest rank), and each pick adds one waiting request to the
 * chosen rank's count until the next publication. */
static void test_balancer_sequence(void **state)
{
	(void)state;
	struct lsim_sim s;
	struct lsim_diag d = {0};
	assert_int_equal(lsim_sim_init(&s, 1, &d), 0);
	struct lsim_engine_cfg cfg = {
		.max_num_seqs = 8, .max_num_batched_tokens = 256, .block_size = 16,
		.num_gpu_blocks = 100, .gpu_memory_utilization = 0.9,
	};
	struct lsim_instance *r[3];
	for (int i = 0; i < 3; i++) {
		r[i] = lsim_sim_add_instance(&s);
		assert_int_equal(lsim_instance_init(r[i], &s.sv, i, &cfg, &gpu, &moe_model, 1,
						    qwen(0), &d), 0);
	}
	struct lsim_dp *g = lsim_sim_add_dp(&s, r, 3, false);
	assert_non_null(g);
	/* published: rank 0 (0 waiting, 3 running) = 3, rank 1 (1, 0) = 4,
	 * rank 2 (0, 5) = 5 */
	int64_t w[3] = {0, 1, 0}, run[3] = {3, 0, 5};
	memcpy(g->pub_wait, w, sizeof w);
	memcpy(g->pub_run, run, sizeof run);
	/* picks: 0 (3 -> 7), 1 (4 -> 8), 2 (5 -> 9), 0 (7 -> 11), 1 (8 -> 12),
	 * 2 (9 -> 13), 0 */
	static const int32_t want[] = {0, 1, 2, 0, 1, 2, 0};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		struct lsim_instance *in = lsim_dp_pick(g);
		assert_non_null(in);
		assert_int_equal(in->dp_rank, want[i]);
	}
	assert_int_equal(g->pub_wait[0], 3);
	assert_int_equal(g->pub_wait[1], 3);
	assert_int_equal(g->pub_wait[2], 2);
	/* a tie goes to the lowest rank: (1, 3) = 7 against (2, 0) = 8 and
	 * (1, 3) = 7 */
	int64_t w2[3] = {1, 2, 1}, run2[3] = {3, 0, 3};
	memcpy(g->pub_wait, w2, sizeof w2);
	memcpy(g->pub_run, run2, sizeof run2);
	assert_int_equal(lsim_dp_pick(g)->dp_rank, 0);
	/* a rank not ready is passed over */
	r[1]->state = LSIM_INST_LOADING;
	memset(g->pub_wait, 0, sizeof w);
	memset(g->pub_run, 0, sizeof run);
	g->pub_wait[0] = 1;
	assert_int_equal(lsim_dp_pick(g)->dp_rank, 2);
	r[1]->state = LSIM_INST_READY;
	lsim_sim_release(&s);
}

/* The coordinator's publication, 100 ms after the first pick, replaces
 * the tally by the ranks' scheduler counts. Requests (score = 4 x
 * waiting + running, as the balancer sees it):
 *   0      short  rank 0 (0 = 0: the lowest rank)   tally r0 4, r1 0
 *   0      long   rank 1 (0 < 4)                    r0 4, r1 4
 *   0      short  rank 0 (4 = 4)                    r0 8, r1 4
 *   0.01   short  rank 1 (4 < 8)                    r0 8, r1 8
 *   0.02   short  rank 0 (8 = 8)                    r0 12, r1 8
 *   0.1    published: rank 0's three short requests are done (0 waiting,
 *          0 running), rank 1 runs its long one (0, 1)      r0 0, r1 1
 *   0.15   short  rank 0 (0 < 1; the tally alone: rank 1, 8 < 12)
 *   0.16   short  rank 1 (1 < 4)
 */
static void test_balancer_publication(void **state)
{
	(void)state;
	struct lsim_sim s;
	run_group(&s, "0,50,2\n0,50,400\n0,50,2\n0.01,50,2\n0.02,50,2\n"
		      "0.15,50,2\n0.16,50,2\n", 2, false);
	static const int32_t want[] = {0, 1, 0, 1, 0, 0, 1};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
		assert_int_equal(s.sv.reqs[i].instance, want[i]);
	/* the short requests were done by the publication */
	assert_true(s.sv.reqs[4].finish < 100 * LSIM_MS);
	assert_true(s.sv.reqs[3].finish < 100 * LSIM_MS);
	assert_true(s.sv.reqs[1].finish > 160 * LSIM_MS);
	lsim_sim_release(&s);
}

/* The scenario keys: tests/data/scenarios/dp2_ep_moe.yaml with one
 * request of 1,024 + 128 tokens builds one group of two ranks; rank 1
 * runs a dummy batch every step, so its GPU is busy exactly as long as
 * rank 0's and does no iteration of its own; the first token comes after
 * the lockstep prefill step, max(rank 0's prefill, rank 1's dummy) with
 * 1,025 tokens over the EP group, on the RTX PRO 6000 profile's fabric. */
static void test_scenario_keys(void **state)
{
	(void)state;
	const char *root = getenv("LSIM_SOURCE_ROOT");
	char path[1024], dir[1024];
	snprintf(path, sizeof path, "%s/tests/data/scenarios/dp2_ep_moe.yaml", root);
	const char *sets[] = {"workload.count=1"};
	struct lsim_scenario *sc = NULL;
	struct lsim_diag d = {0};
	if (lsim_scenario_load(path, sets, 1, &sc, &d) != 0)
		fail_msg("load: %s: %s: %s", d.file, d.key, d.msg);
	const struct lsim_results *r = NULL;
	if (lsim_scenario_run(sc, NULL, NULL, &r, &d) != 0)
		fail_msg("run: %s", d.msg);
	assert_int_equal(r->n_insts, 2);
	assert_int_equal(r->insts[0].iterations, 128);
	assert_int_equal(r->insts[1].iterations, 0);
	assert_true(r->insts[0].busy_s > 0);
	assert_float_equal(r->insts[1].busy_s, r->insts[0].busy_s, 1e-12);
	assert_non_null(r->reqs);
	assert_int_equal(r->reqs[0].instance, 0);
	/* the hand value, with the profile's fabric */
	snprintf(dir, sizeof dir, "%s/calibrate/profiles", root);
	struct lsim_gpu_profile g;
	assert_int_equal(lsim_gpu_profile_load(dir, "RTX-PRO-6000", &g, &d), 0);
	struct lsim_coll_topo t;
	lsim_coll_topo_from_profile(&g, &t);
	snprintf(dir, sizeof dir, "%s/%s", root, QWEN_MOE);
	struct lsim_table_params prm = {
		.tp = 1, .n_layers = 48, .coll = &t, .act_bytes = 2048 * 2.0, .ep = 2,
	};
	struct lsim_perf *p = NULL;
	assert_int_equal(lsim_perf_table_create(dir, &prm, &p, &d), 0);
	int32_t chunk = 1024, ctx0 = 0, one = 1;
	struct lsim_batch pf = {.n_prefill = 1, .prefill_chunk = &chunk, .prefill_ctx = &ctx0,
				.moe_tokens = 1025, .a2a_tokens = 1024};
	struct lsim_batch dummy = {.n_decode = 1, .decode_ctx = &one, .moe_tokens = 1025,
				   .a2a_tokens = 1024};
	lsim_time a = lsim_perf_iter_time(p, &pf), b = lsim_perf_iter_time(p, &dummy);
	lsim_perf_destroy(p);
	double ttft = (double)(a > b ? a : b) / 1e9;
	/* in double: cmocka's assert_float_equal compares floats, whose
	 * spacing here (3.7e-9) is wider than the tolerance */
	assert_true(fabs(r->reqs[0].first_token - r->reqs[0].arrival - ttft) <= 1e-9);
	lsim_scenario_destroy(sc);

	/* without num_gpu_blocks each rank's cache comes from vLLM's memory
	 * plan with its 64 of the 128 experts, as a rank of a group of 2 */
	const char *sets2[] = {"workload.count=1", "instances.0.num_gpu_blocks=0"};
	if (lsim_scenario_load(path, sets2, 2, &sc, &d) != 0)
		fail_msg("load: %s: %s: %s", d.file, d.key, d.msg);
	if (lsim_scenario_run(sc, NULL, NULL, &r, &d) != 0)
		fail_msg("run: %s", d.msg);
	snprintf(path, sizeof path, "%s/models.yaml", lsim_data_dir());
	struct lsim_model_arch arch;
	assert_int_equal(lsim_model_load(path, "Qwen3-30B-A3B", &arch, &d), 0);
	struct lsim_memplan_in in = {
		.model = &arch, .total_bytes = g.hbm_bytes, .utilization = 0.9, .tp = 1,
		.pp = 1, .max_num_batched_tokens = 2048, .max_num_seqs = 256,
		.block_size = 16, .experts_per_rank = 64, .dp = 2,
	};
	struct lsim_memplan plan;
	lsim_memplan_compute(&in, &plan);
	assert_true(plan.blocks > 0);
	assert_true(plan.non_torch == 0.25 * 1073741824.0);
	assert_int_equal(r->insts[0].kv_blocks, plan.blocks);
	assert_int_equal(r->insts[1].kv_blocks, plan.blocks);
	lsim_scenario_destroy(sc);

	/* a dense model's ranks are independent engines in vLLM (no DP
	 * group): one GPU's 0.16 GiB of non-torch memory, 46 blocks more than
	 * an MoE rank's 0.25 GiB would leave (0.09 GiB / 2 MiB a block) */
	char llama[1100], cat[1100];
	snprintf(cat, sizeof cat, "%s", path); /* the catalogue, from above */
	snprintf(path, sizeof path, "%s/tests/data/scenarios/dp2_ep_moe.yaml", root);
	snprintf(llama, sizeof llama, "instances.0.perf_table=%s/calibrate/perf/llmservingsim/"
		 "RTXPRO6000/meta-llama/Llama-3.1-8B/bf16", root);
	const char *sets3[] = {"workload.count=1", "instances.0.num_gpu_blocks=0",
			       "instances.0.model=Llama-3.1-8B",
			       "instances.0.enable_expert_parallel=false", llama};
	if (lsim_scenario_load(path, sets3, 5, &sc, &d) != 0)
		fail_msg("load: %s: %s: %s", d.file, d.key, d.msg);
	if (lsim_scenario_run(sc, NULL, NULL, &r, &d) != 0)
		fail_msg("run: %s", d.msg);
	assert_int_equal(lsim_model_load(cat, "Llama-3.1-8B", &arch, &d), 0);
	in.model = &arch;
	in.experts_per_rank = 0;
	in.dp = 1;
	lsim_memplan_compute(&in, &plan);
	assert_true(plan.non_torch == 0.16 * 1073741824.0);
	assert_int_equal(r->insts[0].kv_blocks, plan.blocks);
	in.dp = 2;
	struct lsim_memplan grouped;
	lsim_memplan_compute(&in, &grouped);
	assert_int_equal(plan.blocks - grouped.blocks, 46);
	lsim_scenario_destroy(sc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_ep_hand_sum),
		cmocka_unit_test(test_table_ep_refused),
		cmocka_unit_test(test_lockstep_steps),
		cmocka_unit_test(test_dummy_rank),
		cmocka_unit_test(test_balancer_sequence),
		cmocka_unit_test(test_balancer_publication),
		cmocka_unit_test(test_scenario_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
