/*
 * test_kproto.c - the kproto task profiler (sim/learn/kproto.c, the `kproto`
 * profiler policy, `llmsim profile train|eval`). Clustering: two obvious
 * mixed-attribute clusters with their hand-computed cost, mu deciding
 * between the numeric and the categorical split, restarts never raising
 * the cost and escaping local minima, determinism by seed, and real data
 * with known answers (the paper's 182 questions by category; the Azure
 * 2023 slice by trace kind). Regressors: linear least squares exact on
 * piecewise-linear data, the mean for clusters too small to fit, XGBoost
 * gb and rf on a step (skipped without XGBoost, which is then checked to
 * refuse clearly). Model files: exact round trip, byte-identical re-save,
 * and corrupted files rejected naming file, line and keyword. Evaluation:
 * 70/30 counts and zero error on exact data. The policy: feature mapping
 * (prompt, QoS class label, hour of day) and its errors. The CLI. And the
 * behaviour claim: on the Azure 2023 conversation trace, sjf with kproto
 * predictions closes at least half of the mean E2E gap between fcfs and
 * sjf with the oracle.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "learn/kproto.h"
#include "run/policy_core.h"
#include "cli/profile_learn.h"
#include "registry.h"
#include "run/scenario.h"

#define EPS 1e-12

/* An absolute path (scenario files resolve theirs from their own folder). */
static void src_path(char *buf, size_t size, const char *rel)
{
	const char *root = getenv("LSIM_SOURCE_ROOT");
	char cwd[256] = ".";
	if (!root && getcwd(cwd, sizeof cwd))
		root = cwd;
	snprintf(buf, size, "%s/%s", root ? root : ".", rel);
}

/* A fresh temporary file name (the file exists, empty); the caller unlinks. */
static void tmp_name(char *path, size_t size, const char *tag)
{
	const char *base = getenv("LSIM_BUILD_ROOT");
	snprintf(path, size, "%s/test_kproto_%s_XXXXXX", base ? base : "/tmp", tag);
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
	assert_int_equal(fclose(f), 0);
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	assert_non_null(s);
	assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
	s[n] = '\0';
	fclose(f);
	return s;
}

/* A table from arrays: numeric columns x0.., categorical c0.., targets y0.. */
static void table(struct lsim_kp_data *x, size_t n, size_t nn, size_t nc,
		  size_t nt, const double *num, const char *const *cat,
		  const double *tgt)
{
	const char *nnames[] = {"x0", "x1", "x2"}, *cnames[] = {"c0", "c1"},
		   *tnames[] = {"y0", "y1"};
	assert_int_equal(lsim_kp_data_init(x, nnames, nn, cnames, nc, tnames, nt), 0);
	for (size_t r = 0; r < n; r++)
		assert_int_equal(lsim_kp_data_add(x, num + r * nn, cat ? cat + r * nc : NULL,
						  tgt ? tgt + r * nt : NULL),
				 0);
}

/* Raw (unstandardised) numeric coordinate i of prototype j. */
static double proto_raw(const struct lsim_kp_clusters *c, size_t j, size_t i)
{
	return c->center[i] + c->scale[i] * c->proto_num[j * c->n_num + i];
}

/* ---- clustering ---- */

static void test_two_obvious_clusters(void **state)
{
	(void)state;
	const double num[] = {1.0, 10.0, 1.2, 10.3, 0.9, 9.8, 1.1, 10.1};
	const char *cat[] = {"a", "b", "a", "b", "a", "b", "a", "b"};
	struct lsim_kp_data x;
	table(&x, 8, 1, 1, 0, num, cat, NULL);
	struct lsim_kp_opts o = {.k = 2, .mu = -1, .restarts = 5, .seed = 7};
	struct lsim_kp_clusters c;
	int32_t assign[8];
	assert_int_equal(lsim_kp_cluster(&x, &o, &c, assign, NULL), 0);
	for (int r = 2; r < 8; r++)
		assert_int_equal(assign[r], assign[r % 2]);
	assert_int_not_equal(assign[0], assign[1]);
	size_t a = (size_t)assign[0], b = (size_t)assign[1];
	assert_true(fabs(proto_raw(&c, a, 0) - 1.05) < 1e-12);
	assert_true(fabs(proto_raw(&c, b, 0) - 10.05) < 1e-12);
	assert_int_equal(c.proto_cat[a], lsim_kp_level(&x, 0, "a"));
	assert_int_equal(c.proto_cat[b], lsim_kp_level(&x, 0, "b"));
	/* standardised by the sample sd: total SS 162.18 over 7; within-cluster
	 * SS 0.05 + 0.13; no categorical mismatch; mu = 0.5 (one numeric) */
	assert_true(fabs(c.mu - 0.5) < EPS);
	assert_true(fabs(c.center[0] - 5.55) < 1e-12);
	assert_true(fabs(c.scale[0] - sqrt(162.18 / 7)) < 1e-12);
	assert_true(fabs(c.cost - 0.18 / (162.18 / 7)) < 1e-12);
	/* a new row goes to its cluster; an unknown label still follows x */
	const double q1 = 1.3, q2 = 9.0;
	const int32_t la = 0, unknown = -1;
	assert_int_equal(lsim_kp_nearest(&c, &q1, &la, NULL), a);
	assert_int_equal(lsim_kp_nearest(&c, &q2, &unknown, NULL), b);
	lsim_kp_clusters_release(&c);
	lsim_kp_data_release(&x);
}

static void test_mu_decides(void **state)
{
	(void)state;
	const double num[] = {0, 1, 2, 3};
	const char *cat[] = {"a", "b", "a", "b"};
	struct lsim_kp_data x;
	table(&x, 4, 1, 1, 0, num, cat, NULL);
	struct lsim_kp_clusters c;
	int32_t as[4];
	/* mu 0: the numeric split {0,1} {2,3}; SS 1 over var 5/3 */
	struct lsim_kp_opts o = {.k = 2, .mu = 0, .restarts = 10, .seed = 1};
	assert_int_equal(lsim_kp_cluster(&x, &o, &c, as, NULL), 0);
	assert_int_equal(as[0], as[1]);
	assert_int_equal(as[2], as[3]);
	assert_int_not_equal(as[0], as[2]);
	assert_true(fabs(c.cost - 0.6) < 1e-12);
	lsim_kp_clusters_release(&c);
	/* mu 100: the categorical split {0,2} {1,3}; SS 4 over 5/3 */
	o.mu = 100;
	assert_int_equal(lsim_kp_cluster(&x, &o, &c, as, NULL), 0);
	assert_int_equal(as[0], as[2]);
	assert_int_equal(as[1], as[3]);
	assert_int_not_equal(as[0], as[1]);
	assert_true(fabs(c.cost - 2.4) < 1e-12);
	lsim_kp_clusters_release(&c);
	/* bad arguments */
	struct lsim_diag d = {0};
	o.k = 5;
	assert_int_equal(lsim_kp_cluster(&x, &o, &c, NULL, &d), LSIM_ERANGE);
	assert_string_equal(d.key, "k");
	o.k = 2;
	o.restarts = 0;
	assert_int_equal(lsim_kp_cluster(&x, &o, &c, NULL, &d), LSIM_ERANGE);
	assert_string_equal(d.key, "restarts");
	lsim_kp_data_release(&x);
}

static void test_restarts_and_seed(void **state)
{
	(void)state;
	/* three tight groups; k = 3 from a bad start ends in a local minimum */
	const double num[] = {0, 5, 10, 0.1, 5.1, 10.1, 0.2, 5.2, 10.2};
	struct lsim_kp_data x;
	table(&x, 9, 1, 0, 0, num, NULL, NULL);
	const double best = 0.06 / (150.06 / 8); /* within SS / sample var */
	int stuck = 0;
	for (uint64_t seed = 1; seed <= 30; seed++) {
		double prev = INFINITY;
		for (int r = 1; r <= 30; r++) {
			struct lsim_kp_opts o = {.k = 3, .mu = -1, .restarts = r, .seed = seed};
			struct lsim_kp_clusters c;
			assert_int_equal(lsim_kp_cluster(&x, &o, &c, NULL, NULL), 0);
			assert_true(c.cost <= prev);
			if (r == 1 && c.cost > best * (1 + 1e-9))
				stuck++;
			prev = c.cost;
			lsim_kp_clusters_release(&c);
		}
		assert_true(fabs(prev - best) < 1e-12);
	}
	printf("  one restart ended in a local minimum for %d of 30 seeds; 30 restarts never\n",
	       stuck);
	assert_true(stuck > 0);
	/* the same seed gives the same clustering, bit for bit */
	struct lsim_kp_opts o = {.k = 3, .mu = -1, .restarts = 2, .seed = 11};
	struct lsim_kp_clusters c1, c2;
	int32_t a1[9], a2[9];
	assert_int_equal(lsim_kp_cluster(&x, &o, &c1, a1, NULL), 0);
	assert_int_equal(lsim_kp_cluster(&x, &o, &c2, a2, NULL), 0);
	assert_memory_equal(a1, a2, sizeof a1);
	assert_memory_equal(&c1.cost, &c2.cost, sizeof c1.cost);
	assert_memory_equal(c1.proto_num, c2.proto_num, 3 * sizeof *c1.proto_num);
	lsim_kp_clusters_release(&c1);
	lsim_kp_clusters_release(&c2);
	lsim_kp_data_release(&x);
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return x < y ? -1 : x > y;
}

/* The paper's 182 questions: k-modes on the category finds the 7
 * categories exactly (README counts). */
static void test_questions_by_category(void **state)
{
	(void)state;
	char path[512];
	src_path(path, sizeof path, "tests/data/kproto/questions_meta.csv");
	const char *cat[] = {"category", "language"}, *num[] = {"n_chars"};
	struct lsim_kp_data x;
	struct lsim_diag d = {0};
	assert_int_equal(lsim_kp_data_read_csv(path, num, 1, cat, 2, NULL, 0, &x, &d), 0);
	assert_int_equal(x.n, 182);
	assert_int_equal(x.n_levels[0], 7);
	assert_int_equal(x.n_levels[1], 3);
	/* category alone (a table without the other columns) */
	struct lsim_kp_data y;
	const char *only[] = {"category"};
	assert_int_equal(lsim_kp_data_init(&y, NULL, 0, only, 1, NULL, 0), 0);
	for (size_t r = 0; r < x.n; r++) {
		const char *lab = x.levels[0][x.cat[r * 2]];
		assert_int_equal(lsim_kp_data_add(&y, NULL, &lab, NULL), 0);
	}
	struct lsim_kp_opts o = {.k = 7, .mu = -1, .restarts = 40, .seed = 1};
	struct lsim_kp_clusters c;
	int32_t *as = malloc(182 * sizeof *as);
	assert_int_equal(lsim_kp_cluster(&y, &o, &c, as, NULL), 0);
	assert_true(c.cost == 0);
	size_t sizes[7] = {0};
	for (size_t r = 0; r < 182; r++) {
		sizes[as[r]]++;
		assert_int_equal(y.cat[r], c.proto_cat[as[r]]);
	}
	qsort(sizes, 7, sizeof sizes[0], cmp_size);
	const size_t want[7] = {14, 18, 20, 22, 26, 38, 44};
	assert_memory_equal(sizes, want, sizeof want);
	/* all three attributes: a valid clustering with every cluster used */
	o.restarts = 5;
	lsim_kp_clusters_release(&c);
	assert_int_equal(lsim_kp_cluster(&x, &o, &c, as, NULL), 0);
	memset(sizes, 0, sizeof sizes);
	for (size_t r = 0; r < 182; r++)
		sizes[as[r]]++;
	for (int j = 0; j < 7; j++)
		assert_true(sizes[j] > 0);
	free(as);
	lsim_kp_clusters_release(&c);
	lsim_kp_data_release(&x);
	lsim_kp_data_release(&y);
}

/* The Azure 2023 slice: with a heavy categorical weight, k = 2 separates
 * the two services exactly. */
static void test_azure_by_kind(void **state)
{
	(void)state;
	char path[512];
	src_path(path, sizeof path, "tests/data/kproto/azure2023_code_conv_800.csv");
	const char *num[] = {"ContextTokens", "hour"}, *cat[] = {"kind"},
		   *tgt[] = {"GeneratedTokens"};
	struct lsim_kp_data x;
	assert_int_equal(lsim_kp_data_read_csv(path, num, 2, cat, 1, tgt, 1, &x, NULL), 0);
	assert_int_equal(x.n, 800);
	struct lsim_kp_opts o = {.k = 2, .mu = 1000, .restarts = 5, .seed = 3};
	struct lsim_kp_clusters c;
	int32_t *as = malloc(800 * sizeof *as);
	assert_int_equal(lsim_kp_cluster(&x, &o, &c, as, NULL), 0);
	size_t n0 = 0;
	for (size_t r = 0; r < 800; r++) {
		assert_int_equal(x.cat[r], c.proto_cat[as[r]]);
		n0 += as[r] == 0;
	}
	assert_int_equal(n0, 400);
	/* the constant hour column is standardised with scale 1 */
	assert_true(c.center[1] == 18 && c.scale[1] == 1);
	free(as);
	lsim_kp_clusters_release(&c);
	lsim_kp_data_release(&x);
}

static void test_csv_errors(void **state)
{
	(void)state;
	char path[512];
	tmp_name(path, sizeof path, "csv");
	write_text(path, "x,c,y\n1,a,2\n2,b,oops\n");
	const char *num[] = {"x"}, *cat[] = {"c"}, *tgt[] = {"y"}, *missing[] = {"z"};
	struct lsim_kp_data x;
	struct lsim_diag d = {0};
	assert_int_equal(lsim_kp_data_read_csv(path, num, 1, cat, 1, tgt, 1, &x, &d),
			 LSIM_EFORMAT);
	assert_string_equal(d.file, path);
	assert_int_equal(d.line, 3);
	assert_int_equal(d.col, 5);
	assert_string_equal(d.key, "y");
	memset(&d, 0, sizeof d);
	assert_int_equal(lsim_kp_data_read_csv(path, missing, 1, NULL, 0, NULL, 0, &x, &d),
			 LSIM_EFORMAT);
	assert_int_equal(d.line, 1);
	assert_string_equal(d.key, "z");
	write_text(path, "x,c,y\n");
	assert_int_equal(lsim_kp_data_read_csv(path, num, 1, cat, 1, tgt, 1, &x, &d),
			 LSIM_EFORMAT);
	assert_non_null(strstr(d.msg, "no data rows"));
	unlink(path);
}

/* ---- regressors ---- */

static double law_a(double x1, double x2) { return 1 + 2 * x1 - 3 * x2; }
static double law_b(double x1, double x2) { return 50 - x1 + 0.5 * x2; }

/* Two clusters with their own linear laws, plus an isolated pair of rows
 * too small for three coefficients. */
static void make_linear(struct lsim_kp_data *x)
{
	double num[26 * 2], tgt[26];
	const char *cat[26];
	for (int i = 0; i < 12; i++) {
		double x1 = i * 0.4, x2 = (i * 7) % 5 * 0.1;
		num[2 * i] = x1;
		num[2 * i + 1] = x2;
		tgt[i] = law_a(x1, x2);
		cat[i] = "a";
		double y1 = 100 + i * 0.5, y2 = ((i * 3) % 4 + 0.25 * i) * 0.1;
		num[2 * (12 + i)] = y1;
		num[2 * (12 + i) + 1] = y2;
		tgt[12 + i] = law_b(y1, y2);
		cat[12 + i] = "b";
	}
	num[48] = 200;
	num[49] = 0.5;
	tgt[24] = 7;
	num[50] = 201;
	num[51] = 0.7;
	tgt[25] = 9;
	cat[24] = cat[25] = "big one";
	table(x, 26, 2, 1, 1, num, cat, tgt);
}

static void test_linear_exact(void **state)
{
	(void)state;
	struct lsim_kp_data x;
	make_linear(&x);
	struct lsim_kp_opts o = {.k = 3, .mu = -1, .restarts = 10, .seed = 1};
	struct lsim_kproto_model *m = NULL;
	assert_int_equal(lsim_kproto_train(&x, &o, LSIM_KP_LINEAR, &m, NULL), 0);
	int32_t ca = lsim_kproto_level(m, 0, "a"), cb = lsim_kproto_level(m, 0, "b"),
		cbig = lsim_kproto_level(m, 0, "big one");
	const double qa[][2] = {{0.3, 0.15}, {4.1, 0.02}, {2.2, 0.33}};
	const double qb[][2] = {{101.7, 0.25}, {104.9, 0.01}};
	double out;
	size_t c_a = 0, c_b = 0;
	for (int i = 0; i < 3; i++) {
		c_a = lsim_kproto_predict(m, qa[i], &ca, &out);
		assert_true(fabs(out - law_a(qa[i][0], qa[i][1])) < 1e-9);
	}
	for (int i = 0; i < 2; i++) {
		c_b = lsim_kproto_predict(m, qb[i], &cb, &out);
		assert_true(fabs(out - law_b(qb[i][0], qb[i][1])) < 1e-9);
	}
	assert_int_not_equal(c_a, c_b);
	assert_int_equal(m->reg[c_a].kind, LSIM_KP_LINEAR);
	assert_int_equal(m->reg[c_b].kind, LSIM_KP_LINEAR);
	/* two rows, two varying features: fewer rows than coefficients */
	const double qbig[2] = {200.5, 0.6};
	size_t c_big = lsim_kproto_predict(m, qbig, &cbig, &out);
	assert_int_equal(m->reg[c_big].kind, LSIM_KP_CONST);
	assert_true(fabs(out - 8) < EPS);
	assert_int_equal(m->sizes[c_big], 2);
	lsim_kproto_destroy(m);
	lsim_kp_data_release(&x);
}

/* Every level of a categorical in one cluster: its indicators add up to
 * the intercept. The fit stays exact and bounded; an unknown label takes
 * the cluster's mode. */
static void test_linear_collinear(void **state)
{
	(void)state;
	double num[10], tgt[10];
	const char *cat[10];
	for (int i = 0; i < 10; i++) {
		num[i] = i;
		cat[i] = i % 3 ? "a" : "b"; /* a: the mode */
		tgt[i] = 2 * i + (i % 3 ? 0 : 10);
	}
	struct lsim_kp_data x;
	table(&x, 10, 1, 1, 1, num, cat, tgt);
	struct lsim_kp_opts o = {.k = 1, .mu = -1, .restarts = 1, .seed = 1};
	struct lsim_kproto_model *m = NULL;
	assert_int_equal(lsim_kproto_train(&x, &o, LSIM_KP_LINEAR, &m, NULL), 0);
	assert_int_equal(m->reg[0].kind, LSIM_KP_LINEAR);
	for (size_t j = 0; j <= m->n_feat; j++)
		assert_true(fabs(m->reg[0].coef[j]) < 1e3);
	const double q = 4.5;
	const int32_t la = lsim_kproto_level(m, 0, "a"),
		      lb = lsim_kproto_level(m, 0, "b"), unknown = -1;
	assert_int_equal(m->cl.proto_cat[0], la);
	double out;
	lsim_kproto_predict(m, &q, &la, &out);
	assert_true(fabs(out - 9) < 1e-9);
	lsim_kproto_predict(m, &q, &lb, &out);
	assert_true(fabs(out - 19) < 1e-9);
	lsim_kproto_predict(m, &q, &unknown, &out);
	assert_true(fabs(out - 9) < 1e-9);
	lsim_kproto_destroy(m);
	lsim_kp_data_release(&x);
	/* real data where a cluster holds both services: a plain SVD fit gave
	 * coefficients of 5e15 that cancel (and 5e15 for an unknown label) */
	char path[512];
	src_path(path, sizeof path, "tests/data/kproto/azure2023_code_conv_800.csv");
	const char *nn[] = {"ContextTokens"}, *cn[] = {"kind"}, *tn[] = {"GeneratedTokens"};
	assert_int_equal(lsim_kp_data_read_csv(path, nn, 1, cn, 1, tn, 1, &x, NULL), 0);
	o.k = 4;
	o.restarts = 10;
	assert_int_equal(lsim_kproto_train(&x, &o, LSIM_KP_LINEAR, &m, NULL), 0);
	for (size_t c = 0; c < 4; c++)
		for (size_t j = 0; m->reg[c].coef && j <= m->n_feat; j++)
			assert_true(fabs(m->reg[c].coef[j]) < 1e4);
	const double p1000 = 1000;
	lsim_kproto_predict(m, &p1000, &unknown, &out);
	assert_true(out > 0 && out < 1000);
	lsim_kproto_destroy(m);
	lsim_kp_data_release(&x);
}

static void test_xgboost(void **state)
{
	(void)state;
	double num[100], tgt[100];
	const char *cat[100];
	for (int i = 0; i < 100; i++) {
		num[i] = i;
		tgt[i] = i < 50 ? 10 : 50;
		cat[i] = i % 3 ? "p" : "q";
	}
	struct lsim_kp_data x;
	table(&x, 100, 1, 1, 1, num, cat, tgt);
	struct lsim_kp_opts o = {.k = 1, .mu = -1, .restarts = 1, .seed = 5};
	struct lsim_kproto_model *m = NULL;
	struct lsim_diag d = {0};
	if (!lsim_kp_have_xgboost()) {
		/* refused clearly: training, and loading a file with a booster */
		assert_int_equal(lsim_kproto_train(&x, &o, LSIM_KP_GB, &m, &d), LSIM_ENOENT);
		assert_non_null(strstr(d.msg, "XGBoost"));
		char path[512];
		tmp_name(path, sizeof path, "noxgb");
		write_text(path, "llmsim-kproto-model\nversion 1\nkind gb\nseed 1\nrows 2\n"
				 "clusters 1 mu 1 cost 0 restart 0 iterations 1\nnumeric 1\n"
				 "num 1:x 0 1\ncategorical 0\ntargets 1\ntgt 1:y\nproto 0 2 0\n"
				 "reg 0 0 gb 5 3\nAAAA\nend\n");
		assert_int_equal(lsim_kproto_load(path, &m, &d), LSIM_ENOENT);
		assert_int_equal(d.line, 13);
		assert_non_null(strstr(d.msg, "built without"));
		unlink(path);
		lsim_kp_data_release(&x);
		skip();
	}
	const enum lsim_kp_kind kinds[] = {LSIM_KP_GB, LSIM_KP_RF};
	/* rf draws 2 of the 3 features per split (colsample_bynode 0.8): a
	 * node offered only the useless indicators stays a mixed leaf */
	const double tol[] = {0.5, 3.0};
	for (int k = 0; k < 2; k++) {
		assert_int_equal(lsim_kproto_train(&x, &o, kinds[k], &m, &d), 0);
		assert_int_equal(m->reg[0].kind, kinds[k]);
		const double q[] = {20, 80, 45, 55};
		const double want[] = {10, 50, 10, 50};
		const int32_t cp = lsim_kproto_level(m, 0, "p");
		double p[4];
		for (int i = 0; i < 4; i++) {
			lsim_kproto_predict(m, &q[i], &cp, &p[i]);
			assert_true(fabs(p[i] - want[i]) < tol[k]);
		}
		/* round trip: the booster survives base64 bit for bit */
		char path[512];
		tmp_name(path, sizeof path, "xgb");
		assert_int_equal(lsim_kproto_save(m, path, &d), 0);
		struct lsim_kproto_model *m2 = NULL;
		assert_int_equal(lsim_kproto_load(path, &m2, &d), 0);
		for (int i = 0; i < 4; i++) {
			double p2;
			lsim_kproto_predict(m2, &q[i], &cp, &p2);
			assert_memory_equal(&p2, &p[i], sizeof p2);
		}
		lsim_kproto_destroy(m2);
		/* a damaged booster names its line */
		char *text = read_text(path);
		char *b64 = strstr(text, "\nreg 0 0 ");
		assert_non_null(b64);
		b64 = strchr(b64 + 1, '\n') + 1;
		int line = 1;
		for (char *p3 = text; p3 < b64; p3++)
			line += *p3 == '\n';
		b64[3] = '*';
		write_text(path, text);
		assert_int_equal(lsim_kproto_load(path, &m2, &d), LSIM_EFORMAT);
		assert_int_equal(d.line, line);
		assert_int_equal(d.col, 4);
		assert_string_equal(d.key, "reg");
		/* and a file cut inside it */
		*b64 = '\0';
		write_text(path, text);
		assert_int_equal(lsim_kproto_load(path, &m2, &d), LSIM_EFORMAT);
		assert_int_equal(d.line, line);
		assert_non_null(strstr(d.msg, "ends inside a booster"));
		free(text);
		unlink(path);
		lsim_kproto_destroy(m);
		m = NULL;
	}
	lsim_kp_data_release(&x);
}

/* ---- model files ---- */

/* The 1-based line of the first line starting with prefix. */
static int line_of(const char *text, const char *prefix)
{
	int line = 1;
	size_t n = strlen(prefix);
	for (const char *p = text; *p; line++) {
		if (strncmp(p, prefix, n) == 0)
			return line;
		p = strchr(p, '\n');
		if (!p)
			break;
		p++;
	}
	fail_msg("no line starts with '%s'", prefix);
	return 0;
}

/* Writes text with the first occurrence of from replaced by to; loads it
 * and checks the error. */
static void expect_corrupt(const char *path, const char *good, const char *from,
			   const char *to, int line, const char *key,
			   const char *frag)
{
	const char *at = strstr(good, from);
	assert_non_null(at);
	size_t n = strlen(good) + strlen(to) + 1;
	char *bad = malloc(n);
	assert_non_null(bad);
	snprintf(bad, n, "%.*s%s%s", (int)(at - good), good, to, at + strlen(from));
	write_text(path, bad);
	free(bad);
	struct lsim_kproto_model *m = NULL;
	struct lsim_diag d = {0};
	int rc = lsim_kproto_load(path, &m, &d);
	if (rc != LSIM_EFORMAT)
		fail_msg("'%s' -> '%s': rc %d", from, to, rc);
	assert_null(m);
	assert_string_equal(d.file, path);
	if (d.line != line || strcmp(d.key, key) != 0 || !strstr(d.msg, frag))
		fail_msg("'%s' -> '%s': got %d %s '%s', want %d %s '%s'", from, to,
			 d.line, d.key, d.msg, line, key, frag);
}

static void test_model_file(void **state)
{
	(void)state;
	struct lsim_kp_data x;
	make_linear(&x);
	/* names with a space and UTF-8 survive */
	free(x.num_names[1]);
	x.num_names[1] = strdup("prompt tokens");
	free(x.levels[0][0]);
	x.levels[0][0] = strdup("中文 a");
	struct lsim_kp_opts o = {.k = 3, .mu = -1, .restarts = 3, .seed = 9};
	struct lsim_kproto_model *m = NULL, *m2 = NULL;
	assert_int_equal(lsim_kproto_train(&x, &o, LSIM_KP_LINEAR, &m, NULL), 0);
	char path[512], path2[512];
	tmp_name(path, sizeof path, "model");
	tmp_name(path2, sizeof path2, "model2");
	struct lsim_diag d = {0};
	assert_int_equal(lsim_kproto_save(m, path, &d), 0);
	assert_int_equal(lsim_kproto_load(path, &m2, &d), 0);
	assert_int_equal(m2->cl.k, 3);
	assert_int_equal(m2->kind, LSIM_KP_LINEAR);
	assert_int_equal(m2->n_train, 26);
	assert_memory_equal(&m2->cl.cost, &m->cl.cost, sizeof m->cl.cost);
	assert_memory_equal(m2->cl.center, m->cl.center, 2 * sizeof(double));
	assert_memory_equal(m2->cl.scale, m->cl.scale, 2 * sizeof(double));
	assert_memory_equal(m2->cl.proto_num, m->cl.proto_num, 6 * sizeof(double));
	assert_memory_equal(m2->cl.proto_cat, m->cl.proto_cat, 3 * sizeof(int32_t));
	assert_string_equal(m2->num_names[1], "prompt tokens");
	assert_string_equal(m2->levels[0][0], "中文 a");
	assert_int_equal(lsim_kproto_num_index(m2, "prompt tokens"), 1);
	for (size_t j = 0; j < 3; j++) {
		assert_int_equal(m2->reg[j].kind, m->reg[j].kind);
		assert_memory_equal(&m2->reg[j].value, &m->reg[j].value, sizeof(double));
		if (m->reg[j].kind == LSIM_KP_LINEAR)
			assert_memory_equal(m2->reg[j].coef, m->reg[j].coef,
					    (m->n_feat + 1) * sizeof(double));
	}
	/* saving the loaded model gives the same bytes */
	assert_int_equal(lsim_kproto_save(m2, path2, &d), 0);
	char *good = read_text(path), *again = read_text(path2);
	assert_string_equal(good, again);
	free(again);
	unlink(path2);
	lsim_kproto_destroy(m2);
	lsim_kproto_destroy(m);
	lsim_kp_data_release(&x);

	int l_proto1 = line_of(good, "proto 1 "), l_reg1 = line_of(good, "reg 0 1 ");
	int l_end = line_of(good, "end");
	expect_corrupt(path, good, "llmsim-kproto-model", "llmsim-kproto-modle", 1, "",
		       "not an llmsim kproto model");
	expect_corrupt(path, good, "version 1", "version 2", 2, "version",
		       "format version 2");
	expect_corrupt(path, good, "\nproto 1 ", "\nproto 1 x", l_proto1, "proto",
		       "size must be an integer");
	expect_corrupt(path, good, "\nproto 2 ", "\nproto 1 ", l_proto1 + 1, "proto",
		       "prototype 1 where 2");
	expect_corrupt(path, good, "\nreg 0 1 ", "\nreg 0 0 ", l_reg1, "reg",
		       "a second regressor");
	expect_corrupt(path, good, "\nreg 0 1 ", "\nreg 0 7 ", l_reg1, "reg",
		       "cluster index must be an integer in [0, 2]");
	expect_corrupt(path, good, "\nreg 0 1 ", "\nreg 0 1 cubic", l_reg1, "reg",
		       "unknown regressor 'cubic");
	expect_corrupt(path, good, "mu 0.5 ", "mu nan ", 6, "clusters", "mu must be");
	expect_corrupt(path, good, "num 2:x0", "num 99:x0", 8, "num", "shorter than");
	expect_corrupt(path, good, "\nend\n", "\n", l_end, "end", "truncated");
	expect_corrupt(path, good, "\nend\n", "\nend\njunk\n", l_end + 1, "",
		       "text after 'end'");
	/* the last level code of a prototype: out of range */
	char *p1 = strstr(good, "\nproto 1 ");
	char *eol = strchr(p1 + 1, '\n');
	char from[256], to[256];
	snprintf(from, sizeof from, "%.*s", (int)(eol - p1 + 1), p1);
	snprintf(to, sizeof to, "%.*s7\n", (int)(eol - p1 - 1), p1);
	expect_corrupt(path, good, from, to, l_proto1, "proto",
		       "level code must be an integer in [0, 2]");
	free(good);
	struct lsim_kproto_model *mm = NULL;
	/* the shipped model (written by this format version) still loads */
	src_path(path2, sizeof path2, "tests/data/kproto/azure800_linear_k4.kproto");
	assert_int_equal(lsim_kproto_load(path2, &mm, &d), 0);
	assert_int_equal(mm->cl.k, 4);
	assert_int_equal(mm->n_train, 800);
	assert_string_equal(mm->levels[0][1], "code");
	lsim_kproto_destroy(mm);
	mm = NULL;
	assert_int_equal(lsim_kproto_load("/nonexistent/kproto.model", &mm, &d), LSIM_ENOENT);
	assert_string_equal(d.file, "/nonexistent/kproto.model");
	unlink(path);
}

/* ---- evaluation ---- */

static void test_eval_exact_linear(void **state)
{
	(void)state;
	/* 20 rows on y = 3x + 1 near x = 0, 10 on y = 500 - x near x = 100 */
	double num[30], tgt[30];
	for (int i = 0; i < 20; i++) {
		num[i] = i * 0.1;
		tgt[i] = 3 * num[i] + 1;
	}
	for (int i = 0; i < 10; i++) {
		num[20 + i] = 100 + i * 0.2;
		tgt[20 + i] = 500 - num[20 + i];
	}
	struct lsim_kp_data x;
	table(&x, 30, 1, 0, 1, num, NULL, tgt);
	struct lsim_kp_opts o = {.k = 2, .mu = -1, .restarts = 5, .seed = 2};
	struct lsim_kproto_model *m = NULL;
	assert_int_equal(lsim_kproto_train(&x, &o, LSIM_KP_LINEAR, &m, NULL), 0);
	struct lsim_kp_eval e, e2;
	assert_int_equal(lsim_kproto_evaluate(m, &x, 4, &e, NULL), 0);
	size_t big = m->sizes[0] == 20 ? 0 : 1;
	assert_int_equal(e.n_train[big], 14); /* round(0.7 * 20) */
	assert_int_equal(e.n_test[big], 6);
	assert_int_equal(e.n_train[1 - big], 7);
	assert_int_equal(e.n_test[1 - big], 3);
	assert_int_equal(e.n_kinds, lsim_kp_have_xgboost() ? 3 : 1);
	size_t lin = e.n_kinds - 1;
	assert_int_equal(e.kinds[lin], LSIM_KP_LINEAR);
	for (size_t c = 0; c < 2; c++)
		assert_true(e.mse[c * e.n_kinds + lin] < 1e-18);
	assert_int_equal(e.n_rel[0], 9);
	assert_true(e.relerr[lin][8] < 1e-9); /* sorted: the largest */
	for (size_t k = 0; k < e.n_kinds; k++) {
		/* the pooled MSE is the test-weighted mean of the clusters' */
		double w = (6 * e.mse[big * e.n_kinds + k] +
			    3 * e.mse[(1 - big) * e.n_kinds + k]) / 9;
		assert_true(fabs(e.mse_all[k] - w) <= 1e-9 * (1 + w));
		assert_true(isfinite(e.mse_all[k]));
	}
	/* the same seed, the same split and errors */
	assert_int_equal(lsim_kproto_evaluate(m, &x, 4, &e2, NULL), 0);
	assert_memory_equal(e.mse, e2.mse, 2 * e.n_kinds * sizeof *e.mse);
	lsim_kp_eval_release(&e);
	lsim_kp_eval_release(&e2);
	lsim_kproto_destroy(m);
	lsim_kp_data_release(&x);
}

/* ---- the policy ---- */

/* A model of out = 2 prompt + 10 hour + 500 [tier = gold], written to
 * dir/name. */
static void policy_model(const char *dir, const char *name)
{
	const char *nn[] = {"prompt", "hour"}, *cn[] = {"tier"}, *tn[] = {"out"};
	struct lsim_kp_data x;
	assert_int_equal(lsim_kp_data_init(&x, nn, 2, cn, 1, tn, 1), 0);
	for (int i = 0; i < 24; i++) {
		double num[2] = {50 + 13 * i, (i * 7) % 24};
		const char *tier = i % 3 == 0 ? "gold" : "silver";
		double out = 2 * num[0] + 10 * num[1] + (i % 3 == 0 ? 500 : 0);
		assert_int_equal(lsim_kp_data_add(&x, num, &tier, &out), 0);
	}
	struct lsim_kp_opts o = {.k = 1, .mu = -1, .restarts = 1, .seed = 1};
	struct lsim_kproto_model *m = NULL;
	assert_int_equal(lsim_kproto_train(&x, &o, LSIM_KP_LINEAR, &m, NULL), 0);
	char path[600];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	assert_int_equal(lsim_kproto_save(m, path, NULL), 0);
	lsim_kproto_destroy(m);
	lsim_kp_data_release(&x);
}

static void test_policy(void **state)
{
	(void)state;
	assert_ptr_equal(lsim_registry_find(LSIM_KIND_PROFILER, "kproto"), &lsim_prof_kproto);
	assert_true(lsim_policy_fits(&lsim_prof_kproto, LSIM_ROLE_PROFILER));
	char dir[512];
	const char *base = getenv("LSIM_BUILD_ROOT");
	snprintf(dir, sizeof dir, "%s/test_kproto_dir_XXXXXX", base ? base : "/tmp");
	assert_non_null(mkdtemp(dir));
	policy_model(dir, "m.model");
	struct lsim_kproto_profiler s = {
		.model = "m.model", .target = "", .prompt_feature = "prompt",
		.class_feature = "tier", .class_labels = "silver|gold",
		.hour_feature = "hour", .start_hour = 18.5,
	};
	struct lsim_policy p = {.type = &lsim_prof_kproto, .state = &s};
	const struct lsim_profiler_ops *ops = lsim_prof_kproto.ops;
	struct lsim_policy_ctx ctx = {.seed = 1, .n_classes = 2};
	/* no model attached: init refuses */
	assert_int_equal(lsim_prof_kproto.init(&s, &ctx), LSIM_ESTATE);
	struct lsim_diag d = {0};
	assert_int_equal(lsim_kproto_attach(&p, NULL, NULL, "profiler", dir, &d), 0);
	assert_int_equal(lsim_prof_kproto.init(&s, &ctx), 0);
	struct lsim_request_info r = {.prompt_tokens = 100, .qos_class = 1,
				      .arrival = 2 * 3600 * LSIM_S, .true_output = -1};
	/* hour floor(18.5 + 2) = 20: 200 + 200 + 500 */
	assert_int_equal(ops->predict(&s, &r), 900);
	r.qos_class = 0;
	assert_int_equal(ops->predict(&s, &r), 400);
	r.arrival = 6 * 3600 * LSIM_S; /* 24.5 h: hour 0 */
	assert_int_equal(ops->predict(&s, &r), 200);
	r.prompt_tokens = 1; /* 2 + 0 + 0 */
	assert_int_equal(ops->predict(&s, &r), 2);
	lsim_prof_kproto.fini(&s);
	assert_null(s.m);

	/* errors name the parameter */
	s.prompt_feature = "tokens";
	assert_int_equal(lsim_kproto_attach(&p, NULL, NULL, "profiler", dir, &d), LSIM_EINVAL);
	assert_string_equal(d.key, "profiler.prompt_feature");
	assert_non_null(strstr(d.msg, "it has: prompt, hour"));
	assert_null(s.m);
	s.prompt_feature = "prompt";
	s.class_labels = "silver|platinum";
	assert_int_equal(lsim_kproto_attach(&p, NULL, NULL, "profiler", dir, &d), LSIM_EINVAL);
	assert_string_equal(d.key, "profiler.class_labels");
	assert_non_null(strstr(d.msg, "'platinum' is not a label of tier"));
	s.class_labels = "";
	s.target = "latency";
	assert_int_equal(lsim_kproto_attach(&p, NULL, NULL, "profiler", dir, &d), LSIM_EINVAL);
	assert_string_equal(d.key, "profiler.target");
	s.target = "";
	s.model = "absent.model";
	assert_int_equal(lsim_kproto_attach(&p, NULL, NULL, "profiler", dir, &d), LSIM_ENOENT);
	assert_string_equal(d.key, "profiler.model");
	/* other policies are left alone */
	struct lsim_policy other = {.type = &lsim_prof_mean};
	assert_int_equal(lsim_kproto_attach(&other, NULL, NULL, "profiler", dir, &d), 0);
	char path[600];
	snprintf(path, sizeof path, "%s/m.model", dir);
	unlink(path);
	rmdir(dir);
}

/* ---- the command line ---- */

static int cli(int (*fn)(int, char **), const char *const *args)
{
	char *argv[32]; /* writable copies, as a real argv */
	int argc = 0;
	while (args[argc]) {
		argv[argc] = strdup(args[argc]);
		assert_non_null(argv[argc]);
		argc++;
	}
	argv[argc] = NULL;
	fflush(stdout);
	int rc = fn(argc, argv);
	fflush(stdout);
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	return rc;
}

static void test_cli(void **state)
{
	(void)state;
	char data[512], model[512], h5[512];
	src_path(data, sizeof data, "tests/data/kproto/azure2023_code_conv_800.csv");
	tmp_name(model, sizeof model, "cli_model");
	tmp_name(h5, sizeof h5, "cli_h5");
	const char *kind = lsim_kp_have_xgboost() ? "gb" : "linear";
	const char *train[] = {"train", data, "--numeric", "ContextTokens,hour",
			       "--categorical", "kind", "--target", "GeneratedTokens",
			       "-k", "4", "--model", kind, "--seed", "3", "-o", model, NULL};
	assert_int_equal(cli(lsim_cli_profile_train, train), 0);
	struct lsim_kproto_model *m = NULL;
	assert_int_equal(lsim_kproto_load(model, &m, NULL), 0);
	assert_int_equal(m->cl.k, 4);
	assert_int_equal(m->n_train, 800);
	size_t kinds = lsim_kp_have_xgboost() ? 3 : 1;
	lsim_kproto_destroy(m);
	const char *eval[] = {"eval", model, data, "--h5", h5, NULL};
	assert_int_equal(cli(lsim_cli_profile_eval, eval), 0);
	hid_t f = H5Fopen(h5, H5F_ACC_RDONLY, H5P_DEFAULT);
	assert_true(f >= 0);
	hid_t ds = H5Dopen2(f, "/targets/GeneratedTokens/mse", H5P_DEFAULT);
	assert_true(ds >= 0);
	hid_t sp = H5Dget_space(ds);
	hsize_t dims[2];
	assert_int_equal(H5Sget_simple_extent_dims(sp, dims, NULL), 2);
	assert_int_equal(dims[0], 4);
	assert_int_equal(dims[1], kinds);
	H5Sclose(sp);
	H5Dclose(ds);
	ds = H5Dopen2(f, "/clusters/n_test", H5P_DEFAULT);
	uint64_t n_test[4];
	assert_true(H5Dread(ds, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, n_test) >= 0);
	H5Dclose(ds);
	ds = H5Dopen2(f, "/targets/GeneratedTokens/relerr_cdf/linear", H5P_DEFAULT);
	sp = H5Dget_space(ds);
	assert_int_equal(H5Sget_simple_extent_dims(sp, dims, NULL), 2);
	assert_int_equal(dims[0], n_test[0] + n_test[1] + n_test[2] + n_test[3]);
	H5Sclose(sp);
	H5Dclose(ds);
	H5Fclose(f);

	/* bad input: exit 2 */
	const char *no_k[] = {"train", data, "--numeric", "ContextTokens", "-o", model, NULL};
	assert_int_equal(cli(lsim_cli_profile_train, no_k), 2);
	const char *bad_model[] = {"train", data, "--numeric", "ContextTokens", "-k", "2",
				   "--model", "lightgbm", "-o", model, NULL};
	assert_int_equal(cli(lsim_cli_profile_train, bad_model), 2);
	const char *bad_col[] = {"train", data, "--numeric", "Tokens", "-k", "2", "-o",
				 model, NULL};
	assert_int_equal(cli(lsim_cli_profile_train, bad_col), 2);
	const char *too_many[] = {"train", data, "--numeric", "ContextTokens", "-k", "801",
				  "-o", model, NULL};
	assert_int_equal(cli(lsim_cli_profile_train, too_many), 2);
	write_text(model, "llmsim-kproto-model\nversion 9\n");
	assert_int_equal(cli(lsim_cli_profile_eval, eval), 2);
	const char *help[] = {"eval", "--help", NULL};
	assert_int_equal(cli(lsim_cli_profile_eval, help), 0);
	unlink(model);
	unlink(h5);
}

/* ---- behaviour: sjf with kproto on the Azure 2023 conversation trace ---- */

#define CONV "examples/data/azure_llm_2023/AzureLLMInferenceTrace_conv_1815-1845.csv"
/* the first row's time + 900 s: train before it, simulate from it */
#define CUT "2023-11-16 18:30:46.6805900"

static double run_e2e(const char *yaml_path, const char *const *sets, size_t n,
		      int64_t *preemptions, int64_t completed);

static double mean_e2e(const char *yaml_path, const char *const *sets, size_t n)
{
	return run_e2e(yaml_path, sets, n, NULL, 5330);
}

/* Runs the scenario; returns its mean E2E, checks the completed count
 * and gives the preemptions. */
static double run_e2e(const char *yaml_path, const char *const *sets, size_t n,
		      int64_t *preemptions, int64_t completed)
{
	struct lsim_scenario *sc = NULL;
	struct lsim_diag d = {0};
	if (lsim_scenario_load(yaml_path, sets, n, &sc, &d) != 0)
		fail_msg("load: %s:%d: %s: %s%s", d.file, d.line, d.key, d.msg,
			 strstr(d.msg, "kproto failed to start")
				 ? " (the core did not attach the model: lsim_policy_create "
				   "must call lsim_kproto_attach before init, docs/profiler.md)"
				 : "");
	const struct lsim_results *r = NULL;
	if (lsim_scenario_run(sc, NULL, NULL, &r, &d) != 0)
		fail_msg("run: %s: %s", d.key, d.msg);
	assert_true(r->summary.completed == completed);
	double v = r->summary.e2e_mean_s;
	if (preemptions)
		*preemptions = r->summary.preemptions;
	lsim_scenario_destroy(sc);
	return v;
}

static void test_sjf_with_kproto(void **state)
{
	(void)state;
	char conv[512], train[512], model[512], yaml[512];
	src_path(conv, sizeof conv, CONV);
	tmp_name(train, sizeof train, "conv_train");
	tmp_name(model, sizeof model, "conv_model");
	tmp_name(yaml, sizeof yaml, "conv_yaml");
	/* training rows: the first 15 minutes */
	FILE *in = fopen(conv, "r"), *out = fopen(train, "w");
	assert_non_null(in);
	assert_non_null(out);
	char line[256];
	size_t rows = 0;
	while (fgets(line, sizeof line, in)) {
		if (rows > 0 && strncmp(line, CUT, strlen(CUT)) >= 0)
			break;
		fputs(line, out);
		rows++;
	}
	fclose(in);
	fclose(out);
	assert_int_equal(rows - 1, 4424);
	const char *targs[] = {"train", train, "--numeric", "ContextTokens", "--target",
			       "GeneratedTokens", "-k", "12", "--model", "linear", "-o",
			       model, NULL};
	assert_int_equal(cli(lsim_cli_profile_train, targs), 0);
	/* the next 15 minutes through one replica (kept at a high load) */
	char text[1024];
	snprintf(text, sizeof text,
		 "name: kproto-behaviour\nseed: 1\n"
		 "instances:\n  - {gpu: H100-SXM, model: Llama-3.1-8B, max_num_seqs: 10}\n"
		 "workload:\n  kind: csv\n  path: %s\n  time_format: datetime\n"
		 "  arrival_column: TIMESTAMP\n  prompt_column: ContextTokens\n"
		 "  output_column: GeneratedTokens\n  window_start: 900s\n"
		 "output:\n  sample_period: 0s\n",
		 conv);
	write_text(yaml, text);
	char model_set[600];
	snprintf(model_set, sizeof model_set, "profiler.model=%s", model);
	const char *fcfs[] = {"scheduler.queue=fcfs"};
	const char *kp[] = {"scheduler.queue=sjf", "profiler.name=kproto", model_set};
	const char *oracle[] = {"scheduler.queue=sjf", "profiler=oracle"};
	double e_fcfs = mean_e2e(yaml, fcfs, 1);
	double e_kp = mean_e2e(yaml, kp, 3);
	double e_or = mean_e2e(yaml, oracle, 2);
	double closed = (e_fcfs - e_kp) / (e_fcfs - e_or);
	printf("  mean E2E, 5,330 requests: fcfs %.3f s, sjf+kproto %.3f s, "
	       "sjf+oracle %.3f s: kproto closes %.0f%% of the gap\n",
	       e_fcfs, e_kp, e_or, 100 * closed);
	assert_true(e_or < e_fcfs);
	assert_true(closed >= 0.5);

	/* KV reservation (kv_reserve: predicted) on a KV cache of 800 blocks
	 * (12,800 tokens; one request is longer and is rejected): with exact
	 * predictions admission never overcommits, so nothing is preempted;
	 * with kproto's, preemptions fall to a few (it reserves for the
	 * predicted output, which a long answer can outgrow) */
	const char *small[] = {"instances.0.num_gpu_blocks=800", "instances.0.max_num_seqs=64",
			       "profiler.name=kproto", model_set, "instances.0.kv_reserve=none"};
	int64_t p_none, p_kp, p_or;
	double r_none = run_e2e(yaml, small, 5, &p_none, 5329);
	small[4] = "instances.0.kv_reserve=predicted";
	double r_kp = run_e2e(yaml, small, 5, &p_kp, 5329);
	const char *small_or[] = {"instances.0.num_gpu_blocks=800", "instances.0.max_num_seqs=64",
				  "profiler=oracle", "instances.0.kv_reserve=predicted"};
	double r_or = run_e2e(yaml, small_or, 4, &p_or, 5329);
	printf("  800 KV blocks: preemptions (mean E2E) none %lld (%.1f s), "
	       "reserve kproto %lld (%.1f s), reserve oracle %lld (%.1f s)\n",
	       (long long)p_none, r_none, (long long)p_kp, r_kp, (long long)p_or, r_or);
	assert_true(p_or == 0);
	assert_true(p_none > 1000);
	assert_true(p_kp * 10 < p_none);

	/* admission: the QoS policy predicts a request's TTFT from the target's
	 * queued work, which counts the predicted remaining output of running
	 * requests; without a profiler that part is unknown (0) */
	char with_class[1200];
	snprintf(with_class, sizeof with_class, "%sclasses:\n  - {name: chat, share: 1, ttft: 5s}\n", text);
	write_text(yaml, with_class);
	const char *adm[] = {"qos.name=admission", "qos.tokens_per_s=8000", NULL, NULL};
	struct adm_run {
		size_t n;
		double attained, admitted;
	} ar[3] = {{2, 0, 0}, {4, 0, 0}, {3, 0, 0}};
	for (int k = 0; k < 3; k++) {
		adm[2] = k == 1 ? "profiler.name=kproto" : k == 2 ? "profiler=oracle" : NULL;
		adm[3] = k == 1 ? model_set : NULL;
		struct lsim_scenario *sc = NULL;
		struct lsim_diag d = {0};
		if (lsim_scenario_load(yaml, adm, ar[k].n, &sc, &d) != 0)
			fail_msg("load: %s: %s", d.key, d.msg);
		const struct lsim_results *r = NULL;
		if (lsim_scenario_run(sc, NULL, NULL, &r, &d) != 0)
			fail_msg("run: %s: %s", d.key, d.msg);
		ar[k].admitted = r->summary.requests - r->summary.rejected;
		ar[k].attained = r->summary.slo_attainment * r->summary.requests / ar[k].admitted;
		lsim_scenario_destroy(sc);
	}
	printf("  admission (TTFT 5 s at 8,000 tokens/s): TTFT attainment of the admitted "
	       "(admitted): no profiler %.3f (%.0f), kproto %.3f (%.0f), oracle %.3f (%.0f)\n",
	       ar[0].attained, ar[0].admitted, ar[1].attained, ar[1].admitted, ar[2].attained,
	       ar[2].admitted);
	/* the predictions reach admission (each profiler admits another set),
	 * and each keeps most admitted requests within the target; they do
	 * not make this rule better (docs/profiler.md says why) */
	assert_true(ar[0].admitted != ar[1].admitted && ar[1].admitted != ar[2].admitted);
	for (int k = 0; k < 3; k++)
		assert_true(ar[k].attained > 0.85 && ar[k].admitted < 5330);
	unlink(train);
	unlink(model);
	unlink(yaml);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_obvious_clusters),
		cmocka_unit_test(test_mu_decides),
		cmocka_unit_test(test_restarts_and_seed),
		cmocka_unit_test(test_questions_by_category),
		cmocka_unit_test(test_azure_by_kind),
		cmocka_unit_test(test_csv_errors),
		cmocka_unit_test(test_linear_exact),
		cmocka_unit_test(test_linear_collinear),
		cmocka_unit_test(test_xgboost),
		cmocka_unit_test(test_model_file),
		cmocka_unit_test(test_eval_exact_linear),
		cmocka_unit_test(test_policy),
		cmocka_unit_test(test_cli),
		cmocka_unit_test(test_sjf_with_kproto),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
