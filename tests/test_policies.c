/*
 * test_policies.c - the policy modules. Conformance: every registered
 * router, queue order and profiler (and the example plugin) runs a
 * KV-constrained scenario and must keep the invariants (every request ends
 * exactly once, timestamps in order, no capacity exceeded, same seed = same
 * records). Behaviour: each policy moves the metric it claims to, against
 * a baseline, with the numbers printed. Errors: unknown names list the
 * valid ones, unknown parameters get a did-you-mean, bad plugins are
 * refused.
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
#include <gsl/gsl_rng.h>

#include "run/policy_core.h"
#include "registry.h"
#include "run/scenario.h"

static const char base_yaml[] =
	"name: conformance\n"
	"seed: 3\n"
	"cluster:\n"
	"  - {gpu: H100-SXM, count: 3, gpus_per_node: 2}\n"
	"instances:\n"
	"  - gpu: H100-SXM\n"
	"    model: Llama-3.1-8B\n"
	"    replicas: 4\n"
	"    num_gpu_blocks: 300\n"
	"    max_num_seqs: 16\n"
	"classes:\n"
	"  - {name: interactive, share: 0.3, priority: 0, ttft: 500ms}\n"
	"  - {name: batch, share: 0.7, priority: 1, ttft: 10s}\n"
	"workload:\n"
	"  kind: generator\n"
	"  rate: 40\n"
	"  count: 600\n"
	"  prompt: {dist: lognormal, mean: 600, stddev: 400, max: 3000}\n"
	"  output: {dist: lognormal, mean: 150, stddev: 200, max: 1500}\n"
	"output:\n"
	"  sample_period: 100ms\n";

static int load(const char *yaml, const char *const *sets, size_t n,
		struct lsim_scenario **sc, struct lsim_diag *d)
{
	char path[] = "/tmp/lsim_pol_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	size_t len = strlen(yaml);
	assert_int_equal(write(fd, yaml, len), (ssize_t)len);
	close(fd);
	int rc = lsim_scenario_load(path, sets, n, sc, d);
	unlink(path);
	return rc;
}

static const struct lsim_results *run(const char *yaml, const char *const *sets,
				      size_t n, struct lsim_scenario **sc)
{
	struct lsim_diag d = {0};
	if (load(yaml, sets, n, sc, &d) != 0)
		fail_msg("load: %s:%d %s: %s", d.file, d.line, d.key, d.msg);
	const struct lsim_results *r = NULL;
	if (lsim_scenario_run(*sc, NULL, NULL, &r, &d) != 0)
		fail_msg("run: %s: %s", d.key, d.msg);
	return r;
}

static void check_invariants(const struct lsim_results *r, int max_seqs)
{
	size_t ended = 0;
	for (size_t i = 0; i < r->n_reqs; i++) {
		const struct lsim_req_record *q = &r->reqs[i];
		assert_true(q->status == LSIM_REQ_FINISHED ||
			    q->status == LSIM_REQ_REJECTED);
		ended++;
		if (q->status != LSIM_REQ_FINISHED)
			continue;
		assert_true(q->first_scheduled >= q->arrival);
		assert_true(q->first_token > q->first_scheduled);
		assert_true(q->finish >= q->first_token);
		assert_true(q->instance >= 0 && (size_t)q->instance < r->n_insts);
	}
	assert_int_equal(ended, r->n_reqs);
	assert_true(r->summary.completed + r->summary.rejected == (double)r->n_reqs);
	for (size_t i = 0; i < r->n_ts; i++) {
		assert_true(r->ts[i].running <= max_seqs);
		assert_true(r->ts[i].kv_util <= 1.0 + 1e-12);
	}
}

/* Runs a policy choice twice; invariants and determinism. */
static void conform(const char *set, const char *extra)
{
	const char *sets[] = {set, extra};
	size_t n = extra ? 2 : 1;
	struct lsim_scenario *a = NULL, *b = NULL;
	const struct lsim_results *ra = run(base_yaml, sets, n, &a);
	const struct lsim_results *rb = run(base_yaml, sets, n, &b);
	printf("  %-45s completed %4.0f rejected %3.0f preemptions %4.0f ttft_p99 %.3f s\n",
	       set, ra->summary.completed, ra->summary.rejected,
	       ra->summary.preemptions, ra->summary.ttft_p99_s);
	check_invariants(ra, 16);
	if (strncmp(set, "qos", 3) != 0)
		assert_true(ra->summary.completed == 600);
	assert_int_equal(ra->n_reqs, rb->n_reqs);
	assert_memory_equal(ra->reqs, rb->reqs, ra->n_reqs * sizeof *ra->reqs);
	lsim_scenario_destroy(a);
	lsim_scenario_destroy(b);
}

static void test_conformance_all_builtins(void **state)
{
	(void)state;
	size_t n;
	const struct lsim_policy_type *const *all = lsim_registry_all(&n);
	size_t routers = 0, queues = 0, profilers = 0, allocators = 0, qos = 0,
	       monitors = 0, adaptors = 0, syncs = 0;
	for (size_t i = 0; i < n; i++) {
		char set[128];
		if (lsim_policy_fits(all[i], LSIM_ROLE_ROUTER)) {
			snprintf(set, sizeof set, "scheduler.router=%s", all[i]->name);
			routers++;
		} else if (lsim_policy_fits(all[i], LSIM_ROLE_QUEUE)) {
			snprintf(set, sizeof set, "scheduler.queue=%s", all[i]->name);
			queues++;
		} else if (lsim_policy_fits(all[i], LSIM_ROLE_PROFILER)) {
			snprintf(set, sizeof set, "profiler.name=%s", all[i]->name);
			profilers++;
			if (strcmp(all[i]->name, "kproto") == 0) {
				/* kproto needs a trained model (docs/profiler.md) */
				static char model[600];
				snprintf(model, sizeof model,
					 "profiler.model=%s/tests/data/kproto/azure800_linear_k4.kproto",
					 getenv("LSIM_SOURCE_ROOT"));
				conform(set, model);
				continue;
			}
		} else if (lsim_policy_fits(all[i], LSIM_ROLE_ALLOCATOR)) {
			snprintf(set, sizeof set, "allocator=%s", all[i]->name);
			allocators++;
		} else if (lsim_policy_fits(all[i], LSIM_ROLE_ADAPTOR)) {
			snprintf(set, sizeof set, "adaptor.name=%s", all[i]->name);
			adaptors++;
			if (strcmp(all[i]->name, "schedule") == 0) {
				conform(set, "adaptor.table=0h:4"); /* required */
				continue;
			}
		} else if (lsim_policy_fits(all[i], LSIM_ROLE_SYNCHRONIZER)) {
			snprintf(set, sizeof set, "synchronizer=%s", all[i]->name);
			syncs++;
		} else if (lsim_policy_fits(all[i], LSIM_ROLE_MONITOR)) {
			snprintf(set, sizeof set, "monitor=%s", all[i]->name);
			monitors++;
		} else if (lsim_policy_fits(all[i], LSIM_ROLE_QOS)) {
			snprintf(set, sizeof set, "qos.name=%s", all[i]->name);
			qos++;
			/* token_bucket requires its rate; admission gets a bound */
			const char *extra = NULL;
			if (strcmp(all[i]->name, "token_bucket") == 0)
				extra = "qos.rate=30";
			else if (strcmp(all[i]->name, "admission") == 0)
				extra = "qos.max_waiting=20";
			conform(set, extra);
			continue;
		} else {
			fail_msg("policy %s fits no role", all[i]->name);
		}
		conform(set, NULL);
	}
	assert_int_equal(routers, 8);
	assert_int_equal(queues, 4);
	assert_int_equal(profilers, 4);
	assert_int_equal(allocators, 5);
	assert_int_equal(qos, 3);
	assert_int_equal(monitors, 2);
	assert_int_equal(adaptors, 5);
	assert_int_equal(syncs, 3);
}

static void test_plugin(void **state)
{
	(void)state;
	const char *so = getenv("LSIM_EXAMPLE_PLUGIN");
	assert_non_null(so);
	char yaml[4096];
	snprintf(yaml, sizeof yaml,
		 "%sscheduler:\n  router: {plugin: %s, name: hash_affinity, stride: 1}\n"
		 "  queue: {plugin: %s, name: shortest_prompt}\n",
		 base_yaml, so, so);
	struct lsim_scenario *sc = NULL;
	const struct lsim_results *r = run(yaml, NULL, 0, &sc);
	check_invariants(r, 16);
	for (size_t i = 0; i < r->n_reqs; i++)
		assert_int_equal(r->reqs[i].instance, (int32_t)(r->reqs[i].id % 4));
	assert_non_null(strstr(lsim_scenario_effective(sc), "name: hash_affinity"));
	lsim_scenario_destroy(sc);
}

static void expect_error(const char *yaml, const char *const *sets, size_t n,
			 const char *key, const char *frag)
{
	struct lsim_scenario *sc = NULL;
	struct lsim_diag d = {0};
	int rc = load(yaml, sets, n, &sc, &d);
	if (rc == 0)
		fail_msg("expected an error for %s", key);
	if (strcmp(d.key, key) != 0 || !strstr(d.msg, frag))
		fail_msg("got key '%s' msg '%s'; want key '%s' with '%s'", d.key,
			 d.msg, key, frag);
}

static void test_errors(void **state)
{
	(void)state;
	const char *s1[] = {"scheduler.router=least_outstandin"};
	expect_error(base_yaml, s1, 1, "scheduler.router",
		     "did you mean 'least_outstanding'");
	expect_error(base_yaml, s1, 1, "scheduler.router", "power_of_two");
	const char *s2[] = {"scheduler.queue=round_robin"}; /* a router, not a queue */
	expect_error(base_yaml, s2, 1, "scheduler.queue", "fcfs, sjf, priority, edf");
	const char *s3[] = {"profiler=bucket", "profiler.bukets=3"};
	/* profiler given as a scalar cannot take parameters: use a section */
	char yaml[4096];
	snprintf(yaml, sizeof yaml, "%sprofiler: {name: bucket, bukets: 3}\n", base_yaml);
	expect_error(yaml, NULL, 0, "profiler.bukets", "did you mean 'buckets'");
	snprintf(yaml, sizeof yaml, "%sprofiler: {name: bucket, buckets: 999}\n", base_yaml);
	expect_error(yaml, NULL, 0, "profiler.buckets", "outside");
	(void)s3;
	const char *bad = getenv("LSIM_BAD_PLUGIN");
	assert_non_null(bad);
	snprintf(yaml, sizeof yaml, "%sscheduler:\n  queue: {plugin: %s}\n", base_yaml, bad);
	expect_error(yaml, NULL, 0, "scheduler.queue.plugin", "ABI");
	snprintf(yaml, sizeof yaml, "%sscheduler:\n  queue: {plugin: /nonexistent.so}\n",
		 base_yaml);
	expect_error(yaml, NULL, 0, "scheduler.queue.plugin", "cannot load plugin");
	const char *so = getenv("LSIM_EXAMPLE_PLUGIN");
	snprintf(yaml, sizeof yaml, "%sscheduler:\n  queue: {plugin: %s, name: nope}\n",
		 base_yaml, so);
	expect_error(yaml, NULL, 0, "scheduler.queue.plugin", "shortest_prompt");
	snprintf(yaml, sizeof yaml, "%sclasses:\n  - {name: a, share: 0.5}\n", "name: x\n"
		 "instances:\n  - gpu: H100-SXM\nworkload: {count: 5}\n");
	expect_error(yaml, NULL, 0, "classes", "add up to 0.5");
}

/* ---- monitors ---- */

static void test_monitors(void **state)
{
	(void)state;
	struct lsim_diag d = {0};
	struct lsim_doc *doc = NULL;
	assert_int_equal(lsim_doc_load_string("m: {name: ewma, alpha: 0.25}\n", "m.yaml",
					      &doc, &d), 0);
	struct lsim_policy *m = NULL;
	assert_int_equal(lsim_policy_create(doc, lsim_node_get(doc->root, "m"), "monitor",
					    LSIM_ROLE_MONITOR, "periodic", "/", 1, 2, 1, 1, &m, &d), 0);
	const struct lsim_monitor_ops *ops = m->type->ops;
	struct lsim_monitor_sample raw = {.instance = 1, .gpu_util = 1.0, .arrival_rate = 8},
				   out;
	ops->observe(m->state, &raw, &out); /* first sample passes through */
	assert_true(out.gpu_util == 1.0 && out.arrival_rate == 8);
	raw.gpu_util = 0.0;
	raw.arrival_rate = 0;
	ops->observe(m->state, &raw, &out);
	assert_true(fabs(out.gpu_util - 0.75) < 1e-12);
	assert_true(fabs(out.arrival_rate - 6.0) < 1e-12);
	raw.instance = 0; /* instances are smoothed separately */
	ops->observe(m->state, &raw, &out);
	assert_true(out.gpu_util == 0.0);
	lsim_policy_destroy(m);
	lsim_doc_destroy(doc);

	/* In a run: arrival rates average to the offered rate; ewma's series
	 * is smoother than the raw one. */
	const char *per[] = {"monitor=periodic"};
	const char *ew[] = {"monitor.name=ewma", "monitor.alpha=0.2"};
	struct lsim_scenario *a = NULL, *b = NULL;
	const struct lsim_results *ra = run(base_yaml, per, 1, &a);
	const struct lsim_results *rb = run(base_yaml, ew, 2, &b);
	double rate = 0, tv_a = 0, tv_b = 0;
	size_t n = 0;
	for (size_t i = 0; i < ra->n_ts; i++)
		if (ra->ts[i].t <= 14.0) { /* arrivals last ~15 s at 40/s */
			rate += ra->ts[i].arrival_rate;
			n++;
		}
	rate = rate / (double)n * 4; /* four instances */
	for (size_t i = 4; i < ra->n_ts; i++) {
		tv_a += fabs(ra->ts[i].arrival_rate - ra->ts[i - 4].arrival_rate);
		tv_b += fabs(rb->ts[i].arrival_rate - rb->ts[i - 4].arrival_rate);
	}
	printf("  monitored arrival rate %.1f/s (offered 40/s); total variation of the "
	       "arrival-rate series periodic %.0f, ewma(0.2) %.0f\n", rate, tv_a, tv_b);
	assert_true(fabs(rate - 40) < 4);
	assert_true(tv_b < 0.6 * tv_a);
	lsim_scenario_destroy(a);
	lsim_scenario_destroy(b);
}

/* ---- allocators ---- */

static void placement(const char *alloc, int32_t nodes_out[6])
{
	static const char yaml[] =
		"name: place\n"
		"cluster:\n"
		"  - {gpu: H100-SXM, count: 1, gpus_per_node: 8}\n"
		"  - {gpu: H100-SXM, count: 2, gpus_per_node: 2}\n"
		"instances:\n"
		"  - {gpu: H100-SXM, model: Llama-3.1-8B, tp: 2, replicas: 3}\n"
		"  - {gpu: H100-SXM, model: Llama-3.1-8B, tp: 1, replicas: 3}\n"
		"workload: {count: 10}\n"
		"output: {sample_period: 0s}\n";
	const char *sets[] = {alloc};
	struct lsim_scenario *sc = NULL;
	const struct lsim_results *r = run(yaml, sets, 1, &sc);
	assert_int_equal(r->n_insts, 6);
	for (int i = 0; i < 6; i++)
		nodes_out[i] = r->insts[i].node;
	lsim_scenario_destroy(sc);
}

static void test_allocators_place(void **state)
{
	(void)state;
	int32_t ff[6], bf[6], sp[6];
	placement("allocator=first_fit", ff);
	placement("allocator=best_fit", bf);
	placement("allocator=spread", sp);
	/* nodes of 8, 2 and 2 GPUs; replicas tp2 x3 then tp1 x3 */
	const int32_t want_ff[6] = {0, 0, 0, 0, 0, 1};
	const int32_t want_bf[6] = {1, 2, 0, 0, 0, 0};
	const int32_t want_sp[6] = {0, 1, 2, 0, 0, 0};
	assert_memory_equal(ff, want_ff, sizeof ff);
	assert_memory_equal(bf, want_bf, sizeof bf);
	assert_memory_equal(sp, want_sp, sizeof sp);
	/* memory: 70B weights do not fit one 80 GB H100 */
	struct lsim_scenario *sc = NULL;
	struct lsim_diag d = {0};
	assert_int_equal(load("name: big\ncluster: [{gpu: H100-SXM, count: 1}]\n"
			      "instances: [{gpu: H100-SXM, model: Llama-3-70B, tp: 1}]\n"
			      "workload: {count: 1}\n", NULL, 0, &sc, &d), LSIM_EINVAL);
	/* vLLM's plan: 131.5 GiB of weights on one 79.22 GiB H100; tp 2 holds
	 * them (65.7 GiB per rank) with room for the 2048-token KV reserve */
	assert_string_equal(d.key, "instances[0].tp");
	assert_non_null(strstr(d.msg, "write tp: 2"));
	assert_int_equal(load("name: big\ncluster: [{gpu: H100-SXM, count: 1}]\n"
			      "instances: [{gpu: H100-SXM, model: Llama-3-70B, tp: 4}]\n"
			      "workload: {count: 1}\n", NULL, 0, &sc, &d), 0);
	lsim_scenario_destroy(sc);
}

/* ---- profilers, directly ---- */

static void test_profilers_predict(void **state)
{
	(void)state;
	struct lsim_diag d = {0};
	struct lsim_doc *doc = NULL;
	assert_int_equal(lsim_doc_load_string("p: {name: bucket, buckets: 2, max_prompt: 1024, quantile: 0.5, prior: 7}\nm: {name: mean, prior: 9}\n",
					      "p.yaml", &doc, &d), 0);
	struct lsim_policy *b = NULL, *m = NULL;
	assert_int_equal(lsim_policy_create(doc, lsim_node_get(doc->root, "p"), "profiler",
					    LSIM_ROLE_PROFILER, "mean", "/", 1, 1, 1, 1, &b, &d), 0);
	assert_int_equal(lsim_policy_create(doc, lsim_node_get(doc->root, "m"), "profiler",
					    LSIM_ROLE_PROFILER, "mean", "/", 1, 1, 1, 1, &m, &d), 0);
	const struct lsim_profiler_ops *bo = b->type->ops, *mo = m->type->ops;
	struct lsim_request_info small = {.prompt_tokens = 4}, big = {.prompt_tokens = 900};
	assert_int_equal(bo->predict(b->state, &small), 7); /* prior */
	assert_int_equal(mo->predict(m->state, &small), 9);
	/* small prompts (bucket 0): 10, 30, 20 -> median 20; big: 500 */
	int32_t outs[] = {10, 30, 20};
	for (int i = 0; i < 3; i++) {
		bo->observe(b->state, &small, outs[i], 0);
		mo->observe(m->state, &small, outs[i], 0);
	}
	bo->observe(b->state, &big, 500, 0);
	assert_int_equal(bo->predict(b->state, &small), 20);
	assert_int_equal(bo->predict(b->state, &big), 500);
	assert_int_equal(mo->predict(m->state, &small), 20);
	/* the window keeps the last 512: push 600 values 1000.. then the
	 * median is of 1088..1599 */
	for (int i = 0; i < 600; i++)
		bo->observe(b->state, &small, 1000 + i, 0);
	int32_t med = bo->predict(b->state, &small);
	assert_true(med == 1343 || med == 1344);
	lsim_policy_destroy(b);
	lsim_policy_destroy(m);
	lsim_doc_destroy(doc);
}

/* ---- behaviour ---- */

static const char one_instance_yaml[] =
	"name: behaviour\n"
	"seed: 5\n"
	"instances:\n"
	"  - gpu: H100-SXM\n"
	"    model: Llama-3.1-8B\n"
	"    max_num_seqs: 4\n"
	"workload:\n"
	"  kind: generator\n"
	"  rate: 6\n"
	"  count: 1500\n"
	"  prompt: {dist: fixed, value: 200}\n"
	"  output: {dist: lognormal, mean: 120, stddev: 360, max: 4000}\n"
	"output:\n"
	"  sample_period: 0s\n";

static void test_sjf_beats_fcfs(void **state)
{
	(void)state;
	const char *fcfs[] = {"scheduler.queue=fcfs", "profiler=oracle"};
	const char *sjf[] = {"scheduler.queue=sjf", "profiler=oracle"};
	struct lsim_scenario *a = NULL, *b = NULL;
	double e_fcfs = run(one_instance_yaml, fcfs, 2, &a)->summary.e2e_mean_s;
	double e_sjf = run(one_instance_yaml, sjf, 2, &b)->summary.e2e_mean_s;
	printf("  heavy-tailed outputs, 1 instance, 4 seqs: mean E2E fcfs %.3f s, sjf(oracle) %.3f s\n",
	       e_fcfs, e_sjf);
	assert_true(e_sjf < 0.8 * e_fcfs);
	lsim_scenario_destroy(a);
	lsim_scenario_destroy(b);
}

static void test_least_outstanding_beats_random(void **state)
{
	(void)state;
	const char *base[] = {"instances.0.replicas=8", "instances.0.max_num_seqs=8",
			      "workload.rate=40", "workload.count=4000"};
	const char *lo[] = {base[0], base[1], base[2], base[3],
			    "scheduler.router=least_outstanding"};
	const char *rnd[] = {base[0], base[1], base[2], base[3],
			     "scheduler.router=random"};
	struct lsim_scenario *a = NULL, *b = NULL;
	double p_lo = run(one_instance_yaml, lo, 5, &a)->summary.ttft_p99_s;
	double p_rnd = run(one_instance_yaml, rnd, 5, &b)->summary.ttft_p99_s;
	printf("  8 replicas: P99 TTFT least_outstanding %.3f s, random %.3f s\n", p_lo,
	       p_rnd);
	assert_true(p_lo < 0.5 * p_rnd);
	lsim_scenario_destroy(a);
	lsim_scenario_destroy(b);
}

static double class_ttft(const struct lsim_results *r, int32_t cls)
{
	double sum = 0;
	size_t n = 0;
	for (size_t i = 0; i < r->n_reqs; i++)
		if (r->reqs[i].qos_class == cls && r->reqs[i].status == LSIM_REQ_FINISHED) {
			sum += r->reqs[i].first_token - r->reqs[i].arrival;
			n++;
		}
	assert_true(n > 0);
	return sum / (double)n;
}

static void test_priority_and_edf_favour_urgent_class(void **state)
{
	(void)state;
	char yaml[4096];
	snprintf(yaml, sizeof yaml,
		 "%sclasses:\n  - {name: urgent, share: 0.2, priority: 0, ttft: 200ms}\n"
		 "  - {name: bulk, share: 0.8, priority: 1, ttft: 30s}\n",
		 one_instance_yaml);
	const char *qs[] = {"scheduler.queue=fcfs", "scheduler.queue=priority",
			    "scheduler.queue=edf"};
	double t[3][2];
	for (int i = 0; i < 3; i++) {
		struct lsim_scenario *sc = NULL;
		const struct lsim_results *r = run(yaml, &qs[i], 1, &sc);
		t[i][0] = class_ttft(r, 0);
		t[i][1] = class_ttft(r, 1);
		printf("  %-26s mean TTFT urgent %.3f s, bulk %.3f s\n", qs[i], t[i][0],
		       t[i][1]);
		lsim_scenario_destroy(sc);
	}
	assert_true(t[1][0] < 0.5 * t[0][0]);
	assert_true(t[2][0] < 0.5 * t[0][0]);
	assert_true(t[1][1] > t[1][0]);
}

static double admitted_attainment(const struct lsim_results *r)
{
	double met = 0, done = 0;
	for (size_t i = 0; i < r->n_reqs; i++)
		if (r->reqs[i].status == LSIM_REQ_FINISHED) {
			done++;
			met += r->reqs[i].slo_met;
		}
	return done > 0 ? met / done : 0;
}

static void test_admission_raises_attainment(void **state)
{
	(void)state;
	char yaml[4096];
	snprintf(yaml, sizeof yaml, "%sclasses:\n  - {name: all, share: 1, ttft: 2s}\n",
		 one_instance_yaml);
	const char *none[] = {"qos.name=none"};
	const char *adm[] = {"qos.name=admission", "qos.max_waiting=4"};
	struct lsim_scenario *a = NULL, *b = NULL;
	const struct lsim_results *ra = run(yaml, none, 1, &a);
	const struct lsim_results *rb = run(yaml, adm, 2, &b);
	double att_none = admitted_attainment(ra), att_adm = admitted_attainment(rb);
	printf("  TTFT<=2s attainment of admitted requests: none %.3f (%.0f admitted), "
	       "admission max_waiting=4 %.3f (%.0f admitted, %.0f rejected)\n",
	       att_none, ra->summary.completed, att_adm, rb->summary.completed,
	       rb->summary.rejected);
	assert_true(att_adm > att_none + 0.3);
	assert_true(rb->summary.rejected > 0);
	for (size_t i = 0; i < rb->n_reqs; i++)
		if (rb->reqs[i].status == LSIM_REQ_REJECTED)
			assert_int_equal(rb->reqs[i].reject_reason, LSIM_REJECT_QUEUE_FULL);
	/* the /classes row agrees with the requests */
	assert_int_equal(rb->n_classes, 1);
	assert_true(fabs(rb->classes[0].rejected - rb->summary.rejected) < 0.5);
	assert_true(fabs(rb->classes[0].slo_attainment - rb->summary.slo_attainment) < 1e-12);
	lsim_scenario_destroy(a);
	lsim_scenario_destroy(b);
}

static void test_synchronizer_delay(void **state)
{
	(void)state;
	/* Requests far apart, so each is alone: a 50 ms control plane moves
	 * every first token by exactly 50 ms. */
	char trace[] = "/tmp/lsim_sync_XXXXXX";
	int fd = mkstemp(trace);
	assert_true(fd >= 0);
	const char csv[] = "t,p,o\n0,100,5\n10,300,5\n20,50,5\n";
	assert_int_equal(write(fd, csv, sizeof csv - 1), (ssize_t)(sizeof csv - 1));
	close(fd);
	char yaml[1024];
	snprintf(yaml, sizeof yaml,
		 "name: sync\ninstances: [{gpu: H100-SXM}]\n"
		 "workload: {kind: csv, path: %s, time_format: seconds, arrival_column: t,"
		 " prompt_column: p, output_column: o}\n", trace);
	const char *fixed[] = {"synchronizer.name=fixed", "synchronizer.delay=50ms"};
	struct lsim_scenario *a = NULL, *b = NULL;
	const struct lsim_results *ra = run(yaml, NULL, 0, &a);
	const struct lsim_results *rb = run(yaml, fixed, 2, &b);
	for (int i = 0; i < 3; i++) {
		assert_true(fabs(rb->reqs[i].first_token - ra->reqs[i].first_token - 0.05) < 1e-9);
		assert_true(fabs(rb->reqs[i].first_scheduled - ra->reqs[i].arrival - 0.05) < 1e-9);
	}
	lsim_scenario_destroy(a);
	lsim_scenario_destroy(b);
	unlink(trace);
}

/* An adaptor plugin that always wants one more: the cluster (3 nodes x 2
 * GPUs, 4 replicas placed) has room for two more, started at the first
 * two samples; then scale-outs are refused. Nothing is lost on the way. */
static void test_adaptor_scale_out(void **state)
{
	(void)state;
	const char *so = getenv("LSIM_SCALE_UP_PLUGIN");
	assert_non_null(so);
	char yaml[4096];
	snprintf(yaml, sizeof yaml, "%sadaptor: {plugin: %s}\n", base_yaml, so);
	const char *set[] = {"instances.0.max_replicas=10"};
	struct lsim_scenario *sc = NULL;
	struct lsim_diag d = {0};
	assert_int_equal(load(yaml, set, 1, &sc, &d), 0);
	const struct lsim_results *r = NULL;
	assert_int_equal(lsim_scenario_run(sc, NULL, NULL, &r, &d), 0);
	assert_int_equal(r->n_insts, 6);
	double period = 0.1; /* output.sample_period of base_yaml */
	assert_true(fabs(r->insts[4].start - period) < 1e-9);
	assert_true(fabs(r->insts[5].start - 2 * period) < 1e-9);
	/* each loads 16.06 GB over the 50 GB/s storage link, the second while
	 * the first is still loading for part of it */
	assert_true(r->insts[4].ready - r->insts[4].start >= 0.3212);
	/* first_fit put the first four on nodes 0, 0, 1, 1: node 2 has room */
	assert_int_equal(r->insts[4].node, 2);
	assert_int_equal(r->insts[5].node, 2);
	assert_true(r->summary.completed == r->summary.requests);
	lsim_scenario_destroy(sc);
}

static void test_prefix_affinity(void **state)
{
	(void)state;
	/* Three conversations (first ids 10, 20, 30) of four turns each,
	 * interleaved, light load: every turn of a conversation lands on the
	 * same instance and later turns hit the prefix cache. */
	char trace[] = "/tmp/lsim_pa_XXXXXX";
	int fd = mkstemp(trace);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	for (int turn = 0; turn < 4; turn++)
		for (int c = 1; c <= 3; c++)
			fprintf(f, "{\"timestamp\": %d, \"input_length\": %d, \"output_length\": 4, "
				   "\"hash_ids\": [%d, %d%s]}\n",
				(turn * 3 + c) * 2000, 1024 + 512 * (turn > 0),
				c * 10, c * 10 + 1, turn > 0 ? (c == 1 ? ", 12" : c == 2 ? ", 22" : ", 32") : "");
	fclose(f);
	char yaml[1024];
	snprintf(yaml, sizeof yaml,
		 "name: pa\ninstances: [{gpu: H100-SXM, replicas: 4}]\n"
		 "scheduler: {router: {name: prefix_affinity, blocks: 2}}\n"
		 "workload: {kind: jsonl, path: %s}\noutput: {sample_period: 0s}\n", trace);
	struct lsim_scenario *sc = NULL;
	const struct lsim_results *r = run(yaml, NULL, 0, &sc);
	for (size_t i = 3; i < r->n_reqs; i++)
		assert_int_equal(r->reqs[i].instance, r->reqs[i - 3].instance);
	double hits = 0, admitted = 0;
	for (size_t i = 0; i < r->n_insts; i++) {
		hits += (double)r->insts[i].prefix_hit_tokens;
		admitted += (double)r->insts[i].prompt_tokens;
	}
	/* per conversation: turn 2 reuses the 1024 tokens of turn 1; turns 3
	 * and 4 reuse all 1536 but the last block (always recomputed): 1520 */
	assert_true(fabs(hits - 3 * (1024 + 2 * 1520)) < 0.5);
	printf("  prefix_affinity: hit rate %.3f (3 conversations x 4 turns)\n",
	       hits / admitted);
	lsim_scenario_destroy(sc);
	unlink(trace);
}

/* power_of_two draws distinct instances: with choices = n it is a full
 * scan (always the least loaded); with 2 of 2 it never picks the busier
 * one (sampling with replacement would, one time in four); with 2 of 8
 * every instance is drawn, and the busiest never wins. */
static void test_power_of_two_distinct(void **state)
{
	(void)state;
	const struct lsim_policy_type *t = &lsim_sched_power_of_two;
	const struct lsim_scheduler_ops *ops = t->ops;
	gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(rng, 11);
	struct lsim_policy_ctx ctx = {.seed = 11, .rng = rng, .n_instances = 8};
	_Alignas(max_align_t) unsigned char st[64] = {0};
	assert_true(t->state_size <= sizeof st);
	struct lsim_instance_info inst[8] = {0};
	for (int i = 0; i < 8; i++)
		inst[i].outstanding = 10 + (i * 5) % 8; /* 10, 15, 12, 17, 14, 11, 16, 13 */
	int64_t *choices = (int64_t *)(st + t->params[0].offset);
	assert_int_equal(t->init(st, &ctx), 0);
	int picked[8] = {0};
	*choices = 2;
	for (int k = 0; k < 4000; k++) {
		assert_true(ops->route(st, NULL, inst, 2) == 0);
		int32_t i = ops->route(st, NULL, inst, 8);
		picked[i]++;
	}
	/* the busiest (3) loses every draw it is in; instance 0, the least
	 * loaded, wins every draw it is in: 2 of 8 include it 1/4 of the time */
	assert_int_equal(picked[3], 0);
	assert_true(picked[0] > 900 && picked[0] < 1100);
	for (int i = 0; i < 8; i++)
		assert_true(i == 3 || picked[i] > 0);
	*choices = 8;
	for (int k = 0; k < 100; k++)
		assert_int_equal(ops->route(st, NULL, inst, 8), 0);
	*choices = 64; /* more choices than instances: all of them */
	assert_int_equal(ops->route(st, NULL, inst, 5), 0);
	gsl_rng_free(rng);
}

static void test_least_load_score(void **state)
{
	(void)state;
	/* vLLM's balancer score 4 x waiting + running: instance 1 (3
	 * waiting, 0 running: 12) loses to instance 0 (1 waiting, 7 running:
	 * 11) although it has fewer requests; with waiting_weight 1 the
	 * score is the count and instance 1 (3) wins over 0 (8) and 2 (4) */
	const struct lsim_policy_type *t = &lsim_sched_least_load;
	const struct lsim_scheduler_ops *ops = t->ops;
	_Alignas(max_align_t) unsigned char st[64] = {0};
	assert_true(t->state_size <= sizeof st);
	assert_int_equal(t->n_params, 2);
	assert_string_equal(t->params[0].def, "4");
	assert_string_equal(t->params[1].def, "1");
	double *w_wait = (double *)(st + t->params[0].offset);
	double *w_run = (double *)(st + t->params[1].offset);
	*w_wait = 4;
	*w_run = 1;
	struct lsim_instance_info inst[3] = {
		{.waiting = 1, .running = 7}, {.waiting = 3}, {.waiting = 2, .running = 4}};
	assert_int_equal(ops->route(st, NULL, inst, 3), 0);
	*w_wait = 1;
	assert_int_equal(ops->route(st, NULL, inst, 3), 1);
	/* ties in turn: three idle instances are served 0, 1, 2, 0 */
	struct lsim_instance_info idle[3] = {{0}};
	*w_wait = 4;
	int32_t first = ops->route(st, NULL, idle, 3);
	for (int k = 1; k <= 3; k++)
		assert_int_equal(ops->route(st, NULL, idle, 3), (first + k) % 3);
}

static void test_token_bucket_exact(void **state)
{
	(void)state;
	/* arrivals at 0,0,0,0,0.5,1.0 s; rate 1/s, burst 2: the bucket holds
	 * 2 at t=0 (admit 0 and 1), 0.5 at t=0.5 (reject), 1 at t=1 (admit 5) */
	char trace[] = "/tmp/lsim_tb_XXXXXX";
	int fd = mkstemp(trace);
	assert_true(fd >= 0);
	const char csv[] = "t,p,o\n0,10,2\n0,10,2\n0,10,2\n0,10,2\n0.5,10,2\n1.0,10,2\n";
	assert_int_equal(write(fd, csv, sizeof csv - 1), (ssize_t)(sizeof csv - 1));
	close(fd);
	char yaml[1024];
	snprintf(yaml, sizeof yaml,
		 "name: tb\ninstances: [{gpu: H100-SXM}]\n"
		 "qos: {name: token_bucket, rate: 1, burst: 2}\n"
		 "workload: {kind: csv, path: %s, time_format: seconds, arrival_column: t,"
		 " prompt_column: p, output_column: o}\n", trace);
	struct lsim_scenario *sc = NULL;
	const struct lsim_results *r = run(yaml, NULL, 0, &sc);
	const int32_t want[6] = {0, 0, 1, 1, 1, 0};
	for (int i = 0; i < 6; i++) {
		assert_int_equal(r->reqs[i].status == LSIM_REQ_REJECTED, want[i]);
		if (want[i])
			assert_int_equal(r->reqs[i].reject_reason, LSIM_REJECT_RATE_LIMIT);
	}
	lsim_scenario_destroy(sc);
	unlink(trace);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conformance_all_builtins),
		cmocka_unit_test(test_plugin),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_profilers_predict),
		cmocka_unit_test(test_allocators_place),
		cmocka_unit_test(test_monitors),
		cmocka_unit_test(test_sjf_beats_fcfs),
		cmocka_unit_test(test_least_outstanding_beats_random),
		cmocka_unit_test(test_priority_and_edf_favour_urgent_class),
		cmocka_unit_test(test_admission_raises_attainment),
		cmocka_unit_test(test_token_bucket_exact),
		cmocka_unit_test(test_prefix_affinity),
		cmocka_unit_test(test_power_of_two_distinct),
		cmocka_unit_test(test_least_load_score),
		cmocka_unit_test(test_synchronizer_delay),
		cmocka_unit_test(test_adaptor_scale_out),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
