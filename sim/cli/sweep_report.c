/*
 * sweep_report.c - `llmsim report DIR`: one row per configuration of a
 * sweep's database (DIR/results.sqlite, written by `llmsim sweep`) with
 * the mean and the 95% confidence interval across its seeds of each
 * metric asked for (Student's t, GSL), as an aligned table, CSV or
 * Markdown. Configurations are the runs' values of the group-by keys (by
 * default every swept key but the seed), in sweep order.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_statistics_double.h>
#include <sqlite3.h>

#include "cli/cli.h"
#include "cli/sweep.h"

enum { FMT_TABLE, FMT_CSV, FMT_MARKDOWN };

static const char usage_report[] =
	"usage: llmsim report DIR [--group-by KEY,...] [--metrics NAME,...]\n"
	"                         [--format table|csv|markdown]\n"
	"\n"
	"Reads DIR/results.sqlite of a sweep and prints one row per configuration:\n"
	"its values of the group-by keys (default: every swept key but the seed),\n"
	"the number of runs (seeds) n, and for each metric (default: throughput_rps,\n"
	"ttft_p99_s, e2e_mean_s, slo_attainment, cost_per_mtok_usd) the mean and the\n"
	"half-width of its 95% confidence interval across the runs (Student's t with\n"
	"n - 1 degrees of freedom; 0 for one run), over the runs where it is defined;\n"
	"n/a where it is defined in none (slo_attainment when no class declares a\n"
	"target). Metric names are the summary's (docs/output.md).\n";

/* A comma-separated list, split in place. */
static size_t split(char *s, char **out, size_t max)
{
	size_t n = 0;
	for (char *t = strtok(s, ","); t && n < max; t = strtok(NULL, ","))
		out[n++] = t;
	return n;
}

struct group {
	char *label; /* the values, "\x1f"-separated */
	double *v;   /* n_metrics x runs, metric-major */
	size_t n, cap;
};

struct report {
	sqlite3 *db;
	char **keys;
	size_t n_keys;
	char **metrics;
	size_t n_metrics;
	struct group *g;
	size_t n_g;
};

/* The group of the label; appended if new. */
static struct group *group_of(struct report *r, const char *label)
{
	for (size_t i = 0; i < r->n_g; i++)
		if (!strcmp(r->g[i].label, label))
			return &r->g[i];
	struct group *g = realloc(r->g, (r->n_g + 1) * sizeof *g);
	if (!g)
		return NULL;
	r->g = g;
	g = &r->g[r->n_g];
	memset(g, 0, sizeof *g);
	g->label = strdup(label);
	if (!g->label)
		return NULL;
	r->n_g++;
	return g;
}

/* Reads every run: its label and its metrics. */
static int collect(struct report *r)
{
	sqlite3_stmt *runs = NULL, *par = NULL, *met = NULL;
	int e = sqlite3_prepare_v2(r->db,
				   "SELECT run_id FROM sweep_runs WHERE status = 'done' ORDER BY run;",
				   -1, &runs, NULL);
	if (e == SQLITE_OK)
		e = sqlite3_prepare_v2(r->db, "SELECT value FROM params WHERE run_id = ?1 AND key = ?2;",
				       -1, &par, NULL);
	if (e == SQLITE_OK)
		e = sqlite3_prepare_v2(r->db,
				       "SELECT value FROM metrics WHERE run_id = ?1 AND name = ?2;", -1,
				       &met, NULL);
	char label[4096];
	while (e == SQLITE_OK && sqlite3_step(runs) == SQLITE_ROW) {
		const char *id = (const char *)sqlite3_column_text(runs, 0);
		size_t len = 0;
		label[0] = '\0';
		for (size_t k = 0; k < r->n_keys; k++) {
			const char *v = "";
			sqlite3_bind_text(par, 1, id, -1, SQLITE_TRANSIENT);
			sqlite3_bind_text(par, 2, r->keys[k], -1, SQLITE_STATIC);
			if (sqlite3_step(par) == SQLITE_ROW && sqlite3_column_text(par, 0))
				v = (const char *)sqlite3_column_text(par, 0);
			len += (size_t)snprintf(label + len, len < sizeof label ? sizeof label - len : 0,
						"%s%s", k ? "\x1f" : "", v);
			sqlite3_reset(par);
		}
		struct group *g = group_of(r, label);
		if (!g)
			return -1;
		if (g->n == g->cap) {
			size_t c = g->cap ? 2 * g->cap : 8;
			double *v = realloc(g->v, c * r->n_metrics * sizeof *v);
			if (!v)
				return -1;
			/* keep metric-major: move each metric's runs */
			for (size_t m = r->n_metrics; m-- > 0;)
				memmove(v + m * c, v + m * g->cap, g->n * sizeof *v);
			g->v = v;
			g->cap = c;
		}
		for (size_t m = 0; m < r->n_metrics; m++) {
			sqlite3_bind_text(met, 1, id, -1, SQLITE_TRANSIENT);
			sqlite3_bind_text(met, 2, r->metrics[m], -1, SQLITE_STATIC);
			g->v[m * g->cap + g->n] = sqlite3_step(met) == SQLITE_ROW &&
							  sqlite3_column_type(met, 0) != SQLITE_NULL
						  ? sqlite3_column_double(met, 0)
						  : NAN;
			sqlite3_reset(met);
		}
		g->n++;
	}
	sqlite3_finalize(runs);
	sqlite3_finalize(par);
	sqlite3_finalize(met);
	return e == SQLITE_OK ? 0 : -1;
}

/* Mean and 95% half-width of the finite values among x[0 .. n). */
static void mean_ci(const double *x, size_t n, double *mean, double *half, size_t *used)
{
	double *y = malloc((n ? n : 1) * sizeof *y);
	size_t k = 0;
	for (size_t i = 0; y && i < n; i++)
		if (isfinite(x[i]))
			y[k++] = x[i];
	*used = k;
	*mean = k ? gsl_stats_mean(y, 1, k) : NAN;
	*half = k > 1 ? gsl_cdf_tdist_Pinv(0.975, (double)(k - 1)) * gsl_stats_sd(y, 1, k) /
				sqrt((double)k)
		      : 0.0;
	free(y);
}

static void print_report(const struct report *r, int fmt)
{
	const char *sep = fmt == FMT_CSV ? "," : fmt == FMT_MARKDOWN ? " | " : "  ";
	const char *lead = fmt == FMT_MARKDOWN ? "| " : "", *tail = fmt == FMT_MARKDOWN ? " |" : "";
	/* header */
	printf("%s", lead);
	for (size_t k = 0; k < r->n_keys; k++)
		printf("%s%s", k ? sep : "", r->keys[k]);
	printf("%sn", r->n_keys ? sep : "");
	for (size_t m = 0; m < r->n_metrics; m++) {
		if (fmt == FMT_CSV)
			printf("%s%s_mean%s%s_ci95", sep, r->metrics[m], sep, r->metrics[m]);
		else
			printf("%s%s", sep, r->metrics[m]);
	}
	printf("%s\n", tail);
	if (fmt == FMT_MARKDOWN) {
		printf("|");
		for (size_t k = 0; k < r->n_keys + 1 + r->n_metrics; k++)
			printf("%s", k < r->n_keys ? "---|" : "---:|");
		putchar('\n');
	}
	for (size_t i = 0; i < r->n_g; i++) {
		const struct group *g = &r->g[i];
		printf("%s", lead);
		const char *p = g->label;
		for (size_t k = 0; k < r->n_keys; k++) {
			const char *q = strchr(p, '\x1f');
			int len = q ? (int)(q - p) : (int)strlen(p);
			printf("%s%.*s", k ? sep : "", len, p);
			p = q ? q + 1 : p + len;
		}
		printf("%s%zu", r->n_keys ? sep : "", g->n);
		for (size_t m = 0; m < r->n_metrics; m++) {
			double mean, half;
			size_t used;
			mean_ci(g->v + m * g->cap, g->n, &mean, &half, &used);
			if (fmt == FMT_CSV)
				printf("%s%.10g%s%.10g", sep, mean, sep, used ? half : NAN);
			else if (used == 0) /* not defined in any run (e.g. no SLO declared) */
				printf("%sn/a", sep);
			else
				printf("%s%.6g ± %.3g", sep, mean, half);
		}
		printf("%s\n", tail);
	}
}

/* Whether the query, with ?1 bound to arg, returns a row. */
static bool has_row(sqlite3 *db, const char *sql, const char *arg)
{
	sqlite3_stmt *s = NULL;
	bool found = false;
	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK &&
	    sqlite3_bind_text(s, 1, arg, -1, SQLITE_STATIC) == SQLITE_OK)
		found = sqlite3_step(s) == SQLITE_ROW;
	sqlite3_finalize(s);
	return found;
}

int lsim_cli_report(int argc, char **argv)
{
	const char *dir = NULL, *group_by = NULL, *metrics = NULL;
	int fmt = FMT_TABLE;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage_report, stdout);
			return 0;
		} else if (!strcmp(a, "--group-by") && i + 1 < argc) {
			group_by = argv[++i];
		} else if (!strcmp(a, "--metrics") && i + 1 < argc) {
			metrics = argv[++i];
		} else if (!strcmp(a, "--format") && i + 1 < argc) {
			const char *f = argv[++i];
			fmt = !strcmp(f, "table") ? FMT_TABLE : !strcmp(f, "csv") ? FMT_CSV
							    : !strcmp(f, "markdown") ? FMT_MARKDOWN : -1;
			if (fmt < 0) {
				fprintf(stderr, "llmsim: --format: '%s' is not table, csv or markdown\n", f);
				return LSIM_EXIT_BADINPUT;
			}
		} else if (a[0] == '-' || dir) {
			fprintf(stderr, "llmsim: unexpected argument '%s'\n%s", a, usage_report);
			return LSIM_EXIT_BADINPUT;
		} else {
			dir = a;
		}
	}
	if (!dir) {
		fprintf(stderr, "llmsim: missing DIR (a sweep's output folder)\n%s", usage_report);
		return LSIM_EXIT_BADINPUT;
	}
	char path[4200];
	snprintf(path, sizeof path, "%s/results.sqlite", dir);
	struct stat st;
	struct report r = {0};
	if (stat(path, &st) != 0 || sqlite3_open_v2(path, &r.db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
	    sqlite3_exec(r.db, "SELECT 1 FROM sweep_runs, params, metrics LIMIT 1;", NULL, NULL, NULL) !=
		    SQLITE_OK) {
		fprintf(stderr, "llmsim: %s: not a sweep's database (run llmsim sweep first)\n", path);
		sqlite3_close_v2(r.db);
		return LSIM_EXIT_BADINPUT;
	}
	char *gb = NULL, *ms = strdup(metrics ? metrics
					      : "throughput_rps,ttft_p99_s,e2e_mean_s,slo_attainment,"
						"cost_per_mtok_usd");
	char *keys[64], *mets[64], store[64][256];
	int status = ms ? 0 : lsim_cli_nomem();
	if (status == 0)
		r.n_metrics = split(ms, mets, 64);
	r.metrics = mets;
	if (status == 0 && group_by) {
		gb = strdup(group_by);
		status = gb ? 0 : lsim_cli_nomem();
		if (gb)
			r.n_keys = split(gb, keys, 64);
	} else if (status == 0) {
		/* every swept key but the seed, in the order of the first run */
		sqlite3_stmt *s = NULL;
		char(*key_store)[256] = store;
		if (sqlite3_prepare_v2(r.db,
				       "SELECT key FROM params WHERE run_id = (SELECT run_id FROM"
				       " sweep_runs ORDER BY run LIMIT 1) AND key <> 'seed' ORDER BY rowid;",
				       -1, &s, NULL) == SQLITE_OK)
			while (r.n_keys < 64 && sqlite3_step(s) == SQLITE_ROW) {
				snprintf(key_store[r.n_keys], sizeof key_store[r.n_keys], "%s",
					 (const char *)sqlite3_column_text(s, 0));
				keys[r.n_keys] = key_store[r.n_keys];
				r.n_keys++;
			}
		sqlite3_finalize(s);
	}
	r.keys = keys;
	/* every name asked for must exist */
	for (size_t m = 0; status == 0 && m < r.n_metrics; m++)
		if (!has_row(r.db, "SELECT 1 FROM metrics WHERE name = ?1 LIMIT 1;", r.metrics[m])) {
			fprintf(stderr, "llmsim: --metrics: no metric '%s' in %s (names: docs/output.md)\n",
				r.metrics[m], path);
			status = LSIM_EXIT_BADINPUT;
		}
	for (size_t k = 0; status == 0 && group_by && k < r.n_keys; k++)
		if (!has_row(r.db, "SELECT 1 FROM params WHERE key = ?1 LIMIT 1;", r.keys[k])) {
			fprintf(stderr, "llmsim: --group-by: '%s' is not a swept key in %s\n",
				r.keys[k], path);
			status = LSIM_EXIT_BADINPUT;
		}
	if (status == 0 && collect(&r) != 0) {
		fprintf(stderr, "llmsim: %s: cannot read the runs: %s\n", path, sqlite3_errmsg(r.db));
		status = LSIM_EXIT_NOROOM;
	}
	if (status == 0)
		print_report(&r, fmt);
	for (size_t i = 0; i < r.n_g; i++) {
		free(r.g[i].label);
		free(r.g[i].v);
	}
	free(r.g);
	free(gb);
	free(ms);
	sqlite3_close_v2(r.db);
	return status;
}
