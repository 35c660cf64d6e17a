/*
 * sweep.c - policy sweeps (sim/cli/sweep.h): the sweep file, its runs and
 * their overrides, and `llmsim sweep` run | status | merge. A run is the
 * base scenario with one point's overrides and one seed; its id is the
 * scenario's run id (a hash of the effective configuration), so it is
 * stable and the same whoever runs it. The runner checks every run's
 * configuration first, then forks up to --jobs children, each writing one
 * run to DIR/runs/ID.tmp/ and renaming it to DIR/runs/ID/ when complete;
 * the parent alone writes DIR/results.sqlite, one transaction per run.
 */
#include "cli/sweep.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gsl/gsl_rng.h>
#include <sqlite3.h>
#ifdef LSIM_HAVE_MPI
#include <mpi.h>
#endif

#include "cli/cli.h"
#include "kernel/infile.h"
#include "kernel/config.h"
#include "report/report.h"
#include "run/scenario.h"

enum { MODE_GRID, MODE_ZIP, MODE_RANDOM };

/* One axis: a dotted scenario key and its values, or (random) a range. */
struct axis {
	const char *key;
	const char **values; /* texts in the document */
	const struct lsim_node **at; /* where each value is written */
	const struct lsim_node *node; /* the axis's list, value or range */
	size_t n;
	bool range;	     /* random: draw from [min, max] */
	struct range {
		double min, max;
		bool log, integer;
	} r;
};

struct top {
	const char *scenario, *output;
	int mode;
	int64_t samples, sample_seed;
};

struct lsim_sweep {
	struct lsim_doc *doc;
	struct top top;
	char *scenario; /* resolved against the file's folder */
	struct axis *axes;
	size_t n_axes;
	int64_t *seeds; /* NULL: the scenario's own seed */
	size_t n_seeds;
	size_t n_points;
	char **drawn; /* random: n_points x n_axes values */
	char **sets;  /* the current run's overrides, owned */
	size_t n_sets;
	const char *const *base; /* --set overrides before every run's (borrowed) */
	size_t n_base;
};

#define T(f) offsetof(struct top, f)
static const struct lsim_keydef top_keys[] = {
	{"scenario", LSIM_K_STRING, T(scenario), NULL, LSIM_NOBOUNDS, NULL, "the base scenario, relative to the sweep file"},
	{"output", LSIM_K_STRING, T(output), "llmsim-sweep", LSIM_NOBOUNDS, NULL, "output folder, relative to the working directory (-o overrides)"},
	{"mode", LSIM_K_ENUM, T(mode), "grid", LSIM_NOBOUNDS, "grid|zip|random", "grid: every combination of the axes' values; zip: the i-th value of every axis together; random: `samples` points drawn"},
	{"samples", LSIM_K_INT, T(samples), "10", 1, 1e7, NULL, "random: points drawn"},
	{"sample_seed", LSIM_K_INT, T(sample_seed), "1", 0, 9e15, NULL, "random: seed of the draws"},
};
#undef T

#define R(f) offsetof(struct range, f)
static const struct lsim_keydef range_keys[] = {
	{"min", LSIM_K_DOUBLE, R(min), NULL, LSIM_NOBOUNDS, NULL, "smallest value"},
	{"max", LSIM_K_DOUBLE, R(max), NULL, LSIM_NOBOUNDS, NULL, "largest value"},
	{"log", LSIM_K_BOOL, R(log), "false", LSIM_NOBOUNDS, NULL, "draw uniformly in log space"},
	{"int", LSIM_K_BOOL, R(integer), "false", LSIM_NOBOUNDS, NULL, "round to an integer"},
};
#undef R

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

void lsim_sweep_destroy(struct lsim_sweep *sw)
{
	if (!sw)
		return;
	for (size_t i = 0; i < sw->n_axes; i++) {
		free(sw->axes[i].values);
		free(sw->axes[i].at);
	}
	free(sw->axes);
	free(sw->seeds);
	for (size_t i = 0; sw->drawn && i < sw->n_points * sw->n_axes; i++)
		free(sw->drawn[i]);
	free(sw->drawn);
	for (size_t i = 0; i < sw->n_sets; i++)
		free(sw->sets[i]);
	free(sw->sets);
	free(sw->scenario);
	lsim_doc_destroy(sw->doc);
	free(sw);
}

static int parse_seeds(struct lsim_sweep *sw, const struct lsim_node *n, struct lsim_diag *d)
{
	if (!n)
		return 0;
	if (n->kind == LSIM_NODE_SCALAR) {
		char *end;
		long long k = strtoll(n->value, &end, 10);
		if (*end || k < 1 || k > 1000000)
			return lsim_cfg_error(d, sw->doc, n, "seeds", LSIM_EINVAL,
					      "'%s': give a count of seeds (1 to 1000000, "
					      "seeds 1..N) or a list of seeds", n->value);
		sw->n_seeds = (size_t)k;
		sw->seeds = malloc(sw->n_seeds * sizeof *sw->seeds);
		if (!sw->seeds)
			return LSIM_ENOMEM;
		for (size_t i = 0; i < sw->n_seeds; i++)
			sw->seeds[i] = (int64_t)i + 1;
		return 0;
	}
	if (n->kind != LSIM_NODE_SEQ || n->n == 0)
		return lsim_cfg_error(d, sw->doc, n, "seeds", LSIM_EINVAL,
				      "give a count of seeds or a non-empty list of seeds");
	sw->seeds = malloc(n->n * sizeof *sw->seeds);
	if (!sw->seeds)
		return LSIM_ENOMEM;
	for (size_t i = 0; i < n->n; i++) {
		const struct lsim_node *it = n->items[i];
		char *end = NULL;
		long long v = it->kind == LSIM_NODE_SCALAR ? strtoll(it->value, &end, 10) : -1;
		if (!end || *end || v < 0)
			return lsim_cfg_error(d, sw->doc, it, "seeds", LSIM_EINVAL,
					      "seed %zu is not a non-negative integer", i + 1);
		sw->seeds[i] = v;
	}
	sw->n_seeds = n->n;
	return 0;
}

static int parse_axes(struct lsim_sweep *sw, const struct lsim_node *n, struct lsim_diag *d)
{
	if (!n)
		return lsim_cfg_error(d, sw->doc, sw->doc->root, "axes", LSIM_EINVAL,
				      "a sweep needs axes: scenario keys and their values");
	if (n->kind != LSIM_NODE_MAP || n->n == 0)
		return lsim_cfg_error(d, sw->doc, n, "axes", LSIM_EINVAL,
				      "axes maps scenario keys (dotted, as --set takes them) "
				      "to lists of values");
	sw->axes = calloc(n->n, sizeof *sw->axes);
	if (!sw->axes)
		return LSIM_ENOMEM;
	sw->n_axes = n->n;
	for (size_t i = 0; i < n->n; i++) {
		struct axis *a = &sw->axes[i];
		const struct lsim_node *v = n->items[i];
		char key[300];
		snprintf(key, sizeof key, "axes.%s", n->keys[i]);
		a->key = n->keys[i];
		a->node = v;
		if (v->kind == LSIM_NODE_MAP) {
			if (sw->top.mode != MODE_RANDOM)
				return lsim_cfg_error(d, sw->doc, v, key, LSIM_EINVAL,
						      "a range {min, max} needs mode: random; "
						      "grid and zip take lists");
			int rc = lsim_cfg_bind(sw->doc, v, key, range_keys, N_OF(range_keys),
					       NULL, &a->r, d);
			if (rc != 0)
				return rc;
			if (!(a->r.max >= a->r.min) || (a->r.log && !(a->r.min > 0)))
				return lsim_cfg_error(d, sw->doc, v, key, LSIM_EINVAL,
						      "the range needs min <= max (and min > 0 "
						      "with log)");
			a->range = true;
			continue;
		}
		size_t cnt = v->kind == LSIM_NODE_SEQ ? v->n : 1;
		if (cnt == 0)
			return lsim_cfg_error(d, sw->doc, v, key, LSIM_EINVAL, "no values");
		a->values = calloc(cnt, sizeof *a->values);
		a->at = calloc(cnt, sizeof *a->at);
		if (!a->values || !a->at)
			return LSIM_ENOMEM;
		a->n = cnt;
		for (size_t k = 0; k < cnt; k++) {
			const struct lsim_node *it = v->kind == LSIM_NODE_SEQ ? v->items[k] : v;
			if (it->kind != LSIM_NODE_SCALAR)
				return lsim_cfg_error(d, sw->doc, it, key, LSIM_EINVAL,
						      "value %zu is not a scalar (a list of "
						      "values, each as --set takes it)", k + 1);
			a->values[k] = it->value;
			a->at[k] = it;
		}
	}
	return 0;
}

/* The most runs a sweep may plan: each is loaded and assembled before
 * the first runs (docs/sweeps.md). */
#define LSIM_SWEEP_MAX_RUNS 100000

/* Random mode: every point's value of every axis, drawn once. */
static int draw_points(struct lsim_sweep *sw)
{
	sw->drawn = calloc(sw->n_points * sw->n_axes, sizeof *sw->drawn);
	gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
	if (!sw->drawn || !rng) {
		gsl_rng_free(rng);
		return LSIM_ENOMEM;
	}
	gsl_rng_set(rng, (unsigned long)sw->top.sample_seed);
	for (size_t p = 0; p < sw->n_points; p++)
		for (size_t k = 0; k < sw->n_axes; k++) {
			const struct axis *a = &sw->axes[k];
			char buf[64];
			if (a->range) {
				double u = gsl_rng_uniform(rng), x;
				if (a->r.log)
					x = exp(log(a->r.min) + u * (log(a->r.max) - log(a->r.min)));
				else
					x = a->r.min + u * (a->r.max - a->r.min);
				if (a->r.integer)
					snprintf(buf, sizeof buf, "%lld", (long long)llround(x));
				else
					snprintf(buf, sizeof buf, "%.6g", x);
			} else {
				snprintf(buf, sizeof buf, "%s",
					 a->values[gsl_rng_uniform_int(rng, a->n)]);
			}
			sw->drawn[p * sw->n_axes + k] = strdup(buf);
			if (!sw->drawn[p * sw->n_axes + k]) {
				gsl_rng_free(rng);
				return LSIM_ENOMEM;
			}
		}
	gsl_rng_free(rng);
	return 0;
}

int lsim_sweep_load(const char *path, struct lsim_sweep **out, struct lsim_diag *d)
{
	*out = NULL;
	struct lsim_sweep *sw = calloc(1, sizeof *sw);
	if (!sw)
		return LSIM_ENOMEM;
	int rc = lsim_doc_load_file(path, &sw->doc, d);
	if (rc == 0 && sw->doc->root->kind != LSIM_NODE_MAP)
		rc = lsim_cfg_error(d, sw->doc, sw->doc->root, "", LSIM_EINVAL,
				    "a sweep file is a map (scenario, axes, seeds, ...)");
	static const char *const sections[] = {"axes", "seeds", NULL};
	if (rc == 0)
		rc = lsim_cfg_bind(sw->doc, sw->doc->root, "", top_keys, N_OF(top_keys),
				   sections, &sw->top, d);
	if (rc == 0)
		rc = parse_seeds(sw, lsim_node_get(sw->doc->root, "seeds"), d);
	if (rc == 0)
		rc = parse_axes(sw, lsim_node_get(sw->doc->root, "axes"), d);
	if (rc == 0) {
		/* the scenario, relative to the sweep file's folder */
		const char *slash = strrchr(path, '/');
		int dl = slash ? (int)(slash - path) : 0;
		size_t len = (size_t)dl + strlen(sw->top.scenario) + 2;
		sw->scenario = malloc(len);
		if (!sw->scenario)
			rc = LSIM_ENOMEM;
		else if (sw->top.scenario[0] == '/' || !slash)
			snprintf(sw->scenario, len, "%s", sw->top.scenario);
		else
			snprintf(sw->scenario, len, "%.*s/%s", dl, path, sw->top.scenario);
	}
	if (rc == 0) {
		switch (sw->top.mode) {
		case MODE_GRID:
			sw->n_points = 1;
			for (size_t i = 0; i < sw->n_axes; i++) {
				if (sw->n_points > 100000000 / sw->axes[i].n) {
					rc = lsim_cfg_error(d, sw->doc, lsim_node_get(sw->doc->root, "axes"),
							    "axes", LSIM_ERANGE,
							    "the grid has more than 100,000,000 points");
					break;
				}
				sw->n_points *= sw->axes[i].n;
			}
			break;
		case MODE_ZIP:
			sw->n_points = sw->axes[0].n;
			for (size_t i = 1; i < sw->n_axes && rc == 0; i++)
				if (sw->axes[i].n != sw->n_points) {
					char key[300];
					snprintf(key, sizeof key, "axes.%s", sw->axes[i].key);
					rc = lsim_cfg_error(d, sw->doc, lsim_node_get(lsim_node_get(sw->doc->root, "axes"), sw->axes[i].key),
							    key, LSIM_EINVAL,
							    "zip takes the i-th value of every axis: "
							    "%zu values here, %zu on axes.%s",
							    sw->axes[i].n, sw->n_points, sw->axes[0].key);
				}
			break;
		default:
			sw->n_points = (size_t)sw->top.samples;
			rc = draw_points(sw);
			break;
		}
	}
	/* every run is loaded and checked before the first starts (about a
	 * millisecond each): past LSIM_SWEEP_MAX_RUNS that is minutes */
	if (rc == 0 && sw->n_points * (sw->n_seeds ? sw->n_seeds : 1) > LSIM_SWEEP_MAX_RUNS) {
		const char *key = sw->top.mode == MODE_RANDOM ? "samples" : "axes";
		rc = lsim_cfg_error(d, sw->doc,
				    lsim_node_get(sw->doc->root, key) ? lsim_node_get(sw->doc->root, key)
								      : sw->doc->root,
				    key, LSIM_ERANGE,
				    "%zu points x %zu seeds make %zu runs, more than the %d a "
				    "sweep may plan (docs/sweeps.md); use fewer values, or "
				    "several sweep files", sw->n_points,
				    sw->n_seeds ? sw->n_seeds : 1,
				    sw->n_points * (sw->n_seeds ? sw->n_seeds : 1),
				    LSIM_SWEEP_MAX_RUNS);
	}
	if (rc == 0) {
		sw->sets = calloc(sw->n_axes + 1, sizeof *sw->sets);
		if (!sw->sets)
			rc = LSIM_ENOMEM;
	}
	if (rc != 0) {
		lsim_sweep_destroy(sw);
		return rc;
	}
	*out = sw;
	return 0;
}

size_t lsim_sweep_n_runs(const struct lsim_sweep *sw)
{
	return sw->n_points * (sw->n_seeds ? sw->n_seeds : 1);
}

size_t lsim_sweep_n_points(const struct lsim_sweep *sw)
{
	return sw->n_points;
}

const int64_t *lsim_sweep_seeds(const struct lsim_sweep *sw, size_t *n)
{
	*n = sw->seeds ? sw->n_seeds : 0;
	return sw->seeds;
}

const char *lsim_sweep_scenario(const struct lsim_sweep *sw)
{
	return sw->scenario;
}

const char *lsim_sweep_output(const struct lsim_sweep *sw)
{
	return sw->top.output[0] ? sw->top.output : NULL;
}

/* "key=value" in a fresh string, or NULL. */
static char *assignment(const char *key, const char *value)
{
	size_t n = strlen(key) + strlen(value) + 2;
	char *s = malloc(n);
	if (s)
		snprintf(s, n, "%s=%s", key, value);
	return s;
}

/* The index into axis k's values of run i's value (grid and zip). */
static size_t value_index(const struct lsim_sweep *sw, size_t i, size_t k)
{
	size_t point = i / (sw->n_seeds ? sw->n_seeds : 1);
	if (sw->top.mode == MODE_ZIP)
		return point;
	size_t stride = sw->n_points; /* the first axis varies slowest */
	for (size_t j = 0; j <= k; j++)
		stride /= sw->axes[j].n;
	return (point / stride) % sw->axes[k].n;
}

bool lsim_sweep_where(const struct lsim_sweep *sw, size_t i, const char *key, int *line,
		      int *col, const char **axis)
{
	/* key as a scenario error names it, "instances[0].replicas" */
	char dotted[300];
	size_t m = 0;
	for (const char *c = key; *c && m + 1 < sizeof dotted; c++)
		if (*c != ']')
			dotted[m++] = *c == '[' ? '.' : *c;
	dotted[m] = '\0';
	for (size_t k = 0; k < sw->n_axes; k++) {
		const struct axis *a = &sw->axes[k];
		if (strcmp(a->key, dotted) != 0)
			continue;
		const struct lsim_node *at =
			sw->top.mode == MODE_RANDOM ? a->node : a->at[value_index(sw, i, k)];
		*line = at->line;
		*col = at->col;
		*axis = a->key;
		return true;
	}
	return false;
}

int lsim_sweep_set_base(struct lsim_sweep *sw, const char *const *sets, size_t n)
{
	char **p = realloc(sw->sets, (n + sw->n_axes + 1) * sizeof *p);
	if (!p)
		return LSIM_ENOMEM;
	sw->sets = p;
	sw->base = sets;
	sw->n_base = n;
	return 0;
}

const char *const *lsim_sweep_sets(struct lsim_sweep *sw, size_t i, size_t *n)
{
	for (size_t k = 0; k < sw->n_sets; k++)
		free(sw->sets[k]);
	sw->n_sets = 0;
	size_t ns = sw->n_seeds ? sw->n_seeds : 1;
	size_t point = i / ns;
	for (size_t k = 0; k < sw->n_base; k++) {
		sw->sets[sw->n_sets] = strdup(sw->base[k]);
		if (!sw->sets[sw->n_sets])
			return NULL;
		sw->n_sets++;
	}
	for (size_t k = 0; k < sw->n_axes; k++) {
		const struct axis *a = &sw->axes[k];
		const char *v = sw->top.mode == MODE_RANDOM ? sw->drawn[point * sw->n_axes + k]
							    : a->values[value_index(sw, i, k)];
		sw->sets[sw->n_sets] = assignment(a->key, v);
		if (!sw->sets[sw->n_sets])
			return NULL;
		sw->n_sets++;
	}
	if (sw->seeds) {
		char buf[32];
		snprintf(buf, sizeof buf, "%lld", (long long)sw->seeds[i % ns]);
		sw->sets[sw->n_sets] = assignment("seed", buf);
		if (!sw->sets[sw->n_sets])
			return NULL;
		sw->n_sets++;
	}
	*n = sw->n_sets;
	return (const char *const *)sw->sets;
}

/* ---- the sweep's database ---- */

static const char sweep_schema[] =
	"CREATE TABLE IF NOT EXISTS sweep_runs("
	" run_id TEXT PRIMARY KEY, run INTEGER, point INTEGER, seed INTEGER,"
	" dir TEXT, status TEXT);"
	"CREATE TABLE IF NOT EXISTS params("
	" run_id TEXT, key TEXT, value TEXT, PRIMARY KEY(run_id, key));";

static int db_open(const char *path, bool create, sqlite3 **db, struct lsim_diag *d)
{
	bool existed = access(path, F_OK) == 0;
	int e = sqlite3_open_v2(path, db, create ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
						 : SQLITE_OPEN_READONLY,
				NULL);
	if (e == SQLITE_OK) {
		sqlite3_busy_timeout(*db, 10000);
		/* write-ahead log, synced at checkpoints: a commit survives the
		 * process being killed (it is in the log), and the parent does
		 * not wait for the disk after every run */
		if (create && sqlite3_exec(*db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;",
					   NULL, NULL, NULL) != SQLITE_OK)
			e = SQLITE_ERROR;
		if (create && (sqlite3_exec(*db, lsim_report_sqlite_schema(), NULL, NULL, NULL) !=
				       SQLITE_OK ||
			       sqlite3_exec(*db, sweep_schema, NULL, NULL, NULL) != SQLITE_OK))
			e = SQLITE_ERROR;
	}
	if (e != SQLITE_OK) {
		int rc = lsim_diag_set(d, LSIM_EIO, path, 0, 0, "",
				       "cannot open the sweep's database: %s",
				       *db ? sqlite3_errmsg(*db) : "out of memory");
		sqlite3_close_v2(*db);
		*db = NULL;
		if (create && !existed) { /* a database it could not make: none left */
			char side[4200];
			remove(path);
			snprintf(side, sizeof side, "%s-wal", path);
			remove(side);
			snprintf(side, sizeof side, "%s-shm", path);
			remove(side);
		}
		return rc;
	}
	return 0;
}

/* Whether run id is recorded as done. */
static bool db_done(sqlite3 *db, const char *id)
{
	sqlite3_stmt *st = NULL;
	bool done = false;
	if (sqlite3_prepare_v2(db,
			       "SELECT 1 FROM sweep_runs JOIN runs USING(run_id)"
			       " WHERE run_id = ?1 AND sweep_runs.status = 'done'"
			       " AND runs.status = 'done';",
			       -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC) == SQLITE_OK)
		done = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return done;
}

/*
 * Records run i (id) from its folder's results.sqlite: its runs and
 * metrics rows, its overrides and its sweep row, in one transaction.
 */
static int db_record(sqlite3 *db, const char *outdir, const char *id, size_t i,
		     size_t point, const char *seed, const char *const *sets, size_t n_sets,
		     struct lsim_diag *d)
{
	char path[4200], dir[64];
	snprintf(dir, sizeof dir, "runs/%s", id);
	snprintf(path, sizeof path, "%s/%s/results.sqlite", outdir, dir);
	sqlite3_stmt *st = NULL;
	int e = sqlite3_prepare_v2(db, "ATTACH DATABASE ?1 AS c;", -1, &st, NULL);
	if (e == SQLITE_OK)
		e = sqlite3_bind_text(st, 1, path, -1, SQLITE_STATIC);
	if (e == SQLITE_OK)
		e = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
	sqlite3_finalize(st);
	if (e != SQLITE_OK)
		return lsim_diag_set(d, LSIM_EIO, path, 0, 0, "", "cannot read the run's results: %s",
				     sqlite3_errmsg(db));
	e = sqlite3_exec(db,
			 "BEGIN IMMEDIATE;"
			 "INSERT OR REPLACE INTO runs SELECT * FROM c.runs;"
			 "INSERT OR REPLACE INTO metrics SELECT * FROM c.metrics;",
			 NULL, NULL, NULL);
	if (e == SQLITE_OK)
		e = sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO params VALUES(?1, ?2, ?3);", -1,
				       &st, NULL);
	for (size_t k = 0; e == SQLITE_OK && k < n_sets; k++) {
		const char *eq = strchr(sets[k], '=');
		e = sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
		if (e == SQLITE_OK)
			e = sqlite3_bind_text(st, 2, sets[k], (int)(eq - sets[k]), SQLITE_STATIC);
		if (e == SQLITE_OK)
			e = sqlite3_bind_text(st, 3, eq + 1, -1, SQLITE_STATIC);
		if (e == SQLITE_OK)
			e = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
		if (e == SQLITE_OK)
			e = sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	st = NULL;
	if (e == SQLITE_OK)
		e = sqlite3_prepare_v2(db,
				       "INSERT OR REPLACE INTO sweep_runs VALUES(?1, ?2, ?3, ?4,"
				       " ?5, 'done');",
				       -1, &st, NULL);
	if (e == SQLITE_OK)
		e = sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	if (e == SQLITE_OK)
		e = sqlite3_bind_int64(st, 2, (sqlite3_int64)i);
	if (e == SQLITE_OK)
		e = sqlite3_bind_int64(st, 3, (sqlite3_int64)point);
	if (e == SQLITE_OK)
		e = seed ? sqlite3_bind_int64(st, 4, strtoll(seed, NULL, 10)) : sqlite3_bind_null(st, 4);
	if (e == SQLITE_OK)
		e = sqlite3_bind_text(st, 5, dir, -1, SQLITE_STATIC);
	if (e == SQLITE_OK)
		e = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
	sqlite3_finalize(st);
	if (e == SQLITE_OK)
		e = sqlite3_exec(db, "COMMIT;", NULL, NULL, NULL);
	int rc = 0;
	if (e != SQLITE_OK) {
		rc = lsim_diag_set(d, LSIM_EIO, outdir, 0, 0, "", "cannot record run %s: %s", id,
				   sqlite3_errmsg(db));
		sqlite3_exec(db, "ROLLBACK;", NULL, NULL, NULL);
	}
	sqlite3_exec(db, "DETACH DATABASE c;", NULL, NULL, NULL);
	return rc;
}

/* ---- files ---- */

/* Removes a run folder (files only) and the folder; 0 if it is gone. */
static int remove_dir(const char *path)
{
	DIR *dir = opendir(path);
	if (!dir)
		return errno == ENOENT ? 0 : -1;
	struct dirent *e;
	char p[4400];
	while ((e = readdir(dir)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof p, "%s/%s", path, e->d_name);
		unlink(p);
	}
	closedir(dir);
	return rmdir(path);
}

/* Removes the folders of runs a killed sweep left half-written. */
static void remove_partial(const char *runs)
{
	DIR *dir = opendir(runs);
	if (!dir)
		return;
	struct dirent *e;
	char p[4400];
	while ((e = readdir(dir)) != NULL) {
		size_t n = strlen(e->d_name);
		if (n > 4 && !strcmp(e->d_name + n - 4, ".tmp")) {
			snprintf(p, sizeof p, "%s/%s", runs, e->d_name);
			remove_dir(p);
		}
	}
	closedir(dir);
}

/* ---- running ---- */

struct opts {
	const char *sweep, *outdir;
	int jobs;
	long shard_k, shard_n; /* 1-based shard of n; n 0: all */
	bool csv, quiet;
};

/* One run in a child: simulate, write DIR/runs/ID.PID.tmp/, rename it to
 * DIR/runs/ID/. (A process of a killed sweep may still be finishing the
 * same run: the names cannot clash, and if it renamed first, its folder,
 * identical, stays.) */
static int run_child(const struct lsim_sweep *sw, const struct opts *o, const char *id,
		     const char *const *sets, size_t n_sets)
{
	struct lsim_diag d = {0};
	struct lsim_scenario *sc = NULL;
	int rc = lsim_scenario_load(lsim_sweep_scenario(sw), sets, n_sets, &sc, &d);
	const struct lsim_results *res = NULL;
	if (rc == 0)
		rc = lsim_scenario_run(sc, NULL, NULL, &res, &d);
	char tmp[4200], fin[4200], path[4300];
	snprintf(tmp, sizeof tmp, "%s/runs/%s.%ld.tmp", o->outdir, id, (long)getpid());
	snprintf(fin, sizeof fin, "%s/runs/%s", o->outdir, id);
	if (rc == 0 && (remove_dir(tmp) != 0 || mkdir(tmp, 0777) != 0))
		rc = lsim_diag_set(&d, LSIM_EIO, tmp, 0, 0, "-o", "cannot create the run's folder: %s",
				   strerror(errno));
	if (rc == 0) {
		snprintf(path, sizeof path, "%s/report.h5", tmp);
		rc = lsim_report_h5_write(path, res, &d);
	}
	if (rc == 0) {
		snprintf(path, sizeof path, "%s/results.sqlite", tmp);
		rc = lsim_report_sqlite_append(path, res, &d);
	}
	if (rc == 0 && o->csv)
		rc = lsim_report_csv_write(tmp, res, &d);
	char why[400], why_ov[400];
	bool unfinished = rc == 0 && lsim_scenario_unfinished(sc, why, sizeof why);
	bool overloaded = rc == 0 && lsim_scenario_overloaded(sc, why_ov, sizeof why_ov);
	if (rc == 0 && (remove_dir(fin) != 0 || rename(tmp, fin) != 0)) {
		struct stat st;
		if ((errno == ENOTEMPTY || errno == EEXIST) && stat(fin, &st) == 0)
			remove_dir(tmp); /* the same run, finished by another */
		else
			rc = lsim_diag_set(&d, LSIM_EIO, fin, 0, 0, "-o",
					   "cannot finish the run's folder: %s", strerror(errno));
	}
	lsim_scenario_destroy(sc);
	if (rc != 0) {
		remove_dir(tmp); /* nothing half-written stays behind */
		fprintf(stderr, "llmsim: run %s:", id);
		for (size_t k = 0; k < n_sets; k++)
			fprintf(stderr, " %s", sets[k]);
		fputc('\n', stderr);
		return lsim_cli_fail(&d, rc);
	}
	if (unfinished)
		fprintf(stderr, "llmsim: warning: run %s: %s\n", id, why);
	if (overloaded)
		fprintf(stderr, "llmsim: warning: run %s: %s\n", id, why_ov);
	return 0;
}

/* The runs of this shard: their ids (checked configurations). */
struct plan {
	size_t *run;   /* sweep run index */
	char (*id)[32];
	size_t n;
};

/* Says which run failed (at its axis where the key is one), then why;
 * returns the exit status. */
static int run_refused(const struct lsim_sweep *sw, const struct opts *o, size_t i,
		       const char *const *sets, size_t n_sets, const struct lsim_diag *d,
		       int rc)
{
	int line, col;
	const char *axis;
	if (lsim_sweep_where(sw, i, d->key, &line, &col, &axis))
		fprintf(stderr, "llmsim: %s:%d:%d: axes.%s: run %zu:", o->sweep,
			line, col, axis, i + 1);
	else
		fprintf(stderr, "llmsim: %s: run %zu:", o->sweep, i + 1);
	for (size_t k = 0; k < n_sets; k++)
		fprintf(stderr, " %s", sets[k]);
	fputc('\n', stderr);
	return lsim_cli_fail(d, rc);
}

/* Planning a large sweep takes a while: from a second on, a line on
 * stderr about once a second (not with --quiet), so it is seen working. */
static void plan_progress(const struct opts *o, const char *what, size_t k, size_t n,
			  double *last)
{
	if (o->quiet)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	double now = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
	if (*last == 0)
		*last = now; /* the first call starts the clock */
	else if (now - *last >= 1.0) {
		fprintf(stderr, "\rllmsim: %s: %s run %zu of %zu   ", o->sweep, what, k, n);
		*last = now;
	}
}

static int cmp_ids(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	int c = strcmp(x, y);
	return c ? c : (x < y ? -1 : x > y); /* then in plan order */
}

/* No two runs of the plan the same: the ids sorted (comparing every pair
 * took minutes for a long axis). Prints the pair the plan meets first:
 * the earliest run that repeats one before it, and that one. */
static int plan_duplicates(const struct opts *o, const struct plan *p)
{
	if (p->n < 2)
		return 0;
	const char **ids = malloc(p->n * sizeof *ids);
	if (!ids)
		return lsim_cli_nomem();
	for (size_t k = 0; k < p->n; k++)
		ids[k] = p->id[k];
	qsort(ids, p->n, sizeof *ids, cmp_ids);
	size_t best_a = 0, best_b = SIZE_MAX;
	for (size_t j = 1; j < p->n; j++)
		if (!strcmp(ids[j - 1], ids[j]) && (j < 2 || strcmp(ids[j - 2], ids[j]))) {
			/* a group's first two: the first run with the id, the
			 * first to repeat it */
			size_t a = (size_t)(ids[j - 1] - p->id[0]) / sizeof p->id[0];
			size_t b = (size_t)(ids[j] - p->id[0]) / sizeof p->id[0];
			if (b < best_b) {
				best_a = a;
				best_b = b;
			}
		}
	free(ids);
	if (best_b == SIZE_MAX)
		return 0;
	fprintf(stderr,
		"llmsim: %s: runs %zu and %zu have the same configuration "
		"(run id %s): two axis values mean the same\n",
		o->sweep, p->run[best_a] + 1, p->run[best_b] + 1, p->id[best_a]);
	return LSIM_EXIT_BADINPUT;
}

/* Loads every run's configuration of the shard (errors name the run), and
 * no two may be the same. With assemble, then assembles each as a run
 * would (lsim_scenario_check): what a run would refuse before its first
 * event stops the sweep before any run. */
static int plan_runs(struct lsim_sweep *sw, const struct opts *o, bool assemble,
		     struct plan *p)
{
	size_t total = lsim_sweep_n_runs(sw);
	double last = 0; /* when progress was last shown; 0: not yet */
	p->run = malloc((total ? total : 1) * sizeof *p->run);
	p->id = malloc((total ? total : 1) * sizeof *p->id);
	p->n = 0;
	if (!p->run || !p->id)
		return lsim_cli_nomem();
	for (size_t i = 0; i < total; i++) {
		if (o->shard_n > 0 && (long)(i % (size_t)o->shard_n) != o->shard_k - 1)
			continue;
		size_t n_sets = 0;
		const char *const *sets = lsim_sweep_sets(sw, i, &n_sets);
		if (!sets)
			return lsim_cli_nomem();
		struct lsim_diag d = {0};
		struct lsim_scenario *sc = NULL;
		int rc = lsim_scenario_load(lsim_sweep_scenario(sw), sets, n_sets, &sc, &d);
		if (rc != 0)
			return run_refused(sw, o, i, sets, n_sets, &d, rc);
		snprintf(p->id[p->n], sizeof p->id[p->n], "%s", lsim_scenario_run_id(sc));
		lsim_scenario_destroy(sc);
		p->run[p->n++] = i;
		plan_progress(o, "loading", i + 1, total, &last);
	}
	if (plan_duplicates(o, p) != 0)
		return LSIM_EXIT_BADINPUT;
	for (size_t k = 0; assemble && k < p->n; k++) {
		size_t n_sets = 0;
		const char *const *sets = lsim_sweep_sets(sw, p->run[k], &n_sets);
		if (!sets)
			return lsim_cli_nomem();
		struct lsim_diag d = {0};
		struct lsim_scenario *sc = NULL;
		int rc = lsim_scenario_load(lsim_sweep_scenario(sw), sets, n_sets, &sc, &d);
		if (rc == 0)
			rc = lsim_scenario_check(sc, &d);
		lsim_scenario_destroy(sc);
		if (rc != 0)
			return run_refused(sw, o, p->run[k], sets, n_sets, &d, rc);
		plan_progress(o, "checking", k + 1, p->n, &last);
	}
	if (last > 0 && !o->quiet)
		fprintf(stderr, "\r%60s\r", "");
	return 0;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The seed override of a run's sets, or NULL. */
static const char *seed_of(const char *const *sets, size_t n)
{
	return n > 0 && !strncmp(sets[n - 1], "seed=", 5) ? sets[n - 1] + 5 : NULL;
}

/* What a sweep's executor works from: the checked runs of its shard, the
 * database, the runs still to do; and its counts. */
struct farm {
	struct plan p;
	sqlite3 *db;
	size_t *todo, n_todo, done, failed;
	size_t failed_input; /* of those, runs that exited for bad input */
	char runs[4200], dbpath[4200];
	int lock_fd; /* DIR/sweep.lock, locked while the sweep runs; -1 */
};

/* Locks DIR/sweep.lock (flock, exclusive, without waiting) and writes our
 * pid in it: two sweeps on one folder would each take the other's
 * half-written runs for a killed sweep's and delete them. The lock goes
 * with the last process holding it (the sweep and its runs), also on
 * kill -9. Returns the file or -1 with a message printed. */
static int lock_folder(const char *outdir)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/sweep.lock", outdir);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0) {
		fprintf(stderr, "llmsim: %s: -o: cannot create the sweep's lock file: %s\n",
			path, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int e = errno;
		char buf[32] = {0};
		ssize_t n = e == EWOULDBLOCK ? pread(fd, buf, sizeof buf - 1, 0) : -1;
		long pid = n > 0 ? strtol(buf, NULL, 10) : 0;
		if (e != EWOULDBLOCK)
			fprintf(stderr, "llmsim: %s: -o: cannot lock the folder: %s\n", path,
				strerror(e));
		else if (pid > 0)
			fprintf(stderr,
				"llmsim: %s: -o: folder %s is in use by sweep pid %ld; wait for it "
				"to end or give another -o\n", path, outdir, pid);
		else
			fprintf(stderr,
				"llmsim: %s: -o: folder %s is in use by another sweep; wait for it "
				"to end or give another -o\n", path, outdir);
		close(fd);
		return -1;
	}
	char buf[32];
	int len = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, (size_t)len, 0) != len) {
		fprintf(stderr, "llmsim: %s: -o: cannot write the sweep's lock file: %s\n",
			path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* Plans the runs, opens the database, lists the runs not yet recorded and
 * removes half-written run folders. Returns an exit status. */
static int farm_open(struct farm *f, struct lsim_sweep *sw, const struct opts *o,
		     const char *how)
{
	memset(f, 0, sizeof *f);
	f->lock_fd = -1;
	int status = plan_runs(sw, o, true, &f->p);
	snprintf(f->runs, sizeof f->runs, "%s/runs", o->outdir);
	snprintf(f->dbpath, sizeof f->dbpath, "%s/results.sqlite", o->outdir);
	if (status == 0 && lsim_make_dirs(f->runs) != 0) {
		fprintf(stderr, "llmsim: %s: -o: cannot create the output folder: %s\n",
			f->runs, strerror(errno));
		status = LSIM_EXIT_BADINPUT;
	}
	if (status == 0 && (f->lock_fd = lock_folder(o->outdir)) < 0)
		status = LSIM_EXIT_BADINPUT;
	struct lsim_diag d = {0};
	if (status == 0 && db_open(f->dbpath, true, &f->db, &d) != 0)
		status = lsim_cli_fail(&d, LSIM_EIO);
	f->todo = status == 0 ? malloc((f->p.n ? f->p.n : 1) * sizeof *f->todo) : NULL;
	if (status == 0 && !f->todo)
		status = lsim_cli_nomem();
	if (status == 0) {
		remove_partial(f->runs);
		for (size_t k = 0; k < f->p.n; k++)
			if (!db_done(f->db, f->p.id[k]))
				f->todo[f->n_todo++] = k;
		if (!o->quiet)
			printf("sweep %s: %zu runs, %zu already done, %zu to run %s\n", o->sweep,
			       f->p.n, f->p.n - f->n_todo, f->n_todo, how);
		fflush(stdout);
	}
	return status;
}

/* Run k of the plan ended with exit status st (after dt seconds, on
 * rank: -1 for a local process): recorded if it succeeded, counted as
 * failed otherwise. Returns an exit status (nonzero: the database failed). */
static int farm_record(struct farm *f, struct lsim_sweep *sw, const struct opts *o, size_t k,
		       int st, double dt, int rank)
{
	size_t n_sets = 0;
	const char *const *sets = lsim_sweep_sets(sw, f->p.run[k], &n_sets);
	if (!sets || st != 0) {
		f->failed++;
		f->failed_input += st == LSIM_EXIT_BADINPUT;
		return 0;
	}
	struct lsim_diag rd = {0};
	if (db_record(f->db, o->outdir, f->p.id[k], f->p.run[k],
		      f->p.run[k] / (sw->n_seeds ? sw->n_seeds : 1), seed_of(sets, n_sets), sets,
		      n_sets, &rd) != 0)
		return lsim_cli_fail(&rd, LSIM_EIO);
	f->done++;
	if (!o->quiet) {
		printf("[%zu/%zu] run %s done", f->done + f->failed, f->n_todo, f->p.id[k]);
		if (rank >= 0)
			printf(" on rank %d:", rank);
		else
			printf(" in %.2f s:", dt);
		for (size_t j = 0; j < n_sets; j++)
			printf(" %s", sets[j]);
		putchar('\n');
		fflush(stdout);
	}
	return 0;
}

/* The closing line, the exit status, and the resources. */
static int farm_close(struct farm *f, const struct opts *o, int status)
{
	if (status == 0 && !o->quiet)
		printf("sweep %s: %zu runs done, %zu failed; results in %s\n", o->sweep, f->done,
		       f->failed, f->dbpath);
	/* 2 when every run failed on its input or on the machine, 1 when one
	 * crashed */
	if (status == 0 && f->failed > 0)
		status = f->failed_input == f->failed ? LSIM_EXIT_BADINPUT : LSIM_EXIT_INTERNAL;
	free(f->todo);
	sqlite3_close_v2(f->db);
	if (f->lock_fd >= 0)
		close(f->lock_fd);
	free(f->p.run);
	free(f->p.id);
	return status;
}

static int sweep_run(struct lsim_sweep *sw, const struct opts *o)
{
	struct farm f;
	char how[64];
	snprintf(how, sizeof how, "with %d process%s", o->jobs, o->jobs > 1 ? "es" : "");
	int status = farm_open(&f, sw, o, how);
	struct plan p = f.p;
	size_t *todo = f.todo, n_todo = f.n_todo;
	struct child {
		pid_t pid;
		size_t k;
		double t0;
	} *kids = status == 0 ? calloc((size_t)o->jobs, sizeof *kids) : NULL;
	size_t next = 0, active = 0;
	/* a run that ended, to record once its slot is busy again */
	struct ended {
		bool have;
		size_t k;
		int st;
		double dt;
	} fin = {0};
	while (status == 0 && kids && (next < n_todo || active > 0 || fin.have)) {
		while (active < (size_t)o->jobs && next < n_todo) {
			size_t k = todo[next++];
			size_t n_sets = 0;
			const char *const *sets = lsim_sweep_sets(sw, p.run[k], &n_sets);
			if (!sets) {
				status = lsim_cli_nomem();
				break;
			}
			fflush(stdout);
			fflush(stderr);
			pid_t pid = fork();
			if (pid == 0)
				_exit(run_child(sw, o, p.id[k], sets, n_sets));
			if (pid < 0) {
				fprintf(stderr, "llmsim: cannot start a run: %s\n", strerror(errno));
				status = LSIM_EXIT_NOROOM;
				break;
			}
			size_t slot = 0;
			while (kids[slot].pid != 0)
				slot++;
			kids[slot] = (struct child){pid, k, now_s()};
			active++;
		}
		if (status != 0)
			break;
		if (fin.have) {
			fin.have = false;
			int code = WIFEXITED(fin.st) ? WEXITSTATUS(fin.st) : 1;
			status = farm_record(&f, sw, o, fin.k, code, fin.dt, -1);
			if (status != 0)
				break;
		}
		if (active == 0)
			continue;
		int st = 0;
		pid_t pid = waitpid(-1, &st, 0);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "llmsim: waiting for the runs: %s\n", strerror(errno));
			status = LSIM_EXIT_NOROOM;
			break;
		}
		size_t slot = 0;
		while (slot < (size_t)o->jobs && kids[slot].pid != pid)
			slot++;
		if (slot == (size_t)o->jobs)
			continue;
		fin = (struct ended){true, kids[slot].k, st, now_s() - kids[slot].t0};
		kids[slot].pid = 0;
		active--;
	}
	/* after an error, let the runs in flight finish: nothing half-recorded */
	while (kids && active > 0) {
		if (wait(NULL) < 0 && errno != EINTR)
			break;
		active--;
	}
	free(kids);
	return farm_close(&f, o, status);
}

#ifdef LSIM_HAVE_MPI
/* ---- the MPI task farm ---- */

/* What rank 0 sends a worker: a run (its index in the plan, in the sweep,
 * and its id), or k -1: stop. */
struct farm_work {
	int64_t k, run;
	char id[32];
};

/*
 * Under mpirun with more than one rank: rank 0 plans, deals out the runs
 * not yet recorded one at a time to the ranks that ask, and alone records
 * each when its rank reports it done; the other ranks run them (in
 * process, into DIR/runs/ID/ as the local pool does).
 */
static int sweep_run_mpi(struct lsim_sweep *sw, const struct opts *o, int rank, int size)
{
	int status = 0;
	struct farm f;
	memset(&f, 0, sizeof f);
	if (rank == 0) {
		char how[64];
		snprintf(how, sizeof how, "on %d MPI workers", size - 1);
		status = farm_open(&f, sw, o, how);
	}
	MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (status != 0)
		return farm_close(&f, o, status);
	if (rank == 0) {
		size_t next = 0;
		int workers = size - 1;
		while (workers > 0) {
			int64_t msg[2]; /* plan index (-1: ready), exit status */
			MPI_Status ms;
			MPI_Recv(msg, 2, MPI_INT64_T, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &ms);
			if (msg[0] >= 0 && status == 0)
				status = farm_record(&f, sw, o, (size_t)msg[0], (int)msg[1], 0,
						     ms.MPI_SOURCE);
			struct farm_work w = {.k = -1, .run = -1};
			if (status == 0 && next < f.n_todo) {
				size_t k = f.todo[next++];
				w.k = (int64_t)k;
				w.run = (int64_t)f.p.run[k];
				snprintf(w.id, sizeof w.id, "%s", f.p.id[k]);
			} else {
				workers--;
			}
			MPI_Send(&w, (int)sizeof w, MPI_BYTE, ms.MPI_SOURCE, 1, MPI_COMM_WORLD);
		}
		return farm_close(&f, o, status);
	}
	int64_t msg[2] = {-1, 0};
	for (;;) {
		struct farm_work w;
		MPI_Send(msg, 2, MPI_INT64_T, 0, 2, MPI_COMM_WORLD);
		MPI_Recv(&w, (int)sizeof w, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		if (w.k < 0)
			break;
		/* every rank loaded the same sweep: the same overrides */
		size_t n_sets = 0;
		const char *const *sets = lsim_sweep_sets(sw, (size_t)w.run, &n_sets);
		msg[0] = w.k;
		msg[1] = sets ? run_child(sw, o, w.id, sets, n_sets) : lsim_cli_nomem();
	}
	return 0;
}
#endif

static int sweep_status(struct lsim_sweep *sw, const struct opts *o)
{
	struct plan p = {0};
	int status = plan_runs(sw, o, false, &p);
	char dbpath[4200];
	snprintf(dbpath, sizeof dbpath, "%s/results.sqlite", o->outdir);
	sqlite3 *db = NULL;
	struct lsim_diag d = {0};
	size_t done = 0, shown = 0;
	struct stat stb;
	bool have = stat(dbpath, &stb) == 0;
	if (status == 0 && have && db_open(dbpath, false, &db, &d) != 0)
		status = lsim_cli_fail(&d, LSIM_EIO);
	for (size_t k = 0; status == 0 && k < p.n; k++) {
		if (db && db_done(db, p.id[k])) {
			done++;
			continue;
		}
		if (shown++ < 10) {
			size_t n_sets = 0;
			const char *const *sets = lsim_sweep_sets(sw, p.run[k], &n_sets);
			printf("  to run: %s", p.id[k]);
			for (size_t j = 0; sets && j < n_sets; j++)
				printf(" %s", sets[j]);
			putchar('\n');
		}
	}
	if (status == 0)
		printf("sweep %s: %zu runs, %zu done, %zu to run (%s)\n", o->sweep, p.n, done,
		       p.n - done, dbpath);
	sqlite3_close_v2(db);
	free(p.run);
	free(p.id);
	return status;
}

/* Merges shard folders into outdir: their database rows, and their run
 * folders moved under outdir/runs (left in place, by absolute path, if
 * they are on another file system). */
static int sweep_merge(const char *outdir, char **shards, int n)
{
	char runs[4200], dbpath[4200];
	snprintf(runs, sizeof runs, "%s/runs", outdir);
	snprintf(dbpath, sizeof dbpath, "%s/results.sqlite", outdir);
	if (lsim_make_dirs(runs) != 0) {
		fprintf(stderr, "llmsim: %s: -o: cannot create the output folder: %s\n", runs,
			strerror(errno));
		return LSIM_EXIT_BADINPUT;
	}
	sqlite3 *db = NULL;
	struct lsim_diag d = {0};
	if (db_open(dbpath, true, &db, &d) != 0)
		return lsim_cli_fail(&d, LSIM_EIO);
	int status = 0;
	size_t total = 0;
	for (int s = 0; s < n && status == 0; s++) {
		char src[4200];
		snprintf(src, sizeof src, "%s/results.sqlite", shards[s]);
		struct stat stb;
		sqlite3_stmt *st = NULL;
		if (stat(src, &stb) != 0) {
			fprintf(stderr, "llmsim: %s: no sweep results here (%s)\n", shards[s],
				strerror(errno));
			status = LSIM_EXIT_BADINPUT;
			break;
		}
		int e = sqlite3_prepare_v2(db, "ATTACH DATABASE ?1 AS s;", -1, &st, NULL);
		if (e == SQLITE_OK)
			e = sqlite3_bind_text(st, 1, src, -1, SQLITE_STATIC);
		if (e == SQLITE_OK)
			e = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
		sqlite3_finalize(st);
		st = NULL;
		/* move the run folders first: a row is merged only with its folder */
		if (e == SQLITE_OK)
			e = sqlite3_prepare_v2(db,
					       "SELECT run_id, dir FROM s.sweep_runs WHERE status = 'done';",
					       -1, &st, NULL);
		while (e == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
			const char *id = (const char *)sqlite3_column_text(st, 0);
			const char *dir = (const char *)sqlite3_column_text(st, 1);
			char from[4400], to[4400];
			if (!id || !dir)
				continue;
			snprintf(from, sizeof from, "%s/%s", shards[s], dir);
			snprintf(to, sizeof to, "%s/runs/%s", outdir, id);
			if (strcmp(from, to) != 0 && stat(to, &stb) != 0 && rename(from, to) != 0) {
				fprintf(stderr, "llmsim: cannot move %s to %s: %s\n", from, to,
					strerror(errno));
				status = LSIM_EXIT_NOROOM;
				break;
			}
			total++;
		}
		sqlite3_finalize(st);
		if (e == SQLITE_OK && status == 0)
			e = sqlite3_exec(db,
					 "BEGIN IMMEDIATE;"
					 "INSERT OR REPLACE INTO runs SELECT * FROM s.runs;"
					 "INSERT OR REPLACE INTO metrics SELECT * FROM s.metrics;"
					 "INSERT OR REPLACE INTO params SELECT * FROM s.params;"
					 "INSERT OR REPLACE INTO sweep_runs SELECT run_id, run, point, seed,"
					 " 'runs/' || run_id, status FROM s.sweep_runs;"
					 "COMMIT;",
					 NULL, NULL, NULL);
		if (e != SQLITE_OK && status == 0) {
			fprintf(stderr, "llmsim: %s: cannot merge %s: %s\n", dbpath, src,
				sqlite3_errmsg(db));
			sqlite3_exec(db, "ROLLBACK;", NULL, NULL, NULL);
			status = LSIM_EXIT_NOROOM;
		}
		sqlite3_exec(db, "DETACH DATABASE s;", NULL, NULL, NULL);
	}
	if (status == 0)
		printf("merged %d shard%s: %zu runs in %s\n", n, n == 1 ? "" : "s", total, dbpath);
	sqlite3_close_v2(db);
	return status;
}

static const char usage_sweep[] =
	"usage: llmsim sweep SWEEP.yaml [-o DIR] [--jobs N] [--shard K/N] [--set key=value]... [--csv] [--quiet]\n"
	"       llmsim sweep status SWEEP.yaml [-o DIR] [--shard K/N] [--set key=value]...\n"
	"       llmsim sweep merge -o DIR SHARD_DIR...\n"
	"\n"
	"Runs every run of the sweep (the base scenario with each point of its axes\n"
	"and each seed) that DIR/results.sqlite does not hold yet, N at a time (default\n"
	"1), each into DIR/runs/RUN_ID/ (report.h5, results.sqlite; --csv adds the\n"
	"CSV files), and records it in DIR/results.sqlite: tables runs, metrics,\n"
	"params (each run's overrides) and sweep_runs. Killed at any point, the same\n"
	"command resumes: recorded runs are skipped, half-written ones redone.\n"
	"--shard K/N runs runs K, K + N, K + 2N ... (1-based) for a job array;\n"
	"merge gathers the shards' folders into DIR. status counts what is left.\n"
	"--set key=value applies to every run before its axes (an axis on the same\n"
	"key wins), as `llmsim run --set` does: a policy key set to a name switches\n"
	"the policy (--set adaptor=threshold --set adaptor.high=0.8).\n"
#ifdef LSIM_HAVE_MPI
	"Under mpirun (this build has MPI), rank 0 deals the runs out to the other\n"
	"ranks and alone writes the database: mpirun -n 9 llmsim sweep SWEEP.yaml.\n"
#endif
	"DIR defaults to the sweep file's output. Sweep file: docs/sweeps.md.\n";

int lsim_cli_sweep(int argc, char **argv)
{
	struct opts o = {.jobs = 1};
	const char *sub = argc > 1 ? argv[1] : NULL;
	bool status = sub && !strcmp(sub, "status"), merge = sub && !strcmp(sub, "merge");
	char **shards = calloc((size_t)argc + 1, sizeof *shards);
	const char **base = calloc((size_t)argc + 1, sizeof *base);
	int n_shards = 0;
	size_t n_base = 0;
	if (!shards || !base) {
		free(shards);
		free(base);
		return lsim_cli_nomem();
	}
	for (int i = status || merge ? 2 : 1; i < argc; i++) {
		const char *a = argv[i];
		char *end;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage_sweep, stdout);
			free(shards);
			free(base);
			return 0;
		} else if (!strcmp(a, "-o") && i + 1 < argc) {
			o.outdir = argv[++i];
		} else if (!strcmp(a, "--jobs") && i + 1 < argc && !status && !merge) {
			long v = strtol(argv[++i], &end, 10);
			if (*end || v < 1 || v > 4096) {
				fprintf(stderr, "llmsim: --jobs: '%s' is not a number of processes (1 to 4096)\n",
					argv[i]);
				free(shards);
				free(base);
				return LSIM_EXIT_BADINPUT;
			}
			o.jobs = (int)v;
		} else if (!strcmp(a, "--shard") && i + 1 < argc && !merge) {
			const char *s = argv[++i];
			o.shard_k = strtol(s, &end, 10);
			o.shard_n = *end == '/' ? strtol(end + 1, &end, 10) : 0;
			if (*end || o.shard_n < 1 || o.shard_k < 1 || o.shard_k > o.shard_n) {
				fprintf(stderr, "llmsim: --shard: '%s' is not K/N with 1 <= K <= N\n", s);
				free(shards);
				free(base);
				return LSIM_EXIT_BADINPUT;
			}
		} else if (!strcmp(a, "--set") && i + 1 < argc && !merge) {
			base[n_base++] = argv[++i];
		} else if (!strcmp(a, "--csv") && !status && !merge) {
			o.csv = true;
		} else if (!strcmp(a, "--quiet") && !status && !merge) {
			o.quiet = true;
		} else if (a[0] == '-' || (!merge && o.sweep)) {
			fprintf(stderr, "llmsim: unexpected argument '%s'\n%s", a, usage_sweep);
			free(shards);
			free(base);
			return LSIM_EXIT_BADINPUT;
		} else if (merge) {
			shards[n_shards++] = argv[i];
		} else {
			o.sweep = a;
		}
	}
	if (merge) {
		int rc;
		if (!o.outdir || n_shards == 0) {
			fprintf(stderr, "llmsim: sweep merge needs -o DIR and shard folders\n%s",
				usage_sweep);
			rc = LSIM_EXIT_BADINPUT;
		} else {
			rc = sweep_merge(o.outdir, shards, n_shards);
		}
		free(shards);
		free(base);
		return rc;
	}
	free(shards);
	if (!o.sweep) {
		fprintf(stderr, "llmsim: missing SWEEP.yaml\n%s", usage_sweep);
		free(base);
		return LSIM_EXIT_BADINPUT;
	}
	struct lsim_diag d = {0};
	struct lsim_sweep *sw = NULL;
	int rc = lsim_sweep_load(o.sweep, &sw, &d);
	if (rc == 0)
		rc = lsim_sweep_set_base(sw, base, n_base);
	if (rc != 0) {
		lsim_sweep_destroy(sw);
		free(base);
		return lsim_cli_fail(&d, rc);
	}
	if (!o.outdir)
		o.outdir = lsim_sweep_output(sw) ? lsim_sweep_output(sw) : "llmsim-sweep";
#ifdef LSIM_HAVE_MPI
	/* under mpirun (Open MPI or a PMI launcher such as srun): the farm */
	if (!status && (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE"))) {
		int size = 1, rank = 0;
		MPI_Init(NULL, NULL);
		MPI_Comm_size(MPI_COMM_WORLD, &size);
		MPI_Comm_rank(MPI_COMM_WORLD, &rank);
		if (size > 1)
			rc = sweep_run_mpi(sw, &o, rank, size);
		else
			rc = sweep_run(sw, &o);
		/* every rank exits with rank 0's status */
		MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
		MPI_Finalize();
		lsim_sweep_destroy(sw);
		free(base);
		return rc;
	}
#endif
	rc = status ? sweep_status(sw, &o) : sweep_run(sw, &o);
	lsim_sweep_destroy(sw);
	free(base);
	return rc;
}
