/*
 * report_sqlite.c - appends one run to a SQLite results database: a row
 * in `runs` (provenance, effective config, status, host time) and one row
 * per summary field in `metrics`. The tables are created if missing; the
 * run is written in one transaction, replacing an earlier run with the
 * same id; a database created by a call that fails is removed. Schema in
 * docs/output.md.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#include <sqlite3.h>

#include "report/report.h"

static const char schema_sql[] =
	"CREATE TABLE IF NOT EXISTS runs("
	" run_id TEXT PRIMARY KEY, scenario TEXT, seed INTEGER, version TEXT,"
	" hw_profile TEXT, hw_source TEXT, perf_model TEXT, config_yaml TEXT,"
	" status TEXT, wall_s REAL);"
	"CREATE TABLE IF NOT EXISTS metrics("
	" run_id TEXT, name TEXT, value REAL, unit TEXT,"
	" PRIMARY KEY(run_id, name));";

static const char run_sql[] =
	"INSERT OR REPLACE INTO runs(run_id, scenario, seed, version,"
	" hw_profile, hw_source, perf_model, config_yaml, status, wall_s)"
	" VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'done', ?9);";

static const char metric_sql[] =
	"INSERT OR REPLACE INTO metrics(run_id, name, value, unit)"
	" VALUES(?1, ?2, ?3, ?4);";

const char *lsim_report_sqlite_schema(void)
{
	return schema_sql;
}

static int db_fail(sqlite3 *db, const char *path, const char *what,
		   struct lsim_diag *d)
{
	return lsim_diag_set(d, LSIM_EIO, path, 0, 0, "", "%s: %s", what,
			     db ? sqlite3_errmsg(db) : "out of memory");
}

static int bind_text(sqlite3_stmt *st, int i, const char *s)
{
	return sqlite3_bind_text(st, i, s ? s : "", -1, SQLITE_STATIC);
}

/* A real, or NULL for NaN (a metric that is not defined, such as
 * slo_attainment without a declared SLO). */
static int bind_real(sqlite3_stmt *st, int i, double x)
{
	return isnan(x) ? sqlite3_bind_null(st, i) : sqlite3_bind_double(st, i, x);
}

/* Inserts the runs row; returns an SQLite result code. */
static int insert_run(sqlite3 *db, const struct lsim_results *r)
{
	const struct lsim_run_info *in = &r->info;
	sqlite3_stmt *st = NULL;
	int e = sqlite3_prepare_v2(db, run_sql, -1, &st, NULL);
	if (e == SQLITE_OK)
		e = bind_text(st, 1, in->run_id);
	if (e == SQLITE_OK)
		e = bind_text(st, 2, in->scenario);
	/* SQLite integers are signed: a seed above INT64_MAX reads back as
	 * its two's-complement value. */
	if (e == SQLITE_OK)
		e = sqlite3_bind_int64(st, 3, (sqlite3_int64)in->seed);
	if (e == SQLITE_OK)
		e = bind_text(st, 4, in->version);
	if (e == SQLITE_OK)
		e = bind_text(st, 5, in->hw_profile);
	if (e == SQLITE_OK)
		e = bind_text(st, 6, in->hw_source);
	if (e == SQLITE_OK)
		e = bind_text(st, 7, in->perf_model);
	if (e == SQLITE_OK)
		e = bind_text(st, 8, in->config_yaml);
	if (e == SQLITE_OK)
		e = sqlite3_bind_double(st, 9, r->wall_s);
	if (e == SQLITE_OK)
		e = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
	sqlite3_finalize(st);
	return e;
}

/* One metrics row through the prepared metric_sql statement, reset
 * after; returns an SQLite result code. */
static int insert_metric(sqlite3_stmt *st, const char *id, const char *name,
			 double value, const char *unit)
{
	int e = bind_text(st, 1, id);
	if (e == SQLITE_OK)
		e = bind_text(st, 2, name);
	if (e == SQLITE_OK)
		e = bind_real(st, 3, value);
	if (e == SQLITE_OK)
		e = bind_text(st, 4, unit);
	if (e == SQLITE_OK)
		e = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
	if (e == SQLITE_OK)
		e = sqlite3_reset(st);
	return e;
}

/* Replaces the metrics rows of the run; returns an SQLite result code. */
static int insert_metrics(sqlite3 *db, const struct lsim_results *r)
{
	const char *id = r->info.run_id ? r->info.run_id : "";
	sqlite3_stmt *st = NULL;
	int e = sqlite3_prepare_v2(db, "DELETE FROM metrics WHERE run_id = ?1;",
				   -1, &st, NULL);
	if (e == SQLITE_OK)
		e = bind_text(st, 1, id);
	if (e == SQLITE_OK)
		e = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
	sqlite3_finalize(st);
	st = NULL;
	if (e == SQLITE_OK)
		e = sqlite3_prepare_v2(db, metric_sql, -1, &st, NULL);
	/* one row per field of each group written, through its pointer g */
#define LSIM_X_METRIC(name, unit, help)                                       \
	if (e == SQLITE_OK)                                                   \
		e = insert_metric(st, id, #name, g->name, unit);
	{
		const struct lsim_summary *g = &r->summary;
		LSIM_SUMMARY_FIELDS(LSIM_X_METRIC)
	}
	if (r->has_serverless) {
		const struct lsim_serverless_summary *g = &r->serverless;
		LSIM_SERVERLESS_FIELDS(LSIM_X_METRIC)
	}
	if (r->has_kv_offload) {
		const struct lsim_kv_offload_summary *g = &r->kv_offload;
		LSIM_KV_OFFLOAD_FIELDS(LSIM_X_METRIC)
	}
	if (r->has_lora) {
		const struct lsim_lora_summary *g = &r->lora;
		LSIM_LORA_FIELDS(LSIM_X_METRIC)
	}
#undef LSIM_X_METRIC
	sqlite3_finalize(st);
	return e;
}

int lsim_report_sqlite_append(const char *path, const struct lsim_results *r,
			      struct lsim_diag *d)
{
	if (!path || !r)
		return lsim_diag_set(d, LSIM_EINVAL, path ? path : "", 0, 0, "",
				     "missing database path or results");
	bool existed = access(path, F_OK) == 0;
	sqlite3 *db = NULL;
	int e = sqlite3_open_v2(path, &db,
				SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
	if (e != SQLITE_OK) {
		int rc = db_fail(db, path, "cannot open the results database", d);
		sqlite3_close_v2(db);
		if (!existed)
			remove(path);
		return rc;
	}
	sqlite3_busy_timeout(db, 5000);
	int rc = 0;
	if (sqlite3_exec(db, schema_sql, NULL, NULL, NULL) != SQLITE_OK)
		rc = db_fail(db, path, "cannot create the tables", d);
	else if (sqlite3_exec(db, "BEGIN IMMEDIATE;", NULL, NULL, NULL) !=
		 SQLITE_OK)
		rc = db_fail(db, path, "cannot begin a transaction", d);
	else if (insert_run(db, r) != SQLITE_OK ||
		 insert_metrics(db, r) != SQLITE_OK ||
		 sqlite3_exec(db, "COMMIT;", NULL, NULL, NULL) != SQLITE_OK) {
		rc = db_fail(db, path, "cannot store the run", d);
		sqlite3_exec(db, "ROLLBACK;", NULL, NULL, NULL);
	}
	if (sqlite3_close_v2(db) != SQLITE_OK && rc == 0)
		rc = lsim_diag_set(d, LSIM_EIO, path, 0, 0, "",
				   "cannot close the results database");
	if (rc != 0 && !existed) /* no empty or half-made database left */
		remove(path);
	return rc;
}
