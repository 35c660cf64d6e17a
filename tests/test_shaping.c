/*
 * test_shaping.c - workload shaping around a trace: window, time scaling,
 * thinning and repetition, with hand-computed arrivals.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "kernel/rng.h"
#include "workload.h"

static char trace[64];

/* arrivals 0..n-1 s, prompt = 100 + i, output 10 */
static void write_trace(int n)
{
	strcpy(trace, "/tmp/lsim_shape_XXXXXX");
	int fd = mkstemp(trace);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fprintf(f, "arrival_s,prompt_tokens,output_tokens\n");
	for (int i = 0; i < n; i++)
		fprintf(f, "%d,%d,10\n", i, 100 + i);
	fclose(f);
}

static int open_it(void *ctx, struct lsim_workload **w, struct lsim_diag *d)
{
	(void)ctx;
	return lsim_workload_open_auto(trace, w, d);
}

static size_t drain(struct lsim_workload *w, lsim_time *t, int32_t *p, size_t max)
{
	struct lsim_req_spec r;
	struct lsim_diag d = {0};
	size_t n = 0;
	int rc;
	while ((rc = lsim_workload_next(w, &r, &d)) == 1) {
		if (n < max) {
			t[n] = r.arrival;
			p[n] = r.prompt_tokens;
			assert_int_equal(r.id, n);
		}
		n++;
	}
	assert_int_equal(rc, 0);
	return n;
}

static int opens; /* how many times open_labelled opened the trace */

/* the labelled trace: a model column, one bad row (skipped) */
static int open_labelled(void *ctx, struct lsim_workload **w, struct lsim_diag *d)
{
	(void)ctx;
	opens++;
	struct lsim_csv_map map = {.arrival_col = "t", .arrival_format = LSIM_TF_SECONDS,
				   .prompt_col = "p", .output_col = "o", .model_col = "m"};
	int rc = lsim_workload_csv_open(trace, &map, w, d);
	if (rc == 0)
		lsim_workload_set_on_error(*w, LSIM_ON_ERROR_SKIP);
	return rc;
}

/* A repeat that would take the clock past its end (292 years) is refused
 * naming workload.repeat at the first repetition that would start beyond
 * it, not wrapped to negative arrival times. A pass of two arrivals 50
 * days apart has a period of 100 days (the span and one mean gap): pass
 * k starts at k x 8.64e15 ns, and 1067 x 8.64e15 + 4.32e15 < 2^63 - 1 <
 * 1068 x 8.64e15, so passes 1 .. 1068 fit and the 1069th is refused. */
static void test_repeat_past_the_clock(void **state)
{
	(void)state;
	strcpy(trace, "/tmp/lsim_shape_XXXXXX");
	int fd = mkstemp(trace);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fprintf(f, "arrival_s,prompt_tokens,output_tokens\n0,100,10\n4320000,100,10\n");
	fclose(f);
	struct lsim_shape_params sp = {.time_scale = 1.0, .keep = 1.0, .repeat = 1000000};
	struct lsim_workload *w = NULL;
	struct lsim_diag d = {0};
	assert_int_equal(lsim_workload_shape_create(open_it, NULL, &sp, NULL, &w, &d), 0);
	struct lsim_req_spec r;
	lsim_time last = -1;
	uint64_t n = 0;
	int rc;
	while ((rc = lsim_workload_next(w, &r, &d)) == 1) {
		assert_true(r.arrival > last);
		last = r.arrival;
		n++;
	}
	assert_int_equal(rc, LSIM_EINVAL);
	assert_string_equal(d.key, "workload.repeat");
	assert_non_null(strstr(d.msg, "repetition 1069 of the trace"));
	assert_non_null(strstr(d.msg, "write repeat: 1068 at most"));
	assert_int_equal(n, 2 * 1068);
	lsim_workload_destroy(w);
	unlink(trace);
}

/* A repeated trace's later passes are replayed from its first, read
 * once: the same requests (labels included), the same skipped lines
 * (counted as each pass reaches them), the file opened once. */
static void test_repeat_replays_first_pass(void **state)
{
	(void)state;
	strcpy(trace, "/tmp/lsim_shape_XXXXXX");
	int fd = mkstemp(trace);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fprintf(f, "t,p,o,m\n0,100,10,alpha\n1,101,10,beta\n2,oops,10,alpha\n"
		   "3,103,10,gamma\n");
	fclose(f);
	struct lsim_shape_params sp = {.time_scale = 1.0, .keep = 1.0, .repeat = 3};
	struct lsim_workload *w = NULL;
	struct lsim_diag d = {0};
	opens = 0;
	assert_int_equal(lsim_workload_shape_create(open_labelled, NULL, &sp, NULL, &w, &d), 0);
	const char *models[3] = {"alpha", "beta", "gamma"};
	const int32_t prompts[3] = {100, 101, 103};
	/* a pass spans 3 s plus one mean gap (1.5 s) */
	const lsim_time starts[3] = {0, 4500 * LSIM_MS, 9000 * LSIM_MS};
	const lsim_time within[3] = {0, LSIM_S, 3 * LSIM_S};
	const uint64_t skipped_before[9] = {0, 0, 1, 1, 1, 2, 2, 2, 3};
	struct lsim_req_spec r;
	for (int i = 0; i < 9; i++) {
		assert_int_equal(lsim_workload_next(w, &r, &d), 1);
		assert_int_equal(r.arrival, starts[i / 3] + within[i % 3]);
		assert_int_equal(r.prompt_tokens, prompts[i % 3]);
		assert_non_null(r.model_label);
		assert_string_equal(r.model_label, models[i % 3]);
		assert_non_null(r.src_path);
		assert_string_equal(r.src_path, trace);
		/* the bad row is skipped on the way to the third request */
		assert_int_equal(lsim_workload_skipped(w), skipped_before[i]);
	}
	assert_int_equal(lsim_workload_next(w, &r, &d), 0);
	assert_int_equal(lsim_workload_skipped(w), 3);
	assert_int_equal(opens, 1);
	lsim_workload_destroy(w);
	unlink(trace);
}

static void test_window_scale_repeat(void **state)
{
	(void)state;
	write_trace(10);
	struct lsim_shape_params sp = {
		.window_start = 2 * LSIM_S, .window_end = 6 * LSIM_S,
		.time_scale = 0.5, .keep = 1.0, .repeat = 2,
	};
	struct lsim_workload *w = NULL;
	struct lsim_diag d = {0};
	assert_int_equal(lsim_workload_shape_create(open_it, NULL, &sp, NULL, &w, &d), 0);
	lsim_time t[16];
	int32_t p[16];
	assert_int_equal(drain(w, t, p, 16), 8);
	/* window keeps 2..5 s, re-based to 0..3, halved: 0, .5, 1, 1.5; the
	 * second pass starts one mean gap (.5 s) after 1.5 s */
	const lsim_time want[8] = {0, 500 * LSIM_MS, 1000 * LSIM_MS, 1500 * LSIM_MS,
				   2000 * LSIM_MS, 2500 * LSIM_MS, 3000 * LSIM_MS,
				   3500 * LSIM_MS};
	for (int i = 0; i < 8; i++) {
		assert_int_equal(t[i], want[i]);
		assert_int_equal(p[i], 102 + i % 4);
	}
	lsim_workload_destroy(w);
	unlink(trace);
}

static void test_thinning(void **state)
{
	(void)state;
	write_trace(20000);
	struct lsim_shape_params sp = {.time_scale = 1.0, .keep = 0.25, .repeat = 1};
	gsl_rng *rng = lsim_rng_create(1, 0, 7);
	struct lsim_workload *w = NULL;
	struct lsim_diag d = {0};
	assert_int_equal(lsim_workload_shape_create(open_it, NULL, &sp, rng, &w, &d), 0);
	lsim_time t[1];
	int32_t p[1];
	size_t n = drain(w, t, p, 0);
	/* binomial(20000, 0.25): mean 5000, sd 61 */
	printf("  kept %zu of 20000 at keep=0.25\n", n);
	assert_true(n > 5000 - 250 && n < 5000 + 250);
	lsim_workload_destroy(w);
	gsl_rng_free(rng);
	unlink(trace);
}

static void test_bad_params(void **state)
{
	(void)state;
	write_trace(3);
	struct lsim_workload *w = NULL;
	struct lsim_diag d = {0};
	struct lsim_shape_params sp = {.time_scale = 0, .keep = 1, .repeat = 1};
	assert_int_equal(lsim_workload_shape_create(open_it, NULL, &sp, NULL, &w, &d),
			 LSIM_EINVAL);
	assert_string_equal(d.key, "workload.time_scale");
	sp.time_scale = 1;
	sp.window_start = 5 * LSIM_S;
	sp.window_end = 2 * LSIM_S;
	assert_int_equal(lsim_workload_shape_create(open_it, NULL, &sp, NULL, &w, &d),
			 LSIM_EINVAL);
	assert_string_equal(d.key, "workload.window_end");
	/* a window past the end of the trace is an empty workload */
	sp.window_end = 0;
	sp.window_start = 100 * LSIM_S;
	sp.repeat = 3;
	assert_int_equal(lsim_workload_shape_create(open_it, NULL, &sp, NULL, &w, &d), 0);
	lsim_time t[1];
	int32_t p[1];
	assert_int_equal(drain(w, t, p, 0), 0);
	lsim_workload_destroy(w);
	unlink(trace);
}

/* lsim_workload_fraction: a CSV's share is its bytes read (each row of
 * "i,100+i,10\n" here); with repeat 2 a pass counts half; the end is 1. */
static void test_fraction(void **state)
{
	(void)state;
	write_trace(100); /* header 38 bytes; rows 0-9 take 9 bytes, 10-99 10 */
	struct lsim_workload *w = NULL;
	struct lsim_diag d = {0};
	assert_int_equal(open_it(NULL, &w, &d), 0);
	double size = 38 + 10 * 9 + 90 * 10;
	struct lsim_req_spec r;
	for (int i = 0; i < 50; i++)
		assert_int_equal(lsim_workload_next(w, &r, &d), 1);
	/* the reader has taken the 50th row's line: header + 10 x 9 + 40 x 10 */
	assert_true(fabs(lsim_workload_fraction(w) - (38 + 90 + 400) / size) < 1e-12);
	while (lsim_workload_next(w, &r, &d) == 1)
		;
	assert_true(lsim_workload_fraction(w) == 1);
	lsim_workload_destroy(w);
	struct lsim_shape_params sp = {.time_scale = 1, .keep = 1, .repeat = 2};
	assert_int_equal(lsim_workload_shape_create(open_it, NULL, &sp, NULL, &w, &d), 0);
	for (int i = 0; i < 150; i++)
		assert_int_equal(lsim_workload_next(w, &r, &d), 1);
	/* the second pass replays the first from memory: 50 of 100 rows */
	assert_true(fabs(lsim_workload_fraction(w) - 0.75) < 1e-12);
	lsim_workload_destroy(w);
	assert_true(lsim_workload_fraction(NULL) == -1);
	unlink(trace);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_window_scale_repeat),
		cmocka_unit_test(test_repeat_replays_first_pass),
		cmocka_unit_test(test_repeat_past_the_clock),
		cmocka_unit_test(test_thinning),
		cmocka_unit_test(test_bad_params),
		cmocka_unit_test(test_fraction),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
