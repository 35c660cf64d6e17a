/*
 * test_share.c - GPU sharing (sim/run/scenario_share.c, the shared step
 * times of sim/serving/instance.c, sim/cluster/mig.c): a MIG 3g.40gb
 * slice's prefill against the roofline of an A100 80GB with 3/7 of its
 * FLOP/s and 4/8 of its bandwidth and memory; two MPS instances of 0.5
 * alone and together; time slicing alone and together; the refusals of a
 * model that does not fit its slice, of unknown profiles and GPU kinds
 * without MIG, and of memory admission; the energy and cost of a shared
 * GPU counted once: idle members split one GPU's idle power and price,
 * busy ones its power at their utilisation together.
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

#include "cluster/mig.h"
#include "serving/memplan.h"
#include "run/scenario.h"
#include "run/sim.h"

/* The A100 80GB SXM profile and a model of the catalogue. */
static void load(const char *model, struct lsim_gpu_profile *g, struct lsim_model_arch *m)
{
	char dir[1024];
	struct lsim_diag d = {0};
	snprintf(dir, sizeof dir, "%s/profiles", lsim_data_dir());
	assert_int_equal(lsim_gpu_profile_load(dir, "A100-80GB-SXM", g, &d), 0);
	snprintf(dir, sizeof dir, "%s/models.yaml", lsim_data_dir());
	assert_int_equal(lsim_model_load(dir, model, m, &d), 0);
	/* the datasheet figures the hand values scale */
	assert_float_equal(g->bf16_flops, 312e12, 1);
	assert_float_equal(g->hbm_bw, 2039e9, 1);
}

/* One prefill of 2,000 tokens on g (the roofline, tp 1). */
static lsim_time prefill(const struct lsim_model_arch *m, const struct lsim_gpu_profile *g)
{
	struct lsim_roofline_params rp = {.tp = 1};
	struct lsim_perf *p = NULL;
	struct lsim_diag d = {0};
	assert_int_equal(lsim_perf_roofline_create(m, g, &rp, &p, &d), 0);
	int32_t chunk = 2000, ctx = 0;
	struct lsim_batch b = {.n_prefill = 1, .prefill_chunk = &chunk, .prefill_ctx = &ctx};
	lsim_time t = lsim_perf_iter_time(p, &b);
	lsim_perf_destroy(p);
	return t;
}

/* got within tol of want, in double precision (cmocka's float macro
 * rounds to float). */
static void near(double got, double want, double tol)
{
	if (!(fabs(got - want) <= tol))
		fail_msg("%.17g != %.17g (tolerance %g)", got, want, tol);
}

/* The work of that prefill at g's peak rates (s): FLOPs / peak FLOP/s or
 * bytes / peak bandwidth, the larger, operator by operator. */
static double prefill_work(const struct lsim_model_arch *m, const struct lsim_gpu_profile *g)
{
	struct lsim_roofline_params rp = {.tp = 1};
	struct lsim_perf *p = NULL;
	struct lsim_diag d = {0};
	assert_int_equal(lsim_perf_roofline_create(m, g, &rp, &p, &d), 0);
	int32_t chunk = 2000, ctx = 0;
	struct lsim_batch b = {.n_prefill = 1, .prefill_chunk = &chunk, .prefill_ctx = &ctx};
	struct lsim_iter_work w = lsim_perf_iter_work(p, &b);
	lsim_perf_destroy(p);
	assert_true(w.s > 0);
	return w.s;
}

static const struct lsim_results *run(const char *file, const char *const *sets, size_t n,
				      struct lsim_scenario **sc)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/tests/data/scenarios/%s", getenv("LSIM_SOURCE_ROOT"),
		 file);
	struct lsim_diag d = {0};
	if (lsim_scenario_load(path, sets, n, sc, &d) != 0)
		fail_msg("load: %s: %s: %s", d.file, d.key, d.msg);
	const struct lsim_results *r = NULL;
	if (lsim_scenario_run(*sc, NULL, NULL, &r, &d) != 0)
		fail_msg("run: %s", d.msg);
	return r;
}

static double ttft(const struct lsim_results *r, size_t i)
{
	return r->reqs[i].first_token - r->reqs[i].arrival;
}

/* The 3g.40gb slice: 3/7 x 312 TFLOP/s, 4/8 x 2,039 GB/s, 4/8 x 80 GiB. */
static void test_mig_3g(void **state)
{
	(void)state;
	struct lsim_gpu_profile g;
	struct lsim_model_arch m;
	load("Llama-3.1-8B", &g, &m);
	struct lsim_gpu_profile s = g;
	s.bf16_flops = 312e12 * 3.0 / 7.0;
	s.hbm_bw = 2039e9 * 4.0 / 8.0;
	s.hbm_bytes = 81920.0 * 1048576.0 / 2.0;
	lsim_time want = prefill(&m, &s), whole = prefill(&m, &g);
	assert_true(want > whole * 2); /* compute-bound: about 7/3 as long */
	struct lsim_scenario *sc = NULL;
	const struct lsim_results *r = run("share_mig.yaml", NULL, 0, &sc);
	assert_float_equal(ttft(r, 0), (double)want / 1e9, 1e-9);
	/* the memory plan of 40 GiB */
	struct lsim_engine_cfg eng = {.gpu_memory_utilization = 0.9,
				      .max_num_batched_tokens = 2048, .max_num_seqs = 256,
				      .block_size = 16, .pp = 1};
	struct lsim_memplan_in mi = lsim_memplan_in_for(&eng, &s, &m, 1);
	struct lsim_memplan plan;
	lsim_memplan_compute(&mi, &plan);
	assert_true(plan.blocks > 0);
	assert_int_equal(r->insts[0].kv_blocks, plan.blocks);
	lsim_scenario_destroy(sc);
}

/* MPS, 0.5 each: a alone (half the FLOP/s, all the bandwidth), b while a
 * computes (half the FLOP/s, half the bandwidth). */
static void test_mps_half(void **state)
{
	(void)state;
	struct lsim_gpu_profile g, h;
	struct lsim_model_arch ma, mb;
	load("Llama-3.1-8B", &g, &ma);
	load("Mistral-7B", &h, &mb);
	g.bf16_flops = 312e12 * 0.5;
	h.bf16_flops = 312e12 * 0.5;
	h.hbm_bw = 2039e9 / 2;
	lsim_time a1 = prefill(&ma, &g), b2 = prefill(&mb, &h);
	struct lsim_gpu_profile hb = h;
	hb.hbm_bw = 2039e9;
	assert_true(b2 > prefill(&mb, &hb)); /* the shared bandwidth shows */
	struct lsim_scenario *sc = NULL;
	const struct lsim_results *r = run("share_mps.yaml", NULL, 0, &sc);
	assert_int_equal(r->reqs[0].instance, 0);
	assert_int_equal(r->reqs[1].instance, 1);
	assert_float_equal(ttft(r, 0), (double)a1 / 1e9, 1e-9);
	assert_float_equal(ttft(r, 1), (double)b2 / 1e9, 1e-9);
	lsim_scenario_destroy(sc);
}

/* Two MIG slices of one GPU are isolated: b in 3g.40gb while a computes
 * in 4g.40gb has 3/7 of the FLOP/s and 4/8 of the bandwidth. */
static void test_mig_pair(void **state)
{
	(void)state;
	struct lsim_gpu_profile g;
	struct lsim_model_arch m;
	load("Mistral-7B", &g, &m);
	g.bf16_flops = 312e12 * 3.0 / 7.0;
	g.hbm_bw = 2039e9 * 4.0 / 8.0;
	struct lsim_scenario *sc = NULL;
	const struct lsim_results *r = run("share_mig_pair.yaml", NULL, 0, &sc);
	assert_true(r->reqs[0].first_token > r->reqs[1].arrival); /* a computes */
	assert_float_equal(ttft(r, 1), (double)prefill(&m, &g) / 1e9, 1e-9);
	lsim_scenario_destroy(sc);
}

/* Time slicing with 2 ms slices and a 0.1 ms switch: a alone has the
 * whole GPU; b, with a busy, 2 x 2.1 / 2 of its time alone. */
static void test_time_slice(void **state)
{
	(void)state;
	struct lsim_gpu_profile g;
	struct lsim_model_arch ma, mb;
	load("Llama-3.1-8B", &g, &ma);
	load("Mistral-7B", &g, &mb);
	lsim_time a1 = prefill(&ma, &g), b1 = prefill(&mb, &g);
	struct lsim_scenario *sc = NULL;
	const struct lsim_results *r = run("share_ts.yaml", NULL, 0, &sc);
	assert_float_equal(ttft(r, 0), (double)a1 / 1e9, 1e-9);
	assert_float_equal(ttft(r, 1), (double)llround((double)b1 * 2 * 2.1 / 2) / 1e9, 1e-9);
	lsim_scenario_destroy(sc);
}

/* share_idle.yaml under sets: a and b idle for the run's T, with weights
 * wa and wb of their GPU, on gpus GPUs. Together they draw 60 W of idle
 * power a GPU (PUE 1) and pay $1.59 an hour a GPU for T, no more; each
 * its part. */
static void idle_once(const char *const *sets, size_t n, double wa, double wb, int gpus)
{
	struct lsim_scenario *sc = NULL;
	const struct lsim_results *r = run("share_idle.yaml", sets, n, &sc);
	assert_int_equal(r->n_insts, 3);
	const struct lsim_inst_record *a = &r->insts[0], *b = &r->insts[1];
	assert_int_equal(a->iterations + b->iterations, 0);
	assert_int_equal(r->insts[2].iterations, 2);
	double t = a->stop - a->start;
	assert_true(t > 100);
	near(b->stop - b->start, t, 1e-12);
	near(a->energy_j + b->energy_j, gpus * 60 * t, 1e-6);
	near(a->energy_j, wa * 60 * t, 1e-6);
	near(b->energy_j, wb * 60 * t, 1e-6);
	near(a->cost_usd + b->cost_usd, gpus * 1.59 * t / 3600, 1e-12);
	near(a->cost_usd, wa * 1.59 * t / 3600, 1e-12);
	/* the dedicated c draws and pays a whole GPU, as before */
	near(r->insts[2].cost_usd, 1.59 * t / 3600, 1e-12);
	assert_true(r->insts[2].energy_j > 60 * t);
	lsim_scenario_destroy(sc);
}

static void test_idle_once(void **state)
{
	(void)state;
	idle_once(NULL, 0, 3.0 / 7, 4.0 / 7, 1); /* MIG: compute slices */
	const char *mps[] = {"instances.0.mig=", "instances.1.mig=",
			     "instances.0.share=mps", "instances.1.share=mps",
			     "instances.0.gpu_fraction=0.25", "instances.1.gpu_fraction=0.5",
			     "instances.0.gpu_memory_utilization=0.45",
			     "instances.1.gpu_memory_utilization=0.45"};
	idle_once(mps, 8, 1.0 / 3, 2.0 / 3, 1); /* 0.25 and 0.5 of 0.75 */
	const char *ts[] = {"instances.0.mig=", "instances.1.mig=",
			    "instances.0.share=time_slice", "instances.1.share=time_slice",
			    "instances.0.time_slice=2ms", "instances.1.time_slice=2ms",
			    "instances.0.switch_cost=0s", "instances.1.switch_cost=0s",
			    "instances.0.gpu_memory_utilization=0.45",
			    "instances.1.gpu_memory_utilization=0.45"};
	idle_once(ts, 10, 0.5, 0.5, 1);
	/* a slice alone on its GPU pays the whole GPU (its other slices idle) */
	const char *alone[] = {"instances.0.gpu_group=", "instances.1.gpu_group="};
	idle_once(alone, 2, 1, 1, 2);
}

/* share_mps.yaml's two prefills, one interval of the energy (no sample
 * before the end): the GPU draws P(U) = 60 + 340 U^0.7 W for T with U the
 * work of both prefills at the whole A100's peak rates over T; a gets its
 * 1/2 of the idle 60 W and W_a / (W_a + W_b) of the rest. */
static void test_mps_energy(void **state)
{
	(void)state;
	struct lsim_gpu_profile g;
	struct lsim_model_arch ma, mb;
	load("Llama-3.1-8B", &g, &ma);
	load("Mistral-7B", &g, &mb);
	double wa = prefill_work(&ma, &g), wb = prefill_work(&mb, &g);
	struct lsim_scenario *sc = NULL;
	const struct lsim_results *r = run("share_mps.yaml", NULL, 0, &sc);
	const struct lsim_inst_record *a = &r->insts[0], *b = &r->insts[1];
	near(a->work_s, wa, 1e-9);
	near(b->work_s, wb, 1e-9);
	double t = a->stop - a->start;
	assert_true(t < 1); /* before the first sample */
	double u = (wa + wb) / t, dyn = 340 * pow(u, 0.7);
	near(a->energy_j + b->energy_j, (60 + dyn) * t, 1e-6);
	near(a->energy_j, (30 + dyn * wa / (wa + wb)) * t, 1e-6);
	near(a->cost_usd + b->cost_usd, 1.59 * t / 3600, 1e-12);
	lsim_scenario_destroy(sc);
}

/* The shipped table (calibrate/mig.yaml): an A100 80GB's six profiles,
 * none for an L4; bad entries refused naming file, line and key. */
static void test_mig_table(void **state)
{
	(void)state;
	char path[1024];
	struct lsim_mig_table t;
	struct lsim_diag d = {0};
	snprintf(path, sizeof path, "%s/mig.yaml", lsim_data_dir());
	assert_int_equal(lsim_mig_load(path, "A100-80GB-SXM", &t, &d), 0);
	assert_int_equal(t.n, 6);
	const struct lsim_mig_profile *p = lsim_mig_find(&t, "3g.40gb");
	assert_non_null(p);
	assert_int_equal(p->compute, 3);
	assert_int_equal(p->memory, 4);
	p = lsim_mig_find(&t, "7g.80gb");
	assert_int_equal(p->compute, 7);
	assert_int_equal(p->memory, 8);
	assert_null(lsim_mig_find(&t, "1g.5gb")); /* the 40GB part's */
	assert_int_equal(lsim_mig_load(path, "H200-SXM", &t, &d), 0);
	assert_string_equal(t.p[5].name, "7g.141gb");
	assert_int_equal(lsim_mig_load(path, "L4", &t, &d), 0);
	assert_int_equal(t.n, 0);
	char list[400];
	lsim_mig_list(&t, list, sizeof list);
	assert_non_null(strstr(list, "A100-40GB-SXM, A100-80GB-SXM"));
	static const struct {
		const char *file, *key, *fragment;
		int line;
	} bad[] = {
		{"bad_memory.yaml", "gpus[0].profiles[1].memory", "", 8},
		{"twice.yaml", "gpus[1].profiles[1].name", "listed twice", 12},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(path, sizeof path, "%s/tests/data/mig/%s", getenv("LSIM_SOURCE_ROOT"),
			 bad[i].file);
		memset(&d, 0, sizeof d);
		assert_int_not_equal(lsim_mig_load(path, "A100-80GB-SXM", &t, &d), 0);
		assert_string_equal(d.key, bad[i].key);
		assert_int_equal(d.line, bad[i].line);
		assert_non_null(strstr(d.file, bad[i].file));
		assert_non_null(strstr(d.msg, bad[i].fragment));
		assert_int_equal(t.n, 0);
	}
}

/* share_mps.yaml's groups on a cluster of one node of two A100s, with a
 * dedicated c: a and b on one GPU (three groups on two GPUs), their first
 * tokens those of share_mps.yaml, which test_mps_half computes by hand. */
static void test_cluster(void **state)
{
	(void)state;
	struct lsim_scenario *sc = NULL, *alone = NULL;
	const struct lsim_results *r = run("share_cluster.yaml", NULL, 0, &sc);
	const struct lsim_results *w = run("share_mps.yaml", NULL, 0, &alone);
	assert_int_equal(r->n_insts, 3);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(r->insts[i].node, 0);
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(r->reqs[i].instance, (int32_t)i);
		near(ttft(r, i), ttft(w, i), 1e-12);
	}
	near(r->insts[0].energy_j + r->insts[1].energy_j,
	     w->insts[0].energy_j + w->insts[1].energy_j, 1e-9);
	lsim_scenario_destroy(alone);
	lsim_scenario_destroy(sc);
}

/* Time slicing with measured tables (perf: table, RTX PRO 6000): b alone
 * takes its table time t_b; b while a computes, t_b x 2 x 2.1 / 2. */
static void test_time_slice_table(void **state)
{
	(void)state;
	struct lsim_scenario *sc = NULL, *alone = NULL;
	const char *only_b[] = {"workload.path=../traces/share_b.csv"};
	const struct lsim_results *w = run("share_ts_table.yaml", only_b, 1, &alone);
	assert_int_equal(w->n_reqs, 1);
	assert_int_equal(w->reqs[0].instance, 1);
	double b1 = ttft(w, 0) * 1e9;
	assert_true(b1 > 1e8); /* Qwen3-32B's 2,000-token prefill: 0.1 s and more */
	const struct lsim_results *r = run("share_ts_table.yaml", NULL, 0, &sc);
	assert_true(r->reqs[0].first_token > r->reqs[1].arrival); /* a computes */
	near(ttft(r, 1), (double)llround(b1 * 2 * (0.002 + 0.0001) / 0.002) / 1e9, 1e-9);
	lsim_scenario_destroy(alone);
	lsim_scenario_destroy(sc);
}

/* A refusal of file with sets: LSIM_EINVAL naming key, with fragment. */
static void refused(const char *file, const char *const *sets, size_t n, const char *key,
		    const char *fragment)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/tests/data/scenarios/%s", getenv("LSIM_SOURCE_ROOT"),
		 file);
	struct lsim_scenario *sc = NULL;
	struct lsim_diag d = {0};
	int rc = lsim_scenario_load(path, sets, n, &sc, &d);
	if (rc == 0)
		lsim_scenario_destroy(sc);
	assert_int_equal(rc, LSIM_EINVAL);
	assert_string_equal(d.key, key);
	if (!strstr(d.msg, fragment))
		fail_msg("'%s' not in '%s'", fragment, d.msg);
}

static void test_refusals(void **state)
{
	(void)state;
	/* 16 GB of Llama-3.1-8B weights in a 10 GiB slice */
	const char *small[] = {"instances.0.mig=1g.10gb"};
	refused("share_mig.yaml", small, 1, "instances[0].mig", "does not fit");
	const char *unknown[] = {"instances.0.mig=5g.50gb"};
	refused("share_mig.yaml", unknown, 1, "instances[0].mig",
		"valid: 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb");
	const char *nomig[] = {"instances.0.gpu=L4", "instances.0.mig=1g.5gb"};
	refused("share_mig.yaml", nomig, 2, "instances[0].mig", "L4 has no MIG profiles");
	const char *memory[] = {"instances.1.gpu_memory_utilization=0.6"};
	refused("share_mps.yaml", memory, 1, "instances[1].gpu_memory_utilization",
		"memory admission");
	const char *fraction[] = {"instances.1.gpu_fraction=0.6"};
	refused("share_mps.yaml", fraction, 1, "instances[1].gpu_fraction", "sum to 1.1");
	const char *slices[] = {"instances.1.mig=4g.40gb"};
	refused("share_mig_pair.yaml", slices, 1, "instances[1].mig", "8 of 7 compute");
	const char *mixed[] = {"instances.1.share=mps"};
	refused("share_mig_pair.yaml", mixed, 1, "instances[1].share", "use one of mig and share");
	const char *frac[] = {"instances.0.gpu_fraction=0.5"};
	refused("share_ts.yaml", frac, 1, "instances[0].gpu_fraction", "only with share: mps");
	/* the shared GPU is nobody else's: no GPU left for c's second replica */
	const char *more[] = {"instances.2.replicas=2"};
	refused("share_cluster.yaml", more, 1, "instances[2].replicas",
		"not enough A100-80GB-SXM GPUs in the cluster for replica 2");
	const char *fail[] = {"failures.mtbf=1h"};
	refused("share_cluster.yaml", fail, 1, "instances[0].share", "failures");
	const char *service[] = {"instances.0.perf=service"};
	refused("share_mps.yaml", service, 1, "instances[0].share", "but for a table");
	const char *slice0[] = {"instances.1.time_slice=0s"};
	refused("share_ts.yaml", slice0, 1, "instances[1].time_slice", "above 0");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mig_3g),
		cmocka_unit_test(test_mig_pair),
		cmocka_unit_test(test_mps_half),
		cmocka_unit_test(test_time_slice),
		cmocka_unit_test(test_mig_table),
		cmocka_unit_test(test_idle_once),
		cmocka_unit_test(test_mps_energy),
		cmocka_unit_test(test_time_slice_table),
		cmocka_unit_test(test_cluster),
		cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
