/*
 * serve.c - end-to-end speed of a serving simulation: loads a scenario,
 * runs it, and prints `bench serve NAME requests=N sim_s=S wall_s=W
 * requests_per_s=R events_per_s=E speedup=X peak_rss_mb=M` (speedup =
 * simulated seconds per host second); a NAME starting with "e2e" also
 * prints the line `bench e2e requests=N wall_s=X req_per_s=X
 * events_per_s=X peak_rss_mb=X`, and a NAME starting with "fleet" the
 * cluster-scale line `bench fleet gpus=N sim_hours=X wall_s=X requests=N
 * jobs=N events=N events_per_s=X peak_rss_mb=X`.
 * Usage: serve NAME SCENARIO [key=value ...]
 */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "run/scenario.h"

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: serve NAME SCENARIO [key=value ...]\n");
		return 2;
	}
	struct lsim_diag d = {0};
	struct lsim_scenario *sc = NULL;
	int rc = lsim_scenario_load(argv[2], (const char *const *)argv + 3,
				    (size_t)argc - 3, &sc, &d);
	const struct lsim_results *r = NULL;
	if (rc == 0)
		rc = lsim_scenario_run(sc, NULL, NULL, &r, &d);
	if (rc != 0) {
		char buf[1400];
		lsim_diag_format(&d, buf, sizeof buf);
		fprintf(stderr, "serve: %s\n", buf);
		lsim_scenario_destroy(sc);
		return 1;
	}
	double sim_s = r->summary.makespan_s;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double rss_mb = (double)ru.ru_maxrss / 1024.0; /* Linux: KiB */
	printf("bench serve %s requests=%zu sim_s=%.1f wall_s=%.3f requests_per_s=%.0f "
	       "events_per_s=%.0f speedup=%.0f peak_rss_mb=%.1f\n",
	       argv[1], r->n_reqs, sim_s, r->wall_s, (double)r->n_reqs / r->wall_s,
	       r->summary.sim_events / r->wall_s, sim_s / r->wall_s, rss_mb);
	if (!strncmp(argv[1], "e2e", 3))
		printf("bench e2e requests=%zu wall_s=%.3f req_per_s=%.0f events_per_s=%.0f "
		       "peak_rss_mb=%.1f name=%s\n",
		       r->n_reqs, r->wall_s, (double)r->n_reqs / r->wall_s,
		       r->summary.sim_events / r->wall_s, rss_mb, argv[1]);
	if (!strncmp(argv[1], "fleet", 5))
		printf("bench fleet gpus=%lld sim_hours=%.1f wall_s=%.3f requests=%zu jobs=%zu "
		       "events=%.0f events_per_s=%.0f peak_rss_mb=%.1f\n",
		       (long long)lsim_scenario_gpus(sc), sim_s / 3600.0, r->wall_s, r->n_reqs,
		       r->n_jobs, r->summary.sim_events, r->summary.sim_events / r->wall_s,
		       rss_mb);
	lsim_scenario_destroy(sc);
	return 0;
}
