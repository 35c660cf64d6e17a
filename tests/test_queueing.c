/*
 * test_queueing.c - validation of the engine against queueing theory:
 * M/M/1, M/M/c and M/D/1 scenarios (perf: service) must give the closed-
 * form mean waiting time within 2% at utilisations up to 0.9, and every
 * simulated wait must equal Lindley's recursion on the same draws.
 */
#include <math.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "run/scenario.h"

static const char base_yaml[] =
	"name: queue\n"
	"seed: 7\n"
	"instances:\n"
	"  - gpu: H100-SXM\n"
	"    perf: service\n"
	"    service_time: 1s\n"
	"    service_distribution: exponential\n"
	"    max_num_seqs: 1\n"
	"workload:\n"
	"  kind: generator\n"
	"  arrival: poisson\n"
	"  rate: 0.5\n"
	"  count: 1000\n"
	"output:\n"
	"  sample_period: 0s\n";

static const struct lsim_results *run(struct lsim_scenario **sc,
				      const char *const *sets, size_t n)
{
	char path[] = "/tmp/lsim_queue_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, base_yaml, sizeof base_yaml - 1),
			 (ssize_t)(sizeof base_yaml - 1));
	close(fd);
	struct lsim_diag d = {0};
	int rc = lsim_scenario_load(path, sets, n, sc, &d);
	unlink(path);
	if (rc != 0)
		fail_msg("load: %s: %s: %s", d.file, d.key, d.msg);
	const struct lsim_results *r = NULL;
	rc = lsim_scenario_run(*sc, NULL, NULL, &r, &d);
	if (rc != 0)
		fail_msg("run: %s", d.msg);
	return r;
}

/* Erlang C: probability that an arrival waits in M/M/c with load a = l/mu. */
static double erlang_c(int c, double a)
{
	double term = 1, sum = 1;
	for (int k = 1; k < c; k++) {
		term *= a / k;
		sum += term;
	}
	double last = term * a / c;
	double rho = a / c;
	double pc = last / (1 - rho);
	return pc / (sum + pc);
}

static void check_wait(const struct lsim_results *r, double expect, double tol)
{
	double got = r->summary.queue_wait_mean_s;
	double err = fabs(got - expect) / expect;
	printf("    mean wait %.4f s, closed form %.4f s, error %.2f%%\n", got,
	       expect, err * 100);
	assert_true(err < tol);
	assert_int_equal((size_t)r->summary.completed, r->n_reqs);
}

/* Lindley: W(n+1) = max(0, W(n) + S(n) - A(n+1)), single server. */
struct lindley {
	bool first;
	struct lsim_req_record prev;
	double w;
};

static int lindley_step(void *ctx, const struct lsim_req_record *q)
{
	struct lindley *l = ctx;
	if (!l->first) {
		const struct lsim_req_record *p = &l->prev;
		double s = p->finish - p->first_scheduled;
		l->w = fmax(0, l->w + s - (q->arrival - p->arrival));
		double sim_w = q->first_scheduled - q->arrival;
		assert_true(fabs(sim_w - l->w) < 1e-6);
	}
	l->first = false;
	l->prev = *q;
	return 0;
}

/* The records stream from disk in long runs (more than fit in memory). */
static void check_lindley(const struct lsim_results *r)
{
	struct lindley l = {.first = true};
	assert_int_equal(lsim_results_each_req(r, lindley_step, &l), 0);
}

static void test_mm1(void **state)
{
	(void)state;
	static const struct {
		const char *rate;
		double rho;
		const char *count;
	} cases[] = {
		{"workload.rate=0.5", 0.5, "workload.count=600000"},
		{"workload.rate=0.8", 0.8, "workload.count=400000"},
		{"workload.rate=0.9", 0.9, "workload.count=1500000"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *sets[] = {cases[i].rate, cases[i].count};
		struct lsim_scenario *sc = NULL;
		const struct lsim_results *r = run(&sc, sets, 2);
		double rho = cases[i].rho;
		printf("  M/M/1 rho=%.1f\n", rho);
		check_wait(r, rho / (1 - rho), 0.02); /* mu = 1/s */
		if (i == 0)
			check_lindley(r);
		lsim_scenario_destroy(sc);
	}
}

static void test_mmc(void **state)
{
	(void)state;
	/* c = 4 servers, mu = 1/s, lambda = 3.6/s: rho = 0.9 */
	const char *sets[] = {"instances.0.max_num_seqs=4", "workload.rate=3.6",
			      "workload.count=1000000"};
	struct lsim_scenario *sc = NULL;
	const struct lsim_results *r = run(&sc, sets, 3);
	double a = 3.6, c = 4;
	printf("  M/M/4 rho=0.9\n");
	check_wait(r, erlang_c(4, a) / (c - a), 0.02);
	lsim_scenario_destroy(sc);
}

static void test_md1(void **state)
{
	(void)state;
	const char *sets[] = {"instances.0.service_distribution=deterministic",
			      "workload.rate=0.9", "workload.count=600000"};
	struct lsim_scenario *sc = NULL;
	const struct lsim_results *r = run(&sc, sets, 3);
	double rho = 0.9;
	printf("  M/D/1 rho=0.9\n");
	check_wait(r, rho / (2 * (1 - rho)), 0.02);
	check_lindley(r);
	lsim_scenario_destroy(sc);
}

static void test_seed_varies_workload(void **state)
{
	(void)state;
	const char *s1[] = {"seed=1"}, *s2[] = {"seed=2"};
	struct lsim_scenario *a = NULL, *b = NULL, *c = NULL;
	const struct lsim_results *ra = run(&a, s1, 1);
	const struct lsim_results *rb = run(&b, s2, 1);
	const struct lsim_results *rc = run(&c, s1, 1);
	struct lsim_req_record qa, qb, qc;
	assert_int_equal(lsim_results_read_reqs(ra, 10, 1, &qa), 0);
	assert_int_equal(lsim_results_read_reqs(rb, 10, 1, &qb), 0);
	assert_int_equal(lsim_results_read_reqs(rc, 10, 1, &qc), 0);
	assert_true(qa.arrival != qb.arrival);
	assert_true(qa.arrival == qc.arrival);
	assert_true(ra->summary.queue_wait_mean_s == rc->summary.queue_wait_mean_s);
	lsim_scenario_destroy(a);
	lsim_scenario_destroy(b);
	lsim_scenario_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mm1),
		cmocka_unit_test(test_mmc),
		cmocka_unit_test(test_md1),
		cmocka_unit_test(test_seed_varies_workload),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
