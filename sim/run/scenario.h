/*
 * scenario.h - a run assembled from a scenario YAML file: validated
 * configuration (every key declared once in a table), hardware profiles
 * and models loaded, instances placed on the cluster, the workload opened,
 * and the results of running it.
 */
#ifndef LLMSIM_SCENARIO_H
#define LLMSIM_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel/config.h"
#include "report/report.h"

struct lsim_scenario;

/* Loads and validates path with "key.path=value" overrides applied. */
int lsim_scenario_load(const char *path, const char *const *overrides,
		       size_t n_overrides, struct lsim_scenario **out,
		       struct lsim_diag *d);
void lsim_scenario_destroy(struct lsim_scenario *sc);

/* The effective configuration as YAML (all keys, defaults filled in). */
const char *lsim_scenario_effective(const struct lsim_scenario *sc);

/* One comment line per engine instance group: its vLLM memory plan (the
 * terms per GPU and the KV blocks they leave), for `check` to print. The
 * caller frees the text; NULL when out of memory. */
char *lsim_scenario_memory_plans(const struct lsim_scenario *sc);
/* With a cluster, one comment line of the PCIe and NVLink layout its
 * links take (the network keys, those left at 0 from the GPU profile),
 * for `check` to print; "" without one. The caller frees the text; NULL
 * when out of memory. */
char *lsim_scenario_network_summary(const struct lsim_scenario *sc);
uint64_t lsim_scenario_seed(const struct lsim_scenario *sc);
/* Stable id of the run: 16 hex digits of a hash of the effective config
 * (seed included, file paths left out) and of the contents of the files
 * it reads (hardware profiles, model entries, perf tables, traces, ...). */
const char *lsim_scenario_run_id(const struct lsim_scenario *sc);
/* The overrides that make the run factor times longer: the workload's
 * request count and arrival window (a generator) or its passes (a trace,
 * workload.repeat), and the run's duration if it has one; up to three
 * into sets, *n of them. LSIM_ERANGE when a count would overflow. */
int lsim_scenario_longer(const struct lsim_scenario *sc, int64_t factor,
			 char sets[][64], size_t *n);
/* Whether a QoS class declares a target (classes[].ttft, tpot or e2e):
 * slo_attainment and goodput_rps are defined only then. */
bool lsim_scenario_declares_slo(const struct lsim_scenario *sc);
/* GPUs of the scenario's cluster (0 without one). */
int64_t lsim_scenario_gpus(const struct lsim_scenario *sc);

/*
 * Assembles the run as lsim_scenario_run would (links, instances with
 * their memory, jobs, the workload opened) without simulating, and takes
 * it down again: a scenario this accepts meets no refusal before the
 * run's first event. `llmsim check`.
 */
int lsim_scenario_check(struct lsim_scenario *sc, struct lsim_diag *d);

/* Where a run is: reported every 2^16 events. */
struct lsim_progress {
	double sim_s;	   /* simulated time */
	uint64_t done;	   /* requests ended (finished, rejected, failed) */
	uint64_t arrived;  /* requests arrived so far */
	uint64_t events;   /* events simulated so far */
	/* share of the run's input in [0, 1]: the workload read (a
	 * generator's count or duration, a trace's bytes, repetitions), or the
	 * simulated time against `duration`, whichever is further; -1 when
	 * neither can tell. Requests still in flight when the input is all
	 * read are shown by done < arrived. */
	double fraction;
};

typedef void (*lsim_progress_fn)(void *ctx, const struct lsim_progress *p);

/*
 * Runs the scenario once. *res points into memory owned by sc, valid until
 * lsim_scenario_destroy. progress may be NULL.
 */
int lsim_scenario_run(struct lsim_scenario *sc, lsim_progress_fn progress,
		      void *progress_ctx, const struct lsim_results **res,
		      struct lsim_diag *d);

/*
 * After a run that left requests (or training jobs) unfinished: writes
 * "N of M requests unfinished at the end of the run (why)" into buf - it
 * stopped at duration with them in flight, no serving instance was left,
 * or they stalled with no event left - and returns true; false when every
 * request and job ended (or before any run). The summary's unfinished
 * field holds the count.
 */
bool lsim_scenario_unfinished(const struct lsim_scenario *sc, char *buf, size_t size);
/*
 * After a run with overloaded instances (steady.h: a waiting queue that
 * grew through the run), writes "N of M instances overloaded: ..." naming
 * the worst one and its queue, and returns true; false when none was (or
 * before any run). The summary's overloaded_instances field holds N.
 */
bool lsim_scenario_overloaded(const struct lsim_scenario *sc, char *buf, size_t size);

/* Appends the Markdown reference of every scenario key to b. */
void lsim_scenario_reference(struct lsim_buf *b);

#endif
