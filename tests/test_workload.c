/*
 * test_workload.c - unit tests of the workload sources: the synthetic
 * generator (moments of the arrival and length distributions, Weibull,
 * MMPP, diurnal and spiky arrivals, Zipf and joint-pair lengths, stream
 * independence, stop rules, parameter checks), the exact time parsers,
 * the CSV reader (the Azure 2023 trace, hand-made CRLF/quoted/datetime
 * samples, bad input) and the JSONL reader (a vLLM run, bad input).
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

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "workload_internal.h"

/* ---- helpers ---- */

static char *repo_path(const char *rel)
{
	const char *root = getenv("LSIM_SOURCE_ROOT");
	assert_non_null(root);
	size_t n = strlen(root) + strlen(rel) + 2;
	char *p = malloc(n);
	assert_non_null(p);
	snprintf(p, n, "%s/%s", root, rel);
	return p;
}

static gsl_rng *rng(unsigned long seed)
{
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	assert_non_null(r);
	gsl_rng_set(r, seed);
	return r;
}

static struct lsim_len_dist fixed_len(double v)
{
	struct lsim_len_dist l = {.kind = LSIM_LEN_FIXED, .a = v};
	return l;
}

static struct lsim_gen_params poisson(double rate, uint64_t count)
{
	struct lsim_gen_params p = {
		.arrival = LSIM_ARRIVAL_POISSON,
		.rate = rate,
		.cv = 1,
		.count = count,
		.prompt = fixed_len(100),
		.output = fixed_len(10),
	};
	return p;
}

/* Runs the generator to its end; returns the number of requests. */
static size_t generate(const struct lsim_gen_params *p, unsigned long seed_a,
		       unsigned long seed_l, struct lsim_req_spec *out,
		       size_t cap)
{
	gsl_rng *ra = rng(seed_a), *rl = rng(seed_l);
	struct lsim_workload *w = NULL;
	struct lsim_diag d;
	memset(&d, 0, sizeof d);
	assert_int_equal(lsim_workload_generator_create(p, ra, rl, &w, &d), 0);
	size_t n = 0;
	struct lsim_req_spec r;
	int rc;
	while ((rc = lsim_workload_next(w, &r, &d)) == 1) {
		assert_true(n < cap);
		assert_int_equal(r.id, n);
		out[n++] = r;
	}
	assert_int_equal(rc, 0);
	/* the end is sticky */
	assert_int_equal(lsim_workload_next(w, &r, &d), 0);
	lsim_workload_destroy(w);
	gsl_rng_free(ra);
	gsl_rng_free(rl);
	return n;
}

/* Mean and coefficient of variation of the inter-arrival times (s). */
static void gaps(const struct lsim_req_spec *r, size_t n, double *mean,
		 double *cv)
{
	double s = 0, s2 = 0;
	lsim_time prev = 0;
	for (size_t i = 0; i < n; i++) {
		assert_true(r[i].arrival >= prev);
		double g = (double)(r[i].arrival - prev) / 1e9;
		s += g;
		s2 += g * g;
		prev = r[i].arrival;
	}
	*mean = s / (double)n;
	double var = s2 / (double)n - *mean * *mean;
	*cv = sqrt(var) / *mean;
}

/* ---- generator: arrivals ---- */

#define N_BIG 200000
#define M_PI_VALUE 3.14159265358979323846

static void test_poisson_moments(void **state)
{
	(void)state;
	struct lsim_req_spec *r = malloc(N_BIG * sizeof *r);
	assert_non_null(r);
	struct lsim_gen_params p = poisson(50.0, N_BIG);
	assert_int_equal(generate(&p, 11, 12, r, N_BIG), N_BIG);
	double mean, cv;
	gaps(r, N_BIG, &mean, &cv);
	assert_true(fabs(mean - 0.02) < 0.01 * 0.02);
	assert_true(fabs(cv - 1.0) < 0.02);

	/* the first arrival is the first exponential draw, not 0 */
	gsl_rng *twin = rng(11);
	double first = gsl_ran_exponential(twin, 1.0 / 50.0);
	assert_true(r[0].arrival > 0);
	assert_int_equal(r[0].arrival, lsim_time_from_s(first));
	double second = first + gsl_ran_exponential(twin, 1.0 / 50.0);
	assert_int_equal(r[1].arrival, lsim_time_from_s(second));
	gsl_rng_free(twin);
	free(r);
}

static void test_gamma_moments(void **state)
{
	(void)state;
	struct lsim_req_spec *r = malloc(N_BIG * sizeof *r);
	assert_non_null(r);
	struct lsim_gen_params p = poisson(10.0, N_BIG);
	p.arrival = LSIM_ARRIVAL_GAMMA;
	p.cv = 2.0;
	assert_int_equal(generate(&p, 21, 22, r, N_BIG), N_BIG);
	double mean, cv;
	gaps(r, N_BIG, &mean, &cv);
	assert_true(fabs(mean - 0.1) < 0.02 * 0.1);
	assert_true(fabs(cv - 2.0) < 0.03 * 2.0);

	/* shape 1/cv^2 = 0.25, scale 1/(rate k) = 0.4 */
	gsl_rng *twin = rng(21);
	assert_int_equal(r[0].arrival,
			 lsim_time_from_s(gsl_ran_gamma(twin, 0.25, 0.4)));
	gsl_rng_free(twin);
	free(r);
}

static void test_arrivals_independent_of_lengths(void **state)
{
	(void)state;
	enum { N = 2000 };
	static const int32_t vals[] = {7, 70, 700};
	static struct lsim_req_spec a[N], b[N], c[N];
	struct lsim_gen_params p = poisson(5.0, N);
	p.arrival = LSIM_ARRIVAL_GAMMA;
	p.cv = 1.5;
	assert_int_equal(generate(&p, 5, 6, a, N), N);
	p.prompt = (struct lsim_len_dist){.kind = LSIM_LEN_LOGNORMAL, .a = 800, .b = 900};
	p.output = (struct lsim_len_dist){.kind = LSIM_LEN_UNIFORM, .a = 1, .b = 4000};
	assert_int_equal(generate(&p, 5, 6, b, N), N);
	p.prompt = (struct lsim_len_dist){.kind = LSIM_LEN_EMPIRICAL,
					  .values = vals, .n_values = 3};
	assert_int_equal(generate(&p, 5, 999, c, N), N);
	size_t differ = 0;
	for (size_t i = 0; i < N; i++) {
		assert_int_equal(a[i].arrival, b[i].arrival);
		assert_int_equal(a[i].arrival, c[i].arrival);
		differ += a[i].prompt_tokens != b[i].prompt_tokens;
	}
	assert_true(differ > N / 2); /* the lengths did change */
}

static void test_count_and_duration(void **state)
{
	(void)state;
	enum { CAP = 4000 };
	static struct lsim_req_spec r[CAP];
	struct lsim_gen_params p = poisson(100.0, 5);
	assert_int_equal(generate(&p, 1, 2, r, CAP), 5);

	/* duration only: exactly the arrivals at or before 10 s */
	p.count = 0;
	p.duration = 10 * LSIM_S;
	gsl_rng *twin = rng(1);
	double t = 0;
	size_t expect = 0;
	for (;;) {
		t += gsl_ran_exponential(twin, 0.01);
		if (lsim_time_from_s(t) > p.duration)
			break;
		expect++;
	}
	gsl_rng_free(twin);
	size_t n = generate(&p, 1, 2, r, CAP);
	assert_int_equal(n, expect);
	assert_true(n > 900 && n < 1100);
	assert_true(r[n - 1].arrival <= p.duration);

	/* both: whichever comes first */
	p.count = 50;
	assert_int_equal(generate(&p, 1, 2, r, CAP), 50);
	p.count = 100000;
	assert_int_equal(generate(&p, 1, 2, r, CAP), expect);
}

/* ---- generator: lengths ---- */

static void test_lognormal_moments(void **state)
{
	(void)state;
	struct lsim_req_spec *r = malloc(N_BIG * sizeof *r);
	assert_non_null(r);
	struct lsim_gen_params p = poisson(1.0, N_BIG);
	p.prompt = (struct lsim_len_dist){.kind = LSIM_LEN_LOGNORMAL, .a = 512, .b = 256};
	p.output = (struct lsim_len_dist){.kind = LSIM_LEN_LOGNORMAL, .a = 200, .b = 300};
	assert_int_equal(generate(&p, 3, 4, r, N_BIG), N_BIG);
	double s[2] = {0, 0}, s2[2] = {0, 0};
	for (size_t i = 0; i < N_BIG; i++) {
		double x[2] = {r[i].prompt_tokens, r[i].output_tokens};
		for (int k = 0; k < 2; k++) {
			s[k] += x[k];
			s2[k] += x[k] * x[k];
		}
		assert_true(r[i].prompt_tokens >= 1 && r[i].output_tokens >= 1);
	}
	double want_mean[2] = {512, 200}, want_sd[2] = {256, 300};
	for (int k = 0; k < 2; k++) {
		double m = s[k] / N_BIG, sd = sqrt(s2[k] / N_BIG - m * m);
		assert_true(fabs(m - want_mean[k]) < 0.02 * want_mean[k]);
		assert_true(fabs(sd - want_sd[k]) < 0.02 * want_sd[k]);
	}

	/* the conversion: sigma^2 = ln(1 + b^2/a^2), mu = ln a - sigma^2/2 */
	gsl_rng *twin = rng(4);
	double var = log(1.0 + 256.0 * 256.0 / (512.0 * 512.0));
	double x = gsl_ran_lognormal(twin, log(512.0) - var / 2, sqrt(var));
	assert_int_equal(r[0].prompt_tokens, (int32_t)lround(x));
	gsl_rng_free(twin);
	free(r);
}

static void test_uniform_fixed_empirical_clamp(void **state)
{
	(void)state;
	enum { N = 20000 };
	static struct lsim_req_spec r[N];
	struct lsim_gen_params p = poisson(1.0, N);
	p.prompt = (struct lsim_len_dist){.kind = LSIM_LEN_UNIFORM, .a = 3, .b = 7};
	p.output = fixed_len(42);
	assert_int_equal(generate(&p, 7, 8, r, N), N);
	size_t hist[8] = {0};
	for (size_t i = 0; i < N; i++) {
		assert_in_range(r[i].prompt_tokens, 3, 7);
		assert_int_equal(r[i].output_tokens, 42);
		hist[r[i].prompt_tokens]++;
	}
	for (int v = 3; v <= 7; v++) /* each about N/5 = 4000 */
		assert_in_range(hist[v], 3700, 4300);

	static const int32_t vals[] = {10, 20, 30};
	p.prompt = (struct lsim_len_dist){.kind = LSIM_LEN_EMPIRICAL,
					  .values = vals, .n_values = 3};
	p.output = (struct lsim_len_dist){.kind = LSIM_LEN_LOGNORMAL, .a = 150,
					  .b = 100, .min = 100, .max = 200};
	assert_int_equal(generate(&p, 7, 8, r, N), N);
	size_t h3[3] = {0}, at_min = 0, at_max = 0;
	for (size_t i = 0; i < N; i++) {
		int32_t v = r[i].prompt_tokens;
		assert_true(v == 10 || v == 20 || v == 30);
		h3[v / 10 - 1]++;
		assert_in_range(r[i].output_tokens, 100, 200);
		at_min += r[i].output_tokens == 100;
		at_max += r[i].output_tokens == 200;
	}
	for (int k = 0; k < 3; k++)
		assert_in_range(h3[k], 6300, 7000);
	/* P(X < 100) = 0.36 and P(X > 200) = 0.22 for this lognormal */
	assert_true(at_min > N / 6 && at_max > N / 6);

	/* fixed 2.6 rounds to 3, clamped up to min 5; 2.5 rounds to 3, down to max 2 */
	p.prompt = (struct lsim_len_dist){.kind = LSIM_LEN_FIXED, .a = 2.6, .min = 5};
	p.output = (struct lsim_len_dist){.kind = LSIM_LEN_FIXED, .a = 2.5, .max = 2};
	p.count = 10;
	assert_int_equal(generate(&p, 7, 8, r, 10), 10);
	assert_int_equal(r[0].prompt_tokens, 5);
	assert_int_equal(r[0].output_tokens, 2);
}

static void expect_bad(const struct lsim_gen_params *p, const char *key)
{
	gsl_rng *ra = rng(1), *rl = rng(2);
	struct lsim_workload *w = (struct lsim_workload *)&w;
	struct lsim_diag d;
	memset(&d, 0, sizeof d);
	assert_int_equal(lsim_workload_generator_create(p, ra, rl, &w, &d),
			 LSIM_EINVAL);
	assert_null(w);
	assert_string_equal(d.key, key);
	assert_true(d.msg[0] != '\0');
	gsl_rng_free(ra);
	gsl_rng_free(rl);
}

static void test_generator_validation(void **state)
{
	(void)state;
	struct lsim_gen_params p = poisson(0, 10);
	expect_bad(&p, "workload.rate");
	p = poisson(NAN, 10);
	expect_bad(&p, "workload.rate");
	p = poisson(1, 10);
	p.arrival = LSIM_ARRIVAL_GAMMA;
	p.cv = 0;
	expect_bad(&p, "workload.cv");
	p = poisson(1, 0);
	expect_bad(&p, "workload.count");
	p.duration = -5;
	expect_bad(&p, "workload.duration");
	p = poisson(1, 10);
	p.prompt = (struct lsim_len_dist){.kind = LSIM_LEN_UNIFORM, .a = 9, .b = 8};
	expect_bad(&p, "workload.prompt.high");
	p.prompt = (struct lsim_len_dist){.kind = LSIM_LEN_UNIFORM, .a = 0, .b = 8};
	expect_bad(&p, "workload.prompt.low");
	p = poisson(1, 10);
	p.output = (struct lsim_len_dist){.kind = LSIM_LEN_LOGNORMAL, .a = 0, .b = 8};
	expect_bad(&p, "workload.output.mean");
	p.output = (struct lsim_len_dist){.kind = LSIM_LEN_LOGNORMAL, .a = 10, .b = -1};
	expect_bad(&p, "workload.output.stddev");
	p.output = (struct lsim_len_dist){.kind = LSIM_LEN_EMPIRICAL};
	expect_bad(&p, "workload.output.values");
	p.output = (struct lsim_len_dist){.kind = LSIM_LEN_FIXED, .a = 0.5};
	expect_bad(&p, "workload.output.value");
	p.output = (struct lsim_len_dist){.kind = LSIM_LEN_FIXED, .a = 5, .min = 10, .max = 9};
	expect_bad(&p, "workload.output.max");
	lsim_workload_destroy(NULL);
}

/* ---- generator: Weibull, MMPP, diurnal, spikes, Zipf, pairs ---- */

static void test_weibull_moments(void **state)
{
	(void)state;
	struct lsim_req_spec *r = malloc(N_BIG * sizeof *r);
	assert_non_null(r);
	const double cvs[] = {0.5, 2.0};
	for (size_t i = 0; i < 2; i++) {
		struct lsim_gen_params p = poisson(10.0, N_BIG);
		p.arrival = LSIM_ARRIVAL_WEIBULL;
		p.cv = cvs[i];
		assert_int_equal(generate(&p, 31 + i, 32, r, N_BIG), N_BIG);
		double mean, cv;
		gaps(r, N_BIG, &mean, &cv);
		print_message("weibull cv %.1f: mean %.5f (0.1), cv %.4f\n",
			      cvs[i], mean, cv);
		assert_true(fabs(mean - 0.1) < 0.01 * 0.1);
		assert_true(fabs(cv - cvs[i]) < 0.03 * cvs[i]);
	}
	/* cv 1 is shape 1: the exponential with scale 1/rate, same draw */
	struct lsim_gen_params p = poisson(4.0, 1);
	p.arrival = LSIM_ARRIVAL_WEIBULL;
	p.cv = 1.0;
	assert_int_equal(generate(&p, 33, 34, r, 1), 1);
	gsl_rng *twin = rng(33);
	lsim_time want = lsim_time_from_s(gsl_ran_weibull(twin, 0.25, 1.0));
	gsl_rng_free(twin);
	assert_true(llabs(r[0].arrival - want) <= 1);
	free(r);
}

static void test_mmpp(void **state)
{
	(void)state;
	struct lsim_req_spec *r = malloc(N_BIG * sizeof *r);
	assert_non_null(r);
	/* bursty: 100/s for 50 ms on average, silent for 200 ms */
	struct lsim_gen_params p = poisson(0, N_BIG); /* rate unused */
	p.arrival = LSIM_ARRIVAL_MMPP;
	p.rate_on = 100;
	p.rate_off = 0;
	p.mean_on = 50000000;
	p.mean_off = 200000000;
	assert_int_equal(generate(&p, 41, 42, r, N_BIG), N_BIG);
	double want = (100 * 0.05 + 0 * 0.2) / 0.25; /* 20/s */
	double got = N_BIG / lsim_time_to_s(r[N_BIG - 1].arrival);
	double mean, cv;
	gaps(r, N_BIG, &mean, &cv);
	print_message("mmpp on/off: rate %.4f (%.1f), cv %.3f\n", got, want, cv);
	assert_true(fabs(got - want) < 0.02 * want);
	assert_true(cv > 1.2);

	/* both states active: 100/s and 20/s, 50 ms each */
	p.rate_off = 20;
	p.mean_off = 50000000;
	assert_int_equal(generate(&p, 43, 44, r, N_BIG), N_BIG);
	want = (100 * 0.05 + 20 * 0.05) / 0.1; /* 60/s */
	got = N_BIG / lsim_time_to_s(r[N_BIG - 1].arrival);
	print_message("mmpp 100/20: rate %.4f (%.1f)\n", got, want);
	assert_true(fabs(got - want) < 0.02 * want);
	free(r);
}

static void test_diurnal(void **state)
{
	(void)state;
	size_t cap = 300000;
	struct lsim_req_spec *r = malloc(cap * sizeof *r);
	assert_non_null(r);
	struct lsim_gen_params p = poisson(100.0, 0);
	p.arrival = LSIM_ARRIVAL_DIURNAL;
	p.amplitude = 0.5;
	p.period = 1000000000; /* 1 s */
	p.duration = lsim_time_from_s(2000);
	size_t n = generate(&p, 51, 52, r, cap);
	size_t first = 0;
	for (size_t i = 0; i < n; i++)
		if (r[i].arrival % p.period < p.period / 2)
			first++;
	/* integral of rate (1 + A sin(2 pi t)) over a half period: rate (1/2 +- A/pi) */
	double want1 = 2000 * 100 * (0.5 + 0.5 / M_PI_VALUE);
	double want2 = 2000 * 100 * (0.5 - 0.5 / M_PI_VALUE);
	print_message("diurnal: first half %zu (%.0f), second %zu (%.0f)\n",
		      first, want1, n - first, want2);
	assert_true(fabs((double)first - want1) < 0.03 * want1);
	assert_true(fabs((double)(n - first) - want2) < 0.03 * want2);
	assert_true(r[n - 1].arrival <= p.duration);
	free(r);
}

static void test_spikes(void **state)
{
	(void)state;
	size_t cap = 300000;
	struct lsim_req_spec *r = malloc(cap * sizeof *r);
	assert_non_null(r);
	struct lsim_gen_params p = poisson(100.0, 0);
	p.arrival = LSIM_ARRIVAL_SPIKES;
	p.spike_every = 1000000000;	/* 1 s */
	p.spike_length = 100000000;	/* 100 ms */
	p.spike_factor = 5;
	p.duration = lsim_time_from_s(1500);
	size_t n = generate(&p, 61, 62, r, cap);
	size_t in = 0;
	for (size_t i = 0; i < n; i++)
		if (r[i].arrival % p.spike_every < p.spike_length)
			in++;
	double rate_in = (double)in / (1500 * 0.1);
	double rate_out = (double)(n - in) / (1500 * 0.9);
	print_message("spikes: inside %.2f/s, outside %.2f/s, ratio %.4f (5)\n",
		      rate_in, rate_out, rate_in / rate_out);
	assert_true(fabs(rate_in / rate_out - 5) < 0.03 * 5);
	assert_true(fabs(rate_out - 100) < 0.03 * 100);
	free(r);
}

static void test_zipf(void **state)
{
	(void)state;
	struct lsim_req_spec *r = malloc(N_BIG * sizeof *r);
	assert_non_null(r);
	/* CDF tables: prompt a = 1.1 on [1, 1000], output a = 2 on [5, 50] */
	struct lsim_gen_params p = poisson(10.0, N_BIG);
	p.prompt = (struct lsim_len_dist){.kind = LSIM_LEN_ZIPF, .a = 1.1, .min = 1, .max = 1000};
	p.output = (struct lsim_len_dist){.kind = LSIM_LEN_ZIPF, .a = 2, .min = 5, .max = 50};
	assert_int_equal(generate(&p, 71, 72, r, N_BIG), N_BIG);
	size_t p1 = 0, p2 = 0, o5 = 0, o6 = 0;
	int32_t pmax = 0, omax = 0;
	for (size_t i = 0; i < N_BIG; i++) {
		assert_true(r[i].prompt_tokens >= 1 && r[i].prompt_tokens <= 1000);
		assert_true(r[i].output_tokens >= 5 && r[i].output_tokens <= 50);
		p1 += r[i].prompt_tokens == 1;
		p2 += r[i].prompt_tokens == 2;
		o5 += r[i].output_tokens == 5;
		o6 += r[i].output_tokens == 6;
		pmax = r[i].prompt_tokens > pmax ? r[i].prompt_tokens : pmax;
		omax = r[i].output_tokens > omax ? r[i].output_tokens : omax;
	}
	double want = pow(2.0, 1.1), got = (double)p1 / (double)p2;
	print_message("zipf table: P(1)/P(2) %.4f (%.4f)\n", got, want);
	assert_true(fabs(got - want) < 0.03 * want);
	want = pow(6.0 / 5.0, 2);
	got = (double)o5 / (double)o6;
	print_message("zipf table: P(5)/P(6) %.4f (%.4f)\n", got, want);
	assert_true(fabs(got - want) < 0.03 * want);
	assert_true(pmax > 500 && omax == 50); /* the tail is reached */

	/* rejection-inversion (range over 1e6): prompt a = 2 on [1, 3e6],
	 * output a = 0.5 on [1, 4e6] */
	p.prompt = (struct lsim_len_dist){.kind = LSIM_LEN_ZIPF, .a = 2, .min = 1, .max = 3000000};
	p.output = (struct lsim_len_dist){.kind = LSIM_LEN_ZIPF, .a = 0.5, .max = 4000000};
	assert_int_equal(generate(&p, 73, 74, r, N_BIG), N_BIG);
	size_t c[4] = {0}, low_half = 0;
	for (size_t i = 0; i < N_BIG; i++) {
		assert_true(r[i].prompt_tokens >= 1 && r[i].prompt_tokens <= 3000000);
		assert_true(r[i].output_tokens >= 1 && r[i].output_tokens <= 4000000);
		if (r[i].prompt_tokens <= 3)
			c[r[i].prompt_tokens]++;
		low_half += r[i].output_tokens <= 1000000;
	}
	got = (double)c[1] / (double)c[2];
	print_message("zipf rejection: P(1)/P(2) %.4f (4), P(2)/P(3) %.4f (2.25)\n",
		      got, (double)c[2] / (double)c[3]);
	assert_true(fabs(got - 4) < 0.03 * 4);
	got = (double)c[2] / (double)c[3];
	assert_true(fabs(got - 2.25) < 0.03 * 2.25);
	double s1 = 0, s4 = 0;
	for (int k = 1; k <= 4000000; k++) {
		double t = 1 / sqrt((double)k);
		s4 += t;
		if (k <= 1000000)
			s1 += t;
	}
	want = s1 / s4; /* about 0.4998 */
	got = (double)low_half / N_BIG;
	print_message("zipf rejection: P(k <= 1e6 | a 0.5) %.4f (%.4f)\n", got, want);
	assert_true(fabs(got - want) < 0.01 * want);
	free(r);
}

static void test_pairs(void **state)
{
	(void)state;
	enum { N = 3000 };
	struct lsim_req_spec *r = malloc(N * sizeof *r);
	assert_non_null(r);
	const int32_t pairs[] = {10, 1, 20, 2, 30, 3};
	struct lsim_gen_params p = poisson(10.0, N);
	p.prompt = fixed_len(0); /* invalid, but ignored with pairs */
	p.pairs = pairs;
	p.n_pairs = 3;
	assert_int_equal(generate(&p, 81, 82, r, N), N);
	size_t hits[3] = {0};
	for (size_t i = 0; i < N; i++) {
		int32_t k = r[i].prompt_tokens / 10;
		assert_true(k >= 1 && k <= 3);
		assert_int_equal(r[i].prompt_tokens, 10 * k);
		assert_int_equal(r[i].output_tokens, k);
		hits[k - 1]++;
	}
	for (size_t k = 0; k < 3; k++)
		assert_true(fabs((double)hits[k] - N / 3.0) < 0.1 * N / 3.0);

	/* pairs draw only from the lengths stream: arrivals equal Poisson's */
	struct lsim_req_spec *q = malloc(N * sizeof *q);
	assert_non_null(q);
	struct lsim_gen_params plain = poisson(10.0, N);
	assert_int_equal(generate(&plain, 81, 99, q, N), N);
	for (size_t i = 0; i < N; i++)
		assert_int_equal(q[i].arrival, r[i].arrival);
	free(q);
	free(r);
}

static void test_generator_validation_new(void **state)
{
	(void)state;
	struct lsim_gen_params p = poisson(1, 10);
	p.arrival = LSIM_ARRIVAL_WEIBULL;
	p.cv = 0;
	expect_bad(&p, "workload.cv");
	p.cv = NAN;
	expect_bad(&p, "workload.cv");

	p = poisson(0, 10); /* rate unused by mmpp */
	p.arrival = LSIM_ARRIVAL_MMPP;
	p.mean_on = p.mean_off = 1000;
	expect_bad(&p, "workload.rate_on"); /* both rates 0 */
	p.rate_on = -1;
	expect_bad(&p, "workload.rate_on");
	p.rate_on = 5;
	p.rate_off = NAN;
	expect_bad(&p, "workload.rate_off");
	p.rate_off = 0;
	p.mean_on = 0;
	expect_bad(&p, "workload.mean_on");
	p.mean_on = 1000;
	p.mean_off = -1;
	expect_bad(&p, "workload.mean_off");

	p = poisson(1, 10);
	p.arrival = LSIM_ARRIVAL_DIURNAL;
	p.period = 1000;
	p.amplitude = 1;
	expect_bad(&p, "workload.amplitude");
	p.amplitude = 0.5;
	p.period = 0;
	expect_bad(&p, "workload.period");

	p = poisson(1, 10);
	p.arrival = LSIM_ARRIVAL_SPIKES;
	p.spike_factor = 2;
	p.spike_length = 10;
	expect_bad(&p, "workload.spike_every");
	p.spike_every = 5;
	expect_bad(&p, "workload.spike_length"); /* longer than the period */
	p.spike_length = 0;
	expect_bad(&p, "workload.spike_length");
	p.spike_length = 5;
	p.spike_factor = -1;
	expect_bad(&p, "workload.spike_factor");

	p = poisson(1, 10);
	p.prompt = (struct lsim_len_dist){.kind = LSIM_LEN_ZIPF, .a = 1.2, .min = 3};
	expect_bad(&p, "workload.prompt.max"); /* max required */
	p.prompt.max = 2;
	expect_bad(&p, "workload.prompt.max"); /* below min */
	p.prompt.max = 100; /* a table is built, then output fails: no leak */
	p.output = (struct lsim_len_dist){.kind = LSIM_LEN_ZIPF, .a = 0, .max = 10};
	expect_bad(&p, "workload.output.exponent");

	p = poisson(1, 10);
	/* an output of 0 is a failed request; a prompt of 0 is invalid */
	const int32_t bad_pairs[] = {10, 0, 0, 5};
	p.pairs = bad_pairs;
	p.n_pairs = 2;
	expect_bad(&p, "workload.pairs");
	p.pairs = NULL;
	expect_bad(&p, "workload.pairs");
}

/* ---- exact time parsing ---- */

static void test_parse_decimal(void **state)
{
	(void)state;
	int64_t v = 0;
	assert_int_equal(lsim_wl_parse_decimal("1.5", 9, &v), 0);
	assert_int_equal(v, 1500000000);
	assert_int_equal(lsim_wl_parse_decimal(" 27536.660701067 ", 9, &v), 0);
	assert_int_equal(v, 27536660701067);
	assert_int_equal(lsim_wl_parse_decimal("1787267980.0827403", 9, &v), 0);
	assert_int_equal(v, 1787267980082740300);
	assert_int_equal(lsim_wl_parse_decimal("0.0000000005", 9, &v), 0);
	assert_int_equal(v, 1); /* half rounds away from zero */
	assert_int_equal(lsim_wl_parse_decimal("0.00000000049", 9, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(lsim_wl_parse_decimal("-2.5e-9", 9, &v), 0);
	assert_int_equal(v, -3);
	assert_int_equal(lsim_wl_parse_decimal("1250.5", 6, &v), 0);
	assert_int_equal(v, 1250500000);
	assert_int_equal(lsim_wl_parse_decimal("2e3", 6, &v), 0);
	assert_int_equal(v, 2000000000);
	assert_int_equal(lsim_wl_parse_decimal("000.000", 9, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(lsim_wl_parse_decimal("9223372036.854775807", 9, &v), 0);
	assert_int_equal(v, INT64_MAX);
	assert_int_equal(lsim_wl_parse_decimal("9223372036.854775808", 9, &v),
			 LSIM_ERANGE);
	assert_int_equal(lsim_wl_parse_decimal("1e30", 9, &v), LSIM_ERANGE);
	assert_int_equal(lsim_wl_parse_decimal("abc", 9, &v), LSIM_EFORMAT);
	assert_int_equal(lsim_wl_parse_decimal("", 9, &v), LSIM_EFORMAT);
	assert_int_equal(lsim_wl_parse_decimal(".", 9, &v), LSIM_EFORMAT);
	assert_int_equal(lsim_wl_parse_decimal("1.5s", 9, &v), LSIM_EFORMAT);
	assert_int_equal(lsim_wl_parse_decimal("1e", 9, &v), LSIM_EFORMAT);
}

static void test_parse_datetime(void **state)
{
	(void)state;
	assert_int_equal(lsim_wl_days_from_civil(1970, 1, 1), 0);
	assert_int_equal(lsim_wl_days_from_civil(2000, 3, 1), 11017);
	assert_int_equal(lsim_wl_days_from_civil(2023, 11, 16), 19677);
	assert_int_equal(lsim_wl_days_from_civil(2024, 3, 1), 19783);
	assert_int_equal(lsim_wl_days_from_civil(1600, 1, 1), -135140);
	int64_t v = 0;
	assert_int_equal(lsim_wl_parse_datetime("1970-01-01 00:00:00", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(lsim_wl_parse_datetime("1969-12-31 23:59:59.999999999", &v), 0);
	assert_int_equal(v, -1);
	/* 19677 days * 86400 + 18:15:46 = 1700158546 s */
	assert_int_equal(lsim_wl_parse_datetime("2023-11-16 18:15:46.6805900", &v), 0);
	assert_int_equal(v, 1700158546680590000);
	assert_int_equal(lsim_wl_parse_datetime("2024-05-10 00:00:00.009930+00:00", &v), 0);
	assert_int_equal(v, 1715299200009930000);
	assert_int_equal(lsim_wl_parse_datetime("2024-05-10T05:30:00Z", &v), 0);
	assert_int_equal(v, 1715319000000000000);
	assert_int_equal(lsim_wl_parse_datetime("2024-05-10 05:30:00+05:30", &v), 0);
	assert_int_equal(v, 1715299200000000000);
	assert_int_equal(lsim_wl_parse_datetime("2024-05-09 22:00:00-02:00", &v), 0);
	assert_int_equal(v, 1715299200000000000);
	/* a leap day, a year boundary */
	int64_t a, b;
	assert_int_equal(lsim_wl_parse_datetime("2024-02-28 23:00:00", &a), 0);
	assert_int_equal(lsim_wl_parse_datetime("2024-03-01 00:00:00", &b), 0);
	assert_int_equal(b - a, 25 * 3600 * LSIM_S);
	assert_int_equal(lsim_wl_parse_datetime("2023-12-31 23:59:59.999999999", &a), 0);
	assert_int_equal(lsim_wl_parse_datetime("2024-01-01 00:00:00", &b), 0);
	assert_int_equal(b - a, 1);

	static const char *const bad[] = {
		"2023-02-29 00:00:00",	       "2023-13-01 00:00:00",
		"2023-11-16 24:00:00",	       "2023-11-16 18:15:46.",
		"2023-11-16 18:15:46.1234567890", "2023-11-16",
		"2023-11-16 18:15",	       "23-11-16 18:15:46",
		"2023-11-16 18:15:46 junk",    "2023-11-16 18:15:46+25:00",
		"1700158546",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(lsim_wl_parse_datetime(bad[i], &v), LSIM_EFORMAT);
	assert_int_equal(lsim_wl_parse_datetime("9999-12-31 00:00:00", &v),
			 LSIM_ERANGE);
}

/* ---- CSV reader ---- */

static const struct lsim_csv_map azure_map = {
	.arrival_col = "TIMESTAMP",
	.arrival_format = LSIM_TF_DATETIME,
	.prompt_col = "ContextTokens",
	.output_col = "GeneratedTokens",
};

static void test_csv_azure_2023(void **state)
{
	(void)state;
	char *path = repo_path("examples/data/azure_llm_2023/AzureLLMInferenceTrace_conv_1815-1845.csv");
	struct lsim_workload *w = NULL;
	struct lsim_diag d;
	memset(&d, 0, sizeof d);
	assert_int_equal(lsim_workload_csv_open(path, &azure_map, &w, &d), 0);
	struct lsim_req_spec r, last = {0};
	int rc;
	size_t n = 0;
	int64_t sum_p = 0, sum_o = 0;
	/* 18:15:46.6805900, 18:15:50.9951690, 18:15:51.2224670 */
	static const lsim_time t[3] = {0, 4314579000, 4541877000};
	static const int32_t pr[3] = {374, 396, 879}, ou[3] = {44, 109, 55};
	while ((rc = lsim_workload_next(w, &r, &d)) == 1) {
		if (n < 3) {
			assert_int_equal(r.arrival, t[n]);
			assert_int_equal(r.prompt_tokens, pr[n]);
			assert_int_equal(r.output_tokens, ou[n]);
		}
		assert_int_equal(r.id, n);
		assert_true(r.arrival >= last.arrival);
		sum_p += r.prompt_tokens;
		sum_o += r.output_tokens;
		last = r;
		n++;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(n, 9754);
	/* last row 18:44:59.9377300 -> 29 min 13.2571400 s; 4159 / 68 tokens */
	assert_int_equal(last.arrival, 1753257140000);
	assert_int_equal(last.prompt_tokens, 4159);
	assert_int_equal(last.output_tokens, 68);
	assert_int_equal(sum_p, 12072473);
	assert_int_equal(sum_o, 2156570);
	lsim_workload_destroy(w);
	free(path);
}

/* Reads a whole trace; returns the count, fails the test on an error. */
static size_t read_all(struct lsim_workload *w, struct lsim_req_spec *out,
		       size_t cap)
{
	struct lsim_diag d;
	memset(&d, 0, sizeof d);
	struct lsim_req_spec r;
	size_t n = 0;
	int rc;
	while ((rc = lsim_workload_next(w, &r, &d)) == 1) {
		assert_true(n < cap);
		out[n++] = r;
	}
	if (rc != 0)
		fail_msg("%s:%d:%d: %s: %s", d.file, d.line, d.col, d.key, d.msg);
	return n;
}

static void test_csv_datetime_offsets(void **state)
{
	(void)state;
	char *path = repo_path("tests/data/traces/azure2024_style.csv");
	struct lsim_workload *w = NULL;
	assert_int_equal(lsim_workload_csv_open(path, &azure_map, &w, NULL), 0);
	struct lsim_req_spec r[8];
	assert_int_equal(read_all(w, r, 8), 4);
	/* .009930+00:00, .052270+00:00, 02:00:01.5+02:00, 00:00:02Z */
	assert_int_equal(r[0].arrival, 0);
	assert_int_equal(r[1].arrival, 42340000);
	assert_int_equal(r[2].arrival, 1490070000);
	assert_int_equal(r[3].arrival, 1990070000);
	assert_int_equal(r[0].prompt_tokens, 4808);
	assert_int_equal(r[0].output_tokens, 10);
	assert_int_equal(r[2].output_tokens, 0); /* passed on: the run decides */
	lsim_workload_destroy(w);
	free(path);
}

static void test_csv_quoted_crlf_seconds_ms(void **state)
{
	(void)state;
	char *path = repo_path("tests/data/traces/quoted_crlf.csv");
	struct lsim_csv_map m = {.arrival_col = "t",
				 .arrival_format = LSIM_TF_SECONDS,
				 .prompt_col = "prompt",
				 .output_col = "output"};
	struct lsim_workload *w = NULL;
	assert_int_equal(lsim_workload_csv_open(path, &m, &w, NULL), 0);
	struct lsim_req_spec r[8];
	assert_int_equal(read_all(w, r, 8), 4);
	static const lsim_time t[4] = {0, 750000000, 750000000, 1500000000};
	for (int i = 0; i < 4; i++) {
		assert_int_equal(r[i].arrival, t[i]);
		assert_int_equal(r[i].prompt_tokens, 10 * (i + 1));
		assert_int_equal(r[i].output_tokens, 5 + i);
	}
	lsim_workload_destroy(w);
	free(path);

	path = repo_path("tests/data/traces/milliseconds.csv");
	m = (struct lsim_csv_map){.arrival_col = "timestamp_ms",
				  .arrival_format = LSIM_TF_MILLISECONDS,
				  .prompt_col = "in",
				  .output_col = "out"};
	assert_int_equal(lsim_workload_csv_open(path, &m, &w, NULL), 0);
	assert_int_equal(read_all(w, r, 8), 3);
	assert_int_equal(r[1].arrival, 500500000);
	assert_int_equal(r[2].arrival, 1000000000);
	assert_int_equal(r[2].prompt_tokens, 5);
	assert_int_equal(r[2].output_tokens, 6);
	lsim_workload_destroy(w);
	free(path);
}

/*
 * Opens a trace (CSV when map is set) and reads until the first error;
 * checks code, line, column (when col >= 0) and key. Returns the requests
 * read before the error.
 */
static size_t expect_trace_error(const char *rel, const struct lsim_csv_map *map,
				 int err, int line, int col, const char *key)
{
	char *path = repo_path(rel);
	struct lsim_workload *w = NULL;
	struct lsim_diag d;
	memset(&d, 0, sizeof d);
	int rc = map ? lsim_workload_csv_open(path, map, &w, &d)
		     : lsim_workload_jsonl_open(path, &w, &d);
	size_t n = 0;
	if (rc == 0) {
		struct lsim_req_spec r;
		while ((rc = lsim_workload_next(w, &r, &d)) == 1)
			n++;
		/* errors are sticky */
		struct lsim_diag d2;
		memset(&d2, 0, sizeof d2);
		assert_int_equal(lsim_workload_next(w, &r, &d2), rc);
		assert_int_equal(d2.line, d.line);
	} else {
		assert_null(w);
	}
	assert_int_equal(rc, err);
	assert_int_equal(d.line, line);
	if (col >= 0)
		assert_int_equal(d.col, col);
	assert_string_equal(d.key, key);
	assert_non_null(strstr(d.file, rel));
	assert_true(d.msg[0] != '\0');
	lsim_workload_destroy(w);
	free(path);
	return n;
}

static void test_csv_bad_input(void **state)
{
	(void)state;
	struct lsim_csv_map plain = {.arrival_col = "t",
				     .arrival_format = LSIM_TF_SECONDS,
				     .prompt_col = "prompt",
				     .output_col = "output"};
	expect_trace_error("tests/data/traces/bad_missing_column.csv", &azure_map,
			   LSIM_EFORMAT, 1, -1, "GeneratedTokens");
	/* "39x" starts after the 27-character timestamp and a comma */
	assert_int_equal(expect_trace_error("tests/data/traces/bad_number.csv",
					    &azure_map, LSIM_EFORMAT, 3, 29,
					    "ContextTokens"),
			 1);
	assert_int_equal(expect_trace_error("tests/data/traces/bad_decreasing.csv",
					    &azure_map, LSIM_EFORMAT, 4, 1,
					    "TIMESTAMP"),
			 2);
	expect_trace_error("tests/data/traces/bad_negative.csv", &plain,
			   LSIM_EFORMAT, 2, 6, "output");
	expect_trace_error("tests/data/traces/bad_prompt_zero.csv", &plain,
			   LSIM_EFORMAT, 3, 3, "prompt");
	expect_trace_error("tests/data/traces/bad_quote.csv", &plain,
			   LSIM_EFORMAT, 3, -1, "");
	expect_trace_error("tests/data/traces/bad_datetime.csv", &azure_map,
			   LSIM_EFORMAT, 2, 1, "TIMESTAMP");
	expect_trace_error("tests/data/cli/bad_tokens.csv", &plain, LSIM_EFORMAT,
			   4, 5, "prompt");
	expect_trace_error("tests/data/traces/no_such_file.csv", &plain,
			   LSIM_ENOENT, 0, -1, "workload.path");
	/* a seconds column read as datetime */
	struct lsim_csv_map wrong = plain;
	wrong.arrival_format = LSIM_TF_DATETIME;
	expect_trace_error("tests/data/traces/bad_negative.csv", &wrong,
			   LSIM_EFORMAT, 2, 1, "t");
	struct lsim_workload *w = NULL;
	struct lsim_csv_map none = plain;
	none.output_col = "";
	struct lsim_diag d;
	assert_int_equal(lsim_workload_csv_open("x.csv", &none, &w, &d), LSIM_EINVAL);
	assert_string_equal(d.key, "workload.output_column");
}

/*
 * Mooncake's CSV layout: hash_ids space-separated in one field, num_blocks
 * their count; the same ids as its JSONL (ids past 2^63 exact, an empty
 * field is no ids); a count that disagrees, a bad id or one of 2^64 - 1
 * names the column, the line and the field.
 */
static void test_csv_hash_ids(void **state)
{
	(void)state;
	static const struct lsim_csv_map mc = {.arrival_col = "timestamp_ms",
					       .arrival_format = LSIM_TF_MILLISECONDS,
					       .prompt_col = "input_length",
					       .output_col = "output_length"};
	char path[] = "/tmp/lsim_mccsv_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	assert_non_null(f);
	fprintf(f, "timestamp_ms,input_length,output_length,num_blocks,hash_ids\n"
		   "0,1536,2,3,7 9223372036854775808 18446744073709551614\n"
		   "5,10,2,0,\n"
		   "9,600,1,2,  7  8 \n"
		   "12,600,1,3,7 8\n");
	fclose(f);
	struct lsim_workload *w = NULL;
	struct lsim_diag d;
	assert_int_equal(lsim_workload_csv_open(path, &mc, &w, &d), 0);
	struct lsim_req_spec r;
	assert_int_equal(lsim_workload_next(w, &r, &d), 1);
	assert_int_equal(r.n_hashes, 3);
	assert_int_equal(r.hash_block_tokens, 512);
	assert_true(r.hashes[0] == 7);
	assert_true(r.hashes[1] == UINT64_C(9223372036854775808));
	assert_true(r.hashes[2] == UINT64_C(18446744073709551614));
	assert_int_equal(lsim_workload_next(w, &r, &d), 1);
	assert_int_equal(r.n_hashes, 0);
	assert_null(r.hashes);
	assert_int_equal(lsim_workload_next(w, &r, &d), 1);
	assert_int_equal(r.n_hashes, 2);
	assert_true(r.hashes[0] == 7 && r.hashes[1] == 8);
	assert_int_equal(r.arrival, 9 * LSIM_MS);
	/* num_blocks 3 against two ids: field 4 starts at column 10 */
	assert_int_equal(lsim_workload_next(w, &r, &d), LSIM_EFORMAT);
	assert_int_equal(d.line, 5);
	assert_int_equal(d.col, 10);
	assert_string_equal(d.key, "num_blocks");
	lsim_workload_destroy(w);

	/* without num_blocks: a bad id, then 2^64 - 1 */
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "timestamp_ms,input_length,output_length,hash_ids\n"
		   "0,10,2,1 x2\n");
	fclose(f);
	assert_int_equal(lsim_workload_csv_open(path, &mc, &w, &d), 0);
	assert_int_equal(lsim_workload_next(w, &r, &d), LSIM_EFORMAT);
	assert_int_equal(d.line, 2);
	assert_int_equal(d.col, 8);
	assert_string_equal(d.key, "hash_ids");
	assert_non_null(strstr(d.msg, "hash_ids[1]"));
	lsim_workload_destroy(w);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "timestamp_ms,input_length,output_length,hash_ids\n"
		   "0,10,2,18446744073709551615\n");
	fclose(f);
	assert_int_equal(lsim_workload_csv_open(path, &mc, &w, &d), 0);
	assert_int_equal(lsim_workload_next(w, &r, &d), LSIM_EFORMAT);
	assert_string_equal(d.key, "hash_ids");
	assert_non_null(strstr(d.msg, "2^64 - 1"));
	lsim_workload_destroy(w);
	remove(path);
}

/* ---- JSONL reader ---- */

static void test_jsonl_vllm_run(void **state)
{
	(void)state;
	char *path = repo_path("examples/data/vllm_runs/RTX4090/Llama-3.1-8B/requests.jsonl");
	struct lsim_workload *w = NULL;
	struct lsim_diag d;
	assert_int_equal(lsim_workload_jsonl_open(path, &w, &d), 0);
	struct lsim_req_spec *r = malloc(400 * sizeof *r);
	assert_non_null(r);
	assert_int_equal(read_all(w, r, 400), 300);
	int64_t sp = 0, so = 0;
	for (size_t i = 0; i < 300; i++) {
		assert_int_equal(r[i].id, i);
		sp += r[i].prompt_tokens;
		so += r[i].output_tokens;
	}
	assert_int_equal(r[0].arrival, 0);
	assert_int_equal(r[0].prompt_tokens, 2358);
	assert_int_equal(r[0].output_tokens, 531);
	/* queued_ts 27537.047603549 and 27537.221809715 minus 27536.660701067 */
	assert_int_equal(r[1].arrival, 386902482);
	assert_int_equal(r[1].prompt_tokens, 1034);
	assert_int_equal(r[2].arrival, 561108648);
	assert_int_equal(r[299].arrival, 29120628346);
	assert_int_equal(r[299].prompt_tokens, 582);
	assert_int_equal(r[299].output_tokens, 768);
	assert_int_equal(sp, 257239);
	assert_int_equal(so, 195753);
	free(r);
	lsim_workload_destroy(w);
	free(path);
}

/* Mooncake hash_ids at and past 2^63 are kept exactly (json-c holds them
 * as uint64): distinct ids stay distinct, so their blocks never share a
 * prefix-cache entry. */
static void test_jsonl_hash_ids_64bit(void **state)
{
	(void)state;
	char path[] = "/tmp/lsim_hash_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	assert_non_null(f);
	fprintf(f, "{\"timestamp\": 0, \"input_length\": 1536, \"output_length\": 2, "
		   "\"hash_ids\": [9223372036854775807, 9223372036854775808, "
		   "18446744073709551614]}\n");
	fclose(f);
	struct lsim_workload *w = NULL;
	struct lsim_diag d;
	assert_int_equal(lsim_workload_jsonl_open(path, &w, &d), 0);
	struct lsim_req_spec r;
	assert_int_equal(lsim_workload_next(w, &r, &d), 1);
	assert_int_equal(r.n_hashes, 3);
	assert_true(r.hashes[0] == UINT64_C(9223372036854775807));
	assert_true(r.hashes[1] == UINT64_C(9223372036854775808));
	assert_true(r.hashes[2] == UINT64_C(18446744073709551614));
	lsim_workload_destroy(w);
	remove(path);
}

/*
 * lsim_workload_jsonl_open_sorted: a stable sort by arrival, line numbers
 * kept. Three lines: 10.1 s, then 10.0 s twice (kept in line order).
 */
static void test_jsonl_sorted(void **state)
{
	(void)state;
	char *path = repo_path("tests/data/traces/unsorted_ties.jsonl");
	struct lsim_workload *w = NULL;
	struct lsim_diag d;
	uint64_t back = 99;
	lsim_time worst = -1;
	assert_int_equal(lsim_workload_jsonl_open_sorted(path, &w, &back, &worst, &d), 0);
	assert_int_equal(back, 1);
	assert_int_equal(worst, 100000000);
	struct lsim_req_spec r[4];
	static const int32_t line[] = {2, 3, 1}, prompt[] = {200, 50, 100};
	static const lsim_time at[] = {0, 0, 100000000};
	for (int i = 0; i < 3; i++) {
		assert_int_equal(lsim_workload_next(w, &r[i], &d), 1);
		assert_int_equal(r[i].id, i);
		assert_int_equal(r[i].src_line, line[i]);
		assert_int_equal(r[i].prompt_tokens, prompt[i]);
		assert_int_equal(r[i].arrival, at[i]);
	}
	assert_int_equal(lsim_workload_next(w, &r[3], &d), 0);
	lsim_workload_destroy(w);
	free(path);

	/* the RTX 4090 run with rows swapped gives the shipped file's stream */
	path = repo_path("tests/data/validate/unsorted/requests.jsonl");
	char *sorted = repo_path("examples/data/vllm_runs/RTX4090/Llama-3.1-8B/requests.jsonl");
	struct lsim_workload *ws = NULL;
	assert_int_equal(lsim_workload_jsonl_open_sorted(path, &w, &back, NULL, &d), 0);
	assert_int_equal(lsim_workload_jsonl_open(sorted, &ws, &d), 0);
	assert_int_equal(back, 4);
	struct lsim_req_spec a, b;
	size_t n = 0;
	while (lsim_workload_next(ws, &b, &d) == 1) {
		assert_int_equal(lsim_workload_next(w, &a, &d), 1);
		assert_int_equal(a.id, b.id);
		assert_int_equal(a.arrival, b.arrival);
		assert_int_equal(a.prompt_tokens, b.prompt_tokens);
		assert_int_equal(a.output_tokens, b.output_tokens);
		n++;
	}
	assert_int_equal(n, 300);
	assert_int_equal(lsim_workload_next(w, &a, &d), 0);
	lsim_workload_destroy(w);
	lsim_workload_destroy(ws);
	free(path);
	free(sorted);

	/* errors are the reader's: a missing file */
	path = repo_path("tests/data/traces/no_such.jsonl");
	assert_int_equal(lsim_workload_jsonl_open_sorted(path, &w, NULL, NULL, &d), LSIM_ENOENT);
	assert_null(w);
	free(path);
}

static void test_jsonl_alt_fields(void **state)
{
	(void)state;
	char *path = repo_path("tests/data/traces/alt_fields.jsonl");
	struct lsim_workload *w = NULL;
	assert_int_equal(lsim_workload_jsonl_open(path, &w, NULL), 0);
	struct lsim_req_spec r[4];
	assert_int_equal(read_all(w, r, 4), 3);
	assert_int_equal(r[0].arrival, 0);
	assert_int_equal(r[1].arrival, 250500000); /* timestamp is in ms */
	assert_int_equal(r[2].arrival, 250500000);
	assert_int_equal(r[0].prompt_tokens, 10);
	assert_int_equal(r[0].output_tokens, 0); /* passed on: the run decides */
	assert_int_equal(r[1].output_tokens, 3);
	assert_int_equal(r[2].prompt_tokens, 30);
	assert_int_equal(r[2].output_tokens, 4);
	lsim_workload_destroy(w);
	free(path);

	/*
	 * epoch seconds with 7 decimals: exact from the text (through a
	 * double, the 0.24 us spacing near 1.8e9 would show)
	 */
	path = repo_path("tests/data/traces/arrival_time.jsonl");
	assert_int_equal(lsim_workload_jsonl_open(path, &w, NULL), 0);
	assert_int_equal(read_all(w, r, 4), 3);
	assert_int_equal(r[1].arrival, 265091400);
	assert_int_equal(r[2].arrival, 917259700); /* an integer time */
	lsim_workload_destroy(w);
	free(path);
}

static void test_jsonl_bad_input(void **state)
{
	(void)state;
	/* the missing comma: json-c stops at the '"' in column 36 */
	assert_int_equal(expect_trace_error("tests/data/traces/bad_json.jsonl", NULL,
					    LSIM_EFORMAT, 3, 36, ""),
			 2);
	assert_int_equal(expect_trace_error("tests/data/traces/bad_missing_field.jsonl",
					    NULL, LSIM_EFORMAT, 2, 0, "output_toks"),
			 1);
	assert_int_equal(expect_trace_error("tests/data/traces/bad_order.jsonl", NULL,
					    LSIM_EFORMAT, 3, 0, "queued_ts"),
			 2);
	/* a CSV file is not JSONL */
	expect_trace_error("tests/data/traces/bad_negative.csv", NULL,
			   LSIM_EFORMAT, 1, -1, "");
	expect_trace_error("tests/data/traces/no_such_file.jsonl", NULL,
			   LSIM_ENOENT, 0, -1, "workload.path");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_poisson_moments),
		cmocka_unit_test(test_gamma_moments),
		cmocka_unit_test(test_arrivals_independent_of_lengths),
		cmocka_unit_test(test_count_and_duration),
		cmocka_unit_test(test_lognormal_moments),
		cmocka_unit_test(test_uniform_fixed_empirical_clamp),
		cmocka_unit_test(test_generator_validation),
		cmocka_unit_test(test_weibull_moments),
		cmocka_unit_test(test_mmpp),
		cmocka_unit_test(test_diurnal),
		cmocka_unit_test(test_spikes),
		cmocka_unit_test(test_zipf),
		cmocka_unit_test(test_pairs),
		cmocka_unit_test(test_generator_validation_new),
		cmocka_unit_test(test_parse_decimal),
		cmocka_unit_test(test_parse_datetime),
		cmocka_unit_test(test_csv_azure_2023),
		cmocka_unit_test(test_csv_datetime_offsets),
		cmocka_unit_test(test_csv_quoted_crlf_seconds_ms),
		cmocka_unit_test(test_csv_bad_input),
		cmocka_unit_test(test_jsonl_vllm_run),
		cmocka_unit_test(test_jsonl_hash_ids_64bit),
		cmocka_unit_test(test_csv_hash_ids),
		cmocka_unit_test(test_jsonl_sorted),
		cmocka_unit_test(test_jsonl_alt_fields),
		cmocka_unit_test(test_jsonl_bad_input),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
