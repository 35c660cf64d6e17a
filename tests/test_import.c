/*
 * test_import.c - `llmsim profile import` and `llmsim profile compare`, and
 * the shipped hardware profiles.
 *
 * import: small slices of each published source (tests/data/import, rows
 * copied verbatim) give files whose every row is checked against values
 * worked out by hand from the source rows, and the table backend then
 * gives hand-summed iteration times from them; a profile in LLMServingSim's
 * current layout is copied byte for byte; bad sources (missing column,
 * non-numeric cell, no rows, wrong selection) name file, line, column and
 * key, and leave the output folder untouched.
 *
 * compare: a tiny measured table against the roofline of a tiny model on a
 * tiny GPU, whose per-layer and per-iteration times are worked out below;
 * and the errors of the shipped measured tables (docs/validation.md,
 * section 5), pinned so that a change of the roofline or of a profile shows.
 *
 * profiles: every shipped hardware profile loads through sim/cluster/hw.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster/hw.h"
#include "serving/perf.h"
#include "cli/cli.h"
#include "import/profile_import.h"

/* ------------------------------------------------------------------ */
/* helpers                                                             */
/* ------------------------------------------------------------------ */

static const char *source_root(void)
{
	const char *r = getenv("LSIM_SOURCE_ROOT");
	assert_non_null(r);
	return r;
}

static void data_path(char *buf, size_t size, const char *rel)
{
	snprintf(buf, size, "%s/tests/data/import/%s", source_root(), rel);
}

/* A scratch folder per test, removed (with everything in it) afterwards. */
static int tmp_setup(void **state)
{
	char *dir = malloc(1024);
	if (!dir)
		return -1;
	const char *base = getenv("LSIM_BUILD_ROOT");
	snprintf(dir, 1024, "%s/test_import_XXXXXX", base ? base : ".");
	if (!mkdtemp(dir)) {
		free(dir);
		return -1;
	}
	*state = dir;
	return 0;
}

static void rm_tree(const char *path)
{
	DIR *dh = opendir(path);
	if (dh) {
		for (struct dirent *e; (e = readdir(dh)) != NULL;) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			char sub[2048];
			snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
			struct stat st;
			if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
				rm_tree(sub);
			else
				unlink(sub);
		}
		closedir(dh);
	}
	rmdir(path);
}

static int tmp_teardown(void **state)
{
	rm_tree(*state);
	free(*state);
	return 0;
}

/* The whole file as a string (caller frees), or NULL. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
		free(s);
		s = NULL;
	}
	if (s)
		s[n] = '\0';
	fclose(f);
	return s;
}

static void write_text(const char *dir, const char *rel, const char *text)
{
	char path[2048];
	int len = snprintf(path, sizeof path, "%s/%s", dir, rel);
	assert_true(len > 0 && (size_t)len < sizeof path);
	char parent[2048];
	snprintf(parent, sizeof parent, "%s", path);
	char *slash = strrchr(parent, '/');
	*slash = '\0';
	mkdir(parent, 0777);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void assert_file(const char *dir, const char *rel, const char *want)
{
	char path[2048];
	snprintf(path, sizeof path, "%s/%s", dir, rel);
	char *got = slurp(path);
	if (!got)
		fail_msg("missing %s", path);
	if (strcmp(got, want) != 0)
		fprintf(stderr, "%s:\n--- got ---\n%s--- want ---\n%s", rel, got, want);
	assert_string_equal(got, want);
	free(got);
}

static bool exists(const char *dir, const char *rel)
{
	char path[2048];
	snprintf(path, sizeof path, "%s/%s", dir, rel);
	struct stat st;
	return stat(path, &st) == 0;
}

/* Entries of a folder other than . and .. */
static int count_entries(const char *dir)
{
	DIR *dh = opendir(dir);
	int n = 0;
	if (!dh)
		return -1;
	for (struct dirent *e; (e = readdir(dh)) != NULL;)
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(dh);
	return n;
}

static int do_import(int from, const char *const *src, size_t n_src, const char *out,
		     const char *model, const char *gpu, int tp, struct lsim_import_result *r,
		     struct lsim_diag *d)
{
	struct lsim_import_opts o = {.from = from, .src = src, .n_src = n_src, .outdir = out,
				     .model = model, .gpu = gpu, .tp = tp};
	memset(d, 0, sizeof *d);
	return lsim_profile_import(&o, r, d);
}

static void import_ok(int from, const char *const *src, size_t n_src, const char *out,
		      const char *model, const char *gpu, int tp, struct lsim_import_result *r)
{
	struct lsim_diag d;
	int rc = do_import(from, src, n_src, out, model, gpu, tp, r, &d);
	if (rc)
		fail_msg("%s:%d:%d: %s: %s", d.file, d.line, d.col, d.key, d.msg);
}

static struct lsim_perf *table(const char *dir, int tp, int n_layers)
{
	struct lsim_table_params prm = {.tp = tp, .n_layers = n_layers};
	struct lsim_perf *p = NULL;
	struct lsim_diag d = {0};
	int rc = lsim_perf_table_create(dir, &prm, &p, &d);
	if (rc)
		fail_msg("%s:%d: %s: %s", d.file, d.line, d.key, d.msg);
	return p;
}

static lsim_time decodes(const struct lsim_perf *p, int n, int32_t ctx)
{
	int32_t k[16];
	for (int i = 0; i < n; i++)
		k[i] = ctx;
	struct lsim_batch b = {.n_decode = n, .decode_ctx = k};
	return lsim_perf_iter_time(p, &b);
}

static lsim_time prefill(const struct lsim_perf *p, int32_t chunk)
{
	int32_t ctx = 0;
	struct lsim_batch b = {.n_prefill = 1, .prefill_chunk = &chunk, .prefill_ctx = &ctx};
	return lsim_perf_iter_time(p, &b);
}

/* |got - want| <= tol, with both values in the message when not. */
static void assert_near(double got, double want, double tol)
{
	if (!(fabs(got - want) <= tol))
		fail_msg("got %.12g, want %.12g (tolerance %g)", got, want, tol);
}

/* The table backend's blend of two whole-ns samples, truncated to whole ns. */
static int64_t lerp_ns(int64_t y0, int64_t y1, double t)
{
	return (int64_t)((double)y0 + t * (double)(y1 - y0));
}

/* ------------------------------------------------------------------ */
/* Vidur                                                               */
/* ------------------------------------------------------------------ */

/*
 * Rows of tests/data/import/vidur (A100, Llama-2-70B shapes; medians in ms):
 * mlp.csv has tp2 at 1, 8 and twice at 2048 tokens, and tp1 at 1 token;
 * attention.csv has decodes (batch 1 and 2 at contexts 32 and 64) and
 * prefills (chunks 64 and 128 after 0 and 32 cached tokens, chunk 128 at
 * kv 0 and 32 each twice); all_reduce.csv has 2 workers on 1 and 2 nodes
 * and 4 workers on 4.
 */
static const char vidur_tp2_dense[] =
	"layer,tokens,time_us\n"
	"act_fn,1,12.000\n" /* mlp_act 0.012 ms */
	"act_fn,8,12.000\n"
	"act_fn,2048,173.000\n"
	"add,1,2.000\n"
	"add,8,2.000\n"
	"add,2048,56.000\n"
	"down_proj,1,143.000\n"
	"down_proj,8,147.000\n"
	"down_proj,2048,2046.000\n"
	"embedding,1,3.000\n"
	"embedding,8,8.000\n"
	"embedding,2048,218.000\n"
	"gate_up_proj,1,283.000\n" /* mlp_up_proj: gated, so gate and up */
	"gate_up_proj,8,289.000\n"
	"gate_up_proj,2048,4079.000\n" /* duplicate rows 4.080 and 4.078 ms: the mean */
	"input_layernorm,1,8.000\n"
	"input_layernorm,8,7.000\n"
	"input_layernorm,2048,101.000\n"
	"o_proj,1,45.000\n" /* attn_post_proj */
	"o_proj,8,46.000\n"
	"o_proj,2048,678.500\n" /* 0.679 and 0.678 */
	"post_attention_layernorm,1,8.000\n"
	"post_attention_layernorm,8,7.000\n"
	"post_attention_layernorm,2048,101.000\n"
	"qkv_proj,1,58.000\n" /* attn_pre_proj */
	"qkv_proj,8,59.500\n"
	"qkv_proj,2048,718.500\n" /* 0.719 and 0.718 */
	"rotary_emb,1,4.000\n"
	"rotary_emb,8,4.000\n"
	"rotary_emb,2048,41.500\n"; /* 0.042 and 0.041 */

/* input_reshape + attn_decode|attn_prefill + output_reshape, in us */
static const char vidur_tp2_attention[] =
	"prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n"
	"0,0,1,32,16.000\n" /* 0 + 0.015 + 0.001 ms */
	"0,0,1,64,16.000\n"
	"0,0,2,32,15.000\n" /* 0 + 0.014 + 0.001 */
	"0,0,2,64,15.000\n"
	"64,0,0,0,17.000\n" /* 0 + 0.015 + 0.002 */
	"64,32,0,0,17.000\n"
	"128,0,0,0,19.000\n" /* two rows of 0.016 + 0.003 */
	"128,32,0,0,23.000\n"; /* 0.02 + 0.003 */

static void test_vidur_import(void **state)
{
	const char *out = *state;
	char mlp[1024], attn[1024], ar[1024], sr[1024];
	data_path(mlp, sizeof mlp, "vidur/mlp.csv");
	data_path(attn, sizeof attn, "vidur/attention.csv");
	data_path(ar, sizeof ar, "vidur/all_reduce.csv");
	data_path(sr, sizeof sr, "vidur/send_recv.csv");
	const char *src[] = {mlp, attn, ar, sr};
	struct lsim_import_result r;
	import_ok(LSIM_IMPORT_VIDUR, src, 4, out, "Llama-2-70B", "A100", 0, &r);
	assert_string_equal(r.layout, "layers");
	assert_int_equal(r.rows_read, 5 + 10 + 6 + 2);
	/* tp 1 and 2 from mlp.csv, 4 from the all-reduce rows of 4 workers */
	assert_int_equal(r.n_tp, 3);
	assert_int_equal(r.tp[0], 1);
	assert_int_equal(r.tp[1], 2);
	assert_int_equal(r.tp[2], 4);
	assert_false(r.loadable[0]); /* no attention at tp 1 */
	assert_true(r.loadable[1]);
	assert_false(r.loadable[2]);
	assert_non_null(strstr(r.note, "not_profiled"));

	assert_file(out, "tp2/dense.csv", vidur_tp2_dense);
	assert_file(out, "tp2/attention.csv", vidur_tp2_attention);
	assert_file(out, "tp2/per_sequence.csv", "layer,sequences,time_us\nnot_profiled,1,0.000\n");
	assert_file(out, "tp1/per_sequence.csv", "layer,sequences,time_us\nnot_profiled,1,0.000\n");
	assert_false(exists(out, "tp1/attention.csv"));
	/* a TP group is one node: only rows with devices_per_node == num_workers */
	assert_file(out, "tp2/allreduce.csv", "bytes,time_us\n2048,10.000\n10240,46.000\n");
	assert_file(out, "tp4/allreduce.csv", "bytes,time_us\n2048,61.000\n10240,16.000\n");
	assert_file(out, "network/all_reduce.csv",
		    "num_workers,devices_per_node,bytes,time_us\n"
		    "2,1,2048,43.000\n"
		    "2,1,10240,56.000\n"
		    "2,2,2048,10.000\n"
		    "2,2,10240,46.000\n"
		    "4,4,2048,61.000\n"
		    "4,4,10240,16.000\n");
	assert_file(out, "network/send_recv.csv",
		    "num_workers,devices_per_node,bytes,time_us\n"
		    "2,1,2048,24.000\n" /* medians 0.024 ms */
		    "2,1,10240,24.000\n");
	char *manifest = NULL;
	{
		char p[2048];
		snprintf(p, sizeof p, "%s/import.yaml", out);
		manifest = slurp(p);
	}
	assert_non_null(manifest);
	assert_non_null(strstr(manifest, "source: vidur\n"));
	assert_non_null(strstr(manifest, "inputs: [\"mlp.csv\", \"attention.csv\", \"all_reduce.csv\", \"send_recv.csv\"]"));
	assert_non_null(strstr(manifest, "tp: [1, 2, 4]\nloadable: [2]\n"));
	free(manifest);
	/* no staging folder left behind */
	assert_int_equal(count_entries(out), 5); /* import.yaml network tp1 tp2 tp4 */

	/*
	 * The table backend on tp2, 2 layers. One decode at context 32:
	 * T = S = 1; once = embedding 3000 + not_profiled 1 (a zero row is
	 * charged 1 ns); layer = act 12000 + add 2000 + down 143000 + gate_up
	 * 283000 + input_ln 8000 + o 45000 + post_ln 8000 + qkv 58000 + rotary
	 * 4000 + attention(0,0,1,32) 16000 = 579000.
	 */
	struct lsim_perf *p = table(out, 2, 2);
	assert_int_equal(decodes(p, 1, 32), 3001 + 2 * 579000);
	/*
	 * Two decodes at context 64: T = 2 lies 1/7 of the way from 1 to 8
	 * tokens; attention(0,0,2,64) = 15000; the per-sequence row has one
	 * sample (clamped).
	 */
	double t = 1.0 / 7.0;
	int64_t layer = 12000 + 2000 + lerp_ns(143000, 147000, t) + lerp_ns(283000, 289000, t) +
			lerp_ns(8000, 7000, t) + lerp_ns(45000, 46000, t) + lerp_ns(8000, 7000, t) +
			lerp_ns(58000, 59500, t) + 4000 + 15000;
	assert_int_equal(layer, 579498);
	int64_t once = lerp_ns(3000, 8000, t) + 1;
	assert_int_equal(once, 3715);
	assert_int_equal(decodes(p, 2, 64), once + 2 * layer);
	lsim_perf_destroy(p);
}

static void test_vidur_tp_and_shape(void **state)
{
	const char *out = *state;
	char mlp[1024], attn[1024];
	data_path(mlp, sizeof mlp, "vidur/mlp.csv");
	data_path(attn, sizeof attn, "vidur/attention.csv");
	const char *src[] = {mlp, attn};
	struct lsim_import_result r;
	struct lsim_diag d;
	/* --tp 8: mlp.csv has tp 1 and 2 only */
	assert_int_equal(do_import(LSIM_IMPORT_VIDUR, src, 2, out, NULL, NULL, 8, &r, &d),
			 LSIM_ENOENT);
	assert_string_equal(d.key, "--tp");
	assert_non_null(strstr(d.msg, "1, 2"));
	assert_int_equal(count_entries(out), 0);
	/* --tp 2 writes tp2 only */
	import_ok(LSIM_IMPORT_VIDUR, src, 2, out, NULL, NULL, 2, &r);
	assert_int_equal(r.n_tp, 1);
	assert_int_equal(r.tp[0], 2);
	assert_true(r.loadable[0]);
	assert_false(exists(out, "tp1"));
	assert_int_equal(r.n_files, 4); /* dense, per_sequence, attention, import.yaml */

	/* an attention profile of another model is refused */
	char dir[2048];
	snprintf(dir, sizeof dir, "%s/other", out);
	mkdir(dir, 0777);
	write_text(dir, "attention.csv",
		   "n_embd,n_q_head,n_kv_head,num_tensor_parallel_workers,batch_size,"
		   "prefill_chunk_size,kv_cache_size,is_prefill,time_stats.attn_decode.median\n"
		   "4096,32,32,2,1,0,32,False,0.01\n");
	char other[4096];
	snprintf(other, sizeof other, "%s/attention.csv", dir);
	const char *src2[] = {mlp, other};
	snprintf(dir, sizeof dir, "%s/out2", out);
	assert_int_equal(do_import(LSIM_IMPORT_VIDUR, src2, 2, dir, NULL, NULL, 0, &r, &d),
			 LSIM_EINVAL);
	assert_string_equal(d.key, "n_embd");
	assert_int_equal(d.line, 2);
	assert_int_equal(count_entries(dir), 0);
}

/* ------------------------------------------------------------------ */
/* Splitwise                                                           */
/* ------------------------------------------------------------------ */

static void test_splitwise_import(void **state)
{
	const char *out = *state;
	char pm[1024];
	data_path(pm, sizeof pm, "splitwise/perf_model.csv");
	const char *src[] = {pm};
	struct lsim_import_result r;
	struct lsim_diag d;
	/* two models and two GPUs in the file: a choice is needed */
	assert_int_equal(do_import(LSIM_IMPORT_SPLITWISE, src, 1, out, NULL, NULL, 0, &r, &d),
			 LSIM_EINVAL);
	assert_string_equal(d.key, "--model");
	assert_non_null(strstr(d.msg, "llama2-70b, bloom-176b"));
	assert_int_equal(do_import(LSIM_IMPORT_SPLITWISE, src, 1, out, "llama2-70b", NULL, 0, &r,
				   &d),
			 LSIM_EINVAL);
	assert_string_equal(d.key, "--gpu");
	assert_int_equal(do_import(LSIM_IMPORT_SPLITWISE, src, 1, out, "opt-13b", "a100-80gb", 0,
				   &r, &d),
			 LSIM_ENOENT);
	assert_string_equal(d.key, "--model");
	assert_int_equal(count_entries(out), 0);

	/* names match case-insensitively */
	import_ok(LSIM_IMPORT_SPLITWISE, src, 1, out, "LLaMA2-70B", "a100-80gb", 0, &r);
	assert_string_equal(r.layout, "iteration");
	assert_int_equal(r.rows_read, 7);
	assert_int_equal(r.n_tp, 1);
	assert_int_equal(r.tp[0], 4);
	/*
	 * 512-token prompts, 3 runs: medians 126.96234090253712 ms (prompt)
	 * and 44.61435683614274 ms (token); 1024-token prompts, 2 runs: the
	 * means (226.694... + 241.468...) / 2 and (44.872... + 44.948...) / 2.
	 */
	assert_file(out, "tp4/iteration.csv",
		    "batch_size,prompt_tokens,output_tokens,prompt_us,token_us,runs\n"
		    "1,512,128,126962.341,44614.357,3\n"
		    "1,1024,128,234081.300,44910.427,2\n");
	char p[2048];
	snprintf(p, sizeof p, "%s/import.yaml", out);
	char *m = slurp(p);
	assert_non_null(m);
	assert_non_null(strstr(m, "gpu: \"a100-80gb\"\nmodel: \"llama2-70b\"\nlayout: iteration\n"));
	free(m);

	/* a degree with no row of the selection */
	snprintf(p, sizeof p, "%s/tp8", out);
	assert_int_equal(do_import(LSIM_IMPORT_SPLITWISE, src, 1, p, "llama2-70b", "h100-80gb",
				   8, &r, &d),
			 LSIM_ENOENT);
	assert_string_equal(d.key, "--tp");
}

/* ------------------------------------------------------------------ */
/* LLMServingSim                                                       */
/* ------------------------------------------------------------------ */

static void test_llmservingsim_v0_import(void **state)
{
	const char *out = *state;
	char dir[1024];
	data_path(dir, sizeof dir, "llmservingsim_v0");
	const char *src[] = {dir};
	struct lsim_import_result r;
	import_ok(LSIM_IMPORT_LLMSERVINGSIM, src, 1, out, "Llama-3.1-8B", "H100", 0, &r);
	assert_int_equal(r.rows_read, 45);
	assert_int_equal(r.n_tp, 2);
	assert_true(r.loadable[0]);
	assert_true(r.loadable[1]);
	assert_file(out, "tp1/attention.csv",
		    "prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n"
		    "1,0,0,0,5.810\n"
		    "2,0,0,0,9.185\n");
	assert_file(out, "tp1/per_sequence.csv",
		    "layer,sequences,time_us\nlm_head,1,366.336\nlm_head,2,364.702\n");
	assert_file(out, "tp2/per_sequence.csv", "layer,sequences,time_us\nlm_head,1,176.101\n");
	/*
	 * A 1-token prefill on tp1 with 32 layers: once = embedding 2915 +
	 * final_layernorm 18363 + lm_head 366336 = 387614 ns; per layer
	 * act_fn 4179 + down 42647 + gate 41769 + input_layernorm 17701 + k 8275
	 * + o 15995 + post_layernorm 17120 + q 16078 + rope 26853 + up 39978 +
	 * v 8065 + attn 5810 = 244470 ns (each norm is its own row, so none is
	 * doubled).
	 */
	struct lsim_perf *p = table(out, 1, 32);
	assert_int_equal(prefill(p, 1), 387614 + 32 * 244470);
	/* 2 tokens: every operator at its 2-token row */
	int64_t once = 3490 + 21018 + 366336; /* lm_head at S = 1 sequence */
	int64_t layer = 4361 + 42710 + 41969 + 20284 + 8313 + 16324 + 19660 + 16383 + 30448 +
			39847 + 8066 + 9185;
	assert_int_equal(prefill(p, 2), once + 32 * layer);
	lsim_perf_destroy(p);
}

static void test_llmservingsim_copy(void **state)
{
	const char *out = *state;
	char src_dir[1024];
	snprintf(src_dir, sizeof src_dir,
		 "%s/calibrate/perf/llmservingsim/RTX4090/meta-llama/Llama-3.1-8B/bf16",
		 source_root());
	const char *src[] = {src_dir};
	struct lsim_import_result r;
	import_ok(LSIM_IMPORT_LLMSERVINGSIM, src, 1, out, NULL, NULL, 0, &r);
	assert_int_equal(r.n_tp, 1);
	assert_true(r.loadable[0]);
	static const char *const files[] = {"meta.yaml", "tp1/dense.csv", "tp1/per_sequence.csv",
					    "tp1/attention.csv", "tp1/skew_fit.csv"};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		char a[2048], b[2048];
		snprintf(a, sizeof a, "%s/%s", src_dir, files[i]);
		snprintf(b, sizeof b, "%s/%s", out, files[i]);
		char *x = slurp(a), *y = slurp(b);
		assert_non_null(x);
		assert_non_null(y);
		assert_string_equal(x, y);
		free(x);
		free(y);
	}
	/* the copy and the original give the same iteration times */
	char orig[1024];
	snprintf(orig, sizeof orig, "%s", src_dir);
	struct lsim_perf *p1 = table(orig, 1, 32), *p2 = table(out, 1, 32);
	assert_int_equal(decodes(p1, 8, 1000), decodes(p2, 8, 1000));
	lsim_perf_destroy(p1);
	lsim_perf_destroy(p2);
	struct lsim_diag d;
	assert_int_equal(do_import(LSIM_IMPORT_LLMSERVINGSIM, src, 1, out, NULL, NULL, 2, &r, &d),
			 LSIM_ENOENT);
	assert_string_equal(d.key, "--tp");
}

/* ------------------------------------------------------------------ */
/* Bad sources                                                         */
/* ------------------------------------------------------------------ */

static void expect_bad(int from, const char *dir, const char *rel, const char *text, int err,
		       int line, int col, const char *key)
{
	char out[2048], src[2048];
	snprintf(out, sizeof out, "%s/out", dir);
	write_text(dir, rel, text);
	snprintf(src, sizeof src, "%s/%s", dir, rel);
	const char *s[] = {src};
	struct lsim_import_result r;
	struct lsim_diag d;
	int rc = do_import(from, s, 1, out, "llama2-70b", "a100-80gb", 0, &r, &d);
	if (rc != err || d.line != line || d.col != col || strcmp(d.key, key) != 0)
		fail_msg("%s: got rc %d %s:%d:%d: %s: %s", rel, rc, d.file, d.line, d.col, d.key,
			 d.msg);
	size_t n = strlen(d.file), m = strlen(rel);
	assert_true(n >= m);
	assert_string_equal(d.file + n - m, rel);
	assert_true(strlen(d.msg) > 0);
	/* nothing written, no staging folder left */
	assert_int_equal(count_entries(out), 0);
}

static void test_bad_sources(void **state)
{
	const char *dir = *state;
	static const char v0_head[] = "layer_name,input,kv_cache,tp_size,latency(ns)\n";
	char text[4096];
	/* missing column: line 1, key = the column */
	expect_bad(LSIM_IMPORT_LLMSERVINGSIM, dir, "a/layers.csv",
		   "layer_name,input,kv_cache,tp_size,latency\nattn,1,0,1,5\n", LSIM_EFORMAT, 1, 0,
		   "latency(ns)");
	/* non-numeric: the field's line, byte column and column name */
	snprintf(text, sizeof text, "%sembedding,1,0,1,2915\nact_fn,abc,0,1,4179\n", v0_head);
	expect_bad(LSIM_IMPORT_LLMSERVINGSIM, dir, "b/layers.csv", text, LSIM_EFORMAT, 3, 8,
		   "input");
	/* negative time */
	snprintf(text, sizeof text, "%sembedding,1,0,1,-5\n", v0_head);
	expect_bad(LSIM_IMPORT_LLMSERVINGSIM, dir, "c/layers.csv", text, LSIM_EFORMAT, 2, 17,
		   "latency(ns)");
	/* a fraction where a count is due */
	snprintf(text, sizeof text, "%sembedding,1.5,0,1,5\n", v0_head);
	expect_bad(LSIM_IMPORT_LLMSERVINGSIM, dir, "d/layers.csv", text, LSIM_EFORMAT, 2, 11,
		   "input");
	/* header only, and a file with nothing in it */
	expect_bad(LSIM_IMPORT_LLMSERVINGSIM, dir, "e/layers.csv", v0_head, LSIM_EFORMAT, 1, 0, "");
	expect_bad(LSIM_IMPORT_LLMSERVINGSIM, dir, "f/layers.csv", "", LSIM_EFORMAT, 1, 0, "");
	/* a short row: the column of its last field */
	snprintf(text, sizeof text, "%sembedding,1,0,1\n", v0_head);
	expect_bad(LSIM_IMPORT_LLMSERVINGSIM, dir, "g/layers.csv", text, LSIM_EFORMAT, 2, 15, "");

	/* Vidur: mlp.csv without one operator's median */
	expect_bad(LSIM_IMPORT_VIDUR, dir, "h/mlp.csv",
		   "time_stats.emb.median,time_stats.input_layernorm.median,"
		   "time_stats.attn_pre_proj.median,time_stats.attn_rope.median,"
		   "time_stats.attn_post_proj.median,time_stats.post_attention_layernorm.median,"
		   "time_stats.mlp_up_proj.median,time_stats.mlp_act.median,"
		   "time_stats.add.median,n_head,n_kv_head,n_embd,num_tokens,"
		   "num_tensor_parallel_workers\n"
		   "1,1,1,1,1,1,1,1,1,32,8,4096,1,1\n",
		   LSIM_EFORMAT, 1, 0, "time_stats.mlp_down_proj.median");
	/* Vidur: an empty median (a kernel not run) where one is needed */
	expect_bad(LSIM_IMPORT_VIDUR, dir, "i/attention.csv",
		   "n_embd,n_q_head,n_kv_head,num_tensor_parallel_workers,batch_size,"
		   "prefill_chunk_size,kv_cache_size,is_prefill,time_stats.attn_decode.median,"
		   "time_stats.attn_prefill.median\n"
		   "4096,32,8,1,1,0,32,False,0.01,\n"
		   "4096,32,8,1,1,64,0,True,0.01,\n",
		   LSIM_EFORMAT, 3, 30, "time_stats.attn_prefill.median");
	/* Vidur: not True/False */
	expect_bad(LSIM_IMPORT_VIDUR, dir, "j/attention.csv",
		   "n_embd,n_q_head,n_kv_head,num_tensor_parallel_workers,batch_size,"
		   "prefill_chunk_size,kv_cache_size,is_prefill,time_stats.attn_decode.median\n"
		   "4096,32,8,1,1,0,32,maybe,0.01\n",
		   LSIM_EFORMAT, 2, 20, "is_prefill");
	/* Vidur: no known column at all */
	expect_bad(LSIM_IMPORT_VIDUR, dir, "k/x.csv", "a,b\n1,2\n", LSIM_EFORMAT, 1, 0,
		   "time_stats.mlp_up_proj.median");
	/* Splitwise: non-numeric prompt_time on line 3, byte 32 */
	expect_bad(LSIM_IMPORT_SPLITWISE, dir, "l/perf_model.csv",
		   "model,hardware,prompt_size,batch_size,token_size,prompt_time,token_time,"
		   "tensor_parallel\n"
		   "llama2-70b,a100-80gb,512,1,128,100,40,2\n"
		   "llama2-70b,a100-80gb,512,1,128,n/a,40,2\n",
		   LSIM_EFORMAT, 3, 32, "prompt_time");
	/* Splitwise: missing column */
	expect_bad(LSIM_IMPORT_SPLITWISE, dir, "m/perf_model.csv",
		   "model,hardware,prompt_size,batch_size,token_size,prompt_time,tensor_parallel\n"
		   "llama2-70b,a100-80gb,512,1,128,100,2\n",
		   LSIM_EFORMAT, 1, 0, "token_time");
}

/* The CLI: usage, argument errors, and `file:line:col: key: message`. */
static void test_cli(void **state)
{
	const char *dir = *state;
	char err_path[2048], out[2048], src[2048];
	snprintf(err_path, sizeof err_path, "%s/stderr.txt", dir);
	snprintf(out, sizeof out, "%s/out", dir);
	write_text(dir, "bad/layers.csv",
		   "layer_name,input,kv_cache,tp_size,latency(ns)\nattn,1,0,x,5\n");
	snprintf(src, sizeof src, "%s/bad/layers.csv", dir);

	fflush(stderr);
	int saved = dup(2);
	int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(saved >= 0 && fd >= 0);
	dup2(fd, 2);
	close(fd);
	char *a1[] = {"import", "--from", "llmservingsim", src, "-o", out};
	int rc1 = lsim_cli_profile_import(6, a1);
	char *a2[] = {"import", "--from", "nowhere", src, "-o", out};
	int rc2 = lsim_cli_profile_import(6, a2);
	char *a3[] = {"import", "--from", "vidur", src};
	int rc3 = lsim_cli_profile_import(4, a3);
	char *a4[] = {"compare", "--profile", out};
	int rc4 = lsim_cli_profile_compare(3, a4);
	char *a5[] = {"compare", "--profile", out, "--gpu", "H100-SXM", "--model", "Llama-3-8B",
		      "--tp", "0"};
	int rc5 = lsim_cli_profile_compare(9, a5);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	assert_int_equal(rc1, 2);
	assert_int_equal(rc2, 2);
	assert_int_equal(rc3, 2);
	assert_int_equal(rc4, 2);
	assert_int_equal(rc5, 2);
	char *text = slurp(err_path);
	assert_non_null(text);
	char want[4096];
	snprintf(want, sizeof want, "llmsim: %s:2:10: tp_size: 'x' is not a number\n", src);
	assert_true(strncmp(text, want, strlen(want)) == 0);
	assert_non_null(strstr(text, "--from: unknown source 'nowhere'"));
	free(text);

	char *h1[] = {"import", "--help"}, *h2[] = {"compare", "--help"};
	assert_int_equal(lsim_cli_profile_import(2, h1), 0);
	assert_int_equal(lsim_cli_profile_compare(2, h2), 0);
	int from = -1;
	assert_int_equal(lsim_import_from_parse("splitwise", &from), 0);
	assert_int_equal(from, LSIM_IMPORT_SPLITWISE);
	assert_int_equal(lsim_import_from_parse("Vidur", &from), LSIM_EINVAL);
}

/* ------------------------------------------------------------------ */
/* compare on a tiny table with hand-computed roofline numbers         */
/* ------------------------------------------------------------------ */

/*
 * Tiny-GPU: 1e11 FLOP/s, 1e9 B/s, mfu_max = mbu = 1, no half point, no
 * launch cost: every operator costs max(FLOPs / 1e11, bytes / 1e9) s.
 * Tiny model: 4 layers, hidden 64, one head of 64 (one KV head), plain MLP
 * of 128, vocabulary 256, 2 bytes per value.
 */
static const char tiny_gpu[] =
	"name: Tiny-GPU\nprovenance: estimate\nsource: \"test\"\nbf16_tflops: 0.1\nhbm: 1GB\n"
	"hbm_bw: 1GB/s\npcie_bw: 1GB/s\nnvlink_bw: 0GB/s\ntdp: 100W\nidle_power: 10W\n"
	"price: $1/h\nmfu_max: 1\nmfu_half_tokens: 0\nmbu: 1\nlaunch_latency: 0us\n";

static const char tiny_models[] =
	"models:\n"
	"  - name: Tiny\n    source: test\n    layers: 4\n    hidden: 64\n    heads: 1\n"
	"    kv_heads: 1\n    head_dim: 64\n    intermediate: 128\n    vocab: 256\n"
	"    gated_mlp: false\n    params: 1e6\n    bytes_per_param: 2\n    max_context: 4096\n";

static void test_compare_tiny(void **state)
{
	const char *dir = *state;
	char data[2048], prof[2048];
	snprintf(data, sizeof data, "%s/data", dir);
	snprintf(prof, sizeof prof, "%s/prof", dir);
	mkdir(data, 0777);
	mkdir(prof, 0777);
	write_text(data, "profiles/Tiny-GPU.yaml", tiny_gpu);
	write_text(data, "models.yaml", tiny_models);
	/* measured: 40 us of dense ops per layer, 1 us embedding, 20 us LM head */
	write_text(prof, "tp1/dense.csv",
		   "layer,tokens,time_us\nlayernorm,1,5\nlayernorm,100,5\nqkv_proj,1,30\n"
		   "qkv_proj,100,30\nembedding,1,1\nembedding,100,1\n");
	write_text(prof, "tp1/per_sequence.csv", "layer,sequences,time_us\nlm_head,1,20\n");
	write_text(prof, "tp1/attention.csv",
		   "prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n"
		   "0,0,1,128,40\n0,0,1,512,40\n0,0,4,128,50\n0,0,4,512,80\n"
		   "16,0,0,0,60\n64,0,0,0,60\n");
	struct lsim_compare_opts o = {.perf_dir = prof, .gpu = "Tiny-GPU", .model = "Tiny",
				      .data_dir = data};
	struct lsim_compare_result r;
	struct lsim_diag d = {0};
	int rc = lsim_profile_compare(&o, &r, &d);
	if (rc)
		fail_msg("%s:%d: %s: %s", d.file, d.line, d.key, d.msg);
	assert_int_equal(r.tp, 1);
	assert_int_equal(r.n_layers, 4);
	assert_string_equal(r.layout, "layers");
	/* prefill 1..64 tokens (the chunk grid ends at 64), decodes of 1 and 4
	 * at contexts 128 and 512 */
	assert_int_equal(r.n, 7 + 4);
	const struct lsim_compare_point *p16 = &r.pts[4], *d1 = &r.pts[7], *d4 = &r.pts[10];
	assert_false(p16->decode);
	assert_int_equal(p16->tokens, 16);
	assert_true(d1->decode);
	assert_int_equal(d1->batch, 1);
	assert_int_equal(d1->context, 128);
	assert_int_equal(d4->batch, 4);
	assert_int_equal(d4->context, 512);
	/*
	 * Roofline, one decode at context c (T = S = 1), bytes per layer:
	 * 2 norms 2 x (2*64 + 64) * 2 = 768; QKV (64*192 + 256) * 2 = 25088;
	 * rotary 2*128*2 = 512; attention (2*64*(c+1+1) + 2*64) * 2 =
	 * 256 (c + 3); O (64*64 + 128) * 2 = 8448; up and down
	 * (64*128 + 192) * 2 = 16768 each; activation 2*128*2 = 512. Every
	 * operator is memory-bound: 68864 + 256 (c + 3) ns at 1 GB/s, 102400 ns
	 * at c = 128. Once: embedding 256 + final norm 384 + LM head
	 * (64*256 + 320) * 2 = 33408 -> 34048 ns. Iteration: 4 layers + once.
	 */
	assert_near(d1->roof_layer_s, 102400e-9, 1e-12);
	assert_near(d1->roof_iter_s, 4 * 102400e-9 + 34048e-9, 1e-12);
	/* measured: 2 x 5 + 30 + attention 40 us; once 1 + 20 us */
	assert_near(d1->meas_layer_s, 80e-6, 1e-12);
	assert_near(d1->meas_iter_s, 21e-6 + 4 * 80e-6, 1e-12);
	assert_near(lsim_compare_err(d1->meas_layer_s, d1->roof_layer_s), 0.28, 1e-9);
	assert_near(lsim_compare_err(d1->meas_iter_s, d1->roof_iter_s),
			    443.648 / 341.0 - 1.0, 1e-9);
	/*
	 * Four decodes at 512 (T = S = 4): norms 2 x (8*64 + 64) * 2 = 2304;
	 * QKV (12288 + 4*256) * 2 = 26624; rotary 4*256*2 = 2048; attention
	 * (2*64*(4*513 + 4) + 2*4*64) * 2 = 527360; O (4096 + 4*128) * 2 =
	 * 9216; up, down (8192 + 4*192) * 2 = 17920 each; activation 4*256*2 =
	 * 2048: 605440 ns. Once: embedding 1024 + norm (512 + 64) * 2 = 1152 +
	 * LM head (16384 + 4*320) * 2 = 35328 -> 37504 ns. Measured: 40 + 80 = 120 us
	 * per layer, 21 us once (one LM head sample, clamped).
	 */
	assert_near(d4->roof_layer_s, 605440e-9, 1e-12);
	assert_near(d4->roof_iter_s, 4 * 605440e-9 + 37504e-9, 1e-12);
	assert_near(d4->meas_layer_s, 120e-6, 1e-12);
	assert_near(d4->meas_iter_s, 21e-6 + 4 * 120e-6, 1e-12);
	/*
	 * Prefill of 16 tokens: norms 2 x (2048 + 64) * 2 = 8448; QKV
	 * (12288 + 16*256) * 2 = 32768; rotary 16*256*2 = 8192; attention
	 * (2*64*32 + 2*16*64) * 2 = 12288 (136 pairs: 34816 FLOP, 0.35 us of
	 * compute); O (4096 + 16*128) * 2 = 12288; up, down (8192 + 16*192) * 2
	 * = 22528 each; activation 8192: 127232 ns. Once: embedding 4096 +
	 * norm 4224 + LM head 33408 = 41728 ns. Measured 40 + 60 us per layer.
	 */
	assert_near(p16->roof_layer_s, 127232e-9, 1e-12);
	assert_near(p16->roof_iter_s, 4 * 127232e-9 + 41728e-9, 1e-12);
	assert_near(p16->meas_layer_s, 100e-6, 1e-12);
	assert_near(p16->meas_iter_s, 21e-6 + 4 * 100e-6, 1e-12);

	struct lsim_buf b = {0};
	lsim_compare_format(&r, false, &b);
	assert_non_null(strstr(b.data, "decode      1      1     128       80.000      102.400     +28.0"));
	lsim_buf_release(&b);
	lsim_compare_format(&r, true, &b);
	assert_non_null(strstr(b.data, "\"phase\": \"decode\", \"batch\": 1, \"tokens\": 1, "
				       "\"context\": 128, \"measured_layer_s\": 8e-05, "
				       "\"roofline_layer_s\": 0.0001024, \"layer_error\": 0.28,"));
	lsim_buf_release(&b);
	lsim_compare_result_release(&r);

	/* a table without attention cannot be compared */
	char att[4096];
	snprintf(att, sizeof att, "%s/tp1/attention.csv", prof);
	unlink(att);
	assert_int_equal(lsim_profile_compare(&o, &r, &d), LSIM_ENOENT);
	assert_string_equal(d.key, "--profile");
	assert_null(r.pts);
}

/* ------------------------------------------------------------------ */
/* The shipped measured tables (docs/validation.md, section 5)         */
/* ------------------------------------------------------------------ */

static const struct lsim_compare_point *find_point(const struct lsim_compare_result *r,
						   bool decode, int batch, int tokens, int context)
{
	for (size_t i = 0; i < r->n; i++) {
		const struct lsim_compare_point *p = &r->pts[i];
		if (p->decode == decode && p->batch == batch && p->tokens == tokens &&
		    p->context == context)
			return p;
	}
	fail_msg("no point %s %d x %d at %d", decode ? "decode" : "prefill", batch, tokens,
		 context);
	return NULL;
}

static void shipped(const char *rel, const char *gpu, const char *model, int tp,
		    struct lsim_compare_result *r)
{
	char dir[1024];
	snprintf(dir, sizeof dir, "%s/calibrate/perf/%s", source_root(), rel);
	struct lsim_compare_opts o = {.perf_dir = dir, .gpu = gpu, .model = model, .tp = tp};
	struct lsim_diag d = {0};
	int rc = lsim_profile_compare(&o, r, &d);
	if (rc)
		fail_msg("%s:%d: %s: %s", d.file, d.line, d.key, d.msg);
}

/* Errors as docs/validation.md reports them, to 0.05 percentage points. */
#define ERR_TOL 0.0005

static void assert_err(const struct lsim_compare_point *p, double layer, double iter)
{
	if (!isnan(layer))
		assert_near(lsim_compare_err(p->meas_layer_s, p->roof_layer_s), layer,
				    ERR_TOL);
	assert_near(lsim_compare_err(p->meas_iter_s, p->roof_iter_s), iter, ERR_TOL);
}

static void test_shipped_drift(void **state)
{
	(void)state;
	struct lsim_compare_result r;
	/* LLMServingSim, RTX PRO 6000, Llama-3.1-8B, TP 1 */
	shipped("llmservingsim/RTXPRO6000/meta-llama/Llama-3.1-8B/bf16", "RTX-PRO-6000",
		"Llama-3.1-8B", 1, &r);
	assert_int_equal(r.n, 12 + 20);
	assert_err(find_point(&r, false, 1, 2048, 0), 0.0790, 0.0786);
	assert_err(find_point(&r, true, 64, 1, 2048), 0.0022, 0.0021);
	assert_err(find_point(&r, true, 256, 1, 8192), 0.0674, 0.0672);
	lsim_compare_result_release(&r);
	/* Vidur, A100, Llama-2-70B, TP 2, with its measured all-reduce */
	shipped("vidur/a100/meta-llama/Llama-2-70b-hf", "A100-80GB-SXM", "Llama-2-70B", 0, &r);
	assert_true(r.tp_comm);
	assert_int_equal(r.tp, 2);
	assert_err(find_point(&r, false, 1, 1024, 0), -0.1800, -0.1797);
	assert_err(find_point(&r, true, 1, 1, 512), -0.1403, -0.1372);
	assert_err(find_point(&r, true, 64, 1, 2048), -0.1867, -0.1844);
	lsim_compare_result_release(&r);
	/* Splitwise, H100, Llama-2-70B, TP 8 (per iteration only) */
	shipped("splitwise/h100-80gb/llama2-70b", "H100-SXM", "Llama-2-70B", 8, &r);
	assert_string_equal(r.layout, "iteration");
	assert_err(find_point(&r, false, 1, 512, 0), NAN, -0.3896);
	assert_err(find_point(&r, true, 1, 1, 575), NAN, -0.5444);
	assert_true(isnan(r.mean_abs_layer[0]));
	lsim_compare_result_release(&r);
}

/* ------------------------------------------------------------------ */
/* Shipped hardware profiles                                           */
/* ------------------------------------------------------------------ */

static void test_profiles_load(void **state)
{
	(void)state;
	static const char *const names[] = {
		"P100-PCIe", "V100-SXM2", "T4", "A10G", "L4", "L40S", "A100-40GB-SXM",
		"A100-80GB-SXM", "A100-80GB-PCIe", "H100-PCIe", "H100-SXM", "H200-SXM", "B200-SXM", "MI300X",
		"RTX-4090", "RTX-PRO-6000",
	};
	char dir[1024];
	snprintf(dir, sizeof dir, "%s/calibrate/profiles", source_root());
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		struct lsim_gpu_profile g;
		struct lsim_diag d = {0};
		int rc = lsim_gpu_profile_load(dir, names[i], &g, &d);
		if (rc)
			fail_msg("%s:%d: %s: %s", d.file, d.line, d.key, d.msg);
		assert_string_equal(g.name, names[i]);
		assert_string_equal(g.provenance, "mixed");
		assert_true(g.bf16_flops > 1e13 && g.hbm_bytes >= 16e9 && g.hbm_bw >= 3e11);
		assert_true(g.idle_w < g.tdp_w && g.price_per_hour > 0.0);
		assert_true(g.mfu_max > 0.0 && g.mfu_max <= 1.0 && g.mbu > 0.0 && g.mbu <= 1.0);
	}
	/* the P100 of the PCIe study: 16 GB HBM2 (16 GiB: profiles give the
	 * memory CUDA shows in exact bytes, docs/memory.md), PCIe Gen3 x16 */
	struct lsim_gpu_profile g;
	struct lsim_diag d = {0};
	assert_int_equal(lsim_gpu_profile_load(dir, "P100-PCIe", &g, &d), 0);
	assert_near(g.hbm_bytes, 16.0 * 1073741824.0, 1.0);
	assert_near(g.pcie_bw, 15.75e9, 1.0);
	assert_near(g.nvlink_bw, 0.0, 0.0);
	/* a few of the new ones, against their datasheets */
	assert_int_equal(lsim_gpu_profile_load(dir, "B200-SXM", &g, &d), 0);
	assert_near(g.bf16_flops, 2250e12, 1.0);
	assert_near(g.hbm_bw, 8000e9, 1.0);
	assert_int_equal(lsim_gpu_profile_load(dir, "MI300X", &g, &d), 0);
	assert_near(g.hbm_bytes, 192.0 * 1073741824.0, 1.0); /* 8 stacks of 24 GiB */
	assert_near(g.launch_s, 6e-6, 1e-12);
	assert_int_equal(lsim_gpu_profile_load(dir, "T4", &g, &d), 0);
	assert_near(g.tdp_w, 70.0, 0.0);
	assert_near(g.pcie_bw, 15.75e9, 1.0);
	/* BERT-base is in the catalogue */
	char cat[1024];
	snprintf(cat, sizeof cat, "%s/calibrate/models.yaml", source_root());
	struct lsim_model_arch m;
	assert_int_equal(lsim_model_load(cat, "BERT-base", &m, &d), 0);
	assert_int_equal(m.n_layers, 12);
	assert_int_equal(m.hidden, 768);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_vidur_import, tmp_setup, tmp_teardown),
		cmocka_unit_test_setup_teardown(test_vidur_tp_and_shape, tmp_setup, tmp_teardown),
		cmocka_unit_test_setup_teardown(test_splitwise_import, tmp_setup, tmp_teardown),
		cmocka_unit_test_setup_teardown(test_llmservingsim_v0_import, tmp_setup,
						tmp_teardown),
		cmocka_unit_test_setup_teardown(test_llmservingsim_copy, tmp_setup, tmp_teardown),
		cmocka_unit_test_setup_teardown(test_bad_sources, tmp_setup, tmp_teardown),
		cmocka_unit_test_setup_teardown(test_cli, tmp_setup, tmp_teardown),
		cmocka_unit_test_setup_teardown(test_compare_tiny, tmp_setup, tmp_teardown),
		cmocka_unit_test(test_shipped_drift),
		cmocka_unit_test(test_profiles_load),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
