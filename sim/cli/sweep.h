/*
 * sweep.h - policy sweeps: a sweep file (a base scenario, axes over any
 * scenario key as a grid, zipped or randomly sampled, and seeds), its runs
 * with stable ids, and `llmsim sweep`: a local process pool that runs the
 * runs not yet recorded into DIR/runs/ID/ and records each in
 * DIR/results.sqlite in one transaction (so a killed sweep resumes where
 * it stopped), shards for job arrays, merge and status. docs/sweeps.md.
 */
#ifndef LLMSIM_SWEEP_H
#define LLMSIM_SWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "llmsim/llmsim.h"

struct lsim_sweep;

/* Loads and checks a sweep file (errors name file, line and key). */
int lsim_sweep_load(const char *path, struct lsim_sweep **out, struct lsim_diag *d);
void lsim_sweep_destroy(struct lsim_sweep *sw);

/* Runs: points x seeds, point-major. */
size_t lsim_sweep_n_runs(const struct lsim_sweep *sw);
size_t lsim_sweep_n_points(const struct lsim_sweep *sw);

/* The seeds (*n of them), or NULL (*n 0) for the scenario's own. */
const int64_t *lsim_sweep_seeds(const struct lsim_sweep *sw, size_t *n);

/*
 * The overrides of run i ("key=value" strings: the base ones, the axes',
 * the seed's last), valid
 * until the next call or destroy; *n gets their count.
 */
const char *const *lsim_sweep_sets(struct lsim_sweep *sw, size_t i, size_t *n);

/*
 * Overrides applied to every run before its axes and seed (`llmsim sweep
 * --set`): the strings are borrowed and must outlive sw. They change the
 * runs' ids, and params records them with each run.
 */
int lsim_sweep_set_base(struct lsim_sweep *sw, const char *const *sets, size_t n);

/*
 * Where in the sweep file run i's value of the scenario key an error names
 * ("instances[0].replicas") is written: its line and column, and the axis
 * (*axis, valid while sw lives). false when no axis sets that key.
 */
bool lsim_sweep_where(const struct lsim_sweep *sw, size_t i, const char *key, int *line,
		      int *col, const char **axis);

/* The base scenario's path (resolved against the sweep file's folder). */
const char *lsim_sweep_scenario(const struct lsim_sweep *sw);

/* The output folder the file names (NULL: none). */
const char *lsim_sweep_output(const struct lsim_sweep *sw);

/* `llmsim sweep ...` (prints; returns the exit status). */
int lsim_cli_sweep(int argc, char **argv);

/* `llmsim report DIR ...`: a sweep's configurations with means and 95%
 * confidence intervals across seeds (sweep_report.c). */
int lsim_cli_report(int argc, char **argv);

/* `llmsim search FILE --slo ...`: the highest rate meeting the SLOs per
 * configuration (search.c). */
int lsim_cli_search(int argc, char **argv);

#endif
