/*
 * test_validate.c - `llmsim validate` on the measured vLLM run shipped in
 * examples/data (Llama-3.1-8B on one RTX 4090, 300 requests) with the
 * matching LLMServingSim per-layer profile: the simulated mean TPOT and
 * end-to-end latency must be within 5% of the measurement and the mean
 * TTFT within 10% (the targets; docs/validation.md has the table).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "validate.h"

static void test_rtx4090_llama31_8b(void **state)
{
	(void)state;
	const char *root = getenv("LSIM_SOURCE_ROOT");
	assert_non_null(root);
	char run[1024], prof[1024];
	snprintf(run, sizeof run, "%s/examples/data/vllm_runs/RTX4090/Llama-3.1-8B", root);
	snprintf(prof, sizeof prof,
		 "%s/calibrate/perf/llmservingsim/RTX4090/meta-llama/Llama-3.1-8B/bf16", root);
	struct lsim_validate_opts o = {.run_dir = run, .perf_dir = prof, .model = ""};
	struct lsim_validate_result r;
	struct lsim_diag d = {0};
	int rc = lsim_validate_run(&o, &r, &d);
	if (rc != 0)
		fail_msg("%s:%d: %s: %s", d.file, d.line, d.key, d.msg);
	struct lsim_buf b = {0};
	lsim_validate_format(&r, false, &b);
	printf("%s", b.data);
	lsim_buf_release(&b);
	assert_int_equal(r.n_requests, 300);
	/* the measured means, from requests.jsonl (ms) */
	assert_true(fabs(r.rows[0][0].real_ms - 65456.6) < 0.5);
	assert_true(fabs(r.rows[1][0].real_ms - 32.4) < 0.1);
	assert_true(fabs(r.rows[2][0].real_ms - 86578.3) < 0.5);
	assert_true(fabs(r.rows[1][0].err_pct) < 5.0);	/* TPOT mean */
	assert_true(fabs(r.rows[2][0].err_pct) < 5.0);	/* E2E mean */
	assert_true(fabs(r.rows[0][0].err_pct) < 10.0); /* TTFT mean */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rtx4090_llama31_8b),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
