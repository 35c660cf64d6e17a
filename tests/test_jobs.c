/*
 * test_jobs.c - unit tests of training jobs (sim/jobs/jobs.c, policies/jobs,
 * traces/job_readers.c) against hand-computed times: fcfs vs sjf, EASY
 * backfill, LAS order and preemption, static vs dynamic allocation of a
 * phased job, checkpoint/restart after an injected failure, time packing
 * vs first fit, quotas, GPU shares, elastic jobs, lending GPUs to
 * inference, conservation over generated workloads with random failures,
 * the plan kept between passes against the plan rebuilt at each (a
 * hand-made case and random runs),
 * the iteration model, the readers (Alibaba v2023, generic CSV, Helios VC
 * quotas, cluster summaries), bad rows and the generators.
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

#include "jobs/jobs.h"
#include "llmsim/job_policy.h"

/* ---- a small world: one engine, a pool, a job list ---- */

struct world {
	struct lsim_engine *eng;
	struct lsim_pool_spec pool;
	struct lsim_job_list list;
	struct lsim_jobs_cfg cfg;
	struct lsim_jobs *js;
};

static void world_init(struct world *w, int32_t nodes, int32_t gpus)
{
	w->eng = lsim_engine_create();
	assert_non_null(w->eng);
	lsim_pool_spec_init(&w->pool);
	assert_int_equal(lsim_pool_spec_add(&w->pool, nodes, gpus, "H100"), 0);
	lsim_job_list_init(&w->list);
	lsim_jobs_cfg_defaults(&w->cfg);
	w->js = NULL;
}

static void world_free(struct world *w)
{
	lsim_jobs_destroy(w->js);
	lsim_job_list_release(&w->list);
	lsim_pool_spec_release(&w->pool);
	lsim_engine_destroy(w->eng);
}

/* A job of fixed iteration time iter_s with the given phases. */
static void add(struct world *w, double arrival_s, double iter_s,
		const struct lsim_job_phase *ph, int32_t n)
{
	struct lsim_job_spec s = {0};
	s.id = w->list.n;
	s.arrival = lsim_time_from_s(arrival_s);
	s.iter_time = lsim_time_from_s(iter_s);
	s.phases = ph;
	s.n_phases = n;
	assert_int_equal(lsim_job_list_add(&w->list, &s), 0);
}

/* A one-phase job of `secs` 1-second iterations on g GPUs. */
static void add1(struct world *w, double arrival_s, int32_t g, int64_t secs)
{
	struct lsim_job_phase ph = {secs, g};
	add(w, arrival_s, 1.0, &ph, 1);
}

static void world_start(struct world *w)
{
	struct lsim_diag d = {0};
	int rc = lsim_jobs_create(w->eng, &w->pool, &w->cfg, &w->js, &d);
	if (rc)
		fail_msg("create: %s", d.msg);
	rc = lsim_jobs_submit_list(w->js, &w->list, &d);
	if (rc)
		fail_msg("submit: %s", d.msg);
}

static void world_run(struct world *w)
{
	if (!w->js)
		world_start(w);
	lsim_run(w->eng, LSIM_TIME_MAX);
}

static const struct lsim_job_record *rec(struct world *w, size_t i)
{
	size_t n;
	const struct lsim_job_record *r = lsim_jobs_records(w->js, &n);
	assert_non_null(r);
	assert_true(i < n);
	return &r[i];
}

#define S(x) ((lsim_time)((x) * 1e9 + 0.5))

static void expect_run(struct world *w, size_t i, double start_s,
		       double finish_s)
{
	const struct lsim_job_record *r = rec(w, i);
	assert_int_equal(r->status, LSIM_JOB_FINISHED);
	assert_int_equal(r->first_start, S(start_s));
	assert_int_equal(r->finish, S(finish_s));
}

/* ---- schedulers ---- */

/* Two 8-GPU jobs arriving together: a long one first, then a short one. */
static void run_two(const char *sched, double *jct0, double *jct1)
{
	struct world w;
	world_init(&w, 1, 8);
	w.cfg.scheduler = sched;
	add1(&w, 0, 8, 100);
	add1(&w, 0, 8, 10);
	world_run(&w);
	const struct lsim_job_record *a = rec(&w, 0), *b = rec(&w, 1);
	*jct0 = lsim_time_to_s(a->finish - a->arrival);
	*jct1 = lsim_time_to_s(b->finish - b->arrival);
	struct lsim_jobs_summary s;
	assert_int_equal(lsim_jobs_summary(w.js, &s), 0);
	assert_true(fabs(s.jct_mean_s - (*jct0 + *jct1) / 2) < 1e-9);
	assert_true(fabs(s.makespan_s - 110) < 1e-9);
	world_free(&w);
}

static void test_fcfs_vs_sjf(void **state)
{
	(void)state;
	double a, b;
	run_two("fcfs", &a, &b);
	assert_true(a == 100 && b == 110); /* long first, short behind it */
	run_two("sjf", &a, &b);
	assert_true(a == 110 && b == 10); /* short first */
}

/* J0 runs 6 GPUs for 100 s; J1 (8 GPUs) waits for it. J2 (2 GPUs, 90 s,
 * at 20) would run past 100 into J1's reservation; J3 (2 GPUs, 50 s, at
 * 30) ends at 80 and is backfilled. */
static void easy_world(struct world *w, const char *sched)
{
	world_init(w, 1, 8);
	w->cfg.scheduler = sched;
	add1(w, 0, 6, 100);
	add1(w, 10, 8, 50);
	add1(w, 20, 2, 90);
	add1(w, 30, 2, 50);
	world_run(w);
}

static void test_easy_backfill(void **state)
{
	(void)state;
	struct world w;
	easy_world(&w, "easy_backfill");
	expect_run(&w, 0, 0, 100);
	expect_run(&w, 1, 100, 150); /* the reserved head is not delayed */
	expect_run(&w, 2, 150, 240); /* would have delayed it */
	expect_run(&w, 3, 30, 80);   /* backfilled */
	world_free(&w);
	easy_world(&w, "fcfs");
	expect_run(&w, 1, 100, 150);
	expect_run(&w, 2, 150, 240);
	expect_run(&w, 3, 150, 200);
	world_free(&w);
}

/*
 * LAS on 4 GPUs, levels at 160 GPU-s, quantum 10 s, restart 5 s: A (100 s)
 * reaches level 1 at 40 s and is preempted for B (30 s, at 10); C (20 s,
 * at 50, level 0) then goes before A.
 */
static void test_las_order(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, 4);
	w.cfg.scheduler = "las";
	w.cfg.las_threshold = 160;
	w.cfg.las_levels = 2;
	w.cfg.las_quantum = 10 * LSIM_S;
	w.cfg.restart_overhead = 5 * LSIM_S;
	add1(&w, 0, 4, 100);
	add1(&w, 10, 4, 30);
	add1(&w, 50, 4, 20);
	world_run(&w);
	expect_run(&w, 0, 0, 155); /* 40 s, preempted, 5 s restart at 90, 60 s */
	expect_run(&w, 1, 40, 70);
	expect_run(&w, 2, 70, 90);
	const struct lsim_job_record *a = rec(&w, 0);
	assert_int_equal(a->preemptions, 1);
	assert_int_equal(a->restarts, 1);
	assert_int_equal(a->lost_iterations, 0);
	assert_true(fabs(a->lost_gpu_s) < 1e-12); /* stopped on an iteration */
	assert_int_equal(a->queued, S(50));	   /* 40 -> 90 */
	assert_true(fabs(a->alloc_gpu_s - 4 * 105.0) < 1e-9);
	world_free(&w);

	/* the same under fcfs: arrival order, no preemption */
	world_init(&w, 1, 4);
	w.cfg.scheduler = "fcfs";
	add1(&w, 0, 4, 100);
	add1(&w, 10, 4, 30);
	add1(&w, 50, 4, 20);
	world_run(&w);
	expect_run(&w, 0, 0, 100);
	expect_run(&w, 1, 100, 130);
	expect_run(&w, 2, 130, 150);
	world_free(&w);
}

/* ---- allocators ---- */

/* Checkpoint 10 GB at 5 GB/s: 2 s to write, 2 s to read. */
static void ckpt_cfg(struct world *w, double restart_s)
{
	w->cfg.storage_bw = 5e9;
	w->cfg.restart_overhead = lsim_time_from_s(restart_s);
}

static void add_ckpt(struct world *w, double arrival_s,
		     const struct lsim_job_phase *ph, int32_t n, int64_t every)
{
	struct lsim_job_spec s = {0};
	s.id = w->list.n;
	s.arrival = lsim_time_from_s(arrival_s);
	s.iter_time = LSIM_S;
	s.phases = ph;
	s.n_phases = n;
	s.ckpt_every = every;
	s.ckpt_bytes = 10e9;
	assert_int_equal(lsim_job_list_add(&w->list, &s), 0);
}

/* 100 iterations on 8 GPUs, then 100 on 2; 1 s each. */
static void test_static_vs_dynamic(void **state)
{
	(void)state;
	static const struct lsim_job_phase ph[] = {{100, 8}, {100, 2}};
	struct world w;
	world_init(&w, 1, 8);
	ckpt_cfg(&w, 3);
	add_ckpt(&w, 0, ph, 2, 0);
	world_start(&w);
	assert_int_equal(lsim_jobs_predicted(w.js, 0), S(200));
	world_run(&w);
	const struct lsim_job_record *r = rec(&w, 0);
	expect_run(&w, 0, 0, 200);
	assert_true(r->alloc_gpu_s == 1600);  /* 8 GPUs x 200 s */
	assert_true(r->useful_gpu_s == 1000); /* 8 x 100 + 2 x 100 */
	assert_int_equal(r->resizes, 0);
	world_free(&w);

	world_init(&w, 1, 8);
	w.cfg.allocator = "dynamic";
	ckpt_cfg(&w, 3);
	add_ckpt(&w, 0, ph, 2, 0);
	world_start(&w);
	/* the prediction includes the resize */
	assert_int_equal(lsim_jobs_predicted(w.js, 0), S(207));
	world_run(&w);
	r = rec(&w, 0);
	/* 100 s on 8, checkpoint 2 s on 8, restart 3 + 2 s on 2, 100 s on 2 */
	expect_run(&w, 0, 0, 207);
	assert_int_equal(r->resizes, 1);
	assert_int_equal(r->restarts, 1);
	assert_true(fabs(r->overhead_gpu_s - (8 * 2 + 2 * 5)) < 1e-9);
	assert_true(fabs(r->alloc_gpu_s - (8 * 102 + 2 * 105)) < 1e-9);
	assert_true(r->useful_gpu_s == 1000);
	assert_true(r->alloc_gpu_s < 1600); /* fewer GPU-hours than static */
	world_free(&w);
}

/* ---- checkpoint and restart ---- */

static void fail_job0(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)eng;
	(void)arg;
	struct world *w = subject;
	assert_int_equal(lsim_jobs_fail(w->js, 0), 0);
}

/*
 * 50 iterations of 1 s on 4 GPUs, a checkpoint every 10 (2 s), a failure
 * at 27.5 s: checkpoints ended at 12 and 24 (iteration 20), so iterations
 * 20..23 and half of the 24th (3.5 s x 4 GPUs) are lost; restart 3 s +
 * read 2 s from 27.5, then 30 iterations and 2 more checkpoints.
 */
static void test_failure_restart(void **state)
{
	(void)state;
	static const struct lsim_job_phase ph[] = {{50, 4}};
	struct world w;
	world_init(&w, 1, 4);
	ckpt_cfg(&w, 3);
	add_ckpt(&w, 0, ph, 1, 10);
	world_start(&w);
	/* without the failure: 50 s and 4 checkpoints (none at the end) */
	assert_int_equal(lsim_jobs_predicted(w.js, 0), S(58));
	assert_true(lsim_schedule(w.eng, S(27.5), fail_job0, &w, 0) != 0);
	world_run(&w);
	const struct lsim_job_record *r = rec(&w, 0);
	expect_run(&w, 0, 0, 66.5);
	assert_int_equal(r->failures, 1);
	assert_int_equal(r->restarts, 1);
	assert_int_equal(r->lost_iterations, 3);
	assert_true(fabs(r->lost_gpu_s - 14) < 1e-9);
	assert_true(fabs(r->useful_gpu_s - 200) < 1e-9);
	/* 4 checkpoints of 2 s and a 5 s restart on 4 GPUs */
	assert_true(fabs(r->overhead_gpu_s - 4 * 13) < 1e-9);
	assert_true(fabs(r->alloc_gpu_s - 4 * 66.5) < 1e-9);
	assert_int_equal(r->iterations, 50);
	assert_int_equal(lsim_jobs_fail(w.js, 0), LSIM_ESTATE); /* done */
	world_free(&w);
}

/* ---- time packing ---- */

/* A: 100 s on 8 GPUs then 100 s on 2; B: 100 s on 6. */
static double run_pack(const char *alloc, lsim_time *b_start)
{
	static const struct lsim_job_phase a[] = {{100, 8}, {100, 2}};
	static const struct lsim_job_phase b[] = {{100, 6}};
	struct world w;
	world_init(&w, 1, 8);
	w.cfg.allocator = alloc;
	ckpt_cfg(&w, 0);
	add_ckpt(&w, 0, a, 2, 0);
	add_ckpt(&w, 0, b, 1, 0);
	world_run(&w);
	struct lsim_jobs_summary s;
	assert_int_equal(lsim_jobs_summary(w.js, &s), 0);
	assert_int_equal(s.n_finished, 2);
	*b_start = rec(&w, 1)->first_start;
	world_free(&w);
	return s.makespan_s;
}

static void test_time_packing_vs_first_fit(void **state)
{
	(void)state;
	lsim_time b;
	/* first fit of the peak: B waits for all of A */
	assert_true(run_pack("static", &b) == 300);
	assert_int_equal(b, S(200));
	/* packing over time: B starts when A drops to 2 GPUs (after its
	 * 2 s resize checkpoint); A restarts (2 s read) and ends at 204 */
	assert_true(run_pack("time_packing", &b) == 204);
	assert_int_equal(b, S(102));
}

/*
 * C grows from 2 to 8 GPUs after 100 s; D wants 6 GPUs for 300 s. Greedy
 * dynamic allocation starts D beside C, and C's growth then waits for D;
 * time packing sees the growth coming and holds D back.
 */
static void test_time_packing_growth(void **state)
{
	(void)state;
	static const struct lsim_job_phase c[] = {{100, 2}, {50, 8}};
	static const struct lsim_job_phase d[] = {{300, 6}};
	const char *allocs[] = {"time_packing", "dynamic"};
	for (int k = 0; k < 2; k++) {
		struct world w;
		world_init(&w, 1, 8);
		w.cfg.allocator = allocs[k];
		ckpt_cfg(&w, 0);
		add_ckpt(&w, 0, c, 2, 0);
		add_ckpt(&w, 0, d, 1, 0);
		world_run(&w);
		if (k == 0) {
			expect_run(&w, 0, 0, 154); /* 100 + 2 + 2 + 50 */
			expect_run(&w, 1, 154, 454);
		} else {
			expect_run(&w, 0, 0, 352); /* restart after D: 300 + 2 + 50 */
			expect_run(&w, 1, 0, 300);
			assert_int_equal(rec(&w, 0)->queued, S(198));
		}
		world_free(&w);
	}
}

/* ---- pool features ---- */

static void test_quota(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, 8);
	w.cfg.scheduler = "sjf";
	int32_t a = lsim_job_list_tenant(&w.list, "a");
	int32_t b = lsim_job_list_tenant(&w.list, "b");
	w.list.quota[a] = 4;
	static const struct lsim_job_phase ph[] = {{10, 4}};
	int32_t tenants[] = {a, a, b};
	for (int i = 0; i < 3; i++) {
		struct lsim_job_spec s = {0};
		s.id = (uint64_t)i;
		s.tenant = tenants[i];
		s.iter_time = LSIM_S;
		s.phases = ph;
		s.n_phases = 1;
		assert_int_equal(lsim_job_list_add(&w.list, &s), 0);
	}
	/* a job larger than its tenant's quota is rejected */
	static const struct lsim_job_phase big[] = {{10, 8}};
	struct lsim_job_spec s = {0};
	s.id = 3;
	s.tenant = a;
	s.iter_time = LSIM_S;
	s.phases = big;
	s.n_phases = 1;
	assert_int_equal(lsim_job_list_add(&w.list, &s), 0);
	world_run(&w);
	expect_run(&w, 0, 0, 10);
	expect_run(&w, 1, 10, 20); /* 4 GPUs were free at 0, but not for a */
	expect_run(&w, 2, 0, 10);
	assert_int_equal(rec(&w, 3)->status, LSIM_JOB_REJECTED);
	assert_int_equal(lsim_jobs_ended(w.js), 4);
	world_free(&w);
}

static void test_gpu_share(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, 1);
	static const struct lsim_job_phase ph[] = {{10, 1}};
	for (int i = 0; i < 3; i++) {
		struct lsim_job_spec s = {0};
		s.id = (uint64_t)i;
		s.iter_time = LSIM_S;
		s.gpu_milli = i < 2 ? 500 : 0;
		s.phases = ph;
		s.n_phases = 1;
		assert_int_equal(lsim_job_list_add(&w.list, &s), 0);
	}
	world_run(&w);
	expect_run(&w, 0, 0, 10); /* two halves of one GPU */
	expect_run(&w, 1, 0, 10);
	expect_run(&w, 2, 10, 20); /* the whole GPU after both */
	assert_true(rec(&w, 0)->alloc_gpu_s == 5);
	assert_int_equal(lsim_jobs_free_gpus(w.js), 1);
	world_free(&w);
}

/* An elastic job (2..8 GPUs) gets the 4 left and runs at half speed. */
static void test_elastic(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, 8);
	add1(&w, 0, 4, 300);
	static const struct lsim_job_phase ph[] = {{100, 8}};
	struct lsim_job_spec s = {0};
	s.id = 1;
	s.iter_time = LSIM_S;
	s.gpus_min = 2;
	s.phases = ph;
	s.n_phases = 1;
	assert_int_equal(lsim_job_list_add(&w.list, &s), 0);
	world_run(&w);
	expect_run(&w, 1, 0, 200); /* 1 s x 8 / 4 per iteration */
	assert_true(rec(&w, 1)->useful_gpu_s == 800);
	world_free(&w);
}

struct lend_log {
	int calls;
	lsim_time at;
	int32_t n;
	struct world *w;
};

static void lent(void *ctx, int32_t node, int32_t n)
{
	struct lend_log *l = ctx;
	l->calls++;
	l->at = lsim_now(l->w->eng);
	l->n = n;
	assert_int_equal(node, 0);
}

static void ev_reclaim(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)eng;
	struct lend_log *l = subject;
	if (arg == 0)
		assert_int_equal(lsim_jobs_reclaim(l->w->js, 0, 4, lent, l), 0);
	else
		assert_int_equal(lsim_jobs_give_back(l->w->js, 0, 4), 0);
}

/* Inference takes 4 of 8 GPUs at 10 s: the 8-GPU job checkpoints (2 s),
 * the GPUs are lent at 12; it waits until they come back at 50. */
static void test_reclaim_for_inference(void **state)
{
	(void)state;
	static const struct lsim_job_phase ph[] = {{100, 8}};
	struct world w;
	world_init(&w, 1, 8);
	ckpt_cfg(&w, 3);
	add_ckpt(&w, 0, ph, 1, 0);
	world_start(&w);
	struct lend_log l = {0, 0, 0, &w};
	assert_true(lsim_schedule(w.eng, S(10), ev_reclaim, &l, 0) != 0);
	assert_true(lsim_schedule(w.eng, S(50), ev_reclaim, &l, 1) != 0);
	world_run(&w);
	assert_int_equal(l.calls, 1);
	assert_int_equal(l.at, S(12));
	assert_int_equal(l.n, 4);
	const struct lsim_job_record *r = rec(&w, 0);
	expect_run(&w, 0, 0, 145); /* restart 3 + 2 s at 50, 90 s left */
	assert_int_equal(r->preemptions, 1);
	assert_int_equal(r->restarts, 1);
	assert_int_equal(lsim_jobs_lent_gpus(w.js), 0);
	struct lsim_jobs_summary s;
	assert_int_equal(lsim_jobs_summary(w.js, &s), 0);
	assert_true(fabs(s.capacity_gpu_s - (8 * 145.0 - 4 * 38.0)) < 1e-9);
	/* free GPUs go at once */
	assert_int_equal(lsim_jobs_reclaim(w.js, 0, 8, lent, &l), 0);
	assert_int_equal(l.calls, 2);
	assert_int_equal(lsim_jobs_reclaim(w.js, 0, 1, lent, &l), LSIM_ERANGE);
	world_free(&w);
}

static void submit_at_5(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)eng;
	(void)arg;
	struct world *w = subject;
	static const struct lsim_job_phase ph[] = {{10, 2}};
	static struct lsim_job_spec s = {0};
	s.id = 77;
	s.iter_time = LSIM_S;
	s.phases = ph;
	s.n_phases = 1;
	struct lsim_diag d;
	assert_int_equal(lsim_jobs_submit(w->js, &s, &d), 1);
}

/* A job submitted while the run goes (the lead's API), and records of
 * jobs still running when asked. */
static void test_submit_and_unfinished(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, 8);
	add1(&w, 0, 4, 100);
	world_start(&w);
	assert_true(lsim_schedule(w.eng, S(5), submit_at_5, &w, 0) != 0);
	lsim_run(w.eng, S(10));
	const struct lsim_job_record *r = rec(&w, 0);
	assert_int_equal(r->status, LSIM_JOB_UNFINISHED);
	assert_true(r->alloc_gpu_s == 40); /* 4 GPUs x 10 s so far */
	assert_int_equal(r->iterations, 10);
	r = rec(&w, 1);
	assert_int_equal(r->id, 77);
	assert_int_equal(r->first_start, S(5));
	struct lsim_jobs_summary s;
	assert_int_equal(lsim_jobs_summary(w.js, &s), 0);
	assert_int_equal(s.n_unfinished, 2);
	assert_int_equal(lsim_jobs_submitted(w.js), 2);
	lsim_run(w.eng, LSIM_TIME_MAX);
	expect_run(&w, 1, 5, 15);
	expect_run(&w, 0, 0, 100);
	world_free(&w);
}

/* ---- conservation over generated workloads ---- */

static const char *src_path(char *buf, size_t n, const char *rel)
{
	const char *root = getenv("LSIM_SOURCE_ROOT");
	snprintf(buf, n, "%s/%s", root ? root : ".", rel);
	return buf;
}

/* 300 jobs with Philly runtimes at the given load on 64 GPUs, and 20
 * phased ones (high early, lower later, epoch spikes), into base. */
static void mixed_jobs(double load, struct lsim_job_list *base)
{
	char path[1024];
	src_path(path, sizeof path, "tests/data/jobs/philly_runtime_counts.csv");
	lsim_job_list_init(base);
	struct lsim_job_gen_params p;
	lsim_job_gen_defaults(&p);
	p.count = 300;
	p.capacity_gpus = 64;
	p.load = load;
	p.max_gpus = 16;
	p.ckpt_interval = 1800 * LSIM_S;
	p.ckpt_bytes = 2e10;
	struct lsim_diag d = {0};
	if (lsim_jobs_gen_empirical(path, &p, base, &d))
		fail_msg("gen: %s", d.msg);
	struct lsim_job_phase ph[16]; /* the list copies them */
	int nph = lsim_job_phases_epochs(5, 2000, 2, 16, 4, 8, 100, ph, 16);
	assert_int_equal(nph, 9);
	for (int i = 0; i < 20; i++) {
		struct lsim_job_spec s = {0};
		s.id = 1000 + (uint64_t)i;
		s.arrival = (lsim_time)i * 20000 * LSIM_S;
		s.iter_time = LSIM_S;
		s.ckpt_every = 1000;
		s.ckpt_bytes = 2e10;
		s.phases = ph;
		s.n_phases = nph;
		assert_int_equal(lsim_job_list_add(base, &s), 0);
	}
}

static void test_conservation(void **state)
{
	(void)state;
	static const char *scheds[] = {"fcfs", "sjf", "easy_backfill", "las"};
	static const char *allocs[] = {"static", "dynamic", "time_packing"};
	struct lsim_job_list base;
	struct lsim_diag d = {0};
	mixed_jobs(0.9, &base);
	lsim_job_list_sort(&base);
	for (size_t si = 0; si < 4; si++) {
		for (size_t ai = 0; ai < 3; ai++) {
			struct world w;
			world_init(&w, 8, 8);
			w.cfg.scheduler = scheds[si];
			w.cfg.allocator = allocs[ai];
			w.cfg.storage_bw = 1e9; /* 20 s checkpoints */
			w.cfg.restart_overhead = 30 * LSIM_S;
			w.cfg.gpu_mtbf = 200000 * LSIM_S;
			w.cfg.seed = 7;
			w.cfg.las_quantum = 600 * LSIM_S;
			assert_int_equal(lsim_jobs_create(w.eng, &w.pool, &w.cfg,
							  &w.js, &d),
					 0);
			assert_int_equal(lsim_jobs_submit_list(w.js, &base, &d), 0);
			lsim_run(w.eng, LSIM_TIME_MAX);
			size_t n;
			const struct lsim_job_record *r = lsim_jobs_records(w.js, &n);
			assert_int_equal(n, base.n);
			assert_int_equal(lsim_jobs_ended(w.js), base.n);
			struct lsim_jobs_summary s;
			assert_int_equal(lsim_jobs_summary(w.js, &s), 0);
			assert_int_equal(s.n_finished, base.n);
			assert_int_equal(s.n_unfinished, 0);
			assert_true(s.failures > 0);
			assert_true(s.lost_gpu_s > 0);
			if (ai > 0)
				assert_true(s.resizes >= 20 * 8 / 2);
			else
				assert_int_equal(s.resizes, 0);
			if (si == 3)
				assert_true(s.preemptions > 0);
			for (size_t i = 0; i < n; i++) {
				const struct lsim_job_spec *sp = &base.jobs[i];
				assert_int_equal(r[i].status, LSIM_JOB_FINISHED);
				assert_true(r[i].first_start >= r[i].arrival);
				assert_true(r[i].finish >= r[i].first_start);
				assert_int_equal(r[i].iterations,
						 lsim_job_total_iterations(sp));
				/* every GPU-second held is useful, lost or
				 * overhead, or (static, phased) held idle */
				double sum = r[i].useful_gpu_s + r[i].lost_gpu_s +
					     r[i].overhead_gpu_s;
				double tol = 1e-9 * r[i].alloc_gpu_s + 1e-6;
				if (ai == 0 && sp->n_phases > 1)
					assert_true(r[i].alloc_gpu_s > sum + 1);
				else
					assert_true(fabs(r[i].alloc_gpu_s - sum) <=
						    tol);
				double work = 0;
				for (int32_t q = 0; q < sp->n_phases; q++)
					work += sp->phases[q].gpus *
						lsim_time_to_s(sp->iter_time *
							       sp->phases[q].iterations);
				assert_true(fabs(r[i].useful_gpu_s - work) <=
					    1e-9 * work + 1e-6);
			}
			assert_int_equal(lsim_jobs_free_gpus(w.js), 64);
			assert_true(s.util_alloc > 0 && s.util_alloc <= 1 + 1e-12);
			assert_true(s.util_useful <= s.util_alloc);
			world_free(&w);
		}
	}
	lsim_job_list_release(&base);
}

/* ---- the plan kept between passes ---- */

/*
 * test_easy_backfill's jobs with a fourth (2 GPUs, 50 s, at 40) and J0
 * failing at 30 s. At 20 the plan has J0 ending at 100, J1 reserved there
 * and J2 (2 GPUs, 90 s) kept out. J0 restarts at 30 (no checkpoint, no
 * overhead) and now ends at 130: J1's reservation moves to 130 and J2
 * (30..120) is backfilled. J3 finds no GPU until J2 ends at 120, and then
 * would run into J1 (130..180): it starts at 180. A plan kept from 20
 * must have dropped J0's old end and taken its new one.
 */
static void kept_world(struct world *w, bool rebuild)
{
	world_init(w, 1, 8);
	w->cfg.scheduler = "easy_backfill";
	w->cfg.plan_rebuild = rebuild;
	add1(w, 0, 6, 100);
	add1(w, 10, 8, 50);
	add1(w, 20, 2, 90);
	add1(w, 40, 2, 50);
	world_start(w);
	assert_true(lsim_schedule(w->eng, S(30), fail_job0, w, 0) != 0);
	world_run(w);
}

/* At 11 s, in the job's checkpoint (10..12): the plan, then inference
 * takes the job's 4 GPUs (it will release them at 12, not compute on),
 * then the plan again; at 50 the GPUs come back. */
static void ev_check_reclaim(struct lsim_engine *eng, void *subject,
			     uint64_t arg)
{
	(void)eng;
	struct world *w = subject;
	if (arg == 1) {
		assert_int_equal(lsim_jobs_give_back(w->js, 0, 4), 0);
		return;
	}
	assert_int_equal(lsim_jobs_plan_check(w->js), 0);
	assert_int_equal(lsim_jobs_reclaim(w->js, 0, 4, NULL, NULL), 0);
	assert_int_equal(lsim_jobs_plan_check(w->js), 0);
}

static void test_kept_plan(void **state)
{
	(void)state;
	for (int rebuild = 0; rebuild < 2; rebuild++) {
		struct world w;
		kept_world(&w, rebuild);
		expect_run(&w, 0, 0, 130);
		assert_int_equal(rec(&w, 0)->failures, 1);
		expect_run(&w, 1, 130, 180);
		expect_run(&w, 2, 30, 120);
		expect_run(&w, 3, 180, 230);
		world_free(&w);
	}
	/* A job preempted in a checkpoint: its predicted demand ends with the
	 * checkpoint. 100 x 1 s on 4 GPUs, a 2 s checkpoint every 10: it
	 * resumes at 50 (3 s restart, 2 s read) with 90 iterations and 8
	 * checkpoints left: 55 + 90 + 16 = 161. */
	static const struct lsim_job_phase ph[] = {{100, 4}};
	struct world w;
	world_init(&w, 1, 4);
	ckpt_cfg(&w, 3);
	add_ckpt(&w, 0, ph, 1, 10);
	world_start(&w);
	assert_true(lsim_schedule(w.eng, S(11), ev_check_reclaim, &w, 0) != 0);
	assert_true(lsim_schedule(w.eng, S(50), ev_check_reclaim, &w, 1) != 0);
	world_run(&w);
	expect_run(&w, 0, 0, 161);
	assert_int_equal(rec(&w, 0)->preemptions, 1);
	world_free(&w);
}

struct lender {
	struct world *w;
	int32_t node;
};

/* Inference takes 4 GPUs of a node (arg 0) and gives them back (1). */
static void ev_lend(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)eng;
	struct lender *l = subject;
	if (arg == 0)
		assert_int_equal(lsim_jobs_reclaim(l->w->js, l->node, 4, NULL, NULL), 0);
	else
		assert_int_equal(lsim_jobs_give_back(l->w->js, l->node, 4), 0);
}

struct plan_checker {
	struct lsim_jobs *js;
	size_t n_jobs;
	int checks;
};

/* Until the jobs are done, every 3 s while model jobs come (to 400,000
 * s), then every 97 s: the kept plan is the full one. */
static void ev_plan_check(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)arg;
	struct plan_checker *c = subject;
	assert_int_equal(lsim_jobs_plan_check(c->js), 0);
	c->checks++;
	lsim_time now = lsim_now(eng);
	if (lsim_jobs_ended(c->js) < c->n_jobs)
		lsim_schedule(eng, now + (now < 400000 * LSIM_S ? 3 : 97) * LSIM_S,
			      ev_plan_check, c, 0);
}

/*
 * The plan kept between passes against the plan built from every job at
 * each pass, over test_conservation's 300 generated and 20 phased jobs
 * and 60 model jobs whose all-reduces and checkpoint writes move on the
 * links (writes that contend for storage take longer than predicted), on
 * two GPU types, with failures, resizes and GPUs lent to inference and
 * given back. Every few seconds the kept plan must equal the full one, and the
 * runs must make every change of state of every job at the same time,
 * under each allocator with EASY backfilling and with time packing under
 * sjf.
 */
static void test_kept_plan_random(void **state)
{
	(void)state;
	static const char *scheds[] = {"easy_backfill", "easy_backfill",
				       "easy_backfill", "sjf"};
	static const char *allocs[] = {"static", "dynamic", "time_packing",
				       "time_packing"};
	struct lsim_job_list base;
	struct lsim_diag d = {0};
	mixed_jobs(1.5, &base);
	for (int i = 0; i < 60; i++) {
		struct lsim_job_phase mp = {100 + 7 * i, 1 << (i % 5)};
		struct lsim_job_spec s = {0};
		s.id = 2000 + (uint64_t)i;
		s.arrival = (lsim_time)i * 6007 * LSIM_S;
		s.params = 1e9 * (1 + i % 7);
		s.tokens_per_iter = 1e5;
		s.ckpt_every = 25;
		s.phases = &mp;
		s.n_phases = 1;
		assert_int_equal(lsim_job_list_add(&base, &s), 0);
	}
	lsim_job_list_sort(&base);
	struct lsim_gpu_profile g = {0};
	g.bf16_flops = 1e15;
	g.mfu_max = 0.5;
	g.nvlink_bw = 2e9;
	for (size_t c = 0; c < 4; c++) {
		struct lsim_job_event *tl[2] = {NULL, NULL};
		size_t ntl[2] = {0, 0};
		int64_t backfilled = 0;
		for (int rebuild = 0; rebuild < 2; rebuild++) {
			struct world w;
			world_init(&w, 4, 8);
			assert_int_equal(lsim_pool_spec_add(&w.pool, 4, 8, "A100"), 0);
			w.cfg.scheduler = scheds[c];
			w.cfg.allocator = allocs[c];
			w.cfg.plan_rebuild = rebuild;
			w.cfg.gpu = &g;
			w.cfg.storage_bw = 1e9;
			w.cfg.restart_overhead = 30 * LSIM_S;
			w.cfg.gpu_mtbf = 100000 * LSIM_S;
			w.cfg.seed = 9;
			struct lsim_net *net = lsim_net_create(w.eng);
			assert_non_null(net);
			struct lsim_topo_params tp;
			lsim_topo_params_default(&tp);
			tp.nodes = 8;
			tp.gpus_per_node = 8;
			tp.nvlink_bw = 2e9; /* all-reduces of seconds */
			tp.storage_bw = 5e9;
			struct lsim_topo topo;
			assert_int_equal(lsim_topo_build(&topo, net, &tp, &d), 0);
			assert_int_equal(lsim_jobs_create(w.eng, &w.pool, &w.cfg,
							  &w.js, &d),
					 0);
			lsim_jobs_use_links(w.js, net, &topo);
			assert_int_equal(lsim_jobs_submit_list(w.js, &base, &d), 0);
			struct lender ln[8];
			for (int32_t k = 0; k < 8; k++) {
				ln[k] = (struct lender){&w, k};
				lsim_time at = (lsim_time)(1 + k) * 7919 * LSIM_S;
				lsim_schedule(w.eng, at, ev_lend, &ln[k], 0);
				lsim_schedule(w.eng, at + 3000 * LSIM_S, ev_lend, &ln[k], 1);
			}
			struct plan_checker pc = {w.js, base.n, 0};
			lsim_schedule(w.eng, 0, ev_plan_check, &pc, 0);
			lsim_run(w.eng, LSIM_TIME_MAX);
			assert_int_equal(lsim_jobs_ended(w.js), base.n);
			assert_true(pc.checks > 1000);
			const struct lsim_job_event *e = lsim_jobs_timeline(w.js, &ntl[rebuild]);
			tl[rebuild] = malloc(ntl[rebuild] * sizeof *e);
			assert_non_null(tl[rebuild]);
			memcpy(tl[rebuild], e, ntl[rebuild] * sizeof *e);
			size_t n;
			const struct lsim_job_record *r = lsim_jobs_records(w.js, &n);
			for (size_t i = 1; i < n; i++) /* started before an earlier arrival */
				backfilled += r[i].first_start < r[i - 1].first_start;
			lsim_jobs_destroy(w.js);
			w.js = NULL;
			lsim_net_destroy(net);
			lsim_topo_release(&topo);
			world_free(&w);
		}
		assert_true(backfilled > 0);
		assert_int_equal(ntl[0], ntl[1]);
		for (size_t i = 0; i < ntl[0]; i++) {
			assert_int_equal(tl[0][i].t, tl[1][i].t);
			assert_int_equal(tl[0][i].job, tl[1][i].job);
			assert_int_equal(tl[0][i].state, tl[1][i].state);
			assert_true(tl[0][i].gpus == tl[1][i].gpus);
		}
		free(tl[0]);
		free(tl[1]);
	}
	lsim_job_list_release(&base);
}

/* ---- the iteration model ---- */

static void test_iter_time(void **state)
{
	(void)state;
	struct lsim_gpu_profile g = {0};
	g.bf16_flops = 1e15;
	g.mfu_max = 0.5;
	struct lsim_jobs_cfg c;
	lsim_jobs_cfg_defaults(&c);
	c.link_bw = 100e9;
	c.link_latency = LSIM_MS;
	struct lsim_job_phase ph[] = {{10, 8}};
	struct lsim_job_spec s = {0};
	s.params = 1e9;
	s.tokens_per_iter = 1e6;
	s.phases = ph;
	s.n_phases = 1;
	lsim_time t;
	struct lsim_diag d;
	/* 6e15 FLOP / (8 x 5e14) = 1.5 s; 2 x 7/8 x 2e9 B / 1e11 = 35 ms; +1 ms */
	assert_int_equal(lsim_job_iter_time(&s, 0, 8, &g, &c, &t, &d), 0);
	assert_int_equal(t, S(1.536));
	assert_int_equal(lsim_job_iter_time(&s, 0, 1, &g, &c, &t, &d), 0);
	assert_int_equal(t, S(12)); /* no all-reduce on one GPU */
	s.gpu_milli = 250;	    /* a quarter of one GPU */
	ph[0].gpus = 1;
	assert_int_equal(lsim_job_iter_time(&s, 0, 1, &g, &c, &t, &d), 0);
	assert_int_equal(t, S(48));
	ph[0].gpus = 8;
	s.gpu_milli = 0;
	/* fixed iterations scale with the GPUs they get, rounded up */
	s.params = 0;
	s.iter_time = LSIM_S;
	assert_int_equal(lsim_job_iter_time(&s, 0, 3, NULL, &c, &t, &d), 0);
	assert_int_equal(t, 2666666667);
	/* a model size with no profile, and no bandwidth, are errors */
	s.params = 1e9;
	assert_int_equal(lsim_job_iter_time(&s, 0, 8, NULL, &c, &t, &d),
			 LSIM_EINVAL);
	assert_string_equal(d.key, "params");
	c.link_bw = 0;
	assert_int_equal(lsim_job_iter_time(&s, 0, 8, &g, &c, &t, &d),
			 LSIM_EINVAL);
	assert_string_equal(d.key, "link_bw");
}

/* A model job trains on the profile's peak: its time follows the model. */
static void test_model_job(void **state)
{
	(void)state;
	struct lsim_gpu_profile g = {0};
	g.bf16_flops = 1e15;
	g.mfu_max = 0.5;
	g.nvlink_bw = 100e9;
	g.price_per_hour = 3.6;
	struct world w;
	world_init(&w, 1, 8);
	w.cfg.gpu = &g;
	static const struct lsim_job_phase ph[] = {{100, 8}};
	struct lsim_job_spec s = {0};
	s.params = 1e9;
	s.tokens_per_iter = 1e6;
	s.phases = ph;
	s.n_phases = 1;
	assert_int_equal(lsim_job_list_add(&w.list, &s), 0);
	world_run(&w);
	expect_run(&w, 0, 0, 153.5); /* 100 x (1.5 + 0.035) s */
	/* $3.6 per GPU-hour = $0.001 per GPU-second */
	assert_true(fabs(rec(&w, 0)->cost - 8 * 153.5 * 0.001) < 1e-9);
	world_free(&w);

	/* without a profile the job cannot be simulated */
	world_init(&w, 1, 8);
	assert_int_equal(lsim_job_list_add(&w.list, &s), 0);
	struct lsim_diag d;
	assert_int_equal(lsim_jobs_create(w.eng, &w.pool, &w.cfg, &w.js, &d), 0);
	assert_int_equal(lsim_jobs_submit_list(w.js, &w.list, &d), LSIM_EINVAL);
	assert_int_equal(lsim_jobs_submitted(w.js), 0);
	world_free(&w);
}

static void test_unknown_policy(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 1, 8);
	w.cfg.scheduler = "lottery";
	struct lsim_diag d;
	assert_int_equal(lsim_jobs_create(w.eng, &w.pool, &w.cfg, &w.js, &d),
			 LSIM_ENOENT);
	assert_non_null(strstr(d.msg, "easy_backfill"));
	w.cfg.scheduler = "fcfs";
	w.cfg.allocator = "greedy";
	assert_int_equal(lsim_jobs_create(w.eng, &w.pool, &w.cfg, &w.js, &d),
			 LSIM_ENOENT);
	assert_non_null(strstr(d.msg, "time_packing"));
	assert_null(w.js);
	world_free(&w);
}

static void test_phases_epochs(void **state)
{
	(void)state;
	struct lsim_job_phase ph[8];
	int n = lsim_job_phases_epochs(4, 100, 1, 8, 4, 8, 10, ph, 8);
	assert_int_equal(n, 6);
	static const struct lsim_job_phase want[] = {
		{110, 8}, {100, 4}, {10, 8}, {100, 4}, {10, 8}, {100, 4},
	};
	for (int i = 0; i < 6; i++) {
		assert_int_equal(ph[i].iterations, want[i].iterations);
		assert_int_equal(ph[i].gpus, want[i].gpus);
	}
	assert_int_equal(lsim_job_phases_epochs(4, 100, 1, 8, 4, 8, 10, ph, 5),
			 LSIM_ERANGE);
}

/* ---- readers ---- */

static void test_alibaba_pods(void **state)
{
	(void)state;
	char path[1024];
	struct lsim_job_list l;
	lsim_job_list_init(&l);
	struct lsim_diag d = {0};
	int rc = lsim_jobs_read_alibaba_pods(
		src_path(path, sizeof path, "tests/data/jobs/alibaba_pods.csv"), 0,
		&l, &d);
	if (rc)
		fail_msg("%s", d.msg);
	assert_int_equal(l.n, 21);
	assert_int_equal(l.skipped_no_gpu, 2);
	assert_int_equal(l.skipped_unscheduled, 1);
	assert_int_equal(l.skipped_open, 0);
	assert_int_equal(l.n_tenants, 3);
	assert_string_equal(l.tenants[0], "LS");
	assert_string_equal(l.tenants[1], "Burstable");
	assert_string_equal(l.tenants[2], "BE");
	/* openb-pod-0012: created 6588193, scheduled 6595531, deleted 10959245 */
	const struct lsim_job_spec *s = NULL;
	for (size_t i = 0; i < l.n; i++)
		if (l.jobs[i].id == 12)
			s = &l.jobs[i];
	assert_non_null(s);
	assert_int_equal(s->arrival, 6588193 * LSIM_S);
	assert_int_equal(s->iter_time, LSIM_S);
	assert_int_equal(s->phases[0].iterations, 10959245 - 6595531);
	assert_int_equal(s->gpu_milli, 0);
	/* openb-pod-0062: 810 milli of one GPU, BE, line 23 */
	const struct lsim_job_spec *f = &l.jobs[18];
	assert_int_equal(f->id, 21);
	assert_int_equal(f->gpu_milli, 810);
	assert_int_equal(f->tenant, 2);
	assert_int_equal(f->src_line, 23);
	assert_int_equal(f->phases[0].iterations, 10014257 - 10001606);
	/* openb-pod-0128: 8 GPUs, Burstable */
	const struct lsim_job_spec *g = &l.jobs[20];
	assert_int_equal(g->phases[0].gpus, 8);
	assert_int_equal(g->tenant, 1);
	size_t shares = 0;
	for (size_t i = 0; i < l.n; i++) {
		shares += l.jobs[i].gpu_milli > 0;
		if (i)
			assert_true(l.jobs[i - 1].arrival <= l.jobs[i].arrival);
	}
	assert_int_equal(shares, 7);
	lsim_job_list_release(&l);
}

/* The slice replayed on its own nodes: every pod runs for its duration. */
static void test_alibaba_replay(void **state)
{
	(void)state;
	char path[1024];
	struct lsim_pool_spec pool;
	lsim_pool_spec_init(&pool);
	struct lsim_diag d = {0};
	int rc = lsim_jobs_read_alibaba_nodes(
		src_path(path, sizeof path, "tests/data/jobs/alibaba_nodes.csv"),
		&pool, &d);
	if (rc)
		fail_msg("%s", d.msg);
	assert_int_equal(pool.n_nodes, 4);
	assert_int_equal(pool.n_types, 3);
	assert_string_equal(pool.types[0], "P100");
	assert_string_equal(pool.types[1], "G3");
	assert_string_equal(pool.types[2], "V100M32");
	assert_int_equal(pool.node_gpus[0], 2);
	assert_int_equal(pool.node_gpus[3], 8);

	struct lsim_job_list l;
	lsim_job_list_init(&l);
	rc = lsim_jobs_read_alibaba_pods(
		src_path(path, sizeof path, "tests/data/jobs/alibaba_pods.csv"), 0,
		&l, &d);
	assert_int_equal(rc, 0);
	struct lsim_engine *eng = lsim_engine_create();
	struct lsim_jobs_cfg c;
	lsim_jobs_cfg_defaults(&c);
	struct lsim_jobs *js;
	assert_int_equal(lsim_jobs_create(eng, &pool, &c, &js, &d), 0);
	assert_int_equal(lsim_jobs_submit_list(js, &l, &d), 0);
	lsim_run(eng, LSIM_TIME_MAX);
	size_t n;
	const struct lsim_job_record *r = lsim_jobs_records(js, &n);
	assert_int_equal(n, 21);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(r[i].status, LSIM_JOB_FINISHED);
		assert_int_equal(r[i].finish - r[i].first_start,
				 l.jobs[i].phases[0].iterations * LSIM_S);
	}
	assert_true(fabs(r[0].alloc_gpu_s - 12537496.0) < 1e-3);
	assert_true(fabs(r[1].alloc_gpu_s - 0.46 * (12902960 - 427061)) < 1e-3);
	assert_int_equal(lsim_jobs_free_gpus(js), 20);
	lsim_jobs_destroy(js);
	lsim_engine_destroy(eng);
	lsim_job_list_release(&l);
	lsim_pool_spec_release(&pool);
}

static void test_generic_csv(void **state)
{
	(void)state;
	char path[1024];
	struct lsim_job_list l;
	lsim_job_list_init(&l);
	struct lsim_diag d = {0};
	int rc = lsim_jobs_read_csv(
		src_path(path, sizeof path, "tests/data/jobs/generic.csv"), &l, &d);
	if (rc)
		fail_msg("%s", d.msg);
	assert_int_equal(l.n, 4);
	assert_int_equal(l.n_tenants, 2);
	const struct lsim_job_spec *j = l.jobs;
	assert_int_equal(j[0].id, 1);
	assert_int_equal(j[0].phases[0].iterations, 3600);
	assert_int_equal(j[0].iter_time, LSIM_S);
	assert_int_equal(j[0].ckpt_every, 600);
	assert_int_equal(j[0].phases[0].gpus, 8);
	assert_int_equal(j[1].arrival, 500 * LSIM_MS);
	assert_int_equal(j[1].kind, LSIM_JOB_FINETUNE);
	assert_int_equal(j[1].n_phases, 2);
	assert_int_equal(j[1].phases[1].gpus, 2);
	assert_int_equal(j[1].phases[1].iterations, 800);
	assert_int_equal(j[1].iter_time, 250 * LSIM_MS);
	assert_string_equal(j[1].gpu_types, "H100");
	assert_true(j[1].ckpt_bytes == 2e9);
	assert_int_equal(j[1].tenant, 1);
	assert_true(j[2].params == 7e9 && j[2].tokens_per_iter == 2e6);
	assert_int_equal(j[2].gpus_min, 2);
	assert_int_equal(j[2].ckpt_every, 50);
	assert_int_equal(j[3].arrival, 12000000001);
	assert_int_equal(j[3].gpu_milli, 500);
	assert_int_equal(j[3].phases[0].iterations, 90500);
	assert_int_equal(j[3].iter_time, LSIM_MS);
	lsim_job_list_release(&l);
}

static void test_bad_rows(void **state)
{
	(void)state;
	static const struct {
		const char *file;
		int alibaba;
		int line, col;
		const char *key;
	} cases[] = {
		{"arrival_text.csv", 0, 3, 1, "arrival_s"},
		{"decreasing.csv", 0, 3, 1, "arrival_s"},
		{"zero_gpus.csv", 0, 2, 3, "gpus"},
		{"both_work.csv", 0, 2, 5, "duration_s"},
		{"phases.csv", 0, 2, 3, "phases"},
		{"few_fields.csv", 0, 3, 0, "duration_s"},
		{"milli_multi.csv", 0, 2, 5, "gpu_milli"},
		{"no_iter_time.csv", 0, 2, 5, "iter_s"},
		{"negative_duration.csv", 0, 2, 5, "duration_s"},
		{"alibaba_deleted_early.csv", 1, 2, 51, "deletion_time"},
		{"alibaba_share_multi.csv", 1, 3, 29, "gpu_milli"},
		{"alibaba_num_gpu.csv", 1, 2, 28, "num_gpu"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char rel[256], path[1024];
		snprintf(rel, sizeof rel, "tests/data/jobs/bad/%s", cases[i].file);
		src_path(path, sizeof path, rel);
		struct lsim_job_list l;
		lsim_job_list_init(&l);
		struct lsim_diag d = {0};
		int rc = cases[i].alibaba
				 ? lsim_jobs_read_alibaba_pods(path, 0, &l, &d)
				 : lsim_jobs_read_csv(path, &l, &d);
		if (rc != LSIM_EFORMAT || d.line != cases[i].line ||
		    d.col != cases[i].col || strcmp(d.key, cases[i].key) != 0)
			fail_msg("%s: rc %d at %d:%d key '%s': %s", cases[i].file,
				 rc, d.line, d.col, d.key, d.msg);
		assert_non_null(strstr(d.file, cases[i].file));
		lsim_job_list_release(&l);
	}
	struct lsim_job_list l;
	lsim_job_list_init(&l);
	struct lsim_diag d = {0};
	assert_int_equal(lsim_jobs_read_csv("/nonexistent/jobs.csv", &l, &d),
			 LSIM_ENOENT);
	lsim_job_list_release(&l);
}

static void test_summaries(void **state)
{
	(void)state;
	char path[1024];
	struct lsim_job_list l;
	lsim_job_list_init(&l);
	struct lsim_diag d = {0};
	int rc = lsim_jobs_read_vc_quotas(
		src_path(path, sizeof path, "tests/data/jobs/venus_vc_gpus_head.csv"),
		NULL, &l, &d);
	if (rc)
		fail_msg("%s", d.msg);
	assert_int_equal(l.n_tenants, 18); /* 25 VCs, 7 with no GPUs */
	assert_string_equal(l.tenants[0], "vcEwI");
	assert_int_equal(l.quota[0], 72);
	int64_t sum = 0;
	for (size_t t = 0; t < l.n_tenants; t++)
		sum += l.quota[t];
	assert_int_equal(sum, 968);
	assert_int_equal(lsim_jobs_read_vc_quotas(path, "1999-01-01", &l, &d),
			 LSIM_ENOENT);
	lsim_job_list_release(&l);

	struct lsim_cluster_stats st;
	rc = lsim_jobs_read_cluster_stats(
		src_path(path, sizeof path, "tests/data/jobs/acme_cluster_summary.csv"),
		"Kalos", &st, &d);
	if (rc)
		fail_msg("%s", d.msg);
	assert_true(st.avg_run_s == 1259.689 && st.med_run_s == 124.0);
	assert_true(st.max_run_s == 625740.0 && st.avg_gpus == 26.77);
	assert_int_equal(st.max_gpus, 1024);
	rc = lsim_jobs_read_cluster_stats(
		src_path(path, sizeof path,
			 "tests/data/jobs/helios_cluster_summary.csv"),
		"Venus", &st, &d);
	assert_int_equal(rc, 0);
	assert_true(st.avg_run_s == 13040.598 && st.med_run_s == 204.0);
	assert_int_equal(st.max_gpus, 0); /* not published for Helios */
	assert_int_equal(lsim_jobs_read_cluster_stats(path, "Mars", &st, &d),
			 LSIM_ENOENT);
	assert_non_null(strstr(d.msg, "Saturn"));
}

/* ---- generators ---- */

static void test_size_law(void **state)
{
	(void)state;
	double p[31];
	int n;
	assert_int_equal(lsim_job_size_law(1.928, 128, p, &n), 0);
	assert_int_equal(n, 8); /* 1, 2, ..., 128 */
	double m = 0, s = 0;
	for (int k = 0; k < n; k++) {
		m += p[k] * ldexp(1.0, k);
		s += p[k];
		if (k)
			assert_true(p[k] < p[k - 1]);
	}
	assert_true(fabs(m - 1.928) < 1e-9);
	assert_true(fabs(s - 1) < 1e-12);
	assert_true(p[0] > 0.5); /* median 1 GPU, as published */
	assert_int_equal(lsim_job_size_law(1, 128, p, &n), 0);
	assert_true(p[0] == 1);
	assert_int_equal(lsim_job_size_law(128, 128, p, &n), LSIM_ERANGE);
	assert_int_equal(lsim_job_size_law(0.5, 128, p, &n), LSIM_ERANGE);
}

static void gen(struct lsim_job_list *l, uint64_t seed, size_t count)
{
	char path[1024];
	struct lsim_job_gen_params p;
	lsim_job_gen_defaults(&p);
	p.seed = seed;
	p.count = count;
	p.rate = 0.01;
	struct lsim_diag d = {0};
	lsim_job_list_init(l);
	int rc = lsim_jobs_gen_empirical(
		src_path(path, sizeof path, "tests/data/jobs/philly_runtime_counts.csv"),
		&p, l, &d);
	if (rc)
		fail_msg("%s", d.msg);
}

static void test_generators(void **state)
{
	(void)state;
	struct lsim_job_list a, b, c;
	gen(&a, 1, 4000);
	gen(&b, 1, 4000);
	gen(&c, 2, 4000);
	assert_int_equal(a.n, 4000);
	bool differ = false;
	double gpus = 0;
	for (size_t i = 0; i < a.n; i++) {
		assert_int_equal(a.jobs[i].arrival, b.jobs[i].arrival);
		assert_int_equal(a.jobs[i].phases[0].iterations,
				 b.jobs[i].phases[0].iterations);
		assert_int_equal(a.jobs[i].phases[0].gpus, b.jobs[i].phases[0].gpus);
		differ |= a.jobs[i].arrival != c.jobs[i].arrival;
		if (i)
			assert_true(a.jobs[i].arrival > a.jobs[i - 1].arrival);
		assert_int_equal(a.jobs[i].iter_time, LSIM_S);
		/* runtimes come from the Philly values (max 4628239 s) */
		assert_true(a.jobs[i].phases[0].iterations >= 1 &&
			    a.jobs[i].phases[0].iterations <= 4628239);
		gpus += a.jobs[i].phases[0].gpus;
	}
	assert_true(differ);
	assert_true(fabs(gpus / a.n - 1.928) < 0.25);
	/* 4000 arrivals at 0.01/s take about 400000 s */
	double span = lsim_time_to_s(a.jobs[a.n - 1].arrival);
	assert_true(span > 380000 && span < 420000);
	lsim_job_list_release(&a);
	lsim_job_list_release(&b);
	lsim_job_list_release(&c);

	/* from published statistics: the lognormal keeps the median */
	struct lsim_cluster_stats st = {0};
	snprintf(st.name, sizeof st.name, "Philly");
	st.avg_run_s = 18006.055;
	st.med_run_s = 874.0;
	st.max_run_s = 4240676.0;
	st.avg_gpus = 1.928;
	st.max_gpus = 128;
	struct lsim_job_gen_params p;
	lsim_job_gen_defaults(&p);
	p.count = 4001;
	p.capacity_gpus = 1000;
	struct lsim_job_list l;
	lsim_job_list_init(&l);
	struct lsim_diag d;
	assert_int_equal(lsim_jobs_gen_stats(&st, &p, &l, &d), 0);
	size_t below = 0;
	for (size_t i = 0; i < l.n; i++)
		below += l.jobs[i].phases[0].iterations < 874;
	assert_true(fabs((double)below / l.n - 0.5) < 0.03);
	lsim_job_list_release(&l);
	/* a rate needs a load and a capacity */
	p.capacity_gpus = 0;
	lsim_job_list_init(&l);
	assert_int_equal(lsim_jobs_gen_stats(&st, &p, &l, &d), LSIM_EINVAL);
	lsim_job_list_release(&l);
}

/* Tenants drawn in proportion to VC quotas; no job exceeds its VC. */
static void test_generator_tenants(void **state)
{
	(void)state;
	char path[1024];
	struct lsim_job_list l;
	lsim_job_list_init(&l);
	struct lsim_diag d = {0};
	assert_int_equal(lsim_jobs_read_vc_quotas(
				 src_path(path, sizeof path,
					  "tests/data/jobs/venus_vc_gpus_head.csv"),
				 NULL, &l, &d),
			 0);
	struct lsim_job_gen_params p;
	lsim_job_gen_defaults(&p);
	p.count = 2000;
	p.rate = 0.1;
	p.mean_gpus = 6.736; /* Venus */
	p.max_gpus = 128;
	assert_int_equal(lsim_jobs_gen_empirical(
				 src_path(path, sizeof path,
					  "tests/data/jobs/philly_runtime_counts.csv"),
				 &p, &l, &d),
			 0);
	size_t in_vc8 = 0; /* vcgkz has 8 GPUs of 968 */
	int32_t t8 = lsim_job_list_tenant(&l, "vcgkz");
	for (size_t i = 0; i < l.n; i++) {
		int32_t t = l.jobs[i].tenant;
		assert_true(l.jobs[i].phases[0].gpus <= l.quota[t]);
		in_vc8 += t == t8;
	}
	assert_true(in_vc8 > 2 && in_vc8 < 40); /* expect 2000 x 8/968 = 16.5 */
	lsim_job_list_release(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fcfs_vs_sjf),
		cmocka_unit_test(test_easy_backfill),
		cmocka_unit_test(test_las_order),
		cmocka_unit_test(test_static_vs_dynamic),
		cmocka_unit_test(test_failure_restart),
		cmocka_unit_test(test_time_packing_vs_first_fit),
		cmocka_unit_test(test_time_packing_growth),
		cmocka_unit_test(test_quota),
		cmocka_unit_test(test_gpu_share),
		cmocka_unit_test(test_elastic),
		cmocka_unit_test(test_reclaim_for_inference),
		cmocka_unit_test(test_submit_and_unfinished),
		cmocka_unit_test(test_conservation),
		cmocka_unit_test(test_kept_plan),
		cmocka_unit_test(test_kept_plan_random),
		cmocka_unit_test(test_iter_time),
		cmocka_unit_test(test_model_job),
		cmocka_unit_test(test_unknown_policy),
		cmocka_unit_test(test_phases_epochs),
		cmocka_unit_test(test_alibaba_pods),
		cmocka_unit_test(test_alibaba_replay),
		cmocka_unit_test(test_generic_csv),
		cmocka_unit_test(test_bad_rows),
		cmocka_unit_test(test_summaries),
		cmocka_unit_test(test_size_law),
		cmocka_unit_test(test_generators),
		cmocka_unit_test(test_generator_tenants),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
