/*
 * test_perf.c - unit tests of the two performance-model backends.
 *
 * table: iteration times for the shipped LLMServingSim profiles
 * (calibrate/perf/llmservingsim/...) against totals summed by hand from
 * the CSV rows quoted below, linear blends between grid points, the
 * heterogeneous-decode (skew) correction, the MoE expert lookup, clamping
 * and extrapolation on a small synthetic profile, and the diagnostics for
 * malformed files.
 *
 * roofline: closed-form checks for a Llama-3-8B-shaped model on an
 * H100-SXM-like profile: a memory-bound decode step, a compute-bound 2,048
 * token prefill, tensor parallelism (GEMM work halves, two all-reduces per
 * layer appear), the PCIe fallback and an MoE decode step.
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
#include <sys/stat.h>
#include <unistd.h>

#include "cluster/collective.h"
#include "serving/perf.h"
#include "import/profile_import.h"
#include "kernel/time_ns.h"

/* ------------------------------------------------------------------ */
/* helpers                                                             */
/* ------------------------------------------------------------------ */

static const char *source_root(void)
{
	const char *r = getenv("LSIM_SOURCE_ROOT");
	assert_non_null(r);
	return r;
}

static void profile_dir(char *buf, size_t size, const char *rel)
{
	snprintf(buf, size, "%s/calibrate/perf/llmservingsim/%s", source_root(), rel);
}

#define LLAMA_PRO6000 "RTXPRO6000/meta-llama/Llama-3.1-8B/bf16"
#define QWEN_MOE_PRO6000 "RTXPRO6000/Qwen/Qwen3-30B-A3B-Instruct-2507/bf16"

static struct lsim_perf *table(const char *rel, int tp, int n_layers)
{
	char dir[1024];
	profile_dir(dir, sizeof dir, rel);
	struct lsim_table_params prm = {.tp = tp, .n_layers = n_layers, .cpu_overhead_s = 0.0};
	struct lsim_perf *p = NULL;
	struct lsim_diag d;
	memset(&d, 0, sizeof d);
	int rc = lsim_perf_table_create(dir, &prm, &p, &d);
	if (rc != 0)
		fprintf(stderr, "%s:%d: %s: %s\n", d.file, d.line, d.key, d.msg);
	assert_int_equal(rc, 0);
	assert_non_null(p);
	assert_string_equal(p->ops->name, "table");
	return p;
}

/* n decodes, all with context ctx */
static lsim_time decode_uniform(const struct lsim_perf *p, int n, int32_t ctx)
{
	int32_t k[512];
	assert_true(n <= 512);
	for (int i = 0; i < n; i++)
		k[i] = ctx;
	struct lsim_batch b = {.n_decode = n, .decode_ctx = k};
	return lsim_perf_iter_time(p, &b);
}

static lsim_time prefill_one(const struct lsim_perf *p, int32_t chunk, int32_t ctx)
{
	struct lsim_batch b = {.n_prefill = 1, .prefill_chunk = &chunk, .prefill_ctx = &ctx};
	return lsim_perf_iter_time(p, &b);
}

/* LLMServingSim's blend of two whole-ns samples, truncated to whole ns. */
static int64_t lerp_ns(int64_t y0, int64_t y1, double t)
{
	return (int64_t)((double)y0 + t * (double)(y1 - y0));
}

/* ------------------------------------------------------------------ */
/* table backend on the shipped RTX PRO 6000 Llama-3.1-8B profile      */
/* ------------------------------------------------------------------ */

/*
 * Composition rule (LLMServingSim trace_generator): once per iteration
 * embedding(T) + final_layernorm(T) + lm_head(S) + sampler(S); per decoder
 * layer 2 x layernorm(T) + qkv_proj + rotary_emb + o_proj + gate_up_proj +
 * act_fn + down_proj (all at T) + attention(chunks, prefill ctx, n_decode,
 * mean decode ctx). Every CSV time is rounded to whole ns.
 */
static void test_table_decode_grid_point(void **state)
{
	(void)state;
	struct lsim_perf *p = table(LLAMA_PRO6000, 1, 32);
	/* tp1/dense.csv rows at tokens=4, per_sequence.csv at sequences=4 */
	int64_t embedding = 3808;   /* 3.80767 us */
	int64_t final_ln = 2538;    /* 2.53833 */
	int64_t lm_head = 688287;   /* 688.287 */
	int64_t sampler = 26006;    /* 26.0063 */
	int64_t layernorm = 2378;   /* 2.37833, applied twice per layer */
	int64_t qkv = 35797;	    /* 35.7973 */
	int64_t rotary = 2763;	    /* 2.76267 */
	int64_t o_proj = 25792;	    /* 25.7923 */
	int64_t gate_up = 157814;   /* 157.814 */
	int64_t act = 2922;	    /* 2.92233 */
	int64_t down = 80513;	    /* 80.5127 */
	int64_t attn = 26304;	    /* attention.csv 0,0,4,1024 -> 26.304 */
	int64_t once = embedding + final_ln + lm_head + sampler;
	int64_t layer = 2 * layernorm + qkv + rotary + o_proj + gate_up + act + down + attn;
	assert_int_equal(once, 720639);
	assert_int_equal(layer, 336661);
	assert_int_equal(decode_uniform(p, 4, 1024), once + 32 * layer); /* 11.49 ms */
	lsim_perf_destroy(p);
}

static void test_table_prefill_grid_point(void **state)
{
	(void)state;
	struct lsim_perf *p = table(LLAMA_PRO6000, 1, 32);
	/* dense.csv at tokens=512, per_sequence.csv at sequences=1 */
	int64_t once = 4832	   /* embedding 4.832 */
		       + 6091	   /* final_layernorm 6.09067 */
		       + 714006	   /* lm_head 714.006 */
		       + 24746;	   /* sampler 24.746 */
	int64_t layer = 2 * 4309   /* layernorm 4.30933 */
			+ 92800	   /* qkv_proj 92.8 */
			+ 4181	   /* rotary_emb 4.18133 */
			+ 67307	   /* o_proj 67.307 */
			+ 330485   /* gate_up_proj 330.485 */
			+ 9867	   /* act_fn 9.86667 */
			+ 180427   /* down_proj 180.427 */
			+ 24917;   /* attention.csv 512,0,0,0 -> 24.9173 */
	assert_int_equal(prefill_one(p, 512, 0), once + 32 * layer);
	assert_int_equal(prefill_one(p, 512, 0), 23744939);
	lsim_perf_destroy(p);
}

/* Between kv_decode samples 1152 and 1728 the attention term is the blend. */
static void test_table_blend_in_context(void **state)
{
	(void)state;
	struct lsim_perf *p = table(LLAMA_PRO6000, 1, 32);
	int64_t at1152 = 27478, at1728 = 34336; /* 0,0,4,1152 / 0,0,4,1728 */
	int64_t mid = lerp_ns(at1152, at1728, 0.5);
	assert_int_equal(mid, 30907);
	lsim_time t1024 = decode_uniform(p, 4, 1024);
	/* same tokens and sequences as at 1024: only attention changes */
	assert_int_equal(decode_uniform(p, 4, 1440), t1024 + 32 * (mid - 26304));
	assert_int_equal(decode_uniform(p, 4, 1152), t1024 + 32 * (at1152 - 26304));
	assert_int_equal(decode_uniform(p, 4, 1728), t1024 + 32 * (at1728 - 26304));
	lsim_perf_destroy(p);
}

/* A 520-token chunk: dense ops halfway between 512 and 528, attention 8/103 of
 * the way from chunk 512 to 615. */
static void test_table_blend_in_tokens(void **state)
{
	(void)state;
	struct lsim_perf *p = table(LLAMA_PRO6000, 1, 32);
	/* {tokens=512, tokens=528} from dense.csv */
	int64_t emb = lerp_ns(4832, 4810, 0.5);
	int64_t fln = lerp_ns(6091, 6251, 0.5);
	int64_t ln = lerp_ns(4309, 4352, 0.5);
	int64_t qkv = lerp_ns(92800, 98036, 0.5);
	int64_t rot = lerp_ns(4181, 4288, 0.5);
	int64_t o = lerp_ns(67307, 70005, 0.5);
	int64_t gu = lerp_ns(330485, 364971, 0.5);
	int64_t act = lerp_ns(9867, 11754, 0.5);
	int64_t down = lerp_ns(180427, 198196, 0.5);
	int64_t attn = lerp_ns(24917, 31829, 8.0 / 103.0); /* 512,0,0,0 and 615,0,0,0 */
	assert_int_equal(ln, 4330);
	assert_int_equal(attn, 25453);
	int64_t once = emb + fln + 714006 + 24746;
	int64_t layer = 2 * ln + qkv + rot + o + gu + act + down + attn;
	assert_int_equal(prefill_one(p, 520, 0), once + 32 * layer);
	assert_int_equal(prefill_one(p, 520, 0), 24758384);
	lsim_perf_destroy(p);
}

static void test_table_monotone(void **state)
{
	(void)state;
	struct lsim_perf *p = table(LLAMA_PRO6000, 1, 32);
	/*
	 * The measurements are noisy below ~64 tokens (lm_head at 1 sequence is
	 * slower than at 2), so monotonicity holds on a 64-token step, and
	 * beyond the grid where the last two samples are extrapolated.
	 */
	lsim_time prev = 0;
	for (int32_t c = 64; c <= 4096; c += 64) {
		lsim_time t = prefill_one(p, c, 0);
		assert_true(t >= prev);
		prev = t;
	}
	prev = 0;
	for (int32_t k = 1024; k <= 32768; k += 512) {
		lsim_time t = decode_uniform(p, 8, k);
		assert_true(t >= prev);
		prev = t;
	}
	prev = 0;
	for (int n = 16; n <= 400; n += 16) {
		lsim_time t = decode_uniform(p, n, 2048);
		assert_true(t >= prev);
		prev = t;
	}
	/* more cached context under a chunk costs more attention */
	assert_true(prefill_one(p, 512, 8192) > prefill_one(p, 512, 0));
	lsim_perf_destroy(p);
}

/*
 * Decodes of unequal length: attention at the mean context, moved towards the
 * lookup at the longest by alpha from tp1/skew_fit.csv (bucket pc=0, n<=2,
 * sr<=70%, kvB<=4k, kp=0: alpha 0.0515).
 */
static void test_table_skew(void **state)
{
	(void)state;
	struct lsim_perf *p = table(LLAMA_PRO6000, 1, 32);
	int32_t skewed[2] = {0, 4096}; /* mean 2048, max 4096, skew rate 0.5 */
	struct lsim_batch b = {.n_decode = 2, .decode_ctx = skewed};
	int64_t t_mean = 27519, t_max = 38806; /* 0,0,2,2048 and 0,0,2,4096 */
	int64_t t_skew = (int64_t)nearbyint((double)t_mean + 0.0515 * (double)(t_max - t_mean));
	assert_int_equal(t_skew, 28100);
	assert_int_equal(lsim_perf_iter_time(p, &b),
			 decode_uniform(p, 2, 2048) + 32 * (t_skew - t_mean));
	lsim_perf_destroy(p);
}

/* A decode step of Qwen3-30B-A3B's 48 layers from its rows: the once
 * terms (embedding, final norm, lm_head, sampler), a layer's dense rows
 * (layernorm, twice; o_proj, qk_norm, qkv_proj, rotary_emb), its
 * attention and its experts. */
static int64_t moe_step_hand(int64_t once, const int64_t dense[5], int64_t attn, int64_t moe)
{
	return once + 48 * (2 * dense[0] + dense[1] + dense[2] + dense[3] + dense[4] + attn + moe);
}

/* Qwen3-30B-A3B: 48 layers, experts from tp1/moe.csv. */
static void test_table_moe(void **state)
{
	(void)state;
	struct lsim_perf *p = table(QWEN_MOE_PRO6000, 1, 48);
	/* 16 tokens hit round(128 * (1 - (120/128)^16)) = 82 distinct experts */
	double act = nearbyint(128.0 * (1.0 - pow(120.0 / 128.0, 16.0)));
	assert_true(act == 82.0);
	int64_t moe = lerp_ns(424116, 817612, (82.0 - 64.0) / 64.0); /* 16,64 / 16,128 */
	assert_int_equal(moe, 534786);
	static const int64_t dense[5] = {2149, 9899, 2011, 14005, 2517};
	assert_int_equal(decode_uniform(p, 16, 1024),
			 moe_step_hand(6613 + 2112 + 428395 + 15733, dense,
				       36897 /* attention 0,0,16,1024 */, moe));
	/* one token: exactly top_k = 8 experts, the row 1,8 (50.2297 us) */
	lsim_time t1 = decode_uniform(p, 1, 1024);
	assert_true(t1 > 48 * 50230);
	lsim_perf_destroy(p);
}

/*
 * Qwen3-30B-A3B at TP 2 (tp2/ tables, no all-reduce without a fabric):
 * vLLM shards every expert's inner size over the two GPUs, so a GPU's
 * expert time is the TP 1 moe.csv read as one holding 64 whole experts
 * for 8 tokens: 16 tokens hit round(64 * (1 - (120/128)^16)) = 41 of them.
 */
static void test_table_moe_tp2(void **state)
{
	(void)state;
	struct lsim_perf *p = table(QWEN_MOE_PRO6000, 2, 48);
	double act = nearbyint(64.0 * (1.0 - pow(120.0 / 128.0, 16.0)));
	assert_true(act == 41.0);
	int64_t moe = lerp_ns(225589, 423073, (41.0 - 32.0) / 32.0); /* 8,32 / 8,64 */
	assert_int_equal(moe, 281131);
	static const int64_t dense[5] = {2149, 9813, 2011, 10080, 1952}; /* the tp2 rows */
	const int64_t once = 6304 + 2112 + 216886 + 15733, attn = 26165; /* 0,0,16,1024 */
	assert_int_equal(decode_uniform(p, 16, 1024), moe_step_hand(once, dense, attn, moe));
	/* the whole-expert reading (TP 1's 82 experts at 16 tokens) would be
	 * about twice as long */
	assert_true(decode_uniform(p, 16, 1024) <
		    moe_step_hand(once, dense, attn, 534786) - 48 * 250000);
	lsim_perf_destroy(p);
}

static void test_table_tp2_and_cpu(void **state)
{
	(void)state;
	char dir[1024];
	profile_dir(dir, sizeof dir, LLAMA_PRO6000);
	struct lsim_table_params prm = {.tp = 2, .n_layers = 32, .cpu_overhead_s = 0.0};
	struct lsim_perf *p2 = NULL, *p2cpu = NULL;
	struct lsim_diag d;
	assert_int_equal(lsim_perf_table_create(dir, &prm, &p2, &d), 0);
	prm.cpu_overhead_s = 0.002;
	assert_int_equal(lsim_perf_table_create(dir, &prm, &p2cpu, &d), 0);
	struct lsim_perf *p1 = table(LLAMA_PRO6000, 1, 32);
	/* per-shard GEMMs are faster at TP 2 */
	assert_true(prefill_one(p2, 2048, 0) < prefill_one(p1, 2048, 0));
	assert_int_equal(prefill_one(p2cpu, 2048, 0), prefill_one(p2, 2048, 0) + 2 * LSIM_MS);
	/* an empty batch costs only the CPU overhead */
	struct lsim_batch empty = {0};
	assert_int_equal(lsim_perf_iter_time(p2cpu, &empty), 2 * LSIM_MS);
	lsim_perf_destroy(p1);
	lsim_perf_destroy(p2);
	lsim_perf_destroy(p2cpu);
	lsim_perf_destroy(NULL);
}

/* ------------------------------------------------------------------ */
/* table backend on a small synthetic profile                          */
/* ------------------------------------------------------------------ */

struct tmpdir {
	char root[1024];
	char files[16][1100];
	int n_files;
	char dirs[4][1100];
	int n_dirs;
};

static void tmp_make(struct tmpdir *t)
{
	memset(t, 0, sizeof *t);
	const char *base = getenv("LSIM_BUILD_ROOT");
	snprintf(t->root, sizeof t->root, "%s/test_perf_XXXXXX", base ? base : ".");
	assert_non_null(mkdtemp(t->root));
	char sub[sizeof t->dirs[0]];
	snprintf(sub, sizeof sub, "%s/tp1", t->root);
	memcpy(t->dirs[t->n_dirs++], sub, sizeof sub);
	assert_int_equal(mkdir(t->dirs[0], 0700), 0);
}

static void tmp_write(struct tmpdir *t, const char *rel, const char *text)
{
	char path[1100];
	snprintf(path, sizeof path, "%s/%s", t->root, rel);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	for (int i = 0; i < t->n_files; i++)
		if (!strcmp(t->files[i], path))
			return;
	snprintf(t->files[t->n_files++], sizeof t->files[0], "%s", path);
}

static void tmp_remove(struct tmpdir *t)
{
	for (int i = 0; i < t->n_files; i++)
		unlink(t->files[i]);
	for (int i = t->n_dirs - 1; i >= 0; i--)
		rmdir(t->dirs[i]);
	rmdir(t->root);
}

/* A scratch profile folder per test, removed even when an assertion fails. */
static int tmp_setup(void **state)
{
	struct tmpdir *t = malloc(sizeof *t);
	if (!t)
		return -1;
	tmp_make(t);
	*state = t;
	return 0;
}

static int tmp_teardown(void **state)
{
	tmp_remove(*state);
	free(*state);
	return 0;
}

static const char synth_dense[] =
	"layer,tokens,time_us\n"
	"embedding,1,1\n"
	"embedding,100,2\n"
	"final_layernorm,1,1\n"
	"final_layernorm,100,1\n"
	"layernorm,1,2\n"
	"layernorm,100,4\n"
	"qkv_proj,1,10\n"
	"qkv_proj,100,109\n";

static const char synth_seq[] =
	"layer,sequences,time_us\r\n" /* CRLF line ends are accepted */
	"lm_head,1,100\r\n"
	"lm_head,10,190\r\n"
	"sampler,1,5\r\n"
	"\r\n";

/* grid: chunk {0,100} x kv_prefill {0,1000} x n_decode {0,1,10} x kv_decode */
static const char synth_attn[] =
	"prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n"
	"0,0,1,100,2\n"
	"0,0,1,1000,4\n"
	"0,0,10,100,6\n"
	"0,0,10,1000,24\n"
	"100,0,0,0,20\n"
	"100,1000,0,0,40\n"
	"100,0,1,100,22\n"
	"100,0,1,1000,24\n"
	"100,1000,1,100,42\n"
	"100,1000,1,1000,44\n"
	"100,0,10,100,26\n"
	"100,0,10,1000,44\n"
	"100,1000,10,100,46\n"
	"100,1000,10,1000,64\n";

static void synth_write(struct tmpdir *t)
{
	tmp_write(t, "tp1/dense.csv", synth_dense);
	tmp_write(t, "tp1/per_sequence.csv", synth_seq);
	tmp_write(t, "tp1/attention.csv", synth_attn);
}

static int synth_create(struct tmpdir *t, struct lsim_perf **p, struct lsim_diag *d)
{
	struct lsim_table_params prm = {.tp = 1, .n_layers = 2, .cpu_overhead_s = 0.0};
	memset(d, 0, sizeof *d);
	*p = NULL;
	return lsim_perf_table_create(t->root, &prm, p, d);
}

/* meta.yaml's model and gpu against the caller's: the same model under
 * its published name passes, another is refused naming `model`; a device
 * another profile claims (by cuda_name or by words) is refused naming
 * `gpu`, one no profile claims passes; a run's device must be the
 * table's; an MoE model needs moe.csv. */
static int identity(struct tmpdir *t, const struct lsim_model_arch *m, const char *gpu,
		    const char *device, struct lsim_diag *d)
{
	char profiles[1100];
	snprintf(profiles, sizeof profiles, "%s/profiles", lsim_data_dir());
	struct lsim_table_params prm = {.tp = 1, .n_layers = 2, .model = m, .gpu = gpu,
					.gpu_dir = profiles, .device = device};
	struct lsim_perf *p = NULL;
	memset(d, 0, sizeof *d);
	int rc = lsim_perf_table_create(t->root, &prm, &p, d);
	lsim_perf_destroy(p);
	return rc;
}

static void test_table_identity(void **state)
{
	struct tmpdir *t = *state;
	synth_write(t);
	char catalogue[1100];
	snprintf(catalogue, sizeof catalogue, "%s/models.yaml", lsim_data_dir());
	struct lsim_model_arch llama, qwen32, moe;
	struct lsim_diag d;
	assert_int_equal(lsim_model_load(catalogue, "Llama-3.1-8B", &llama, &d), 0);
	assert_int_equal(lsim_model_load(catalogue, "Qwen3-32B", &qwen32, &d), 0);
	assert_int_equal(lsim_model_load(catalogue, "Qwen3-30B-A3B", &moe, &d), 0);
	tmp_write(t, "meta.yaml", "model: meta-llama/Llama-3.1-8B-Instruct\n"
				  "gpu: NVIDIA H100 80GB HBM3\n");
	assert_int_equal(identity(t, &llama, "H100-SXM", NULL, &d), 0);
	assert_int_equal(identity(t, &qwen32, "H100-SXM", NULL, &d), LSIM_EINVAL);
	assert_string_equal(d.key, "model");
	assert_int_equal(d.line, 1);
	/* the H100 SXM's CUDA name is H100-SXM's cuda_name, not RTX-4090's */
	assert_int_equal(identity(t, &llama, "RTX-4090", NULL, &d), LSIM_EINVAL);
	assert_string_equal(d.key, "gpu");
	assert_int_equal(d.line, 2);
	assert_non_null(strstr(d.msg, "H100-SXM"));
	/* a run on another device */
	assert_int_equal(identity(t, &llama, NULL, "NVIDIA H100 PCIe", &d), LSIM_EINVAL);
	assert_string_equal(d.key, "gpu");
	assert_int_equal(identity(t, &llama, NULL, "nvidia h100 80gb hbm3", &d), 0);
	/* a device no profile claims is taken as the caller's */
	tmp_write(t, "meta.yaml", "model: meta-llama/Llama-3.1-8B\ngpu: NVIDIA Quux 9000\n");
	assert_int_equal(identity(t, &llama, "RTX-4090", NULL, &d), 0);
	/* the words of a profile's name: an RTX 4090's tables on an L4 */
	tmp_write(t, "meta.yaml", "model: meta-llama/Llama-3.1-8B\ngpu: NVIDIA GeForce RTX 4090\n");
	assert_int_equal(identity(t, &llama, "RTX-4090", NULL, &d), 0);
	assert_int_equal(identity(t, &llama, "L4", NULL, &d), LSIM_EINVAL);
	assert_string_equal(d.key, "gpu");
	/* an L40S's tables on an L4 (whose name begins L40S's but for the
	 * number it would cut) */
	tmp_write(t, "meta.yaml", "model: meta-llama/Llama-3.1-8B\ngpu: NVIDIA L40S\n");
	assert_int_equal(identity(t, &llama, "L4", NULL, &d), LSIM_EINVAL);
	assert_non_null(strstr(d.msg, "the GPU profile L40S"));
	assert_int_equal(identity(t, &llama, "L40S", NULL, &d), 0);
	/* an MoE model's experts would go untimed without moe.csv */
	tmp_write(t, "meta.yaml", "skew_fit:\n  enabled: false\n");
	assert_int_equal(identity(t, &moe, NULL, NULL, &d), LSIM_EINVAL);
	assert_string_equal(d.key, "moe.csv");
	/* and a dense model is not given experts */
	tmp_write(t, "tp1/moe.csv", "tokens,activated_experts,time_us\n1,2,7\n10,2,8\n1,8,9\n10,8,10\n");
	assert_int_equal(identity(t, &llama, NULL, NULL, &d), LSIM_EINVAL);
	assert_string_equal(d.key, "moe.csv");
}

/*
 * An MoE table at tp 2: a tp2/moe.csv is measured at that degree and read
 * as it is; without one, the tp1/moe.csv is shared by the two GPUs (8
 * experts, 2 a token: a GPU reads the table at T / 2 tokens and
 * round(4 x (1 - (6/8)^T)) experts).
 */
static void test_table_moe_folder(void **state)
{
	struct tmpdir *t = *state;
	char sub[sizeof t->dirs[0]];
	snprintf(sub, sizeof sub, "%s/tp2", t->root);
	assert_int_equal(mkdir(sub, 0700), 0);
	memcpy(t->dirs[t->n_dirs++], sub, sizeof sub);
	tmp_write(t, "tp2/dense.csv", synth_dense);
	tmp_write(t, "tp2/per_sequence.csv", synth_seq);
	tmp_write(t, "tp2/attention.csv", synth_attn);
	tmp_write(t, "tp1/moe.csv",
		  "tokens,activated_experts,time_us\n1,2,50\n10,2,60\n1,4,90\n10,4,110\n"
		  "1,8,170\n10,8,210\n");
	tmp_write(t, "tp2/moe.csv",
		  "tokens,activated_experts,time_us\n1,2,7\n10,2,8\n1,8,9\n10,8,10\n");
	struct lsim_table_params prm = {.tp = 2, .n_layers = 2};
	struct lsim_perf *p = NULL, *q = NULL;
	struct lsim_diag d = {0};
	assert_int_equal(lsim_perf_table_create(t->root, &prm, &p, &d), 0);
	/* one decode: the synthetic layers (107000 + 2 x 16000 ns) and the
	 * tp2 table's 1 token at 2 experts, 7 us a layer */
	assert_int_equal(decode_uniform(p, 1, 100), 139000 + 2 * 7000);
	char path[1200];
	snprintf(path, sizeof path, "%s/tp2/moe.csv", t->root);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(lsim_perf_table_create(t->root, &prm, &q, &d), 0);
	/* shared: round(4 x 1/4) = 1 expert, below the grid's 2 (clamped),
	 * at 1/2 token (clamped to 1): the tp1 row 1,2, 50 us */
	assert_int_equal(decode_uniform(q, 1, 100), 139000 + 2 * 50000);
	/* 16 decodes: 4 experts at 8 tokens, 90 + 7/9 x 20 us (105555 ns),
	 * where the tp2 table gave its 8-expert row at 16 tokens, 9 + 15/9 us
	 * (10666 ns) */
	assert_int_equal(decode_uniform(q, 16, 100) - decode_uniform(p, 16, 100),
			 2 * (105555 - 10666));
	lsim_perf_destroy(p);
	lsim_perf_destroy(q);
}

static void test_table_synthetic(void **state)
{
	struct tmpdir *t = *state;
	synth_write(t);
	struct lsim_perf *p;
	struct lsim_diag d;
	assert_int_equal(synth_create(t, &p, &d), 0);
	/*
	 * One decode, T = S = 1: once = 1000 + 1000 + 100000 + 5000 = 107000;
	 * layer = 2 * 2000 + 10000 + attention(0,0,1,ctx).
	 */
	assert_int_equal(decode_uniform(p, 1, 100), 107000 + 2 * (14000 + 2000));
	assert_int_equal(decode_uniform(p, 1, 550), 107000 + 2 * (14000 + 3000)); /* blend */
	assert_int_equal(decode_uniform(p, 1, 10), 107000 + 2 * (14000 + 2000));  /* clamp */
	/* above the grid: extrapolated from 100 and 1000, 2000 + 2 * 2000 */
	assert_int_equal(decode_uniform(p, 1, 1900), 107000 + 2 * (14000 + 6000));
	/*
	 * 5 decodes at ctx 550: n_decode 5 is 4/9 of the way from 1 to 10;
	 * attention = 3000 + 4/9 * (15000 - 3000) = 8333; dense at T = 5;
	 * lm_head at S = 5: 100 + 4/9 * 90 = 140 us.
	 */
	int64_t at = lerp_ns(3000, 15000, 4.0 / 9.0);
	assert_int_equal(at, 8333);
	int64_t once = lerp_ns(1000, 2000, 4.0 / 99.0) + 1000 + lerp_ns(100000, 190000, 4.0 / 9.0) +
		       5000;
	int64_t layer = 2 * lerp_ns(2000, 4000, 4.0 / 99.0) + lerp_ns(10000, 109000, 4.0 / 99.0) + at;
	assert_int_equal(decode_uniform(p, 5, 550), once + 2 * layer);
	/*
	 * A 200-token chunk, beyond both the token and the chunk grids. The
	 * (chunk 0, 0 decodes) corner was never measured and borrows the
	 * nearest measured pair, (0, 1): 2 us at kv 0 (clamped). Chunk 100
	 * gives 20 us; extrapolating to 200: 2 + 2 * 18 = 38 us.
	 * Dense at 200 tokens: embedding 1 + 199/99 us, layernorm 2 + 2*199/99,
	 * qkv 10 + 199/99 * 99 us, which in double arithmetic is 208.99999... us
	 * and truncates to 208999 ns (as LLMServingSim's int() does).
	 */
	once = lerp_ns(1000, 2000, 199.0 / 99.0) + 1000 + 100000 + 5000;
	layer = 2 * lerp_ns(2000, 4000, 199.0 / 99.0) + lerp_ns(10000, 109000, 199.0 / 99.0) + 38000;
	assert_int_equal(once + 2 * layer, 627088);
	assert_int_equal(prefill_one(p, 200, 0), 627088);
	/* kv_prefill blend: chunk 100 after 500 cached tokens, 20 -> 40 us */
	layer = 2 * lerp_ns(2000, 4000, 1.0) + 109000 + 30000;
	once = 2000 + 1000 + 100000 + 5000;
	assert_int_equal(prefill_one(p, 100, 500), once + 2 * layer);
	/* strictly monotone in tokens on this profile */
	lsim_time prev = 0;
	for (int32_t c = 1; c <= 400; c++) {
		lsim_time tc = prefill_one(p, c, 0);
		assert_true(tc > prev);
		prev = tc;
	}
	lsim_perf_destroy(p);
}

static void expect_error(struct tmpdir *t, int err, const char *file_suffix, int line,
			 const char *key)
{
	struct lsim_perf *p;
	struct lsim_diag d;
	int rc = synth_create(t, &p, &d);
	assert_int_equal(rc, err);
	assert_null(p);
	size_t n = strlen(d.file), m = strlen(file_suffix);
	assert_true(n >= m);
	assert_string_equal(d.file + n - m, file_suffix);
	assert_int_equal(d.line, line);
	if (key)
		assert_string_equal(d.key, key);
	assert_true(strlen(d.msg) > 0);
}

static void test_table_bad_files(void **state)
{
	struct tmpdir *t = *state;
	synth_write(t);

	/* header without time_us */
	tmp_write(t, "tp1/dense.csv", "layer,tokens,latency\nqkv_proj,1,10\n");
	expect_error(t, LSIM_EFORMAT, "tp1/dense.csv", 1, "time_us");
	/* non-numeric cell on line 3 */
	tmp_write(t, "tp1/dense.csv", "layer,tokens,time_us\nqkv_proj,1,10\nqkv_proj,2,fast\n");
	expect_error(t, LSIM_EFORMAT, "tp1/dense.csv", 3, "time_us");
	{
		struct lsim_perf *p;
		struct lsim_diag d;
		synth_create(t, &p, &d);
		assert_int_equal(d.col, 3);
		assert_non_null(strstr(d.msg, "fast"));
	}
	/* non-integer token count */
	tmp_write(t, "tp1/dense.csv", "layer,tokens,time_us\nqkv_proj,1.5,10\n");
	expect_error(t, LSIM_EFORMAT, "tp1/dense.csv", 2, "tokens");
	/* a short row (line 4, after a blank line) */
	tmp_write(t, "tp1/dense.csv", "layer,tokens,time_us\nqkv_proj,1,10\n\nqkv_proj,2\n");
	expect_error(t, LSIM_EFORMAT, "tp1/dense.csv", 4, NULL);
	/* negative time in attention.csv line 2 */
	tmp_write(t, "tp1/dense.csv", synth_dense);
	tmp_write(t, "tp1/attention.csv",
		  "prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n0,0,1,16,-3\n");
	expect_error(t, LSIM_EFORMAT, "tp1/attention.csv", 2, "time_us");
	/* header only */
	tmp_write(t, "tp1/attention.csv", "prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n");
	expect_error(t, LSIM_EFORMAT, "tp1/attention.csv", 1, NULL);
	tmp_write(t, "tp1/attention.csv", synth_attn);
	/* malformed moe.csv is an error, not an absent one */
	tmp_write(t, "tp1/moe.csv", "tokens,experts,time_us\n1,8,50\n");
	expect_error(t, LSIM_EFORMAT, "tp1/moe.csv", 1, "activated_experts");
	unlink(t->files[t->n_files - 1]);
	/* broken meta.yaml */
	tmp_write(t, "meta.yaml", "skew_fit:\n  enabled: [true\n");
	{
		struct lsim_perf *p;
		struct lsim_diag d;
		assert_int_equal(synth_create(t, &p, &d), LSIM_EFORMAT);
		assert_non_null(strstr(d.file, "meta.yaml"));
		assert_true(d.line >= 2);
	}
	tmp_write(t, "meta.yaml", "skew_fit:\n  enabled: false\n");
	{
		struct lsim_perf *p;
		struct lsim_diag d;
		assert_int_equal(synth_create(t, &p, &d), 0);
		lsim_perf_destroy(p);
	}
	/* a missing file */
	char path[1100];
	snprintf(path, sizeof path, "%s/tp1/per_sequence.csv", t->root);
	unlink(path);
	expect_error(t, LSIM_ENOENT, "tp1/per_sequence.csv", 0, NULL);
	tmp_write(t, "tp1/per_sequence.csv", synth_seq);
	/* a tensor-parallel degree that was not profiled */
	{
		struct lsim_table_params prm = {.tp = 4, .n_layers = 2};
		struct lsim_perf *p = NULL;
		struct lsim_diag d;
		assert_int_equal(lsim_perf_table_create(t->root, &prm, &p, &d), LSIM_ENOENT);
		assert_null(p);
		assert_string_equal(d.key, "tp");
		assert_non_null(strstr(d.msg, "tp1"));
		prm.tp = 1;
		prm.n_layers = 0;
		assert_int_equal(lsim_perf_table_create(t->root, &prm, &p, &d), LSIM_EINVAL);
		assert_string_equal(d.key, "n_layers");
	}
}

/* ------------------------------------------------------------------ */
/* roofline backend                                                    */
/* ------------------------------------------------------------------ */

static struct lsim_model_arch llama3_8b(void)
{
	struct lsim_model_arch m;
	memset(&m, 0, sizeof m);
	snprintf(m.name, sizeof m.name, "Llama-3-8B");
	m.n_layers = 32;
	m.hidden = 4096;
	m.n_heads = 32;
	m.n_kv_heads = 8;
	m.head_dim = 128;
	m.intermediate = 14336;
	m.vocab = 128256;
	m.gated_mlp = true;
	m.params = 8.03e9;
	m.bytes_per_param = 2;
	m.max_context = 8192;
	return m;
}

static struct lsim_gpu_profile h100(void)
{
	struct lsim_gpu_profile g;
	memset(&g, 0, sizeof g);
	snprintf(g.name, sizeof g.name, "H100-SXM");
	g.bf16_flops = 989e12;
	g.hbm_bytes = 80e9;
	g.hbm_bw = 3.35e12;
	g.pcie_bw = 63e9;
	g.nvlink_bw = 450e9;
	g.mfu_max = 0.80;
	g.mfu_half_tokens = 128;
	g.mbu = 0.88;
	g.launch_s = 5e-6;
	return g;
}

static struct lsim_perf *roofline(const struct lsim_model_arch *m,
				  const struct lsim_gpu_profile *g, int tp, double cpu)
{
	struct lsim_roofline_params prm = {.tp = tp, .cpu_overhead_s = cpu};
	struct lsim_perf *p = NULL;
	struct lsim_diag d;
	assert_int_equal(lsim_perf_roofline_create(m, g, &prm, &p, &d), 0);
	assert_string_equal(p->ops->name, "roofline");
	return p;
}

static void assert_rel(double got, double want, double tol)
{
	if (fabs(got - want) > tol * fabs(want))
		fail_msg("got %.6g, want %.6g (rel err %.3g > %.3g)", got, want,
			 fabs(got - want) / fabs(want), tol);
}

/* Kernels per decoder layer: 2 norms, QKV, rotary, KV write, attention, O,
 * gate_up, activation, down; plus embedding, final norm and LM head. */
#define KERNELS_PER_LAYER 10
#define KERNELS_ONCE 3

/* decode_run gives, step by step, exactly what iter_eval gives for the
 * same batch with each context one token longer a step: batch sizes from
 * 1 to 256, short and long contexts, with and without tensor
 * parallelism. */
static void test_roofline_decode_run_exact(void **state)
{
	(void)state;
	struct lsim_model_arch m = llama3_8b();
	struct lsim_gpu_profile g = h100();
	for (int tp = 1; tp <= 2; tp++) {
		struct lsim_perf *p = roofline(&m, &g, tp, 0.0);
		assert_non_null(p->ops->decode_run);
		for (int n = 1; n <= 256; n = n * 2 + 1) {
			int32_t ctx[512], base[512];
			for (int i = 0; i < n; i++)
				base[i] = 1 + (i * 7919) % (n > 100 ? 60000 : 3000);
			struct lsim_batch b = {.n_decode = n, .decode_ctx = base};
			lsim_time t[40];
			struct lsim_iter_work w[40];
			p->ops->decode_run(p, &b, 40, t, w);
			for (int k = 0; k < 40; k++) {
				for (int i = 0; i < n; i++)
					ctx[i] = base[i] + k;
				struct lsim_batch bk = {.n_decode = n, .decode_ctx = ctx};
				struct lsim_iter_work wk;
				assert_int_equal(t[k], p->ops->iter_eval(p, &bk, &wk));
				assert_true(memcmp(&w[k], &wk, sizeof wk) == 0);
			}
		}
		lsim_perf_destroy(p);
	}
}

/*
 * Decode of one sequence with 1,024 cached tokens: memory-bound. Bytes:
 * weights of 32 layers (QKV 4096 x 6144, O 4096 x 4096, MLP 3 x 4096 x
 * 14336 = 218,103,808 parameters a layer, 2 B each) + the LM head (128,256 x
 * 4,096) + the KV of 1,025 tokens read (2 x 8 heads x 128 x 2 B = 4 KiB per
 * token a layer); streamed at 3.35 TB/s x 0.88. Plus 5 us per kernel.
 */
static void test_roofline_decode_memory_bound(void **state)
{
	(void)state;
	struct lsim_model_arch m = llama3_8b();
	struct lsim_gpu_profile g = h100();
	struct lsim_perf *p = roofline(&m, &g, 1, 0.0);
	double layer_params = 4096.0 * 6144 + 4096.0 * 4096 + 3.0 * 4096 * 14336;
	assert_true(layer_params == 218103808.0);
	double weights = 32 * layer_params * 2 + 128256.0 * 4096 * 2; /* 15.01 GB */
	double kv = 32 * 1025.0 * 4096;
	double want = (weights + kv) / (3.35e12 * 0.88) +
		      (32 * KERNELS_PER_LAYER + KERNELS_ONCE) * 5e-6;
	double got = lsim_time_to_s(decode_uniform(p, 1, 1024));
	assert_rel(got, want, 0.01); /* about 6.75 ms */
	/* twice the context reads twice the KV */
	double got2 = lsim_time_to_s(decode_uniform(p, 1, 2049));
	assert_rel(got2 - got, 32 * 1024.0 * 4096 / (3.35e12 * 0.88), 0.02);
	lsim_perf_destroy(p);
}

/*
 * What an iteration does (iter_work): its FLOPs and HBM bytes per GPU of a
 * TP group of tp, written out from docs/perf-model.md's operator table for
 * T new tokens of S sequences (here one chunk of c tokens after p cached
 * ones, or one decode, c = 1, at context p), b = 2 bytes:
 *   FLOPs = L x (2T(h(q+2kv) + qh + 2hf + fh) + 4 d (a/tp) P) + 2 S h V/tp,
 *           P = c p + c (c+1)/2 causal query-key pairs;
 *   bytes = L x (2 norms (2Th+h) + QKV (h(q+2kv) + T(h+q+2kv)) + rotary
 *           2T(q+kv) + attention 2kv(p+c+T) + 2Tq + O (qh + T(q+h)) +
 *           gate/up (2hf + T(h+2f)) + SiLU 3Tf + down (fh + T(f+h))) b
 *           + (embedding 2Th + final norm (2Th+h) + LM head (hV/tp + S(h+V/tp))) b.
 */
static void test_roofline_flops_bytes(void **state)
{
	(void)state;
	struct lsim_model_arch m = llama3_8b();
	struct lsim_gpu_profile g = h100();
	const struct {
		int tp;
		int32_t chunk, ctx; /* chunk 1 after ctx: a decode */
		bool decode;
	} cases[] = {{1, 2048, 0, false}, {2, 2048, 0, false}, {1, 300, 700, false},
		     {1, 1, 1024, true}, {2, 1, 5000, true}};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int tp = cases[i].tp;
		double T = cases[i].chunk, p0 = cases[i].ctx, S = 1, L = 32, b = 2;
		double h = 4096, q = 4096.0 / tp, kv = 1024.0 / tp, f = 14336.0 / tp,
		       V = 128256.0 / tp, d = 128, a = 32.0 / tp;
		double pairs = T * p0 + T * (T + 1) / 2;
		double flops = L * (2 * T * (h * (q + 2 * kv) + q * h + 2 * h * f + f * h) +
				    4 * d * a * pairs) +
			       2 * S * h * V;
		double layer = 2 * (2 * T * h + h) + h * (q + 2 * kv) + T * (h + q + 2 * kv) +
			       2 * T * (q + kv) + 2 * kv * (p0 + T + T) + 2 * T * q + q * h +
			       T * (q + h) + 2 * h * f + T * (h + 2 * f) + 3 * T * f + f * h +
			       T * (f + h);
		double bytes = (L * layer + 2 * T * h + 2 * T * h + h + h * V + S * (h + V)) * b;
		struct lsim_perf *p = roofline(&m, &g, tp, 0.0);
		struct lsim_batch bt = {0};
		if (cases[i].decode)
			bt = (struct lsim_batch){.n_decode = 1, .decode_ctx = &cases[i].ctx};
		else
			bt = (struct lsim_batch){.n_prefill = 1, .prefill_chunk = &cases[i].chunk,
						 .prefill_ctx = &cases[i].ctx};
		struct lsim_iter_work w = lsim_perf_iter_work(p, &bt), we;
		assert_rel(w.flops, flops, 1e-12);
		assert_rel(w.bytes, bytes, 1e-12);
		/* iter_eval gives the same, and the work at peak rates lies between
		 * the compute and the memory bound of the whole iteration and
		 * below its time */
		lsim_time t = lsim_perf_iter_eval(p, &bt, &we);
		assert_true(memcmp(&w, &we, sizeof w) == 0);
		double lo = fmax(flops / 989e12, bytes / 3.35e12);
		assert_true(w.s >= lo * (1 - 1e-12) && w.s <= flops / 989e12 + bytes / 3.35e12);
		assert_true(w.s < lsim_time_to_s(t));
		lsim_perf_destroy(p);
	}
}

/*
 * One 2,048-token chunk with no cached context, per GPU of a TP group of tp,
 * as the closed form of the roofline: GEMMs at eff(2048) of peak, attention
 * (causal: 2048 x 2049 / 2 query-key pairs) at mfu_max, element-wise kernels
 * at the achievable bandwidth, the LM head for one sequence memory-bound,
 * launches, and 2 all-reduces per layer of 2048 x 4096 x 2 bytes, ar_s each.
 */
static double prefill_2048_closed_form(int tp, double ar_s)
{
	const double T = 2048, h = 4096, q = 4096.0 / tp, kv = 1024.0 / tp, f = 14336.0 / tp;
	const double peak = 989e12, bw = 3.35e12 * 0.88;
	const double eff = 0.8 * T / (T + 128);
	double gemm_flops = 2 * T * (h * (q + 2 * kv) + q * h + h * 2 * f + f * h);
	double attn_flops = 4.0 * 128 * (32.0 / tp) * (T * (T + 1) / 2);
	double ew_bytes = 2 * (2 * T * h + h) * 2	 /* two RMSNorms */
			  + 2 * T * (q + kv) * 2	 /* rotary */
			  + T * 3 * f * 2;		 /* SiLU-and-mul */
	double layer = gemm_flops / (peak * eff) + attn_flops / (peak * 0.8) + ew_bytes / bw;
	if (tp > 1)
		layer += 2 * ar_s;
	double once = (2 * T * h * 2 + (2 * T * h + h) * 2) / bw   /* embedding, final norm */
		      + (h * 128256.0 / tp + h + 128256.0 / tp) * 2 / bw; /* LM head */
	return 32 * layer + once + (32 * KERNELS_PER_LAYER + KERNELS_ONCE) * 5e-6;
}

static void test_roofline_prefill_compute_bound(void **state)
{
	(void)state;
	struct lsim_model_arch m = llama3_8b();
	struct lsim_gpu_profile g = h100();
	struct lsim_perf *p = roofline(&m, &g, 1, 0.0);
	double got = lsim_time_to_s(prefill_one(p, 2048, 0));
	double want = prefill_2048_closed_form(1, 0);
	assert_rel(got, want, 0.01);
	/* the dense GEMMs (2 x 2048 x 218.1 M FLOPs a layer at 75.3 % of peak,
	 * 38.4 ms) are most of the ~45 ms */
	double gemm = 32 * 2 * 2048.0 * 218103808 / (989e12 * 0.8 * 2048 / 2176);
	assert_true(gemm > 0.8 * got && gemm < got);
	/* the CPU overhead adds on */
	struct lsim_perf *pc = roofline(&m, &g, 1, 0.003);
	assert_int_equal(prefill_one(pc, 2048, 0), prefill_one(p, 2048, 0) + 3 * LSIM_MS);
	lsim_perf_destroy(pc);
	lsim_perf_destroy(p);
}

/* An A100 node: 12 NVLinks at NCCL's 20 GB/s to NVSwitches, Ampere's
 * constants (as tests/test_collective.c); and a PCIe Gen4 box, NCCL's
 * 24 GB/s a GPU, peer-to-peer, two GPUs a switch. */
static const struct lsim_coll_topo a100_nvswitch = {
	.fabric = LSIM_FABRIC_NVSWITCH, .link_bw = 240e9, .links = 12, .pcie_bw = 24e9,
	.gpus_per_switch = 2, .p2p = true, .arch = 1, .ll128 = true,
};
static const struct lsim_coll_topo pcie_gen4 = {
	.fabric = LSIM_FABRIC_PCIE, .pcie_bw = 24e9, .gpus_per_switch = 2, .p2p = true,
	.arch = 1, .ll128 = true,
};

static struct lsim_perf *roofline_on(const struct lsim_model_arch *m,
				     const struct lsim_gpu_profile *g, int tp,
				     const struct lsim_coll_topo *coll, bool on_links)
{
	struct lsim_roofline_params prm = {.tp = tp, .coll = coll, .allreduce_on_links = on_links};
	struct lsim_perf *p = NULL;
	struct lsim_diag d;
	assert_int_equal(lsim_perf_roofline_create(m, g, &prm, &p, &d), 0);
	return p;
}

/*
 * A 2,048-token prefill at TP 2: its 64 all-reduces of 16 MiB are NCCL's
 * ring Simple, 8.4 + 2 x 3.4 us and the bytes at the bus bandwidth (an
 * all-reduce of 2 GPUs moves its size once): on the A100 node 15.2 us +
 * 16 MiB / 240 GB/s = 85.1 us; over PCIe (hwLat 5.7 us a step) 19.8 us +
 * 16 MiB / 24 GB/s = 718.9 us.
 */
static void test_roofline_tensor_parallel(void **state)
{
	(void)state;
	struct lsim_model_arch m = llama3_8b();
	struct lsim_gpu_profile g = h100();
	const double bytes = 2048.0 * 4096 * 2;
	struct lsim_coll_est e;
	assert_int_equal(lsim_coll_time(&a100_nvswitch, LSIM_COLL_ALLREDUCE, 2, bytes, &e), 0);
	assert_int_equal(e.algo, LSIM_COLL_RING);
	assert_int_equal(e.proto, LSIM_PROTO_SIMPLE);
	struct lsim_perf *p1 = roofline(&m, &g, 1, 0.0);
	struct lsim_perf *p2 = roofline_on(&m, &g, 2, &a100_nvswitch, false);
	double t1 = lsim_time_to_s(prefill_one(p1, 2048, 0));
	double t2 = lsim_time_to_s(prefill_one(p2, 2048, 0));
	double ar_nv = (15.2 + bytes / 240e3) * 1e-6, ar_pcie = (19.8 + bytes / 24e3) * 1e-6;
	/* once an iteration: the embedding's all-reduce of the same size, and
	 * the all-gather of one sequence's logits (128,256 x 2 B), by the
	 * model (its arithmetic is checked in test_collective.c) */
	struct lsim_coll_est ag;
	const double logits = 128256.0 * 2;
	assert_int_equal(lsim_coll_time(&a100_nvswitch, LSIM_COLL_ALLGATHER, 2, logits, &ag), 0);
	double ag_nv = ag.time_s;
	assert_int_equal(lsim_coll_time(&pcie_gen4, LSIM_COLL_ALLGATHER, 2, logits, &ag), 0);
	double ag_pcie = ag.time_s;
	assert_rel(t2, prefill_2048_closed_form(2, ar_nv) + ar_nv + ag_nv, 0.01);
	double ar = 65 * ar_nv + ag_nv;
	/*
	 * Without the all-reduces TP 2 saves half of everything that is
	 * sharded: the GEMMs, attention, rotary, activation and the LM head.
	 */
	const double T = 2048, bw = 3.35e12 * 0.88, peak = 989e12, eff = 0.8 * T / (T + 128);
	double sharded = 32 * (2 * T * 218103808 / (peak * eff) +
			       4.0 * 128 * 32 * T * (T + 1) / 2 / (peak * 0.8) +
			       (2 * T * (4096 + 1024) * 2 + T * 3 * 14336 * 2) / bw) +
			 (4096.0 * 128256 + 128256) * 2 / bw;
	assert_rel(t1 - (t2 - ar), sharded / 2, 0.01);
	/* over PCIe the all-reduces alone change */
	struct lsim_perf *pp = roofline_on(&m, &g, 2, &pcie_gen4, false);
	double tp = lsim_time_to_s(prefill_one(pp, 2048, 0));
	assert_rel(tp - t2, 65 * (ar_pcie - ar_nv) + ag_pcie - ag_nv, 1e-6);
	/* without a topology: one node of the profile's GPUs (H100-SXM's
	 * numbers, no compute capability: Hopper's row, 0.8 x 450 GB/s) */
	struct lsim_perf *pd = roofline(&m, &g, 2, 0.0);
	struct lsim_coll_topo h;
	lsim_coll_topo_from_profile(&g, &h);
	assert_true(h.fabric == LSIM_FABRIC_NVSWITCH && h.link_bw == 0.8 * 450e9);
	assert_int_equal(lsim_coll_time(&h, LSIM_COLL_ALLREDUCE, 2, bytes, &e), 0);
	assert_int_equal(lsim_coll_time(&h, LSIM_COLL_ALLGATHER, 2, logits, &ag), 0);
	assert_rel(lsim_time_to_s(prefill_one(pd, 2048, 0)) - t2,
		   65 * (e.time_s - ar_nv) + ag.time_s - ag_nv, 1e-6);
	lsim_perf_destroy(pd);
	lsim_perf_destroy(pp);
	lsim_perf_destroy(p1);
	lsim_perf_destroy(p2);
}

/*
 * A Mixtral-8x7B-shaped MoE (8 experts, 2 per token): one decode token
 * reads the attention weights, the router and exactly 2 experts.
 */
static void test_roofline_moe_decode(void **state)
{
	(void)state;
	struct lsim_model_arch m = llama3_8b();
	m.intermediate = 14336;
	m.n_experts = 8;
	m.experts_per_token = 2;
	m.vocab = 32000;
	struct lsim_gpu_profile g = h100();
	struct lsim_perf *p = roofline(&m, &g, 1, 0.0);
	double attn_w = 4096.0 * 6144 + 4096.0 * 4096;
	double expert_w = 3.0 * 4096 * 14336;
	double bytes = 32 * (attn_w + 4096.0 * 8 + 2 * expert_w) * 2 + 32000.0 * 4096 * 2 +
		       32 * 1025.0 * 4096;
	/* router GEMM and top-k replace nothing: 2 more kernels a layer */
	double want = bytes / (3.35e12 * 0.88) + (32 * (KERNELS_PER_LAYER + 2) + KERNELS_ONCE) * 5e-6;
	assert_rel(lsim_time_to_s(decode_uniform(p, 1, 1024)), want, 0.01);
	/* 64 tokens touch all 8 experts: more weight traffic than 1 token */
	assert_true(decode_uniform(p, 64, 1024) > decode_uniform(p, 1, 1024));
	lsim_perf_destroy(p);
}

/*
 * The costs that do not shrink with tensor parallelism, by hand: one
 * decode (batch 1, context 1,024) of the Llama-3-8B shape at TP 1, 2 and
 * 8, with a launch latency of 12 us and a CPU overhead of 0.5 ms, its
 * all-reduces on an A100 NVSwitch node (12 NVLinks at NCCL's 20 GB/s):
 *   time = (weights + KV) / tp / (hbm_bw mbu)             (shrinks with tp)
 *        + (32 x 10 + 3) kernels x 12 us                   (does not)
 *        + 64 all-reduces of 4096 x 2 B                    (grows)
 *        + 0.5 ms.
 * An all-reduce of 8 KiB is NCCL's ring LL (tests/test_collective.c):
 * 6.6 + 2(tp-1) x 0.6 us, at an algorithm bandwidth of min(87.7, 240 / 4)
 * x tp / (2(tp-1)) GB/s over the communicator's 24 channels, of which
 * 8 KiB runs on one (a thread's 8 B x tp ranks x 512 threads fills a
 * channel at 8 KiB at TP 2 and 32 KiB at TP 8):
 * TP 2, 7.8 us + 8192 B / 2.5 GB/s = 11.0768 us; TP 8, 15 us + 8192 B /
 * (60 x 8/14 / 24 GB/s) = 20.7344 us. With the data on the links only the
 * latency stays, and each GPU's flow is capped at the ring's bytes
 * (2(tp-1)/tp x 8 KiB) over the rest: 2.5 GB/s at both degrees.
 */
static void test_roofline_fixed_overheads(void **state)
{
	(void)state;
	struct lsim_model_arch m = llama3_8b();
	struct lsim_gpu_profile g = h100();
	g.launch_s = 12e-6;
	const double layer_params = 218103808.0, bw = 3.35e12 * 0.88;
	const double weights = 32 * layer_params * 2 + 128256.0 * 4096 * 2;
	const double kv = 32 * 1025.0 * 4096;
	const int tps[] = {1, 2, 8};
	const double lat_us[] = {0.0, 7.8, 15.0}, data_us[] = {0.0, 8192.0 / 2.5e3,
							       8192.0 / (60e3 * 8.0 / 14.0 / 24.0)};
	for (size_t i = 0; i < 3; i++) {
		int tp = tps[i];
		double ar = 64 * (lat_us[i] + data_us[i]) * 1e-6;
		double want = (weights + kv) / tp / bw + (32 * KERNELS_PER_LAYER + KERNELS_ONCE) * 12e-6 +
			      ar + 0.5e-3;
		struct lsim_roofline_params prm = {.tp = tp, .cpu_overhead_s = 0.5e-3, .coll = &a100_nvswitch};
		struct lsim_perf *p = NULL;
		struct lsim_diag d;
		assert_int_equal(lsim_perf_roofline_create(&m, &g, &prm, &p, &d), 0);
		lsim_time t = decode_uniform(p, 1, 1024);
		assert_rel(lsim_time_to_s(t), want, 0.01);
		assert_true(lsim_perf_ring_rate_cap(p, 1) == 0.0); /* not on the links */
		/* each term exactly: the all-reduces' data, the launches, the CPU */
		prm.allreduce_on_links = true;
		struct lsim_perf *p0 = NULL;
		assert_int_equal(lsim_perf_roofline_create(&m, &g, &prm, &p0, &d), 0);
		double data = 64 * data_us[i] * 1e-6;
		assert_true(llabs(t - decode_uniform(p0, 1, 1024) - lsim_time_ns_of_s(data)) <= 1);
		if (tp > 1)
			assert_rel(lsim_perf_ring_rate_cap(p0, 1), 2.5e9, 1e-9);
		struct lsim_gpu_profile g0 = g;
		g0.launch_s = 0.0;
		prm.allreduce_on_links = false;
		prm.cpu_overhead_s = 0.0;
		struct lsim_perf *pl = NULL;
		assert_int_equal(lsim_perf_roofline_create(&m, &g0, &prm, &pl, &d), 0);
		double launches = (32 * KERNELS_PER_LAYER + KERNELS_ONCE) * 12e-6 + 0.5e-3;
		assert_true(llabs(t - decode_uniform(pl, 1, 1024) - lsim_time_ns_of_s(launches)) <= 1);
		lsim_perf_destroy(pl);
		lsim_perf_destroy(p0);
		lsim_perf_destroy(p);
	}
}

/*
 * The host's issue of the kernels overlaps the GPU: an iteration takes
 * max(GPU time, kernels x host_issue_latency) + the CPU overhead. Llama-3-8B
 * launches 32 x 10 + 3 = 323 kernels; at 30 us each the host needs
 * 9.69 ms, more than the GPU's 6.76 ms for a decode of one sequence at
 * context 1,024 on one H100 (test_roofline_decode_memory_bound), so the
 * step is 9.69 + 0.5 = 10.19 ms, and the same at TP 2 and 8, where the GPU
 * needs less: a floor that does not shrink with TP. A 2,048-token prefill
 * (44.9 ms on the GPU) and a host of 10 us a kernel (3.23 ms) are the
 * GPU's time as without a host floor; the work done is the same.
 */
static void test_roofline_host_floor(void **state)
{
	(void)state;
	struct lsim_model_arch m = llama3_8b();
	assert_true(lsim_perf_roofline_kernels(&m) == 32 * KERNELS_PER_LAYER + KERNELS_ONCE);
	struct lsim_model_arch moe = m;
	moe.n_experts = 8;
	moe.experts_per_token = 2;
	assert_true(lsim_perf_roofline_kernels(&moe) == 32 * 12 + KERNELS_ONCE);
	const int tps[] = {1, 2, 8};
	for (size_t i = 0; i < 3; i++) {
		struct lsim_gpu_profile g = h100();
		g.host_issue_s = 30e-6;
		struct lsim_perf *p = roofline(&m, &g, tps[i], 0.5e-3);
		assert_true(llabs(decode_uniform(p, 1, 1024) - 10190000) <= 1);
		lsim_perf_destroy(p);
	}
	struct lsim_gpu_profile g0 = h100(), g = h100();
	struct lsim_perf *p0 = roofline(&m, &g0, 1, 0.5e-3);
	g.host_issue_s = 30e-6;
	struct lsim_perf *p = roofline(&m, &g, 1, 0.5e-3);
	/* the GPU's share binds: the time without a host floor, to the ns */
	assert_rel(lsim_time_to_s(prefill_one(p0, 2048, 0)), 44.9e-3 + 0.5e-3, 0.01);
	assert_true(llabs(prefill_one(p, 2048, 0) - prefill_one(p0, 2048, 0)) <= 1);
	/* the host's share binds: the work is the GPU's all the same */
	int32_t ctx = 1024;
	struct lsim_batch b = {.n_decode = 1, .decode_ctx = &ctx};
	struct lsim_iter_work w0, w;
	lsim_time t0 = p0->ops->iter_eval(p0, &b, &w0), t = p->ops->iter_eval(p, &b, &w);
	assert_rel(lsim_time_to_s(t0), 6.76e-3 + 0.5e-3, 0.01);
	assert_true(llabs(t - 10190000) <= 1);
	assert_true(memcmp(&w0, &w, sizeof w) == 0);
	/* a pipeline stage issues its own kernels: 16 layers x 10 + the
	 * embedding = 161 x 30 us = 4.83 ms on the first stage (then the CPU
	 * overhead), 16 x 10 + 2 = 162 x 30 us = 4.86 ms on the last; the
	 * GPU's halves of the 6.76 ms step are shorter */
	assert_true(llabs(p->ops->stage_time(p, &b, 16, true, false) - 5330000) <= 1);
	assert_true(llabs(p->ops->stage_time(p, &b, 16, false, true) - 4860000) <= 1);
	assert_true(p0->ops->stage_time(p0, &b, 16, false, true) < 4000000);
	/* decode_run applies the floor step by step as iter_eval does */
	lsim_time run[3];
	struct lsim_iter_work wr[3];
	p->ops->decode_run(p, &b, 3, run, wr);
	for (int k = 0; k < 3; k++)
		assert_true(llabs(run[k] - 10190000) <= 1);
	lsim_perf_destroy(p);
	g.host_issue_s = 10e-6;
	p = roofline(&m, &g, 1, 0.5e-3);
	assert_true(llabs(decode_uniform(p, 1, 1024) - decode_uniform(p0, 1, 1024)) <= 1);
	lsim_perf_destroy(p);
	lsim_perf_destroy(p0);
	/* a negative host issue latency is refused */
	g.host_issue_s = -1e-6;
	struct lsim_roofline_params prm = {.tp = 1};
	struct lsim_diag d;
	p = NULL;
	assert_int_equal(lsim_perf_roofline_create(&m, &g, &prm, &p, &d), LSIM_EINVAL);
	assert_null(p);
}

/* The per-iteration table llmsim profile import writes for Splitwise, from
 * the roofline p itself: a prompt row is one prefill of the batch, a
 * token row the mean decode step over the output. The 64 x 512 prompt
 * row's time is multiplied by scale64. */
static void synth_iteration_csv(const struct lsim_perf *p, double scale64, char *buf, size_t size)
{
	static const int rows[][3] = {{1, 128, 64},  {1, 512, 64},  {1, 2048, 32}, {1, 8192, 16},
				      {4, 512, 32},  {16, 512, 16}, {64, 512, 8},  {8, 1024, 8}};
	size_t o = (size_t)snprintf(buf, size, "batch_size,prompt_tokens,output_tokens,prompt_us,"
					       "token_us,runs\n");
	for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
		int32_t n = rows[r][0], chunk[64], ctx[64];
		for (int i = 0; i < n; i++) {
			chunk[i] = rows[r][1];
			ctx[i] = 0;
		}
		struct lsim_batch b = {.n_prefill = n, .prefill_chunk = chunk, .prefill_ctx = ctx};
		double pre = lsim_time_to_s(lsim_perf_iter_time(p, &b)), dec = 0.0;
		for (int k = 0; k < rows[r][2]; k++) {
			for (int i = 0; i < n; i++)
				ctx[i] = rows[r][1] + k;
			struct lsim_batch bd = {.n_decode = n, .decode_ctx = ctx};
			dec += lsim_time_to_s(lsim_perf_iter_time(p, &bd));
		}
		if (n == 64)
			pre *= scale64;
		o += (size_t)snprintf(buf + o, size - o, "%d,%d,%d,%.3f,%.3f,1\n", n, rows[r][1],
				      rows[r][2], pre * 1e6, dec / rows[r][2] * 1e6);
	}
}

/*
 * lsim_fit_overheads recovers the constants a table was made with: a
 * TP 2 table generated by the roofline with a launch latency of 17 us and
 * mfu_max 0.6 (the profile says 5 us and 0.8) gives back 17 us and 0.6;
 * one with 0 us and 0.45 gives back those.
 */
static void test_fit_overheads_synthetic(void **state)
{
	struct tmpdir *t = *state;
	struct lsim_model_arch m = llama3_8b();
	const double launch[] = {17e-6, 0.0}, mfu[] = {0.6, 0.45};
	for (int c = 0; c < 2; c++) {
		struct lsim_gpu_profile g = h100();
		g.launch_s = launch[c];
		g.mfu_max = mfu[c];
		struct lsim_perf *p = roofline(&m, &g, 2, 0.0);
		static char csv[4096];
		synth_iteration_csv(p, 1.0, csv, sizeof csv);
		lsim_perf_destroy(p);
		tmp_write(t, "tp1/iteration.csv", csv);
		char path[1100];
		snprintf(path, sizeof path, "%s/tp1/iteration.csv", t->root);
		struct lsim_gpu_profile fit = h100();
		double mae[2];
		size_t screened = 99;
		bool hf = true;
		struct lsim_diag d;
		assert_int_equal(lsim_fit_overheads(path, &m, 2, &fit, mae, &screened, &hf, &d), 0);
		assert_false(hf); /* no row is on a host floor: the profile's (0) stays */
		assert_true(fit.host_issue_s == 0.0);
		assert_true(fabs(fit.launch_s - launch[c]) < 0.01e-6);
		assert_true(fabs(fit.mfu_max - mfu[c]) < 1e-9);
		assert_true(mae[0] < 1e-4 && mae[1] < 1e-4);
		assert_int_equal(screened, 0);
	}
	/* a prompt row faster than the same prompts in a smaller batch is left
	 * out of the fit (Splitwise's 64 x 512 rows at TP 2) */
	struct lsim_gpu_profile g = h100();
	g.launch_s = 17e-6;
	g.mfu_max = 0.6;
	struct lsim_perf *p = roofline(&m, &g, 2, 0.0);
	static char csv[4096];
	synth_iteration_csv(p, 0.1, csv, sizeof csv); /* 64 x 512 prompts in a tenth of the time */
	lsim_perf_destroy(p);
	tmp_write(t, "tp1/iteration.csv", csv);
	char path[1100];
	snprintf(path, sizeof path, "%s/tp1/iteration.csv", t->root);
	struct lsim_gpu_profile fit = h100();
	size_t screened = 0;
	struct lsim_diag d;
	assert_int_equal(lsim_fit_overheads(path, &m, 2, &fit, NULL, &screened, NULL, &d), 0);
	assert_int_equal(screened, 1);
	assert_true(fabs(fit.launch_s - 17e-6) < 0.01e-6);
	assert_true(fabs(fit.mfu_max - 0.6) < 1e-9);
	/* the host issue latency the table cannot see: up to the smallest
	 * GPU time of a row, the one-sequence decode after 128 prompt tokens
	 * (the mean step over contexts 128 to 191), over 323 kernels */
	double bound, dec = 0.0;
	assert_int_equal(lsim_host_issue_unseen(path, &m, 2, &g, &bound, &d), 0);
	p = roofline(&m, &g, 2, 0.0);
	for (int k = 0; k < 64; k++)
		dec += lsim_time_to_s(decode_uniform(p, 1, 128 + k));
	lsim_perf_destroy(p);
	assert_rel(bound, dec / 64 / (32 * KERNELS_PER_LAYER + KERNELS_ONCE), 1e-9);
	/* a table made with a host floor of 40 us a kernel (323 kernels: 12.92
	 * ms a step, above the GPU time of every decode and of the 128-token
	 * prompt at TP 2): the fit finds the floor, and the launches and
	 * mfu_max from the rows the GPU binds */
	g = h100();
	g.launch_s = 17e-6;
	g.mfu_max = 0.6;
	g.host_issue_s = 40e-6;
	p = roofline(&m, &g, 2, 0.0);
	synth_iteration_csv(p, 1.0, csv, sizeof csv);
	lsim_perf_destroy(p);
	tmp_write(t, "tp1/iteration.csv", csv);
	snprintf(path, sizeof path, "%s/tp1/iteration.csv", t->root);
	fit = h100();
	bool hf = false;
	double mae[2];
	assert_int_equal(lsim_fit_overheads(path, &m, 2, &fit, mae, NULL, &hf, &d), 0);
	assert_true(hf);
	assert_rel(fit.host_issue_s, 40e-6, 1e-3);
	assert_true(fabs(fit.mfu_max - 0.6) < 1e-9);
	assert_true(fabs(fit.launch_s - 17e-6) < 0.1e-6);
	assert_true(mae[0] < 1e-3 && mae[1] < 1e-3);
	/* no table: ENOENT naming the option */
	snprintf(path, sizeof path, "%s/tp1/none.csv", t->root);
	assert_int_equal(lsim_fit_overheads(path, &m, 2, &fit, NULL, NULL, NULL, &d), LSIM_ENOENT);
	assert_string_equal(d.key, "--fit-tp");
}

static void test_roofline_bad_input(void **state)
{
	(void)state;
	struct lsim_model_arch m = llama3_8b();
	struct lsim_gpu_profile g = h100();
	struct lsim_roofline_params prm = {.tp = 2, .cpu_overhead_s = 0};
	struct lsim_perf *p = NULL;
	struct lsim_diag d;
	g.mbu = 0;
	assert_int_equal(lsim_perf_roofline_create(&m, &g, &prm, &p, &d), LSIM_EINVAL);
	assert_null(p);
	g = h100();
	g.nvlink_bw = 0;
	g.pcie_bw = 0;
	assert_int_equal(lsim_perf_roofline_create(&m, &g, &prm, &p, &d), LSIM_EINVAL);
	assert_string_equal(d.key, "pcie_bw");
	/* a mesh of 2 links a GPU holds 3 GPUs, not 4: refused, naming the links */
	g = h100();
	struct lsim_coll_topo mesh = {
		.fabric = LSIM_FABRIC_MESH, .link_bw = 128e9, .links = 2, .pcie_bw = 48e9,
		.gpus_per_switch = 2, .p2p = true, .arch = 2,
	};
	prm.coll = &mesh;
	prm.tp = 4;
	assert_int_equal(lsim_perf_roofline_create(&m, &g, &prm, &p, &d), LSIM_EINVAL);
	assert_null(p);
	assert_string_equal(d.key, "nvlink_links");
	prm.tp = 3;
	assert_int_equal(lsim_perf_roofline_create(&m, &g, &prm, &p, &d), 0);
	lsim_perf_destroy(p);
	p = NULL;
	prm.coll = NULL;
	g = h100();
	prm.tp = 0;
	assert_int_equal(lsim_perf_roofline_create(&m, &g, &prm, &p, &d), LSIM_EINVAL);
	assert_string_equal(d.key, "tp");
	prm.tp = 1;
	m.n_experts = 4;
	m.experts_per_token = 5;
	assert_int_equal(lsim_perf_roofline_create(&m, &g, &prm, &p, &d), LSIM_EINVAL);
	assert_string_equal(d.key, "experts_per_token");
	/* an empty batch costs the CPU overhead alone */
	m = llama3_8b();
	prm.cpu_overhead_s = 0.001;
	assert_int_equal(lsim_perf_roofline_create(&m, &g, &prm, &p, &d), 0);
	struct lsim_batch empty = {0};
	assert_int_equal(lsim_perf_iter_time(p, &empty), LSIM_MS);
	lsim_perf_destroy(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_decode_grid_point),
		cmocka_unit_test(test_table_prefill_grid_point),
		cmocka_unit_test(test_table_blend_in_context),
		cmocka_unit_test(test_table_blend_in_tokens),
		cmocka_unit_test(test_table_monotone),
		cmocka_unit_test(test_table_skew),
		cmocka_unit_test(test_table_moe),
		cmocka_unit_test(test_table_moe_tp2),
		cmocka_unit_test(test_table_tp2_and_cpu),
		cmocka_unit_test_setup_teardown(test_table_synthetic, tmp_setup, tmp_teardown),
		cmocka_unit_test_setup_teardown(test_table_moe_folder, tmp_setup, tmp_teardown),
		cmocka_unit_test_setup_teardown(test_table_identity, tmp_setup, tmp_teardown),
		cmocka_unit_test_setup_teardown(test_table_bad_files, tmp_setup, tmp_teardown),
		cmocka_unit_test(test_roofline_decode_run_exact),
		cmocka_unit_test(test_roofline_flops_bytes),
		cmocka_unit_test(test_roofline_decode_memory_bound),
		cmocka_unit_test(test_roofline_prefill_compute_bound),
		cmocka_unit_test(test_roofline_tensor_parallel),
		cmocka_unit_test(test_roofline_moe_decode),
		cmocka_unit_test(test_roofline_fixed_overheads),
		cmocka_unit_test(test_roofline_host_floor),
		cmocka_unit_test_setup_teardown(test_fit_overheads_synthetic, tmp_setup, tmp_teardown),
		cmocka_unit_test(test_roofline_bad_input),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
