/*
 * test_tsrec.c - the recorder of the stored time series (sim/report/tsrec.c):
 * a hand-computed coarsening of five samples under a cap of 4 rows, the
 * run-length encoding without a cap (the rows the run stored before the
 * cap existed), a cap too small for one period, and on random series the cap
 * kept and the time-integral of every averaged column conserved.
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
#include "report/tsrec.h"

static struct lsim_ts_sample row(int32_t inst, double busy, int32_t q, double power)
{
	return (struct lsim_ts_sample){.instance = inst, .gpu_busy = busy, .queue_len = q,
				       .power_w = power, .gpu_util = busy / 2,
				       .arrival_rate = 10 * busy, .kv_util = q / 10.0};
}

/* Period 1 s, cap 4 rows; samples (instance: busy, queue, power):
 *   t=1: 0: 0.2, 1, 100   1: 0.4, 3, 200
 *   t=2: 0: 0.6, 2, 300   (1 absent)
 *   t=3: 0: 1.0, 5, 500   1: 0.8, 7, 400
 *   t=4: 0: 0.0, 0, 100   1: 0.0, 1,   0
 *   t=5: 0: 0.3, 4, 150   (1 absent)
 * At t=3 the rows (2+1+2 = 5) pass 4: periods 1,2 merge into [0,2]:
 *   0: busy (0.2+0.6)/2 = 0.4, queue 2, power 200; 1: busy 0.4/2 = 0.2,
 *   queue 3 (its last), power 100; t=3 waits for t=4 to fill [2,4]:
 *   0: busy 0.5, queue 0, power 300; 1: busy 0.4, queue 1, power 200 (4 rows).
 * t=5 starts [4,6]; the run ends there: the partial period (1 s) makes 5
 * rows, so at the end [0,4] and [4,5] (periods of 4 s):
 *   t=4: 0: busy (0.4x2 + 0.5x2)/4 = 0.45, queue 0, power 250
 *        1: busy (0.2x2 + 0.4x2)/4 = 0.3, queue 1, power 150
 *   t=5: 0: busy 0.3, queue 4, power 150 (1 s, its own mean)
 * The integral of busy: 0.2+0.6+1.0+0.0+0.3 + 0.4+0.8 = 3.3 =
 * 0.45x4 + 0.3x4 + 0.3x1. */
static void test_hand(void **state)
{
	(void)state;
	struct lsim_tsrec *r = lsim_tsrec_create(&lsim_tsrec_instances, LSIM_S, 4);
	assert_non_null(r);
	struct lsim_ts_sample s1[] = {row(0, 0.2, 1, 100), row(1, 0.4, 3, 200)};
	struct lsim_ts_sample s2[] = {row(0, 0.6, 2, 300)};
	struct lsim_ts_sample s3[] = {row(0, 1.0, 5, 500), row(1, 0.8, 7, 400)};
	struct lsim_ts_sample s4[] = {row(0, 0.0, 0, 100), row(1, 0.0, 1, 0)};
	struct lsim_ts_sample s5[] = {row(0, 0.3, 4, 150)};
	assert_int_equal(lsim_tsrec_add(r, 1 * LSIM_S, s1, 2), 0);
	assert_int_equal(lsim_tsrec_add(r, 2 * LSIM_S, s2, 1), 0);
	assert_int_equal(lsim_tsrec_rows(r), 3);
	assert_int_equal(lsim_tsrec_add(r, 3 * LSIM_S, s3, 2), 0);
	assert_int_equal(lsim_tsrec_factor(r), 2);
	assert_int_equal(lsim_tsrec_rows(r), 2);
	assert_int_equal(lsim_tsrec_add(r, 4 * LSIM_S, s4, 2), 0);
	assert_int_equal(lsim_tsrec_rows(r), 4);
	assert_int_equal(lsim_tsrec_add(r, 5 * LSIM_S, s5, 1), 0);
	const void *out;
	size_t n;
	double period;
	assert_int_equal(lsim_tsrec_finish(r, &out, &n, &period), 0);
	assert_int_equal(n, 3);
	assert_true(period == 4.0);
	const struct lsim_ts_sample *o = out;
	const struct {
		double t;
		int32_t inst, q;
		double busy, power;
	} want[] = {{4, 0, 0, 0.45, 250}, {4, 1, 1, 0.3, 150}, {5, 0, 4, 0.3, 150}};
	for (size_t i = 0; i < 3; i++) {
		assert_true(o[i].t == want[i].t);
		assert_int_equal(o[i].instance, want[i].inst);
		assert_int_equal(o[i].queue_len, want[i].q);
		assert_true(fabs(o[i].gpu_busy - want[i].busy) < 1e-12);
		assert_true(fabs(o[i].gpu_util - want[i].busy / 2) < 1e-12);
		assert_true(fabs(o[i].arrival_rate - 10 * want[i].busy) < 1e-12);
		assert_true(fabs(o[i].power_w - want[i].power) < 1e-9);
		assert_true(o[i].kv_util == want[i].q / 10.0); /* a point value */
	}
	/* a second call gives the same */
	const void *again;
	assert_int_equal(lsim_tsrec_finish(r, &again, &n, &period), 0);
	assert_ptr_equal(again, out);
	lsim_tsrec_destroy(r);
}

/* No cap: samples A A A B (none) B at t = 1..6 are stored as A@1 A@3 B@4
 * B@6: every stretch of equal samples keeps its first and last, and the
 * sample without rows breaks the stretch (as before the cap existed). */
static void test_rle_uncapped(void **state)
{
	(void)state;
	struct lsim_tsrec *r = lsim_tsrec_create(&lsim_tsrec_instances, LSIM_S, 0);
	assert_non_null(r);
	struct lsim_ts_sample a[] = {row(0, 0.5, 1, 10), row(2, 0.1, 0, 20)};
	struct lsim_ts_sample b[] = {row(0, 0.5, 2, 10), row(2, 0.1, 0, 20)};
	const struct lsim_ts_sample *seq[] = {a, a, a, b, NULL, b};
	for (int i = 0; i < 6; i++)
		assert_int_equal(lsim_tsrec_add(r, (i + 1) * LSIM_S, seq[i], seq[i] ? 2 : 0), 0);
	const void *out;
	size_t n;
	double period;
	assert_int_equal(lsim_tsrec_finish(r, &out, &n, &period), 0);
	assert_int_equal(n, 8);
	assert_true(period == 1.0);
	const struct lsim_ts_sample *o = out;
	const double t[] = {1, 1, 3, 3, 4, 4, 6, 6};
	for (size_t i = 0; i < n; i++) {
		assert_true(o[i].t == t[i]);
		assert_int_equal(o[i].queue_len, i < 4 ? (i % 2 ? 0 : 1) : (i % 2 ? 0 : 2));
	}
	lsim_tsrec_destroy(r);
}

/* A cap below the rows of one sample is refused, not silently exceeded. */
static void test_cap_too_small(void **state)
{
	(void)state;
	struct lsim_tsrec *r = lsim_tsrec_create(&lsim_tsrec_instances, LSIM_S, 2);
	struct lsim_ts_sample s[] = {row(0, 0.5, 1, 10), row(1, 0.1, 0, 20), row(2, 0, 0, 0)};
	assert_int_equal(lsim_tsrec_add(r, LSIM_S, s, 3), LSIM_ERANGE);
	lsim_tsrec_destroy(r);
	/* keys that do not ascend are a caller's error */
	r = lsim_tsrec_create(&lsim_tsrec_instances, LSIM_S, 0);
	struct lsim_ts_sample d[] = {row(1, 0.5, 1, 10), row(0, 0.1, 0, 20)};
	assert_int_equal(lsim_tsrec_add(r, LSIM_S, d, 2), LSIM_EINVAL);
	lsim_tsrec_destroy(r);
}

/* The integral over the run of an averaged column (busy, or a link's util)
 * of stored rows: the value at a recorded period's end is the row at the
 * first stored time at or after it (run-length encoding), or none (links:
 * a row only when non-zero); each counts for its period, the last up to
 * t_last. */
static double ts_t(const void *p)
{
	return ((const struct lsim_ts_sample *)p)->t;
}

static double link_t(const void *p)
{
	return ((const struct lsim_link_sample *)p)->t;
}

static double integral(const void *rows, size_t n, size_t size, double period,
		       double t_last, bool rle, double (*t_of)(const void *),
		       double (*val)(const void *))
{
	double sum = 0, prev = 0, eps = 1e-6 * period;
	size_t i = 0;
#define AT(q) ((const char *)rows + (q) * size)
	for (int64_t j = 1; prev < t_last - eps; j++) {
		double g = fmin((double)j * period, t_last);
		while (i < n && t_of(AT(i)) < g - eps)
			i++;
		for (size_t q = i; q < n; q++) {
			double tq = t_of(AT(q));
			if (fabs(tq - t_of(AT(i))) > eps || (!rle && fabs(tq - g) > eps))
				break;
			sum += val(AT(q)) * (g - prev);
		}
		prev = g;
	}
#undef AT
	return sum;
}

static double busy_of(const void *p)
{
	return ((const struct lsim_ts_sample *)p)->gpu_busy;
}

static double power_of(const void *p)
{
	return ((const struct lsim_ts_sample *)p)->power_w;
}

static double util_of(const void *p)
{
	return ((const struct lsim_link_sample *)p)->util;
}

/* Random series of 3000 samples of up to 12 instances (each present with
 * probability 0.8, values often repeating so runs form) and up to 40 links
 * (each active with probability 0.3): under caps of 64, 101 and 1000 rows (64 above the 40 links one period may hold)
 * the rows stay within the cap and the integrals of gpu_busy, power_w and
 * util equal the uncapped series' to 1e-9 relative. */
static void test_random_conserved(void **state)
{
	(void)state;
	const uint64_t caps[] = {0, 64, 101, 1000};
	const int N = 3000;
	double ref[3] = {0};
	for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
		struct lsim_tsrec *ri = lsim_tsrec_create(&lsim_tsrec_instances, LSIM_S / 10, caps[c]);
		struct lsim_tsrec *rl = lsim_tsrec_create(&lsim_tsrec_links, LSIM_S / 10, caps[c]);
		srand(7);
		for (int s = 1; s <= N; s++) {
			struct lsim_ts_sample in[12];
			struct lsim_link_sample li[40];
			size_t ni = 0, nl = 0;
			bool idle = (s / 200) % 2 == 1; /* stretches of equal samples */
			for (int32_t i = 0; i < 12; i++)
				if (idle ? i < 3 : rand() % 10 < 8)
					in[ni++] = idle ? row(i, 0, 0, 50)
							: row(i, (rand() % 5) / 4.0, rand() % 3,
							      100 + rand() % 200);
			for (int32_t l = 0; l < 40 && !idle; l++)
				if (rand() % 10 < 3)
					li[nl++] = (struct lsim_link_sample){.link = l,
									     .util = (1 + rand() % 100) / 100.0};
			assert_int_equal(lsim_tsrec_add(ri, s * (LSIM_S / 10), in, ni), 0);
			assert_int_equal(lsim_tsrec_add(rl, s * (LSIM_S / 10), li, nl), 0);
			if (caps[c]) {
				assert_true(lsim_tsrec_rows(ri) <= caps[c]);
				assert_true(lsim_tsrec_rows(rl) <= caps[c]);
			}
		}
		const void *oi, *ol;
		size_t n_i, n_l;
		double pi, pl;
		assert_int_equal(lsim_tsrec_finish(ri, &oi, &n_i, &pi), 0);
		assert_int_equal(lsim_tsrec_finish(rl, &ol, &n_l, &pl), 0);
		if (caps[c]) {
			assert_true(n_i <= caps[c] && n_l <= caps[c]);
			assert_true(pi > 0.1 && pl > 0.1); /* coarsened */
		}
		double t_last = N / 10.0;
		double v[3] = {
			integral(oi, n_i, sizeof(struct lsim_ts_sample), pi, t_last, true, ts_t, busy_of),
			integral(oi, n_i, sizeof(struct lsim_ts_sample), pi, t_last, true, ts_t, power_of),
			integral(ol, n_l, sizeof(struct lsim_link_sample), pl, t_last, false, link_t, util_of)};
		for (int k = 0; k < 3; k++) {
			if (c == 0)
				ref[k] = v[k];
			assert_true(ref[k] > 0);
			assert_true(fabs(v[k] - ref[k]) <= 1e-9 * ref[k]);
		}
		lsim_tsrec_destroy(ri);
		lsim_tsrec_destroy(rl);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hand),
		cmocka_unit_test(test_rle_uncapped),
		cmocka_unit_test(test_cap_too_small),
		cmocka_unit_test(test_random_conserved),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
