/*
 * test_cost.c - unit tests of sim/cluster/cost.c against hand-computed values:
 * billing (rounding up to the granularity, the minimum, zero length), the
 * power model P(u) (formula, exponent, table, profile, GSL line fit of the
 * Splitwise A100 points that docs/cost.md derives its numbers from),
 * energy from samples (step and trapezoid), carbon over intervals crossing
 * series steps (plain and periodic, cursor moved back), the accumulator,
 * per-token and per-tenant attribution, the carbon and power-table CSV
 * readers and their errors (file, line, column, key), and the shipped
 * calibrate/prices.yaml with the errors of bad price files.
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

#include "cluster/cost.h"
#include "kernel/csv.h"
#include "cluster/hw.h"

#define EPS 1e-9

static void src_path(char *buf, size_t size, const char *rel)
{
	const char *root = getenv("LSIM_SOURCE_ROOT");
	snprintf(buf, size, "%s/%s", root ? root : ".", rel);
}

/* Writes text to a fresh temporary file; the caller unlinks it. */
static void tmp_write(char *path, size_t size, const char *text)
{
	const char *base = getenv("LSIM_BUILD_ROOT");
	snprintf(path, size, "%s/test_cost_XXXXXX", base ? base : ".");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	size_t n = strlen(text);
	assert_int_equal(write(fd, text, n), (ssize_t)n);
	assert_int_equal(close(fd), 0);
}

static void clear(struct lsim_diag *d)
{
	memset(d, 0, sizeof *d);
}

/* ---- billing ---- */

static void test_bill_rounding_and_minimum(void **state)
{
	(void)state;
	const lsim_time s = LSIM_S;
	/* AWS-style: per second, 60 s minimum, at $3.60/h = $0.001/s. */
	assert_int_equal(lsim_billed_ns(0, 61 * s + s / 2, s, 60 * s), 62 * s);
	assert_float_equal(lsim_bill(3.6, 0, 61 * s + s / 2, s, 60 * s), 0.062, EPS);
	assert_float_equal(lsim_bill(3.6, 0, 61 * s, s, 60 * s), 0.061, EPS);
	/* one nanosecond over a whole second rounds up a full second */
	assert_int_equal(lsim_billed_ns(0, 61 * s + 1, s, 60 * s), 62 * s);
	/* below the minimum */
	assert_float_equal(lsim_bill(3.6, 10 * s, 40 * s, s, 60 * s), 0.060, EPS);
	/* zero length still pays the minimum; stop before start counts as zero */
	assert_int_equal(lsim_billed_ns(5 * s, 5 * s, s, 60 * s), 60 * s);
	assert_float_equal(lsim_bill(3.6, 5 * s, 5 * s, s, 60 * s), 0.060, EPS);
	assert_int_equal(lsim_billed_ns(9 * s, 5 * s, s, 60 * s), 60 * s);
	/* no minimum, no granularity: exact */
	assert_int_equal(lsim_billed_ns(0, 0, s, 0), 0);
	assert_float_equal(lsim_bill(3.6, 0, 61 * s + s / 2, 0, 0), 0.0615, EPS);
	/* per-minute (Lambda): 61 s -> 2 min; a minimum that is not a multiple
	 * of the granularity is rounded up too: 10 s -> 90 s -> 120 s */
	assert_int_equal(lsim_billed_ns(0, 61 * s, 60 * s, 60 * s), 120 * s);
	assert_float_equal(lsim_bill(3.6, 0, 61 * s, 60 * s, 60 * s), 0.12, EPS);
	assert_int_equal(lsim_billed_ns(0, 10 * s, 60 * s, 90 * s), 120 * s);
	/* an hour at $98.32/h */
	assert_float_equal(lsim_bill(98.32, 0, 3600 * s, s, 60 * s), 98.32, EPS);
	/* overflow saturates instead of wrapping */
	assert_int_equal(lsim_billed_ns(0, LSIM_TIME_MAX, 7, 0), LSIM_TIME_MAX);

	struct lsim_instance_price ip;
	memset(&ip, 0, sizeof ip);
	ip.gpus = 8;
	ip.on_demand = 28.8; /* $3.60 per GPU-hour */
	ip.spot = 7.2;
	ip.billing_granularity = s;
	ip.billing_minimum = 60 * s;
	struct lsim_billing b;
	lsim_billing_from_price(&b, &ip, 2, false);
	assert_float_equal(b.price_per_hour, 7.2, EPS);
	assert_float_equal(lsim_billing_cost(&b, 0, 100 * s), 0.2, EPS);
	lsim_billing_from_price(&b, &ip, 8, true);
	assert_float_equal(b.price_per_hour, 7.2, EPS);
	assert_float_equal(lsim_price_per_gpu_hour(&ip, true), 0.9, EPS);
}

/* ---- power ---- */

static void test_power_formula(void **state)
{
	(void)state;
	struct lsim_power_model pm;
	struct lsim_diag d;
	clear(&d);
	assert_int_equal(lsim_power_model_init(&pm, 100, 700, 1, &d), 0);
	assert_float_equal(lsim_power_w(&pm, 0), 100, EPS);
	assert_float_equal(lsim_power_w(&pm, 0.5), 400, EPS);
	assert_float_equal(lsim_power_w(&pm, 1), 700, EPS);
	/* clamped outside [0, 1]; NaN counts as idle */
	assert_float_equal(lsim_power_w(&pm, -0.3), 100, EPS);
	assert_float_equal(lsim_power_w(&pm, 1.7), 700, EPS);
	assert_float_equal(lsim_power_w(&pm, NAN), 100, EPS);
	/* exponent: 100 + 600 * 0.5^2 = 250; 100 + 600 * 0.25^0.5 = 400 */
	assert_int_equal(lsim_power_model_init(&pm, 100, 700, 2, &d), 0);
	assert_float_equal(lsim_power_w(&pm, 0.5), 250, EPS);
	assert_float_equal(lsim_power_w(&pm, 1), 700, EPS);
	assert_int_equal(lsim_power_model_init(&pm, 100, 700, 0.5, &d), 0);
	assert_float_equal(lsim_power_w(&pm, 0.25), 400, EPS);

	assert_int_equal(lsim_power_model_init(&pm, 800, 700, 1, &d), LSIM_EINVAL);
	assert_string_equal(d.key, "power");
	assert_int_equal(lsim_power_model_init(&pm, -1, 700, 1, &d), LSIM_EINVAL);
	assert_int_equal(lsim_power_model_init(&pm, 100, 700, 0, &d), LSIM_ERANGE);
	assert_string_equal(d.key, "alpha");

	/* from a profile: idle_power and tdp, linear */
	struct lsim_gpu_profile g;
	memset(&g, 0, sizeof g);
	g.idle_w = 60;
	g.tdp_w = 400;
	assert_int_equal(lsim_power_model_init_profile(&pm, &g, &d), 0);
	assert_float_equal(lsim_power_w(&pm, 0), 60, EPS);
	assert_float_equal(lsim_power_w(&pm, 0.5), 230, EPS);
	assert_float_equal(lsim_power_w(&pm, 1), 400, EPS);
}

static void test_power_table(void **state)
{
	(void)state;
	struct lsim_power_model pm;
	struct lsim_diag d;
	clear(&d);
	const double u[] = {0, 0.5, 1}, w[] = {60, 300, 400};
	assert_int_equal(lsim_power_model_init_table(&pm, u, w, 3, &d), 0);
	assert_float_equal(lsim_power_w(&pm, 0), 60, EPS);
	assert_float_equal(lsim_power_w(&pm, 0.25), 180, EPS);
	assert_float_equal(lsim_power_w(&pm, 0.5), 300, EPS);
	assert_float_equal(lsim_power_w(&pm, 0.75), 350, EPS);
	assert_float_equal(lsim_power_w(&pm, 1), 400, EPS);
	assert_float_equal(pm.idle_w, 60, EPS);
	assert_float_equal(pm.max_w, 400, EPS);
	/* held flat beyond the ends */
	const double u2[] = {0.2, 0.6}, w2[] = {150, 250};
	assert_int_equal(lsim_power_model_init_table(&pm, u2, w2, 2, &d), 0);
	assert_float_equal(lsim_power_w(&pm, 0.1), 150, EPS);
	assert_float_equal(lsim_power_w(&pm, 0.4), 200, EPS);
	assert_float_equal(lsim_power_w(&pm, 0.9), 250, EPS);
	assert_float_equal(pm.idle_w, 150, EPS);

	const double bad_u[] = {0, 0.5, 0.5};
	assert_int_equal(lsim_power_model_init_table(&pm, bad_u, w, 3, &d),
			 LSIM_EINVAL);
	assert_non_null(strstr(d.msg, "point 3"));
	assert_int_equal(lsim_power_model_init_table(&pm, u, w, 1, &d), LSIM_EINVAL);

	/* the A100 table derived from Splitwise (tests/data/cost) */
	char path[1024];
	src_path(path, sizeof path, "tests/data/cost/a100_power_table.csv");
	clear(&d);
	int rc = lsim_power_model_load_table(&pm, path, &d);
	if (rc != 0)
		fail_msg("%s:%d:%d: %s: %s", d.file, d.line, d.col, d.key, d.msg);
	assert_int_equal(pm.n, 6);
	assert_float_equal(lsim_power_w(&pm, 0), 60, EPS);
	assert_float_equal(lsim_power_w(&pm, 0.192), 173.1, EPS);
	assert_float_equal(lsim_power_w(&pm, 0.096), 116.55, EPS);
	assert_float_equal(lsim_power_w(&pm, 1), 400, EPS);
}

static void test_power_table_csv_errors(void **state)
{
	(void)state;
	struct lsim_power_model pm;
	struct lsim_diag d;
	char path[1024];

	tmp_write(path, sizeof path, "util,watts\n0,60\n1,400\n");
	clear(&d);
	assert_int_equal(lsim_power_model_load_table(&pm, path, &d), LSIM_EFORMAT);
	assert_int_equal(d.line, 1);
	assert_string_equal(d.key, "power_w");
	unlink(path);

	tmp_write(path, sizeof path, "util,power_w\n0,60\n0.5,x\n1,400\n");
	clear(&d);
	assert_int_equal(lsim_power_model_load_table(&pm, path, &d), LSIM_EFORMAT);
	assert_string_equal(d.file, path);
	assert_int_equal(d.line, 3);
	assert_int_equal(d.col, 5);
	assert_string_equal(d.key, "power_w");
	unlink(path);

	tmp_write(path, sizeof path, "util,power_w\n0,60\n0.5,200\n0.4,300\n");
	clear(&d);
	assert_int_equal(lsim_power_model_load_table(&pm, path, &d), LSIM_EFORMAT);
	assert_int_equal(d.line, 4);
	assert_int_equal(d.col, 1);
	assert_string_equal(d.key, "util");
	unlink(path);
}

/*
 * The derivation in docs/cost.md: decode-dominated Splitwise runs on DGX
 * A100-80GB (power as a fraction of the 400 W limit) against the fraction
 * of HBM bandwidth the weights stream at. A line fits with idle 0.309 and
 * maximum 1.01 of TDP (r^2 0.987); keeping the profile's 60 W idle and 400 W
 * maximum, u^0.7 fits far better than a line (RMS 6.6 W against 40 W).
 */
static void test_splitwise_fit(void **state)
{
	(void)state;
	char path[1024];
	src_path(path, sizeof path, "tests/data/cost/splitwise_a100_power.csv");
	struct lsim_csv *r = NULL;
	struct lsim_diag d;
	clear(&d);
	assert_int_equal(lsim_csv_open(path, &r, &d), 0);
	static const char *const cols[] = {"util", "power_frac"};
	int idx[2];
	assert_int_equal(lsim_csv_require(r, cols, 2, idx, &d), 0);
	double u[64], w[64];
	size_t n = 0;
	while (lsim_csv_next(r, &d) == 1 && n < 64) {
		u[n] = atof(lsim_csv_field(r, idx[0]));
		w[n] = 400.0 * atof(lsim_csv_field(r, idx[1]));
		n++;
	}
	lsim_csv_close(r);
	assert_int_equal(n, 16);

	struct lsim_power_model pm;
	double r2 = 0;
	assert_int_equal(lsim_power_model_fit_linear(&pm, u, w, n, &r2, &d), 0);
	assert_float_equal(pm.idle_w, 123.57, 0.01);
	assert_float_equal(pm.max_w, 403.79, 0.01);
	assert_float_equal(r2, 0.9867, 1e-4);

	double sse[2];
	const double alpha[2] = {0.7, 1.0};
	for (int k = 0; k < 2; k++) {
		assert_int_equal(lsim_power_model_init(&pm, 60, 400, alpha[k], &d), 0);
		sse[k] = 0;
		for (size_t i = 0; i < n; i++) {
			double e = lsim_power_w(&pm, u[i]) - w[i];
			sse[k] += e * e;
		}
	}
	assert_float_equal(sqrt(sse[0] / (double)n), 6.60, 0.01);
	assert_float_equal(sqrt(sse[1] / (double)n), 40.29, 0.01);

	/* a falling line or one point per utilisation is refused */
	const double fu[] = {0, 0.5, 1}, fw[] = {300, 200, 100};
	assert_int_equal(lsim_power_model_fit_linear(&pm, fu, fw, 3, NULL, &d),
			 LSIM_ERANGE);
	const double su[] = {0.5, 0.5, 0.5};
	assert_int_equal(lsim_power_model_fit_linear(&pm, su, fw, 3, NULL, &d),
			 LSIM_EINVAL);
}

/* ---- energy ---- */

static void test_energy_samples(void **state)
{
	(void)state;
	struct lsim_power_model pm;
	struct lsim_diag d;
	clear(&d);
	assert_int_equal(lsim_power_model_init(&pm, 100, 700, 1, &d), 0);
	const lsim_time t[] = {0, 10 * LSIM_S, 20 * LSIM_S, 30 * LSIM_S};
	const double u[] = {0, 1, 0.5, 0.5};
	double j = -1;
	/* step: 100 W x 10 s + 700 W x 10 s + 400 W x 10 s */
	assert_int_equal(lsim_energy_samples(&pm, t, u, 4, LSIM_INTEG_STEP, &j, &d), 0);
	assert_float_equal(j, 12000, EPS);
	/* trapezoid: (100+700)/2 x 10 + (700+400)/2 x 10 + 400 x 10 */
	assert_int_equal(lsim_energy_samples(&pm, t, u, 4, LSIM_INTEG_TRAPEZOID, &j, &d), 0);
	assert_float_equal(j, 13500, EPS);
	assert_int_equal(lsim_energy_samples(&pm, t, u, 1, LSIM_INTEG_STEP, &j, &d), 0);
	assert_float_equal(j, 0, EPS);

	const lsim_time bad[] = {0, 10 * LSIM_S, 5 * LSIM_S};
	assert_int_equal(lsim_energy_samples(&pm, bad, u, 3, LSIM_INTEG_STEP, &j, &d),
			 LSIM_EINVAL);
	assert_string_equal(d.key, "time");
	const double nan_u[] = {0, NAN};
	assert_int_equal(lsim_energy_samples(&pm, t, nan_u, 2, LSIM_INTEG_STEP, &j, &d),
			 LSIM_EINVAL);
	assert_int_equal(lsim_energy_samples(&pm, t, u, 0, LSIM_INTEG_STEP, &j, &d),
			 LSIM_EINVAL);
}

/* ---- carbon ---- */

#define H (3600 * LSIM_S)

static void test_carbon_steps(void **state)
{
	(void)state;
	struct lsim_diag d;
	clear(&d);
	const lsim_time t[] = {0, H, 2 * H};
	const double v[] = {100, 300, 200};
	struct lsim_carbon_series *s = NULL;
	assert_int_equal(lsim_carbon_create(t, v, 3, 0, &s, &d), 0);
	assert_int_equal(lsim_carbon_steps(s), 3);
	struct lsim_carbon_cursor c;
	lsim_carbon_cursor_init(&c, s);
	assert_float_equal(lsim_carbon_at(&c, -5), 100, EPS);
	assert_float_equal(lsim_carbon_at(&c, H - 1), 100, EPS);
	assert_float_equal(lsim_carbon_at(&c, H), 300, EPS);
	assert_float_equal(lsim_carbon_at(&c, 10 * H), 200, EPS);
	assert_float_equal(lsim_carbon_at(&c, H + 1), 300, EPS); /* moved back */

	/* 1 kW over [0.5 h, 1.5 h]: 0.5 kWh at 100 + 0.5 kWh at 300 */
	lsim_carbon_cursor_init(&c, s);
	assert_float_equal(lsim_carbon_grams(&c, H / 2, 3 * H / 2, 1000), 200, 1e-9);
	/* 1 kW over [3000 s, 9000 s]: 600 s at 100, 3600 s at 300, 1800 s at 200 */
	assert_float_equal(lsim_carbon_grams(&c, 3000 * LSIM_S, 9000 * LSIM_S, 1000),
			   100.0 / 6 + 300 + 100, 1e-9);
	assert_float_equal(lsim_carbon_grams(&c, H, H, 1000), 0, EPS);
	lsim_carbon_destroy(s);

	/* periodic (24 h): 100 from 0 h, 300 from 12 h; [23 h, 25 h] at 1 kW
	 * is 1 h at 300 (the last step holds to midnight) + 1 h at 100 */
	const lsim_time tp[] = {0, 12 * H};
	const double vp[] = {100, 300};
	assert_int_equal(lsim_carbon_create(tp, vp, 2, 24 * H, &s, &d), 0);
	lsim_carbon_cursor_init(&c, s);
	assert_float_equal(lsim_carbon_grams(&c, 23 * H, 25 * H, 1000), 400, 1e-9);
	assert_float_equal(lsim_carbon_at(&c, 24 * H * 30 + 13 * H), 300, EPS);
	assert_float_equal(lsim_carbon_at(&c, -H), 300, EPS);
	lsim_carbon_destroy(s);

	/* periodic with the first step after midnight: before it, the last one */
	const lsim_time tq[] = {6 * H, 18 * H};
	const double vq[] = {200, 400};
	assert_int_equal(lsim_carbon_create(tq, vq, 2, 24 * H, &s, &d), 0);
	lsim_carbon_cursor_init(&c, s);
	assert_float_equal(lsim_carbon_at(&c, H), 400, EPS);
	assert_float_equal(lsim_carbon_at(&c, 7 * H), 200, EPS);
	/* [0, 24 h] at 1 kW: 6 h x 400 + 12 h x 200 + 6 h x 400 */
	assert_float_equal(lsim_carbon_grams(&c, 0, 24 * H, 1000), 7200, 1e-9);
	lsim_carbon_destroy(s);

	/* bad arrays */
	const lsim_time tb[] = {0, 0};
	assert_int_equal(lsim_carbon_create(tb, v, 2, 0, &s, &d), LSIM_EINVAL);
	assert_null(s);
	const double vb[] = {-1};
	assert_int_equal(lsim_carbon_create(t, vb, 1, 0, &s, &d), LSIM_ERANGE);
	assert_int_equal(lsim_carbon_create(tp, vp, 2, 10 * H, &s, &d), LSIM_ERANGE);
}

static void test_carbon_csv(void **state)
{
	(void)state;
	char path[1024];
	struct lsim_diag d;
	struct lsim_carbon_series *s = NULL;
	struct lsim_carbon_cursor c;

	/* ISO timestamps, relative to the first row, with an offset */
	src_path(path, sizeof path, "tests/data/cost/carbon_iso.csv");
	clear(&d);
	int rc = lsim_carbon_load(path, 0, &s, &d);
	if (rc != 0)
		fail_msg("%s:%d:%d: %s: %s", d.file, d.line, d.col, d.key, d.msg);
	assert_int_equal(lsim_carbon_steps(s), 3);
	lsim_carbon_cursor_init(&c, s);
	assert_float_equal(lsim_carbon_at(&c, 0), 250, EPS);
	assert_float_equal(lsim_carbon_at(&c, 30 * 60 * LSIM_S - 1), 250, EPS);
	assert_float_equal(lsim_carbon_at(&c, 30 * 60 * LSIM_S), 125.5, EPS);
	assert_float_equal(lsim_carbon_at(&c, 2 * H), 400, EPS);
	lsim_carbon_destroy(s);

	/* the shipped illustrative 24-hour profile: hourly, mean 381 */
	src_path(path, sizeof path, "calibrate/carbon-illustrative-24h.csv");
	rc = lsim_carbon_load(path, 24 * H, &s, &d);
	if (rc != 0)
		fail_msg("%s:%d:%d: %s: %s", d.file, d.line, d.col, d.key, d.msg);
	assert_int_equal(lsim_carbon_steps(s), 24);
	lsim_carbon_cursor_init(&c, s);
	/* a day at 1 kW: 24 kWh at a mean of 381 g/kWh, also across midnight */
	assert_float_equal(lsim_carbon_grams(&c, 0, 24 * H, 1000), 24 * 381, 1e-6);
	assert_float_equal(lsim_carbon_grams(&c, 5 * H, 29 * H, 1000), 24 * 381, 1e-6);
	assert_float_equal(lsim_carbon_at(&c, 12 * H + 5), 273, EPS);
	lsim_carbon_destroy(s);
}

struct csv_case {
	const char *text;
	int rc, line, col;
	const char *key;
	const char *msg_part;
};

static void test_carbon_csv_errors(void **state)
{
	(void)state;
	static const struct csv_case cases[] = {
		/* missing value column: header line, key = column name */
		{"time_s,intensity\n0,100\n", LSIM_EFORMAT, 1, 0, "gco2_per_kwh",
		 "gco2_per_kwh"},
		/* missing time column */
		{"hour,gco2_per_kwh\n0,100\n", LSIM_EFORMAT, 1, 0, "time_s",
		 "timestamp"},
		/* non-numeric intensity on line 3, column 6 */
		{"time_s,gco2_per_kwh\n0,100\n3600,high\n", LSIM_EFORMAT, 3, 6,
		 "gco2_per_kwh", "not a number"},
		/* non-numeric time */
		{"time_s,gco2_per_kwh\n0,100\n1h,200\n", LSIM_EFORMAT, 3, 1,
		 "time_s", "malformed"},
		/* time not increasing on line 4 (equal counts too) */
		{"time_s,gco2_per_kwh\n0,100\n3600,200\n3600,300\n", LSIM_EFORMAT,
		 4, 1, "time_s", "increase"},
		{"gco2_per_kwh,time_s\n100,0\n200,7200\n300,3600\n", LSIM_EFORMAT,
		 4, 5, "time_s", "increase"},
		{"timestamp,gco2_per_kwh\n2024-01-01T01:00:00Z,1\n"
		 "2024-01-01T02:00:00+02:00,2\n",
		 LSIM_EFORMAT, 3, 1, "timestamp", "increase"},
		/* negative intensity */
		{"time_s,gco2_per_kwh\n0,-5\n", LSIM_ERANGE, 2, 3, "gco2_per_kwh",
		 "negative"},
		/* short row */
		{"time_s,gco2_per_kwh\n0,100\n60\n", LSIM_EFORMAT, 3, 0,
		 "gco2_per_kwh", "fields"},
		/* no rows */
		{"time_s,gco2_per_kwh\n", LSIM_EFORMAT, 1, 0, "", "no rows"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct csv_case *k = &cases[i];
		char path[1024];
		tmp_write(path, sizeof path, k->text);
		struct lsim_diag d;
		clear(&d);
		struct lsim_carbon_series *s = NULL;
		int rc = lsim_carbon_load(path, 0, &s, &d);
		if (rc != k->rc || d.line != k->line || d.col != k->col ||
		    strcmp(d.key, k->key) != 0 || !strstr(d.msg, k->msg_part))
			fail_msg("case %zu: rc %d %s:%d:%d: %s: %s", i, rc, d.file,
				 d.line, d.col, d.key, d.msg);
		assert_null(s);
		assert_string_equal(d.file, path);
		unlink(path);
	}
	/* a period the times do not fit in: the row is named */
	char path[1024];
	tmp_write(path, sizeof path,
		  "time_s,gco2_per_kwh\n0,1\n90000,2\n");
	struct lsim_diag d;
	clear(&d);
	struct lsim_carbon_series *s = NULL;
	assert_int_equal(lsim_carbon_load(path, 24 * H, &s, &d), LSIM_ERANGE);
	assert_int_equal(d.line, 3);
	assert_non_null(strstr(d.msg, "period"));
	unlink(path);
	assert_int_equal(lsim_carbon_load("/nonexistent/c.csv", 0, &s, &d),
			 LSIM_ENOENT);
}

/* ---- accumulator ---- */

static void test_accumulator(void **state)
{
	(void)state;
	struct lsim_diag d;
	clear(&d);
	struct lsim_power_model pm;
	assert_int_equal(lsim_power_model_init(&pm, 100, 700, 1, &d), 0);
	const lsim_time t[] = {0, H, 2 * H};
	const double v[] = {100, 300, 200};
	struct lsim_carbon_series *s = NULL;
	assert_int_equal(lsim_carbon_create(t, v, 3, 0, &s, &d), 0);

	/* 2 GPUs at u 0.5: 800 W IT; PUE 1.25: 1 kW at the facility */
	struct lsim_energy_acc acc;
	assert_int_equal(lsim_energy_acc_init(&acc, &pm, 2, 1.25, 0, s, &d), 0);
	assert_int_equal(lsim_energy_acc_add(&acc, H / 2, 3 * H / 2, 0.5), 0);
	assert_float_equal(acc.gpu_j, 800.0 * 3600, 1e-6);
	assert_float_equal(acc.facility_j, 1000.0 * 3600, 1e-6);
	assert_float_equal(lsim_energy_acc_kwh(&acc), 1.0, 1e-12);
	assert_float_equal(acc.carbon_g, 200, 1e-9);
	/* idle for 0.5 h more: 200 W IT, 250 W facility, at 300 g/kWh */
	assert_int_equal(lsim_energy_acc_add(&acc, 3 * H / 2, 2 * H, 0), 0);
	assert_float_equal(acc.gpu_j, 800.0 * 3600 + 200.0 * 1800, 1e-6);
	assert_float_equal(acc.carbon_g, 200 + 0.125 * 300, 1e-9);
	assert_float_equal(lsim_energy_acc_mean_util(&acc), 0.5 * 2 / 3, 1e-12);
	assert_int_equal(acc.first, H / 2);
	assert_int_equal(acc.last, 2 * H);
	/* util above 1 is clamped; bad input adds nothing */
	assert_int_equal(lsim_energy_acc_add(&acc, 2 * H, H, 0.5), LSIM_EINVAL);
	assert_int_equal(lsim_energy_acc_add(&acc, 2 * H, 3 * H, NAN), LSIM_EINVAL);
	assert_float_equal(acc.gpu_j, 800.0 * 3600 + 200.0 * 1800, 1e-6);

	/* billing: 1.5 h of a replica on 2 of 8 GPUs at $28.80/instance-hour */
	struct lsim_billing b = {7.2, LSIM_S, 60 * LSIM_S};
	assert_float_equal(lsim_energy_acc_cost(&acc, &b), 10.8, 1e-9);
	lsim_carbon_destroy(s);

	/* constant intensity: 1 GPU at u 1.5 (clamped: 700 W), PUE 1, 481 g/kWh, 1 h */
	assert_int_equal(lsim_energy_acc_init(&acc, &pm, 1, 1.0, 481, NULL, &d), 0);
	assert_float_equal(lsim_energy_acc_cost(&acc, &b), 0, EPS);
	assert_int_equal(lsim_energy_acc_add(&acc, 0, H, 1.5), 0);
	assert_float_equal(acc.gpu_j, 700.0 * 3600, 1e-6);
	assert_float_equal(acc.carbon_g, 0.7 * 481, 1e-9);

	assert_int_equal(lsim_energy_acc_init(&acc, &pm, 0, 1.2, 481, NULL, &d),
			 LSIM_EINVAL);
	assert_int_equal(lsim_energy_acc_init(&acc, &pm, 1, 0.9, 481, NULL, &d),
			 LSIM_ERANGE);
	assert_string_equal(d.key, "pue");
}

static void test_attribution(void **state)
{
	(void)state;
	assert_float_equal(lsim_per_mtok(0.12, 40000), 3.0, 1e-12);
	assert_true(isnan(lsim_per_mtok(1, 0)));

	/* instance 0: $10 split 30:10; instance 1: $6 split 1:3;
	 * instance 2: $5 served nothing */
	const double cost[] = {10, 6, 5};
	const double tok[] = {30, 10, 1, 3, 0, 0};
	double out[2], un = -1;
	struct lsim_diag d;
	clear(&d);
	assert_int_equal(lsim_attribute_by_tokens(cost, 3, tok, 2, out, &un, &d), 0);
	assert_float_equal(out[0], 7.5 + 1.5, 1e-12);
	assert_float_equal(out[1], 2.5 + 4.5, 1e-12);
	assert_float_equal(un, 5, 1e-12);
	assert_float_equal(out[0] + out[1] + un, 21, 1e-12);
	const double neg[] = {1, -1};
	assert_int_equal(lsim_attribute_by_tokens(cost, 1, neg, 2, out, NULL, &d),
			 LSIM_EINVAL);
}

/* ---- prices ---- */

static void test_prices_shipped(void **state)
{
	(void)state;
	char path[1024];
	src_path(path, sizeof path, "calibrate/prices.yaml");
	struct lsim_prices *p = NULL;
	struct lsim_diag d;
	clear(&d);
	int rc = lsim_prices_load(path, &p, &d);
	if (rc != 0)
		fail_msg("%s:%d:%d: %s: %s", d.file, d.line, d.col, d.key, d.msg);
	assert_true(p->n >= 20);
	const struct lsim_instance_price *ip = NULL;
	assert_int_equal(lsim_prices_find(p, "aws-p5.48xlarge", &ip, &d), 0);
	assert_string_equal(ip->gpu, "H100-SXM");
	assert_int_equal(ip->gpus, 8);
	assert_float_equal(ip->on_demand, 55.04, EPS);
	assert_float_equal(lsim_price_per_gpu_hour(ip, false), 6.88, EPS);
	assert_float_equal(ip->spot, 0, EPS);
	assert_string_equal(ip->region, "us-east-1");
	assert_string_equal(ip->observed, "2026-11-09");
	assert_int_equal(ip->billing_granularity, LSIM_S);
	assert_int_equal(ip->billing_minimum, 60 * LSIM_S);
	assert_int_equal(lsim_prices_find(p, "lambda-8x-h100-sxm", &ip, &d), 0);
	assert_int_equal(ip->billing_granularity, 60 * LSIM_S);
	assert_float_equal(lsim_price_per_gpu_hour(ip, false), 3.99, EPS);
	assert_int_equal(lsim_prices_find(p, "aws-p4d.24xlarge-2024", &ip, &d), 0);
	assert_float_equal(ip->spot, 9.83, EPS);
	assert_string_equal(ip->spot_observed, "2021-12");
	assert_string_equal(ip->observed, "2024");

	/* cheapest per GPU-hour */
	assert_int_equal(lsim_prices_cheapest(p, "H100-SXM", false, &ip, &d), 0);
	assert_string_equal(ip->name, "runpod-h100-sxm");
	assert_int_equal(lsim_prices_cheapest(p, "H100-SXM", true, &ip, &d), 0);
	assert_string_equal(ip->name, "gcp-a3-highgpu-8g");
	assert_int_equal(lsim_prices_cheapest(p, "RTX-4090", true, &ip, &d),
			 LSIM_ENOENT);
	assert_int_equal(lsim_prices_cheapest(p, "H100-SMX", false, &ip, &d),
			 LSIM_ENOENT);
	assert_non_null(strstr(d.msg, "did you mean 'H100-SXM'"));

	assert_int_equal(lsim_prices_find(p, "aws-p5.48xlarg", &ip, &d), LSIM_ENOENT);
	assert_null(ip);
	assert_string_equal(d.key, "name");
	assert_non_null(strstr(d.msg, "did you mean 'aws-p5.48xlarge'"));
	assert_int_equal(lsim_prices_find(p, "tpu-v5p", &ip, &d), LSIM_ENOENT);
	assert_non_null(strstr(d.msg, "known: aws-p5.48xlarge"));
	lsim_prices_destroy(p);
}

#define ENTRY \
	"  - name: a\n" \
	"    provider: aws\n" \
	"    instance: p5.48xlarge\n" \
	"    gpu: H100-SXM\n" \
	"    gpus: 8\n"
#define TAIL \
	"    region: us-east-1\n" \
	"    observed: 2026-11-09\n" \
	"    source: test\n"

struct yaml_case {
	const char *text;
	int rc, line;
	const char *key;
	const char *msg_part;
};

static void test_prices_errors(void **state)
{
	(void)state;
	static const struct yaml_case cases[] = {
		/* unknown key in an entry: did-you-mean, line of the key */
		{"instances:\n" ENTRY "    ondemand: $1/h\n" TAIL, LSIM_EINVAL, 7,
		 "instances[0].ondemand", "did you mean 'on_demand'?"},
		/* unknown top-level key */
		{"instance:\n" ENTRY "    on_demand: $1/h\n" TAIL, LSIM_EINVAL, 1,
		 "instance", "did you mean 'instances'?"},
		/* missing required key */
		{"instances:\n" ENTRY TAIL, LSIM_EINVAL, 2,
		 "instances[0].on_demand", "missing required key"},
		/* bad unit */
		{"instances:\n" ENTRY "    on_demand: 5 EUR\n" TAIL, LSIM_EINVAL, 7,
		 "instances[0].on_demand", "price"},
		/* bad date */
		{"instances:\n" ENTRY "    on_demand: $1/h\n"
		 "    region: x\n    observed: 2026-02-30\n    source: s\n",
		 LSIM_EINVAL, 9, "instances[0].observed", "not a date"},
		/* duplicate name */
		{"instances:\n" ENTRY "    on_demand: $1/h\n" TAIL
		 ENTRY "    on_demand: $2/h\n" TAIL,
		 LSIM_EINVAL, 11, "instances[1].name", "duplicate name 'a'"},
		/* zero GPUs */
		{"instances:\n  - name: a\n    provider: aws\n    instance: x\n"
		 "    gpu: H100-SXM\n    gpus: 0\n    on_demand: $1/h\n" TAIL,
		 LSIM_ERANGE, 6, "instances[0].gpus", "outside"},
		/* empty list */
		{"instances: []\n", LSIM_EFORMAT, 1, "instances", "non-empty"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct yaml_case *k = &cases[i];
		char path[1024];
		tmp_write(path, sizeof path, k->text);
		struct lsim_prices *p = NULL;
		struct lsim_diag d;
		clear(&d);
		int rc = lsim_prices_load(path, &p, &d);
		if (rc != k->rc || d.line != k->line || strcmp(d.key, k->key) != 0 ||
		    !strstr(d.msg, k->msg_part))
			fail_msg("case %zu: rc %d %s:%d:%d: %s: %s", i, rc, d.file,
				 d.line, d.col, d.key, d.msg);
		assert_string_equal(d.file, path);
		assert_null(p);
		unlink(path);
	}
	/* a good one-entry file */
	char path[1024];
	tmp_write(path, sizeof path,
		  "instances:\n" ENTRY "    on_demand: $2.5/h\n"
		  "    billing_granularity: 1min\n    billing_minimum: 0s\n" TAIL);
	struct lsim_prices *p = NULL;
	struct lsim_diag d;
	clear(&d);
	assert_int_equal(lsim_prices_load(path, &p, &d), 0);
	assert_int_equal(p->n, 1);
	assert_float_equal(p->items[0].on_demand, 2.5, EPS);
	assert_int_equal(p->items[0].billing_granularity, 60 * LSIM_S);
	assert_int_equal(p->items[0].billing_minimum, 0);
	assert_string_equal(p->items[0].note, "");
	lsim_prices_destroy(p);
	unlink(path);
	assert_int_equal(lsim_prices_load("/nonexistent/prices.yaml", &p, &d),
			 LSIM_ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bill_rounding_and_minimum),
		cmocka_unit_test(test_power_formula),
		cmocka_unit_test(test_power_table),
		cmocka_unit_test(test_power_table_csv_errors),
		cmocka_unit_test(test_splitwise_fit),
		cmocka_unit_test(test_energy_samples),
		cmocka_unit_test(test_carbon_steps),
		cmocka_unit_test(test_carbon_csv),
		cmocka_unit_test(test_carbon_csv_errors),
		cmocka_unit_test(test_accumulator),
		cmocka_unit_test(test_attribution),
		cmocka_unit_test(test_prices_shipped),
		cmocka_unit_test(test_prices_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
