/*
 * test_steady.c - the steady-state analysis behind capacity search
 * (sim/report/steady.c), on series and runs whose answers are computed by hand:
 * MSER-5's cut after a known transient, its limit on a trend, the batch-
 * means trend test on a line and on stationary series, and the backlog,
 * cut and windowed summary of hand-made request records.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "report/steady.h"

/* 100 values of 10 (a transient), then 900 alternating 0, 1: every batch
 * of 5 after the cut has mean 0.4 or 0.6, and any batch of 10s kept adds
 * (10 - 0.5)^2 to the sum of squares, while each batch of the stationary
 * part dropped only shrinks (m - d)^2: the minimum is at d = 20, i.e. 100. */
static void test_mser5_transient(void **state)
{
	(void)state;
	double y[1000];
	for (int i = 0; i < 1000; i++)
		y[i] = i < 100 ? 10.0 : (double)(i % 2);
	bool limit = true;
	assert_int_equal(lsim_mser5(y, 1000, &limit), 100);
	assert_false(limit);
	/* nothing to cut: the first batch is kept */
	for (int i = 0; i < 1000; i++)
		y[i] = (double)(i % 2);
	assert_int_equal(lsim_mser5(y, 1000, &limit), 0);
	assert_false(limit);
}

/* A line y = i: the tail's sum of squares about its mean is
 * 25 k (k^2 - 1) / 12 for k batches, so the statistic falls with k: the
 * minimum is at the limit d = m / 2 (the run never settles). */
static void test_mser5_trend(void **state)
{
	(void)state;
	double y[1000];
	for (int i = 0; i < 1000; i++)
		y[i] = (double)i;
	bool limit = false;
	assert_int_equal(lsim_mser5(y, 1000, &limit), 500);
	assert_true(limit);
	/* too short for the rule: nothing cut, and said so */
	limit = false;
	assert_int_equal(lsim_mser5(y, 49, &limit), 0);
	assert_true(limit);
}

static void test_trend(void **state)
{
	(void)state;
	double y[1000], growth, t;
	/* y = 0.1 i: batch b's mean is 0.1 (100 b + 49.5), a slope of 10 a
	 * batch, an exact fit: a rise of 90 over the nine steps */
	for (int i = 0; i < 1000; i++)
		y[i] = 0.1 * i;
	assert_true(lsim_trend_up(y, 1000, &growth, &t));
	assert_float_equal(growth, 90.0, 1e-9);
	/* alternating 0, 1: every batch mean is 0.5, no slope at all */
	for (int i = 0; i < 1000; i++)
		y[i] = (double)(i % 2);
	assert_false(lsim_trend_up(y, 1000, &growth, &t));
	assert_float_equal(growth, 0.0, 1e-9);
	/* a stationary AR(1) backlog (phi 0.9, mean 20) from a fixed LCG:
	 * whatever its wiggles, no significant rise of 20% of its mean */
	uint64_t x = 42;
	double v = 20.0;
	for (int i = 0; i < 1000; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		double u = (double)(x >> 11) / 9007199254740992.0 - 0.5;
		v = 20.0 + 0.9 * (v - 20.0) + 4.0 * u;
		y[i] = v;
	}
	assert_false(lsim_trend_up(y, 1000, &growth, &t));
	assert_true(fabs(growth) < 4.0);
	/* a small rise in a large backlog is not growth (under 20% of it) */
	for (int i = 0; i < 1000; i++)
		y[i] = 100.0 + 0.01 * i;
	assert_false(lsim_trend_up(y, 1000, &growth, &t));
	assert_float_equal(growth, 9.0, 1e-9);
	/* too short */
	assert_false(lsim_trend_up(y, 19, &growth, &t));
}

/* Requests arriving each second. Served in 0.5 s: nobody is in the system
 * at an arrival, the backlog is 0 throughout, nothing is cut, the run is
 * stable and the summary is the whole run's. Served at one a 2 s (each
 * finishing at 2 i + 1): at arrival i the ended ones are those with
 * 2 j + 1 <= i, so the backlog grows as i / 2: never settled. */
static void test_analyse(void **state)
{
	(void)state;
	enum { N = 400 };
	struct lsim_req_record *q = calloc(N, sizeof *q);
	assert_non_null(q);
	for (int i = 0; i < N; i++) {
		q[i].id = (uint64_t)i;
		q[i].arrival = i;
		q[i].first_scheduled = i;
		q[i].first_token = i + 0.25;
		q[i].finish = i + 0.5;
		q[i].prompt_tokens = 10;
		q[i].output_tokens = 2;
		q[i].instance = 0;
		q[i].status = LSIM_REQ_FINISHED;
		q[i].predicted_output = -1;
		q[i].model = -1;
		q[i].prefill_instance = -1;
	}
	struct lsim_results r = {.reqs = q, .n_reqs = N};
	struct lsim_steady st;
	assert_int_equal(lsim_steady_analyse(&r, &st), 0);
	assert_int_equal(st.warmup, 0);
	assert_true(st.settled);
	assert_false(st.growing);
	assert_true(st.stable);
	assert_float_equal(st.summary.requests, N, 0);
	assert_float_equal(st.summary.ttft_p99_s, 0.25, 1e-12);

	for (int i = 0; i < N; i++) {
		q[i].first_token = 2.0 * i + 0.5;
		q[i].finish = 2.0 * i + 1.0;
	}
	assert_int_equal(lsim_steady_analyse(&r, &st), 0);
	assert_false(st.stable);
	assert_false(st.settled);
	assert_int_equal(st.warmup, N / 2);
	assert_true(st.growing); /* the rise is (N/2) / 2 over the window */
	assert_float_equal(st.growth, 0.9 * (N / 2) / 2.0, 1.0);
	/* the summary is over the kept half: TTFT of request i is i + 0.5 */
	assert_float_equal(st.summary.requests, N / 2, 0);
	assert_float_equal(st.summary.ttft_mean_s, (N / 2 + N - 1) / 2.0 + 0.5, 1e-9);

	/* one request never ends: unstable whatever its backlog */
	for (int i = 0; i < N; i++) {
		q[i].first_token = i + 0.25;
		q[i].finish = i + 0.5;
	}
	q[N - 1].status = LSIM_REQ_UNFINISHED;
	q[N - 1].finish = -1;
	q[N - 1].first_token = -1;
	assert_int_equal(lsim_steady_analyse(&r, &st), 0);
	assert_float_equal(st.unfinished, 1, 0);
	assert_false(st.stable);
	free(q);
}

/* Two instances, requests alternating at one a second: instance 0
 * schedules each at once; instance 1 schedules its k-th at 4 k (its queue
 * grows by one request every 4 s: about 200 over the 800 s window). */
static void test_overload(void **state)
{
	(void)state;
	enum { N = 800 };
	struct lsim_req_record *q = calloc(N, sizeof *q);
	assert_non_null(q);
	for (int i = 0; i < N; i++) {
		q[i].arrival = i;
		q[i].instance = i % 2;
		q[i].first_scheduled = i % 2 ? 4.0 * (i / 2) : i;
		q[i].first_token = q[i].first_scheduled + 0.1;
		q[i].finish = q[i].first_token + 1;
		q[i].status = LSIM_REQ_FINISHED;
		q[i].output_tokens = 2;
		q[i].prompt_tokens = 10;
	}
	struct lsim_inst_record insts[2] = {{0}};
	struct lsim_results r = {.reqs = q, .n_reqs = N, .insts = insts, .n_insts = 2};
	struct lsim_overload ov;
	assert_int_equal(lsim_overload_scan(&r, &ov), 0);
	assert_int_equal(ov.n, 1);
	assert_int_equal(ov.worst, 1);
	/* its queue at time t is t/2 - t/4 = t/4, a line: MSER-5 keeps the
	 * second half (400 s), whose 10 batch means of 40 s rise by 10 each:
	 * 90 over the nine steps, from about 105 to 195 */
	assert_float_equal(ov.to - ov.from, 90.0, 2.0);
	assert_float_equal(ov.to, 195.0, 3.0);
	/* both at once: nobody is overloaded */
	for (int i = 1; i < N; i += 2)
		q[i].first_scheduled = i;
	assert_int_equal(lsim_overload_scan(&r, &ov), 0);
	assert_int_equal(ov.n, 0);
	assert_int_equal(ov.worst, -1);
	free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mser5_transient),
		cmocka_unit_test(test_mser5_trend),
		cmocka_unit_test(test_trend),
		cmocka_unit_test(test_analyse),
		cmocka_unit_test(test_overload),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
