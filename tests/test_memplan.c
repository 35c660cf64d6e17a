/*
 * test_memplan.c - unit tests of vLLM's memory plan (sim/serving/memplan.c), each
 * term computed by hand in the comments (docs/memory.md derives them):
 *
 *  - Llama-3.1-8B, tp 1, on an RTX 4090 (25,250,627,584 B, the measured
 *    torch total of the shipped vLLM run) at gpu_memory_utilization 0.9,
 *    2,048 batched tokens, 256 sequences, blocks of 16: 2,648 blocks;
 *  - Llama-2-70B, tp 2, on two A100 80GB (80 GiB) at 0.9: 2,973 blocks
 *    (Vidur plans 3,328; docs/memory.md explains the difference);
 *  - an instance with num_gpu_blocks 0 takes the plan's count, and one
 *    whose plan has no block is refused naming gpu_memory_utilization;
 *  - the pipeline split of layers as vLLM's get_pp_indices makes it, the
 *    binding stage, an MoE model's experts per rank, tied embeddings, and
 *    the refusal's key and figures.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serving/memplan.h"
#include "run/sim.h"

#define GIB 1073741824.0

static void model(const char *name, struct lsim_model_arch *m)
{
	const char *root = getenv("LSIM_SOURCE_ROOT");
	assert_non_null(root);
	char cat[1024];
	snprintf(cat, sizeof cat, "%s/calibrate/models.yaml", root);
	struct lsim_diag d = {0};
	assert_int_equal(lsim_model_load(cat, name, m, &d), 0);
}

static double profile_bytes(const char *name)
{
	const char *root = getenv("LSIM_SOURCE_ROOT");
	char dir[1024];
	snprintf(dir, sizeof dir, "%s/calibrate/profiles", root);
	struct lsim_gpu_profile g;
	struct lsim_diag d = {0};
	assert_int_equal(lsim_gpu_profile_load(dir, name, &g, &d), 0);
	return g.hbm_bytes;
}

/* Llama-3.1-8B on one RTX 4090.
 *   budget    25,250,627,584 x 0.9                         = 22,725,564,825.6
 *   weights   per layer q 4096^2 + k,v 2 x 4096 x 1024 + o 4096^2
 *             + MLP 3 x 4096 x 14336 + norms 2 x 4096       = 218,112,000
 *             x 32 + embedding and LM head 2 x 128256 x 4096
 *             + final norm 4096                            = 8,030,261,248 params
 *             x 2 B                                        = 16,060,522,496
 *   forward   2048 x (2 x 4096 + max(attn 10240, MLP 43008)) x 2 = 209,715,200
 *   sampler   28 x 256 x 128256 + (2048 + 256) x 4096 x 2   = 938,213,376
 *   non-torch 0.16 GiB                                     = 171,798,691.84
 *   KV        22,725,564,825.6 - the three                 = 5,555,030,261.76
 *   block     2 x 8 x 128 x 2 x 32 layers x 16             = 2,097,152
 *   blocks    floor(2,648.8)                               = 2,648 */
static void test_llama8b_rtx4090(void **state)
{
	(void)state;
	struct lsim_model_arch m;
	model("Llama-3.1-8B", &m);
	assert_true(profile_bytes("RTX-4090") == 25250627584.0);
	struct lsim_memplan_in in = {
		.model = &m, .total_bytes = 25250627584.0, .utilization = 0.9,
		.tp = 1, .pp = 1, .max_num_batched_tokens = 2048, .max_num_seqs = 256,
		.block_size = 16,
	};
	struct lsim_memplan p;
	lsim_memplan_compute(&in, &p);
	assert_true(fabs(p.budget - 22725564825.6) < 1e-3);
	assert_true(lsim_memplan_rank_params(&m, 1, 1, 0, 0) == 8030261248.0);
	assert_true(p.weights == 16060522496.0);
	assert_true(p.act_forward == 209715200.0);
	assert_true(p.act_sampler == 938213376.0);
	assert_true(p.activation == 938213376.0);
	assert_true(fabs(p.non_torch - 171798691.84) < 1e-3);
	assert_true(p.cuda_graphs == 0);
	assert_true(fabs(p.kv_bytes - 5555030261.76) < 1e-2);
	assert_true(p.block_bytes == 2097152.0);
	assert_int_equal(p.blocks, 2648);
	assert_int_equal(p.layers, 32);
}

/* Llama-2-70B at tp 2 on A100 80GB (81,920 MiB = 80 GiB).
 *   budget    85,899,345,920 x 0.9                         = 77,309,411,328
 *   weights   per layer and rank: q 8192 x 4096 + k,v 2 x 8192 x 512
 *             + o 4096 x 8192 + MLP 3 x 8192 x 14336 + norms 2 x 8192
 *                                                          = 427,835,392
 *             x 80 + embedding and LM head 2 x 32000 x 8192 / 2
 *             + final norm 8192                            = 34,488,983,552 params
 *             x 2 B                                        = 68,977,967,104
 *   forward   2048 x (2 x 8192 + max(attn 9216, MLP 43008)) x 2 = 243,269,632
 *   sampler   28 x 256 x 32000 + (2048 + 256) x 8192 x 2    = 267,124,736
 *   non-torch 0.25 GiB (two ranks: NCCL)                   = 268,435,456
 *   KV        77,309,411,328 - the three                   = 7,795,884,032
 *   block     2 x 4 x 128 x 2 x 80 x 16                    = 2,621,440
 *   blocks    floor(2,973.9)                               = 2,973 */
static void test_llama70b_tp2_a100(void **state)
{
	(void)state;
	struct lsim_model_arch m;
	model("Llama-2-70B", &m);
	assert_true(profile_bytes("A100-80GB-SXM") == 80.0 * GIB);
	struct lsim_memplan_in in = {
		.model = &m, .total_bytes = 80.0 * GIB, .utilization = 0.9,
		.tp = 2, .pp = 1, .max_num_batched_tokens = 2048, .max_num_seqs = 256,
		.block_size = 16,
	};
	struct lsim_memplan p;
	lsim_memplan_compute(&in, &p);
	assert_true(p.budget == 77309411328.0);
	assert_true(p.weights == 68977967104.0);
	assert_true(p.act_forward == 243269632.0);
	assert_true(p.act_sampler == 267124736.0);
	assert_true(p.non_torch == 268435456.0);
	assert_true(p.kv_bytes == 7795884032.0);
	assert_true(p.block_bytes == 2621440.0);
	assert_int_equal(p.blocks, 2973);
	/* at tp 1 the weights alone (128.5 GiB) exceed the GPU */
	in.tp = 1;
	lsim_memplan_compute(&in, &p);
	assert_true(p.blocks < 0);
	char why[768];
	const char *key = lsim_memplan_explain(&in, &p, 2048, why, sizeof why);
	assert_string_equal(key, "tp");
	assert_non_null(strstr(why, "weights 128.48 GiB"));
	assert_non_null(strstr(why, "2048 KV tokens need 128 blocks"));
	assert_non_null(strstr(why, "write tp: 2"));
}

/* vLLM's get_pp_indices: 80 layers over 3 stages are 27, 27, 26 (the
 * remainder goes to the stages before the last); the plan binds on the
 * stage with the fewest blocks. */
static void test_pipeline_stages(void **state)
{
	(void)state;
	assert_int_equal(lsim_memplan_stage_layers(80, 3, 0), 27);
	assert_int_equal(lsim_memplan_stage_layers(80, 3, 1), 27);
	assert_int_equal(lsim_memplan_stage_layers(80, 3, 2), 26);
	assert_int_equal(lsim_memplan_stage_layers(32, 2, 0), 16);
	assert_int_equal(lsim_memplan_stage_layers(32, 1, 0), 32);
	struct lsim_model_arch m;
	model("Llama-3.1-8B", &m);
	/* stage 0: 16 layers + embedding; stage 1: 16 layers + final norm +
	 * LM head: 16 x 218,112,000 + 525,336,576 (+ 4096) */
	assert_true(lsim_memplan_rank_params(&m, 1, 2, 0, 0) == 3489792000.0 + 525336576.0);
	assert_true(lsim_memplan_rank_params(&m, 1, 2, 1, 0) ==
		    3489792000.0 + 525336576.0 + 4096.0);
	struct lsim_memplan_in in = {
		.model = &m, .total_bytes = 80.0 * GIB, .utilization = 0.9,
		.tp = 1, .pp = 2, .max_num_batched_tokens = 2048, .max_num_seqs = 256,
		.block_size = 16,
	};
	struct lsim_memplan p;
	lsim_memplan_compute(&in, &p);
	/* the last stage also holds the sampler's peak: it binds */
	assert_int_equal(p.stage, 1);
	assert_int_equal(p.layers, 16);
	assert_true(p.block_bytes == 2097152.0 / 2);
	assert_true(p.act_sampler == 938213376.0);
	assert_true(p.non_torch == 0.25 * GIB);
}

/* Qwen3-30B-A3B at tp 2 without expert parallelism: every rank holds all
 * 128 experts, each one's 768-wide intermediate split in two, plus the
 * replicated router: 128 x 3 x 2048 x 384 + 2048 x 128 = 302,252,032 per
 * layer; attention q 2048 x 2048 + k,v 2 x 2048 x 256 + o 2048 x 2048
 * = 9,437,184; norms 4096. x 48 + vocab 151936 x 2048 / 2 twice + 2048. */
static void test_moe_experts_per_rank(void **state)
{
	(void)state;
	struct lsim_model_arch m;
	model("Qwen3-30B-A3B", &m);
	double layer = 302252032.0 + 9437184.0 + 4096.0;
	double want = 48.0 * layer + 2.0 * 151936.0 * 1024.0 + 2048.0;
	assert_true(lsim_memplan_rank_params(&m, 2, 1, 0, 0) == want);
	/* 64 whole experts per rank (expert parallelism over 2): the same
	 * bytes for the experts, the attention still split */
	assert_true(lsim_memplan_rank_params(&m, 2, 1, 0, 64) == want);
	/* 32 whole experts: half the expert weights */
	assert_true(lsim_memplan_rank_params(&m, 2, 1, 0, 32) ==
		    want - 48.0 * (128.0 - 64.0) * 3.0 * 2048.0 * 384.0);
}

/* A rank of an MoE data-parallel group holds NCCL communicators (its DP group,
 * and its EP group with expert parallelism) as a tp > 1 rank does: the
 * non-torch term is the tp 2 figure, 0.25 GiB, not one GPU's 0.16. */
static void test_non_torch_data_parallel(void **state)
{
	(void)state;
	assert_true(lsim_memplan_non_torch(1, 1, 1) == 0.16 * GIB);
	assert_true(lsim_memplan_non_torch(1, 1, 0) == 0.16 * GIB);
	assert_true(lsim_memplan_non_torch(1, 1, 2) == 0.25 * GIB);
	assert_true(lsim_memplan_non_torch(2, 1, 1) == 0.25 * GIB);
	assert_true(lsim_memplan_non_torch(1, 2, 1) == 0.25 * GIB);
	/* Qwen3-30B-A3B on 96 GiB at 0.9, 64 experts a rank: the rank of a
	 * DP 2 group keeps 0.09 GiB less for the KV cache than one GPU would */
	struct lsim_model_arch m;
	model("Qwen3-30B-A3B", &m);
	struct lsim_memplan_in in = {
		.model = &m, .total_bytes = 96.0 * GIB, .utilization = 0.9,
		.tp = 1, .pp = 1, .max_num_batched_tokens = 2048, .max_num_seqs = 256,
		.block_size = 16, .experts_per_rank = 64,
	};
	struct lsim_memplan one, dp2;
	lsim_memplan_compute(&in, &one);
	in.dp = 2;
	lsim_memplan_compute(&in, &dp2);
	assert_true(one.non_torch == 0.16 * GIB);
	assert_true(dp2.non_torch == 0.25 * GIB);
	assert_true(fabs(one.kv_bytes - dp2.kv_bytes - 0.09 * GIB) < 1e-3);
}

/* Tied embeddings (GPT-3): one vocab matrix when the first stage is the
 * last; with pp 2 the last stage keeps its own LM-head copy. */
static void test_tied_embeddings(void **state)
{
	(void)state;
	struct lsim_model_arch m;
	model("GPT-3-175B", &m);
	assert_true(m.tied_embeddings);
	double vocab = 50304.0 * 12288.0; /* 50257 padded to a multiple of 64 */
	double per_layer = 4.0 * 12288.0 * 12288.0 + 2.0 * 12288.0 * 49152.0 + 2.0 * 12288.0;
	assert_true(lsim_memplan_rank_params(&m, 1, 1, 0, 0) ==
		    96.0 * per_layer + vocab + 12288.0);
	assert_true(lsim_memplan_rank_params(&m, 1, 2, 1, 0) ==
		    48.0 * per_layer + vocab + 12288.0);
}

/* lsim_instance_init with num_gpu_blocks 0 sizes the cache by the plan
 * (2,648 blocks, as above); an override wins; at utilisation 0.5 the
 * 14.96 GiB of weights do not fit in 11.76 GiB and the refusal names
 * gpu_memory_utilization with the least that holds one block:
 * (16,060,522,496 + 938,213,376 + 171,798,691.84 + 2,097,152) /
 * 25,250,627,584 = 0.680, written 0.69 (rounded up). */
static void test_instance_uses_plan(void **state)
{
	(void)state;
	struct lsim_model_arch m;
	model("Llama-3.1-8B", &m);
	const char *root = getenv("LSIM_SOURCE_ROOT");
	char dir[1024];
	snprintf(dir, sizeof dir, "%s/calibrate/profiles", root);
	struct lsim_gpu_profile g;
	struct lsim_diag d = {0};
	assert_int_equal(lsim_gpu_profile_load(dir, "RTX-4090", &g, &d), 0);
	struct lsim_engine_cfg cfg = {
		.max_num_seqs = 256, .max_num_batched_tokens = 2048, .block_size = 16,
		.num_gpu_blocks = 0, .gpu_memory_utilization = 0.9,
		.enable_prefix_caching = true, .enable_chunked_prefill = true,
	};
	struct lsim_sim s;
	assert_int_equal(lsim_sim_init(&s, 1, &d), 0);
	struct lsim_instance *in = lsim_sim_add_instance(&s);
	assert_int_equal(lsim_instance_init(in, &s.sv, 0, &cfg, &g, &m, 1, NULL, &d), 0);
	assert_int_equal(in->kv_blocks, 2648);
	cfg.num_gpu_blocks = 2588; /* the run's own count overrides */
	in = lsim_sim_add_instance(&s);
	assert_int_equal(lsim_instance_init(in, &s.sv, 1, &cfg, &g, &m, 1, NULL, &d), 0);
	assert_int_equal(in->kv_blocks, 2588);
	cfg.num_gpu_blocks = 0;
	cfg.gpu_memory_utilization = 0.5;
	in = lsim_sim_add_instance(&s);
	assert_int_equal(lsim_instance_init(in, &s.sv, 2, &cfg, &g, &m, 1, NULL, &d), LSIM_EINVAL);
	lsim_sim_drop_instance(&s);
	assert_string_equal(d.key, "gpu_memory_utilization");
	assert_non_null(strstr(d.msg, "write gpu_memory_utilization: 0.69 or more"));
	lsim_sim_release(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_llama8b_rtx4090),
		cmocka_unit_test(test_llama70b_tp2_a100),
		cmocka_unit_test(test_pipeline_stages),
		cmocka_unit_test(test_moe_experts_per_rank),
		cmocka_unit_test(test_tied_embeddings),
		cmocka_unit_test(test_non_torch_data_parallel),
		cmocka_unit_test(test_instance_uses_plan),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
