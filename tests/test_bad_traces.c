/*
 * test_bad_traces.c - the bad-input table of the trace readers: every row
 * of tests/data/bad_traces/cases.tsv names a small trace, whether it must
 * read cleanly or fail, and text the "file:line:col: key: message" of the
 * failure must contain. Each trace is opened with lsim_workload_open_auto
 * and drained; a failing one is then read again with LSIM_ON_ERROR_SKIP,
 * which must skip exactly the bad lines, keep the first one's diagnostic
 * and still fail on errors about the whole file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "workload.h"

#define DIR "tests/data/bad_traces/"

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

/* One row of cases.tsv. */
struct bad_case {
	char file[128];
	char expect[16];
	char fragment[256];
	long requests; /* -1: "-" */
	long skipped;  /* -1: "-" */
};

struct drained {
	int open_rc;   /* what opening returned */
	int rc;	       /* the last lsim_workload_next result (0 at a clean end) */
	long requests; /* requests read */
	long skipped;
	char text[1400]; /* lsim_diag_format of the error, or "" */
	char first_skip[1400];
	int first_skip_line;
};

/* Parses "-" as -1, else a non-negative integer. */
static long count_field(const char *s)
{
	if (strcmp(s, "-") == 0)
		return -1;
	char *end = NULL;
	long v = strtol(s, &end, 10);
	if (end == s || *end != '\0' || v < 0)
		fail_msg("cases.tsv: bad count '%s'", s);
	return v;
}

/* Splits a tab-separated line into exactly 5 fields. */
static void parse_row(char *line, int lineno, struct bad_case *c)
{
	char *f[5] = {0};
	int n = 0;
	for (char *p = line; n < 5; n++) {
		f[n] = p;
		char *tab = strchr(p, '\t');
		if (!tab) {
			n++;
			break;
		}
		*tab = '\0';
		p = tab + 1;
	}
	if (n != 5 || strchr(f[4], '\t'))
		fail_msg("cases.tsv:%d: expected 5 tab-separated fields", lineno);
	snprintf(c->file, sizeof c->file, "%s", f[0]);
	snprintf(c->expect, sizeof c->expect, "%s", f[1]);
	snprintf(c->fragment, sizeof c->fragment, "%s", f[2]);
	c->requests = count_field(f[3]);
	c->skipped = count_field(f[4]);
	if (strcmp(c->expect, "ok") != 0 && strcmp(c->expect, "error") != 0)
		fail_msg("cases.tsv:%d: expect must be ok or error", lineno);
}

/* Reads all rows of cases.tsv; returns how many. */
static size_t read_cases(struct bad_case **out)
{
	char *path = repo_path(DIR "cases.tsv");
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	free(path);
	size_t n = 0, cap = 0;
	struct bad_case *cs = NULL;
	char line[1024];
	int lineno = 0;
	while (fgets(line, sizeof line, f)) {
		lineno++;
		size_t len = strlen(line);
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if (lineno == 1) {
			assert_string_equal(line, "file\texpect\tfragment\trequests\tskipped");
			continue;
		}
		if (len == 0)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			cs = realloc(cs, cap * sizeof *cs);
			assert_non_null(cs);
		}
		parse_row(line, lineno, &cs[n++]);
	}
	fclose(f);
	*out = cs;
	return n;
}

/* Opens file (relative to the table's folder) and reads it to its end. */
static void drain(const char *file, enum lsim_on_error mode, struct drained *r)
{
	char rel[256];
	snprintf(rel, sizeof rel, DIR "%s", file);
	char *path = repo_path(rel);
	memset(r, 0, sizeof *r);
	struct lsim_workload *w = NULL;
	struct lsim_diag d;
	memset(&d, 0, sizeof d);
	r->open_rc = lsim_workload_open_auto(path, &w, &d);
	free(path);
	if (r->open_rc != 0) {
		assert_null(w);
		r->rc = r->open_rc;
		lsim_diag_format(&d, r->text, sizeof r->text);
		return;
	}
	lsim_workload_set_on_error(w, mode);
	struct lsim_req_spec q;
	lsim_time prev = 0;
	while ((r->rc = lsim_workload_next(w, &q, &d)) == 1) {
		/* whatever was skipped, what comes out is a valid request */
		assert_int_equal(q.id, (uint64_t)r->requests);
		assert_true(q.arrival >= prev);
		assert_true(q.prompt_tokens >= 1 && q.output_tokens >= 1);
		prev = q.arrival;
		r->requests++;
	}
	if (r->rc != 0)
		lsim_diag_format(&d, r->text, sizeof r->text);
	r->skipped = (long)lsim_workload_skipped(w);
	const struct lsim_diag *fs = lsim_workload_first_skip(w);
	assert_non_null(fs);
	lsim_diag_format(fs, r->first_skip, sizeof r->first_skip);
	r->first_skip_line = fs->line;
	lsim_workload_destroy(w);
}

static bool exists(const char *file)
{
	char rel[256];
	snprintf(rel, sizeof rel, DIR "%s", file);
	char *path = repo_path(rel);
	bool ok = access(path, F_OK) == 0;
	free(path);
	return ok;
}

static void check_case(const struct bad_case *c)
{
	struct drained a, s;
	drain(c->file, LSIM_ON_ERROR_FAIL, &a);
	if (strcmp(c->expect, "ok") == 0) {
		if (a.rc != 0)
			fail_msg("%s: expected ok, got %d: %s", c->file, a.rc, a.text);
		if (a.requests != c->requests)
			fail_msg("%s: %ld requests, expected %ld", c->file, a.requests,
				 c->requests);
		assert_int_equal(a.skipped, 0);
		/* skipping changes nothing on a good file */
		drain(c->file, LSIM_ON_ERROR_SKIP, &s);
		assert_int_equal(s.rc, 0);
		assert_int_equal(s.requests, a.requests);
		assert_int_equal(s.skipped, 0);
		assert_string_equal(s.first_skip, "");
		return;
	}
	int want = exists(c->file) ? LSIM_EFORMAT : LSIM_ENOENT;
	if (a.rc != want)
		fail_msg("%s: expected %s, got %d: %s", c->file, lsim_strerror(want),
			 a.rc, a.text);
	if (!strstr(a.text, c->fragment))
		fail_msg("%s: message \"%s\" lacks \"%s\"", c->file, a.text, c->fragment);
	assert_int_equal(a.skipped, 0); /* the default is to fail */
	if (c->requests < 0 && c->skipped < 0) {
		/* the file cannot even be opened: no lines to skip */
		assert_int_not_equal(a.open_rc, 0);
		return;
	}
	assert_int_equal(a.open_rc, 0);
	drain(c->file, LSIM_ON_ERROR_SKIP, &s);
	if (s.skipped != c->skipped)
		fail_msg("%s: skipped %ld lines, expected %ld (%s)", c->file, s.skipped,
			 c->skipped, s.text);
	if (c->requests < 0) {
		/* an error about the whole file: skipping does not help */
		assert_int_equal(s.rc, a.rc);
		assert_string_equal(s.text, a.text);
		return;
	}
	if (s.rc != 0)
		fail_msg("%s: with skip: %d: %s", c->file, s.rc, s.text);
	if (s.requests != c->requests)
		fail_msg("%s: with skip: %ld requests, expected %ld", c->file,
			 s.requests, c->requests);
	/* the first skipped line is the one that stopped the default run */
	assert_string_equal(s.first_skip, a.text);
}

static void test_cases(void **state)
{
	(void)state;
	struct bad_case *cs = NULL;
	size_t n = read_cases(&cs);
	assert_true(n >= 30);
	size_t n_ok = 0;
	for (size_t i = 0; i < n; i++) {
		check_case(&cs[i]);
		n_ok += strcmp(cs[i].expect, "ok") == 0;
	}
	assert_true(n_ok >= 4 && n_ok < n);
	free(cs);
}

/* Every line bad: skipping them all leaves no requests, which is an error. */
static void test_all_lines_skipped(void **state)
{
	(void)state;
	struct drained a, s;
	drain("all_bad.jsonl", LSIM_ON_ERROR_FAIL, &a);
	assert_int_equal(a.rc, LSIM_EFORMAT);
	assert_non_null(strstr(a.text, "all_bad.jsonl:1: input_toks: prompt length is 0"));
	drain("all_bad.jsonl", LSIM_ON_ERROR_SKIP, &s);
	assert_int_equal(s.rc, LSIM_EFORMAT);
	assert_int_equal(s.requests, 0);
	assert_int_equal(s.skipped, 2);
	assert_non_null(strstr(s.text, "workload.path: no valid lines: all 2 were skipped"));
	assert_string_equal(s.first_skip, a.text);
	assert_int_equal(s.first_skip_line, 1);
}

/* The three lines of multi_bad.csv: only the first one's text is kept. */
static void test_first_skip_is_first(void **state)
{
	(void)state;
	struct drained s;
	drain("multi_bad.csv", LSIM_ON_ERROR_SKIP, &s);
	assert_int_equal(s.rc, 0);
	assert_int_equal(s.requests, 3);
	assert_int_equal(s.skipped, 3);
	assert_int_equal(s.first_skip_line, 3);
	assert_null(strstr(s.first_skip, "multi_bad.csv:5"));
}

/* The policy calls accept NULL; generators ignore the policy. */
static void test_api_edges(void **state)
{
	(void)state;
	lsim_workload_set_on_error(NULL, LSIM_ON_ERROR_SKIP);
	assert_int_equal(lsim_workload_skipped(NULL), 0);
	assert_null(lsim_workload_first_skip(NULL));
	gsl_rng *a = gsl_rng_alloc(gsl_rng_mt19937), *b = gsl_rng_alloc(gsl_rng_mt19937);
	assert_non_null(a);
	assert_non_null(b);
	struct lsim_gen_params p;
	memset(&p, 0, sizeof p);
	p.arrival = LSIM_ARRIVAL_POISSON;
	p.rate = 10;
	p.count = 5;
	p.prompt.kind = LSIM_LEN_FIXED;
	p.prompt.a = 100;
	p.output.kind = LSIM_LEN_FIXED;
	p.output.a = 10;
	struct lsim_workload *w = NULL;
	struct lsim_diag d;
	assert_int_equal(lsim_workload_generator_create(&p, a, b, &w, &d), 0);
	lsim_workload_set_on_error(w, LSIM_ON_ERROR_SKIP);
	struct lsim_req_spec q;
	int n = 0, rc;
	while ((rc = lsim_workload_next(w, &q, &d)) == 1)
		n++;
	assert_int_equal(rc, 0);
	assert_int_equal(n, 5);
	assert_int_equal(lsim_workload_skipped(w), 0);
	assert_string_equal(lsim_workload_first_skip(w)->msg, "");
	lsim_workload_destroy(w);
	gsl_rng_free(a);
	gsl_rng_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_all_lines_skipped),
		cmocka_unit_test(test_first_skip_is_first),
		cmocka_unit_test(test_api_edges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
