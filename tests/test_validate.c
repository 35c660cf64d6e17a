/*
 * test_validate.c - `llmsim validate` on the measured vLLM run shipped in
 * examples/data (Llama-3.1-8B on one RTX 4090, 300 requests) with the
 * matching LLMServingSim per-layer profile: the simulated mean TPOT and
 * end-to-end latency must be within 5% of the measurement and the mean
 * TTFT within 10% (the targets; docs/validation.md has the table).
 * Then the run-log generations validate accepts, each a fixture derived
 * from that run (tests/data/validate/README.md): max_model_len null, no
 * kv_cache block, requests.jsonl out of queued_ts order, a fine-tune's
 * model name; and the catalogue matching of published model names.
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

#include "cluster/hw.h"
#include "serving/memplan.h"
#include "cli/validate.h"

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

static const char *prof_dir(void)
{
	static char prof[1024];
	snprintf(prof, sizeof prof,
		 "%s/calibrate/perf/llmservingsim/RTX4090/meta-llama/Llama-3.1-8B/bf16",
		 getenv("LSIM_SOURCE_ROOT"));
	return prof;
}

/* validate on RUN (relative to the source root) with the per-layer
 * profile of folder perf (prof_dir() if NULL); fails the test on error */
static void run_with(const char *rel, const char *perf, const char *gpu,
		     struct lsim_validate_result *r)
{
	const char *root = getenv("LSIM_SOURCE_ROOT");
	assert_non_null(root);
	char dir[1024], pdir[1024];
	snprintf(dir, sizeof dir, "%s/%s", root, rel);
	if (perf)
		snprintf(pdir, sizeof pdir, "%s/%s", root, perf);
	struct lsim_validate_opts o = {.run_dir = dir, .perf_dir = perf ? pdir : prof_dir(),
				       .model = "", .gpu = gpu};
	struct lsim_diag d = {0};
	int rc = lsim_validate_run(&o, r, &d);
	if (rc != 0)
		fail_msg("%s:%d: %s: %s", d.file, d.line, d.key, d.msg);
}

static void run(const char *rel, const char *gpu, struct lsim_validate_result *r)
{
	run_with(rel, NULL, gpu, r);
}

#define SHIPPED "examples/data/vllm_runs/RTX4090/Llama-3.1-8B"

/* every metric, the preemption count and the KV cache of two runs */
static void assert_same_replay(const struct lsim_validate_result *a,
			       const struct lsim_validate_result *b)
{
	assert_memory_equal(a->rows, b->rows, sizeof a->rows);
	assert_int_equal(a->n_requests, b->n_requests);
	assert_int_equal(a->n_preempted, b->n_preempted);
	assert_int_equal(a->kv_blocks, b->kv_blocks);
}

/* max_model_len null: the model's context (131,072 for Llama-3.1-8B);
 * no request comes near either limit, so the replay is the shipped one's */
static void test_null_max_model_len(void **state)
{
	(void)state;
	struct lsim_validate_result base, r;
	run(SHIPPED, "", &base);
	run("tests/data/validate/null_len", "", &r);
	assert_int_equal(base.max_model_len, 32768);
	assert_string_equal(base.len_from, "engine_kwargs.max_model_len");
	assert_int_equal(r.max_model_len, 131072);
	assert_null(r.len_from);
	assert_same_replay(&base, &r);
}

/* requests.jsonl with rows swapped: taken in queued_ts order, the replay
 * equals the sorted file's exactly; 4 lines step back, the largest by
 * 27555.843368786 - 27555.614103606 s (rows 200 and 203 swapped) */
static void test_unsorted_requests(void **state)
{
	(void)state;
	struct lsim_validate_result base, r;
	run(SHIPPED, "", &base);
	run("tests/data/validate/unsorted", "", &r);
	assert_int_equal(base.n_back, 0);
	assert_int_equal(r.n_back, 4);
	assert_true(fabs(r.max_back_ms - 229.265180) < 1e-6);
	assert_same_replay(&base, &r);
}

/* a fine-tune's published name finds the base architecture */
static void test_instruct_name(void **state)
{
	(void)state;
	struct lsim_validate_result base, r;
	run(SHIPPED, "", &base);
	run("tests/data/validate/instruct", "", &r);
	assert_string_equal(r.run_model, "meta-llama/Meta-Llama-3.1-8B-Instruct");
	assert_string_equal(r.model, "Llama-3.1-8B");
	assert_same_replay(&base, &r);
}

/* no kv_cache block: the cache is sized from the run's device memory
 * (the same bytes as the RTX-4090 profile's, so --gpu RTX-4090 gives the
 * same cache), and the replay still meets the targets */
static void test_no_kv_cache(void **state)
{
	(void)state;
	struct lsim_validate_result r, g;
	run("tests/data/validate/no_kv", "", &r);
	run("tests/data/validate/no_kv", "RTX-4090", &g);
	assert_null(r.kv_from);
	assert_null(r.len_from);
	assert_true(r.kv_blocks > 0);
	assert_int_equal(r.block_size, 16);
	assert_same_replay(&r, &g);
	assert_int_equal(r.n_requests, 300);
	assert_true(fabs(r.rows[1][0].err_pct) < 5.0);	/* TPOT mean */
	assert_true(fabs(r.rows[2][0].err_pct) < 5.0);	/* E2E mean */
	assert_true(fabs(r.rows[0][0].err_pct) < 10.0); /* TTFT mean */
}

/* an older run log (no kv_cache, no resolved_config): prefix caching
 * follows the logged vLLM 0.19.0's default (on, V1), the cache the device
 * memory: the same replay as the log that states both */
static void test_older_log(void **state)
{
	(void)state;
	struct lsim_validate_result r, base;
	run("tests/data/validate/older", "", &r);
	run("tests/data/validate/no_kv", "", &base);
	assert_true(r.prefix_caching);
	assert_string_equal(r.prefix_from, "unstated: the default of vLLM 0.19.0, V1 engine");
	assert_true(base.prefix_caching);
	assert_string_equal(base.prefix_from, "resolved_config.cache_config.enable_prefix_caching");
	assert_same_replay(&base, &r);
}

/* tensor parallel 2: the all-reduces take the fabric of the profile the
 * run's device name matches (RTX PRO 6000, P2P over PCIe) — the same
 * replay as naming it with --gpu; on RTX 4090s, whose P2P is off (data
 * staged through host memory), every step is slower */
static void test_tp2_fabric(void **state)
{
	(void)state;
	struct lsim_validate_result r, g, slow;
	const char *pro = "calibrate/perf/llmservingsim/RTXPRO6000/meta-llama/Llama-3.1-8B/bf16";
	run_with("tests/data/validate/tp2_pro6000", pro, "", &r);
	run_with("tests/data/validate/tp2_pro6000", pro, "RTX-PRO-6000", &g);
	run_with("tests/data/validate/tp2_pro6000", pro, "RTX-4090", &slow);
	assert_string_equal(r.fabric, "RTX-PRO-6000");
	assert_string_equal(r.fabric_from,
			    "hardware.device_name \"NVIDIA RTX PRO 6000 Blackwell Server Edition\"");
	assert_string_equal(g.fabric_from, "--gpu RTX-PRO-6000");
	assert_same_replay(&r, &g);
	assert_true(slow.rows[1][0].sim_ms > r.rows[1][0].sim_ms); /* TPOT mean */
	assert_true(slow.rows[0][0].sim_ms > r.rows[0][0].sim_ms); /* TTFT mean */
}

/* pipeline_parallel_size 2 on RTX PRO 6000s (a synthetic fixture:
 * tests/data/validate/README.md): one instance of two stages, the sends
 * between them on the fabric found from the device name, as --gpu's; on
 * RTX 4090s (P2P off: the activations through host memory) the replay
 * differs (under this run's KV pressure its preemptions move the means
 * either way; tests/test_pipeline.c times the sends). Refused with data
 * parallelism. */
static void test_pp2_fabric(void **state)
{
	(void)state;
	struct lsim_validate_result r, g, slow;
	const char *pro = "calibrate/perf/llmservingsim/RTXPRO6000/meta-llama/Llama-3.1-8B/bf16";
	run_with("tests/data/validate/pp2_pro6000", pro, "", &r);
	run_with("tests/data/validate/pp2_pro6000", pro, "RTX-PRO-6000", &g);
	run_with("tests/data/validate/pp2_pro6000", pro, "RTX-4090", &slow);
	assert_int_equal(r.pp, 2);
	assert_int_equal(r.dp, 1);
	assert_int_equal(r.n_requests, 40);
	assert_string_equal(r.fabric, "RTX-PRO-6000");
	assert_string_equal(g.fabric_from, "--gpu RTX-PRO-6000");
	assert_same_replay(&r, &g);
	assert_memory_not_equal(slow.rows, r.rows, sizeof r.rows);
	char dir[1024];
	snprintf(dir, sizeof dir, "%s/tests/data/validate/bad/dp2_pp2", getenv("LSIM_SOURCE_ROOT"));
	char pdir[1024];
	snprintf(pdir, sizeof pdir, "%s/%s", getenv("LSIM_SOURCE_ROOT"), pro);
	struct lsim_validate_opts o = {.run_dir = dir, .perf_dir = pdir, .model = "", .gpu = ""};
	struct lsim_diag d = {0};
	assert_int_equal(lsim_validate_run(&o, &r, &d), LSIM_EINVAL);
	assert_string_equal(d.key, "pipeline_parallel_size");
}

#define QWEN_PRO6000 "calibrate/perf/llmservingsim/RTXPRO6000/Qwen/Qwen3-30B-A3B-Instruct-2507/bf16"

/* data_parallel_size 2 of a dense model: two ranks stepping on their
 * own behind vLLM's balancer; enable_expert_parallel on a dense model
 * splits nothing (one engine, as vLLM runs it) */
static void test_data_parallel_dense(void **state)
{
	(void)state;
	struct lsim_validate_result r, e;
	run("tests/data/validate/data_parallel", "", &r);
	assert_int_equal(r.dp, 2);
	assert_int_equal(r.ep, 1);
	assert_false(r.lockstep);
	assert_int_equal(r.n_requests, 40);
	run("tests/data/validate/expert_parallel_dense", "", &e);
	assert_int_equal(e.dp, 1);
	assert_int_equal(e.ep, 1);
	/* two ranks share the load: TTFT and TPOT shorter than one engine's */
	assert_true(r.rows[0][0].sim_ms < e.rows[0][0].sim_ms);
	assert_true(r.rows[1][0].sim_ms < e.rows[1][0].sim_ms);
}

/* data_parallel_size 2 + enable_expert_parallel of Qwen3-30B-A3B on RTX
 * PRO 6000s: two ranks in lockstep, the experts over 2 GPUs, the
 * all-to-alls on the fabric found from the device name (the same replay
 * as with --gpu). Golden means (ms) of the mechanism as built: they move
 * when the table, the balancer or the lockstep model changes. */
static void test_dp2_ep_moe(void **state)
{
	(void)state;
	struct lsim_validate_result r, g;
	run_with("tests/data/validate/dp2_ep_moe", QWEN_PRO6000, "", &r);
	run_with("tests/data/validate/dp2_ep_moe", QWEN_PRO6000, "RTX-PRO-6000", &g);
	assert_int_equal(r.dp, 2);
	assert_int_equal(r.ep, 2);
	assert_true(r.lockstep);
	assert_string_equal(r.fabric, "RTX-PRO-6000");
	assert_same_replay(&r, &g);
	/* in double (cmocka's assert_float_equal compares floats); the
	 * dispatch and combine as vLLM's default all-gather and
	 * reduce-scatter (they were all-to-alls: 82.216462, 23.783054 and
	 * 16238.443484) */
	assert_true(fabs(r.rows[0][0].sim_ms - 84.438541) <= 1e-6);
	assert_true(fabs(r.rows[1][0].sim_ms - 24.089520) <= 1e-6);
	assert_true(fabs(r.rows[2][0].sim_ms - 16448.108292) <= 1e-6);
}

/* dp2_ep_moe without a measured block count: each rank's cache comes from
 * vLLM's memory plan on the log's 96 GiB after its dense weights and 64 of
 * the 128 experts (engine 256 seqs, 2,048 tokens, utilisation 0.9,
 * blocks of 16), more than a rank holding every expert would have */
static void test_dp2_ep_moe_memory(void **state)
{
	(void)state;
	struct lsim_validate_result r;
	run_with("tests/data/validate/dp2_ep_moe_no_kv", QWEN_PRO6000, "", &r);
	struct lsim_model_arch arch;
	char catalogue[1024];
	struct lsim_diag d = {0};
	snprintf(catalogue, sizeof catalogue, "%s/models.yaml", lsim_data_dir());
	assert_int_equal(lsim_model_match(catalogue, "Qwen3-30B-A3B", &arch, &d), 0);
	struct lsim_memplan_in in = {
		.model = &arch, .total_bytes = 96.0 * 1073741824.0, .utilization = 0.9,
		.tp = 1, .pp = 1, .max_num_batched_tokens = 2048, .max_num_seqs = 256,
		.block_size = 16, .experts_per_rank = 64, .dp = 2,
	};
	struct lsim_memplan half, all;
	lsim_memplan_compute(&in, &half);
	in.experts_per_rank = 0;
	lsim_memplan_compute(&in, &all);
	assert_int_equal(r.kv_blocks, half.blocks);
	/* by hand: 0.9 x 96 GiB - 16,036,595,712 params x 2 B - the activation
	 * peak - 0.25 GiB (a DP rank's NCCL) over 1,572,864 B a block (48
	 * layers x 2 x 4 KV heads x 128 x 2 B x 16 tokens): 37,721.96 */
	assert_int_equal(r.kv_blocks, 37721);
	assert_true(half.blocks > all.blocks);
	assert_int_equal(r.dp, 2);
	assert_int_equal(r.ep, 2);
}

/* CUDA device names to profiles: every word of the profile's name begins
 * a word of the device's */
static void test_device_match(void **state)
{
	(void)state;
	char dir[1024], out[128];
	snprintf(dir, sizeof dir, "%s/profiles", lsim_data_dir());
	static const char *const pairs[][2] = {
		{"NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX-PRO-6000"},
		{"NVIDIA GeForce RTX 4090", "RTX-4090"},
		{"NVIDIA A100-SXM4-80GB", "A100-80GB-SXM"},
		{"NVIDIA A100-SXM4-40GB", "A100-40GB-SXM"},
		{"NVIDIA A100 80GB PCIe", "A100-80GB-PCIe"},
		{"NVIDIA H100 PCIe", "H100-PCIe"},
	};
	for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
		struct lsim_diag d = {0};
		assert_int_equal(lsim_gpu_profile_match(dir, pairs[i][0], out, sizeof out, &d), 0);
		assert_string_equal(out, pairs[i][1]);
	}
	struct lsim_diag d = {0};
	/* CUDA's names of the SXM parts do not say SXM: their profiles'
	 * cuda_name claims them, over any words */
	assert_int_equal(lsim_gpu_profile_match(dir, "NVIDIA H100 80GB HBM3", out, sizeof out, &d), 0);
	assert_string_equal(out, "H100-SXM");
	assert_int_equal(lsim_gpu_profile_match(dir, "NVIDIA H200", out, sizeof out, &d), 0);
	assert_string_equal(out, "H200-SXM");
	assert_int_equal(lsim_gpu_profile_match(dir, "NVIDIA B200", out, sizeof out, &d), 0);
	assert_string_equal(out, "B200-SXM");
	/* a beginning may not cut a number: the L40S is not an L4 (which
	 * it was by prefix, and a tie with L40S), the L40 neither */
	assert_int_equal(lsim_gpu_profile_match(dir, "NVIDIA L40S", out, sizeof out, &d), 0);
	assert_string_equal(out, "L40S");
	assert_int_equal(lsim_gpu_profile_match(dir, "NVIDIA L4", out, sizeof out, &d), 0);
	assert_string_equal(out, "L4");
	assert_int_equal(lsim_gpu_profile_match(dir, "NVIDIA L40", out, sizeof out, &d),
			 LSIM_ENOENT);
	/* an H100 of another name (the NVL card) is not the SXM profile */
	assert_int_equal(lsim_gpu_profile_match(dir, "NVIDIA H100 NVL", out, sizeof out, &d),
			 LSIM_ENOENT);
	/* "A100" alone is both A100 SXM profiles' and the PCIe one's prefix,
	 * but none of them has all its words in it */
	assert_int_equal(lsim_gpu_profile_match(dir, "NVIDIA A100", out, sizeof out, &d),
			 LSIM_ENOENT);
}

static void test_strip_tags(void **state)
{
	(void)state;
	static const char *const steps[] = {
		"Qwen/Qwen3-30B-A3B-Instruct-2507", "Qwen3-30B-A3B-Instruct-2507",
		"Qwen3-30B-A3B-Instruct", "Qwen3-30B-A3B"};
	char s[128];
	snprintf(s, sizeof s, "%s", steps[0]);
	for (size_t i = 1; i < sizeof steps / sizeof steps[0]; i++) {
		assert_true(lsim_model_strip_tag(s));
		assert_string_equal(s, steps[i]);
	}
	assert_false(lsim_model_strip_tag(s)); /* -A3B is part of the name */
	snprintf(s, sizeof s, "Qwen3-32B-FP8");
	assert_false(lsim_model_strip_tag(s)); /* other weights: kept */
	snprintf(s, sizeof s, "Mistral-7B-Instruct-v0.2");
	assert_false(lsim_model_strip_tag(s)); /* a version: kept */
	snprintf(s, sizeof s, "-2507");
	assert_false(lsim_model_strip_tag(s)); /* nothing would be left */
}

static void test_match_catalogue(void **state)
{
	(void)state;
	char cat[1024];
	snprintf(cat, sizeof cat, "%s/models.yaml", lsim_data_dir());
	struct lsim_model_arch m;
	struct lsim_diag d = {0};
	assert_int_equal(lsim_model_match(cat, "Qwen/Qwen3-30B-A3B-Instruct-2507", &m, &d), 0);
	assert_string_equal(m.name, "Qwen3-30B-A3B");
	assert_int_equal(m.n_experts, 128);
	assert_int_equal(m.experts_per_token, 8);
	assert_int_equal(m.n_layers, 48);
	assert_int_equal(lsim_model_match(cat, "Qwen/Qwen3-32B", &m, &d), 0);
	assert_string_equal(m.name, "Qwen3-32B");
	assert_int_equal(m.n_layers, 64);
	assert_int_equal(lsim_model_match(cat, "meta-llama/Llama-2-7b-chat-hf", &m, &d), 0);
	assert_string_equal(m.name, "Llama-2-7B");
	assert_int_equal(lsim_model_match(cat, "meta-llama/Llama-3.1-8B", &m, &d), 0);
	assert_string_equal(m.name, "Llama-3.1-8B");
	/* FP8 weights are not the catalogue's bf16 model: refused, nearest named */
	assert_int_equal(lsim_model_match(cat, "Qwen/Qwen3-32B-FP8", &m, &d), LSIM_ENOENT);
	assert_non_null(strstr(d.msg, "nearest: Qwen3-32B,"));
	/* edit distance: "Lama-3.1-8B" is one letter from Llama-3.1-8B */
	assert_int_equal(lsim_model_match(cat, "Lama-3.1-8B", &m, &d), LSIM_ENOENT);
	assert_non_null(strstr(d.msg, "nearest: Llama-3.1-8B, Llama-3-8B, "));
}

/*
 * Hostile fields (issue 29): each key validate reads from meta.json and
 * from a requests.jsonl line, set in turn to a value of every wrong kind
 * (null where a value is required, a string, a list, an object, a bool,
 * NaN, +-Infinity, a negative, a fraction, an integer beyond 64 bits).
 * Every one must be refused with the key (and, for a request, the line)
 * named; none may crash (the suite also runs under ASan + UBSan) or be
 * read as some number.
 */
struct field {
	const char *key;  /* as d.key names it */
	const char *line; /* the line of the file up to the value */
	const char *end;  /* ... after it */
	const char *good; /* its value in the good file */
	char type;	  /* i: count >= 1, b: bool, s: string, f: (0, 1], B: bytes, t: time */
	bool optional;	  /* null (absent) is accepted */
};

static const struct field meta_fields[] = {
	{"", "{", "", NULL, 0, false},
	{"model", "  \"model\": ", ",", "\"meta-llama/Llama-3.1-8B\"", 's', true},
	{"vllm_version", "  \"vllm_version\": ", ",", "\"0.19.0\"", 's', true},
	{"", "  \"engine_kwargs\": {", "", NULL, 0, false},
	{"engine_kwargs.model", "    \"model\": ", ",", "\"meta-llama/Llama-3.1-8B\"", 's', true},
	{"engine_kwargs.tensor_parallel_size", "    \"tensor_parallel_size\": ", ",", "1", 'i', false},
	{"engine_kwargs.data_parallel_size", "    \"data_parallel_size\": ", ",", "1", 'i', true},
	{"engine_kwargs.pipeline_parallel_size", "    \"pipeline_parallel_size\": ", ",", "1", 'i', true},
	{"engine_kwargs.enable_expert_parallel", "    \"enable_expert_parallel\": ", ",", "false", 'b', true},
	{"engine_kwargs.max_num_seqs", "    \"max_num_seqs\": ", ",", "256", 'i', false},
	{"engine_kwargs.max_num_batched_tokens", "    \"max_num_batched_tokens\": ", ",", "2048", 'i', false},
	{"engine_kwargs.max_model_len", "    \"max_model_len\": ", "", "32768", 'i', true},
	{"", "  },", "", NULL, 0, false},
	{"", "  \"kv_cache\": {", "", NULL, 0, false},
	{"kv_cache.num_gpu_blocks", "    \"num_gpu_blocks\": ", ",", "2588", 'i', true},
	{"kv_cache.block_size", "    \"block_size\": ", ",", "16", 'i', true},
	{"kv_cache.gpu_memory_utilization", "    \"gpu_memory_utilization\": ", ",", "0.9", 'f', true},
	{"kv_cache.enable_prefix_caching", "    \"enable_prefix_caching\": ", "", "true", 'b', true},
	{"", "  },", "", NULL, 0, false},
	{"", "  \"hardware\": {", "", NULL, 0, false},
	{"hardware.device_total_memory_bytes", "    \"device_total_memory_bytes\": ", ",", "25250627584", 'B', true},
	{"hardware.device_name", "    \"device_name\": ", "", "\"NVIDIA GeForce RTX 4090\"", 's', true},
	{"", "  }", "", NULL, 0, false},
	{"", "}", "", NULL, 0, false},
};

static const struct field req_fields[] = {
	{"", "{\"request_id\": \"bench-1\", ", "", NULL, 0, false},
	{"input_toks", "\"input_toks\": ", ", ", "1034", 'n', false},
	{"output_toks", "\"output_toks\": ", ", ", "769", 'i', false},
	{"queued_ts", "\"queued_ts\": ", ", ", "27537.047603549", 't', false},
	{"scheduled_ts", "\"scheduled_ts\": ", ", ", "27537.047613531", 't', false},
	{"first_token_ts", "\"first_token_ts\": ", ", ", "27537.350135653", 't', false},
	{"last_token_ts", "\"last_token_ts\": ", "}", "27562.279894586", 't', false},
};

/* value text, and the types it is wrong for */
static const struct {
	const char *text, *wrong_for;
} hostile[] = {
	{"null", "inBt"}, /* null: absent; refused where required */
	{"\"x\"", "ibfBtn"},
	{"[1]", "ibsfBtn"},
	{"{\"a\": 1}", "ibsfBtn"},
	{"true", "isfBtn"},
	{"NaN", "ibsfBtn"},
	{"Infinity", "ibsfBtn"},
	{"-Infinity", "ibsfBtn"},
	{"-1", "ibsfBtn"},
	{"0", "ibsfB"},
	{"1.5", "ibsBn"},
	{"1e300", "ibsfBtn"},
	{"18446744073709551621", "ibsfBtn"}, /* json-c clamps it to 2^64 - 1 */
};

static const char *const good_requests[] = {
	"{\"request_id\": \"bench-0\", \"input_toks\": 2358, \"output_toks\": 531, "
	"\"queued_ts\": 27536.660701067, \"scheduled_ts\": 27536.660721646, "
	"\"first_token_ts\": 27537.350135653, \"last_token_ts\": 27554.231018618}",
	"{\"request_id\": \"bench-2\", \"input_toks\": 1320, \"output_toks\": 769, "
	"\"queued_ts\": 27537.221809715, \"scheduled_ts\": 27537.221853495, "
	"\"first_token_ts\": 27537.553364333, \"last_token_ts\": 27562.305334095}",
};

/* meta.json with field k (of meta_fields) set to value (NULL: all good),
 * requests.jsonl with line 2's field j (of req_fields) set to rvalue */
static void write_run(const char *dir, size_t k, const char *value, size_t j,
		      const char *rvalue)
{
	char path[1100];
	snprintf(path, sizeof path, "%s/meta.json", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	for (size_t i = 0; i < sizeof meta_fields / sizeof meta_fields[0]; i++) {
		const struct field *x = &meta_fields[i];
		fprintf(f, "%s%s%s\n", x->line, !x->good ? "" : value && i == k ? value : x->good,
			x->end);
	}
	fclose(f);
	snprintf(path, sizeof path, "%s/requests.jsonl", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", good_requests[0]);
	for (size_t i = 0; i < sizeof req_fields / sizeof req_fields[0]; i++) {
		const struct field *x = &req_fields[i];
		fprintf(f, "%s%s%s", x->line,
			!x->good ? "" : rvalue && i == j ? rvalue : x->good, x->end);
	}
	fprintf(f, "\n%s\n", good_requests[1]);
	fclose(f);
}

static int validate_dir(const char *dir, struct lsim_diag *d)
{
	struct lsim_validate_opts o = {.run_dir = dir, .perf_dir = prof_dir(), .model = ""};
	struct lsim_validate_result r;
	memset(d, 0, sizeof *d);
	return lsim_validate_run(&o, &r, d);
}

static void test_hostile_fields(void **state)
{
	(void)state;
	char dir[] = "/tmp/lsim_validate_XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct lsim_diag d;
	write_run(dir, 0, NULL, 0, NULL);
	int rc = validate_dir(dir, &d);
	if (rc != 0)
		fail_msg("the good run: %s:%d: %s: %s", d.file, d.line, d.key, d.msg);
	int refused = 0;
	for (size_t k = 0; k < sizeof meta_fields / sizeof meta_fields[0]; k++) {
		const struct field *x = &meta_fields[k];
		for (size_t h = 0; x->good && h < sizeof hostile / sizeof hostile[0]; h++) {
			bool wrong = strchr(hostile[h].wrong_for, x->type) != NULL;
			if (!strcmp(hostile[h].text, "null"))
				wrong = !x->optional;
			write_run(dir, k, hostile[h].text, 0, NULL);
			rc = validate_dir(dir, &d);
			if (wrong && (rc == 0 || strcmp(d.key, x->key) != 0))
				fail_msg("meta.json %s: %s: rc %d, key '%s': %s", x->key,
					 hostile[h].text, rc, d.key, d.msg);
			if (wrong && d.line < 2)
				fail_msg("meta.json %s: %s: no line", x->key, hostile[h].text);
			refused += wrong;
		}
	}
	for (size_t j = 0; j < sizeof req_fields / sizeof req_fields[0]; j++) {
		const struct field *x = &req_fields[j];
		for (size_t h = 0; x->good && h < sizeof hostile / sizeof hostile[0]; h++) {
			if (!strchr(hostile[h].wrong_for, x->type))
				continue;
			write_run(dir, 0, NULL, j, hostile[h].text);
			rc = validate_dir(dir, &d);
			if (rc == 0 || d.line != 2 || strcmp(d.key, x->key) != 0)
				fail_msg("requests.jsonl %s: %s: rc %d, line %d, key '%s': %s",
					 x->key, hostile[h].text, rc, d.line, d.key, d.msg);
			refused++;
		}
	}
	/* measured times out of the order a request lives them */
	static const struct {
		size_t field;
		const char *value, *key;
	} order[] = {
		{5, "27537.0", "first_token_ts"}, /* before queued_ts */
		{6, "27537.3", "last_token_ts"},  /* before first_token_ts */
		{4, "27537.0", "scheduled_ts"},	  /* before queued_ts */
		{4, "27537.4", "scheduled_ts"},	  /* after first_token_ts */
	};
	for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
		write_run(dir, 0, NULL, order[i].field, order[i].value);
		rc = validate_dir(dir, &d);
		if (rc == 0 || d.line != 2 || strcmp(d.key, order[i].key) != 0)
			fail_msg("%s %s: rc %d, line %d, key '%s': %s", order[i].key,
				 order[i].value, rc, d.line, d.key, d.msg);
	}
	printf("%d hostile values refused with their key\n", refused);
	assert_true(refused > 150);
	char path[1100];
	snprintf(path, sizeof path, "%s/meta.json", dir);
	remove(path);
	snprintf(path, sizeof path, "%s/requests.jsonl", dir);
	remove(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rtx4090_llama31_8b),
		cmocka_unit_test(test_null_max_model_len),
		cmocka_unit_test(test_unsorted_requests),
		cmocka_unit_test(test_instruct_name),
		cmocka_unit_test(test_no_kv_cache),
		cmocka_unit_test(test_older_log),
		cmocka_unit_test(test_tp2_fabric),
		cmocka_unit_test(test_pp2_fabric),
		cmocka_unit_test(test_data_parallel_dense),
		cmocka_unit_test(test_dp2_ep_moe),
		cmocka_unit_test(test_dp2_ep_moe_memory),
		cmocka_unit_test(test_device_match),
		cmocka_unit_test(test_strip_tags),
		cmocka_unit_test(test_match_catalogue),
		cmocka_unit_test(test_hostile_fields),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
