/*
 * search.c - `llmsim search FILE.yaml --slo ...`: capacity search. For
 * each configuration (a scenario alone, or each point of a sweep file's
 * axes), the highest request rate at which the SLO constraints hold, by
 * bisection over the rate key, each evaluation the mean of the metrics
 * over the seeds; with the cost per million tokens at that rate. The
 * question Vidur-Search and DistServe answer, over llmsim's wider model.
 * Runs are in process, one after the other.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "report.h"
#include "scenario.h"
#include "sweep.h"

struct constraint {
	char name[64];
	bool at_least; /* >= bound (else <=) */
	double bound;
};

struct search {
	const char *file;
	const char *scenario;
	const char *rate_key;
	double lo, hi, tol;
	int64_t *seeds; /* n_seeds; NULL: the scenario's seed */
	size_t n_seeds;
	struct constraint c[16];
	size_t n_c;
	bool csv;
};

static bool summary_value(const struct lsim_summary *s, const char *name, double *v)
{
#define LSIM_X_GET(f, u, h)           \
	if (!strcmp(name, #f)) {      \
		*v = (double)s->f;    \
		return true;          \
	}
	LSIM_SUMMARY_FIELDS(LSIM_X_GET)
#undef LSIM_X_GET
	return false;
}

/* Whether a metric is defined only against declared SLOs. */
static bool slo_metric(const char *name)
{
	return !strcmp(name, "slo_attainment") || !strcmp(name, "goodput_rps");
}

/* Parses "name<=v,name>=v"; names must be summary fields. */
static int parse_slo(struct search *s, const char *text)
{
	char *copy = strdup(text);
	if (!copy)
		return lsim_cli_nomem();
	int rc = 0;
	for (char *t = strtok(copy, ","); t && rc == 0; t = strtok(NULL, ",")) {
		char *op = strstr(t, "<=");
		bool ge = false;
		if (!op) {
			op = strstr(t, ">=");
			ge = true;
		}
		char *end = NULL;
		double v = op ? strtod(op + 2, &end) : NAN;
		struct lsim_summary probe = {0};
		double dummy;
		if (!op || op == t || !end || *end || !isfinite(v) || s->n_c == 16 ||
		    (size_t)(op - t) >= sizeof s->c[0].name) {
			fprintf(stderr, "llmsim: --slo: '%s' is not NAME<=VALUE or NAME>=VALUE\n", t);
			rc = LSIM_EXIT_BADINPUT;
			break;
		}
		struct constraint *c = &s->c[s->n_c++];
		snprintf(c->name, sizeof c->name, "%.*s", (int)(op - t), t);
		c->at_least = ge;
		c->bound = v;
		if (!summary_value(&probe, c->name, &dummy)) {
			fprintf(stderr, "llmsim: --slo: no summary metric '%s' (names: docs/output.md)\n",
				c->name);
			rc = LSIM_EXIT_BADINPUT;
		}
	}
	free(copy);
	return rc;
}

/* One evaluation: the scenario with sets + rate, over the seeds; mean of
 * every constraint's metric (m[i]) and of the cost per Mtok. Returns 0,
 * or an exit status after printing the error. */
static int evaluate(const struct search *s, const char *const *sets, size_t n_sets, double rate,
		    double *m, double *cost, bool *ok)
{
	const char **all = calloc(n_sets + 2, sizeof *all);
	char rate_set[300], seed_set[64];
	if (!all)
		return lsim_cli_nomem();
	for (size_t k = 0; k < n_sets; k++)
		all[k] = sets[k];
	snprintf(rate_set, sizeof rate_set, "%s=%.9g", s->rate_key, rate);
	all[n_sets] = rate_set;
	size_t ns = s->n_seeds ? s->n_seeds : 1;
	for (size_t i = 0; i < s->n_c; i++)
		m[i] = 0;
	*cost = 0;
	int status = 0;
	for (size_t r = 0; r < ns && status == 0; r++) {
		size_t n = n_sets + 1;
		if (s->seeds) {
			snprintf(seed_set, sizeof seed_set, "seed=%lld", (long long)s->seeds[r]);
			all[n++] = seed_set;
		}
		struct lsim_diag d = {0};
		struct lsim_scenario *sc = NULL;
		const struct lsim_results *res = NULL;
		int rc = lsim_scenario_load(s->scenario, all, n, &sc, &d);
		for (size_t i = 0; rc == 0 && i < s->n_c; i++)
			if (slo_metric(s->c[i].name) && !lsim_scenario_declares_slo(sc)) {
				fprintf(stderr,
					"llmsim: --slo: %s: no SLO declared in %s: no classes[] entry "
					"sets a ttft, tpot or e2e target (declare one, or constrain a "
					"latency such as ttft_p99_s)\n",
					s->c[i].name, s->scenario);
				lsim_scenario_destroy(sc);
				free(all);
				return LSIM_EXIT_BADINPUT;
			}
		if (rc == 0)
			rc = lsim_scenario_run(sc, NULL, NULL, &res, &d);
		if (rc != 0) {
			fprintf(stderr, "llmsim: search at %s:", rate_set);
			for (size_t k = 0; k < n; k++)
				fprintf(stderr, " %s", all[k]);
			fputc('\n', stderr);
			status = lsim_cli_fail(&d, rc);
		} else {
			for (size_t i = 0; i < s->n_c && status == 0; i++) {
				double v = NAN;
				summary_value(&res->summary, s->c[i].name, &v);
				m[i] += v / (double)ns;
				if (isnan(v)) { /* e.g. mfu with no model (service mode) */
					fprintf(stderr,
						"llmsim: --slo: %s is not defined in the run at %s "
						"(docs/output.md)\n",
						s->c[i].name, rate_set);
					status = LSIM_EXIT_BADINPUT;
				}
			}
			*cost += res->summary.cost_per_mtok_usd / (double)ns;
		}
		lsim_scenario_destroy(sc);
	}
	*ok = true;
	for (size_t i = 0; i < s->n_c; i++)
		if (!(s->c[i].at_least ? m[i] >= s->c[i].bound : m[i] <= s->c[i].bound))
			*ok = false;
	free(all);
	return status;
}

/* The search for one configuration; prints its row. */
static int search_one(const struct search *s, const char *label, const char *const *sets,
		      size_t n_sets)
{
	double m_lo[16], m_hi[16], m_mid[16], c_lo, c_hi, c_mid;
	bool ok_lo, ok_hi, ok_mid;
	int evals = 2;
	int st = evaluate(s, sets, n_sets, s->lo, m_lo, &c_lo, &ok_lo);
	if (st == 0)
		st = evaluate(s, sets, n_sets, s->hi, m_hi, &c_hi, &ok_hi);
	if (st != 0)
		return st;
	double lo = s->lo, hi = s->hi, best = NAN, cost = NAN, *m = m_lo;
	const char *note = "";
	if (!ok_lo) {
		note = "below --lo";
	} else if (ok_hi) {
		best = hi;
		cost = c_hi;
		m = m_hi;
		note = "at least --hi";
	} else {
		while (hi - lo > s->tol * lo) {
			double mid = 0.5 * (lo + hi);
			st = evaluate(s, sets, n_sets, mid, m_mid, &c_mid, &ok_mid);
			evals++;
			if (st != 0)
				return st;
			if (ok_mid) {
				lo = mid;
				c_lo = c_mid;
				memcpy(m_lo, m_mid, sizeof m_lo);
			} else {
				hi = mid;
			}
		}
		best = lo;
		cost = c_lo;
		m = m_lo;
	}
	const char *sep = s->csv ? "," : "  ";
	printf("%s%s%.6g%s%d", label, sep, best, sep, evals);
	for (size_t i = 0; i < s->n_c; i++)
		printf("%s%.6g", sep, isnan(best) ? NAN : m[i]);
	printf("%s%.6g%s%s\n", sep, cost, sep, note);
	fflush(stdout);
	return 0;
}

static const char usage_search[] =
	"usage: llmsim search FILE.yaml --slo NAME<=V[,NAME>=V...] [--rate-key KEY]\n"
	"                    [--lo R] [--hi R] [--tol F] [--seeds N] [--csv]\n"
	"\n"
	"Capacity search. FILE is a scenario (one configuration) or a sweep file (each\n"
	"point of its axes is a configuration; its seeds replicate). For each, the\n"
	"highest value of the rate key (default workload.rate; workload.rate_scale for\n"
	"a trace) in [--lo, --hi] (default 1, 64) at which every constraint holds on\n"
	"the mean over the seeds (--seeds N: seeds 1..N, overriding the file's), found\n"
	"by bisection to a relative width --tol (default 0.02), assuming the metrics\n"
	"worsen with the rate. Constraints name summary metrics (docs/output.md), e.g.\n"
	"--slo ttft_p99_s<=2,slo_attainment>=0.95 (slo_attainment and goodput_rps need\n"
	"a class with a target). Prints per configuration the rate, the evaluations,\n"
	"each constraint's metric and cost_per_mtok_usd at that rate.\n";

int lsim_cli_search(int argc, char **argv)
{
	struct search s = {.rate_key = "workload.rate", .lo = 1, .hi = 64, .tol = 0.02};
	const char *slo = NULL;
	long nseeds = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		char *end = NULL;
		double *dst = !strcmp(a, "--lo") ? &s.lo : !strcmp(a, "--hi") ? &s.hi
						: !strcmp(a, "--tol") ? &s.tol : NULL;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage_search, stdout);
			return 0;
		} else if (dst && i + 1 < argc) {
			*dst = strtod(argv[++i], &end);
			if (*end || !(*dst > 0) || !isfinite(*dst)) {
				fprintf(stderr, "llmsim: %s: '%s' is not a positive number\n", a, argv[i]);
				return LSIM_EXIT_BADINPUT;
			}
		} else if (!strcmp(a, "--slo") && i + 1 < argc) {
			slo = argv[++i];
		} else if (!strcmp(a, "--rate-key") && i + 1 < argc) {
			s.rate_key = argv[++i];
		} else if (!strcmp(a, "--seeds") && i + 1 < argc) {
			nseeds = strtol(argv[++i], &end, 10);
			if (*end || nseeds < 1 || nseeds > 1000) {
				fprintf(stderr, "llmsim: --seeds: '%s' is not 1 to 1000\n", argv[i]);
				return LSIM_EXIT_BADINPUT;
			}
		} else if (!strcmp(a, "--csv")) {
			s.csv = true;
		} else if (a[0] == '-' || s.file) {
			fprintf(stderr, "llmsim: unexpected argument '%s'\n%s", a, usage_search);
			return LSIM_EXIT_BADINPUT;
		} else {
			s.file = a;
		}
	}
	if (!s.file || !slo) {
		fprintf(stderr, "llmsim: search needs FILE.yaml and --slo\n%s", usage_search);
		return LSIM_EXIT_BADINPUT;
	}
	if (!(s.lo < s.hi)) {
		fprintf(stderr, "llmsim: --lo %g must be below --hi %g\n", s.lo, s.hi);
		return LSIM_EXIT_BADINPUT;
	}
	int rc = parse_slo(&s, slo);
	if (rc != 0)
		return rc;
	/* a sweep file (it has axes) or a scenario */
	struct lsim_diag d = {0};
	struct lsim_doc *doc = NULL;
	if (lsim_doc_load_file(s.file, &doc, &d) != 0)
		return lsim_cli_fail(&d, LSIM_EINVAL);
	bool is_sweep = doc->root->kind == LSIM_NODE_MAP && lsim_node_get(doc->root, "axes");
	lsim_doc_destroy(doc);
	struct lsim_sweep *sw = NULL;
	if (is_sweep && (rc = lsim_sweep_load(s.file, &sw, &d)) != 0)
		return lsim_cli_fail(&d, rc);
	s.scenario = sw ? lsim_sweep_scenario(sw) : s.file;
	size_t n_points = sw ? lsim_sweep_n_points(sw) : 1;
	const int64_t *fs = sw ? lsim_sweep_seeds(sw, &s.n_seeds) : NULL;
	int64_t *own = NULL;
	if (nseeds > 0) {
		own = malloc((size_t)nseeds * sizeof *own);
		if (!own) {
			lsim_sweep_destroy(sw);
			return lsim_cli_nomem();
		}
		for (long k = 0; k < nseeds; k++)
			own[k] = k + 1;
		s.seeds = own;
		s.n_seeds = (size_t)nseeds;
	} else {
		s.seeds = (int64_t *)fs;
		if (!fs)
			s.n_seeds = 0;
	}
	/* refuse an SLO constraint without a declared SLO before any output */
	for (size_t i = 0; rc == 0 && i < s.n_c; i++) {
		if (!slo_metric(s.c[i].name))
			continue;
		size_t n_sets = 0;
		const char *const *sets = sw ? lsim_sweep_sets(sw, 0, &n_sets) : NULL;
		struct lsim_scenario *sc = NULL;
		if (sw && !sets) {
			rc = lsim_cli_nomem();
		} else if ((rc = lsim_scenario_load(s.scenario, sets, n_sets, &sc, &d)) != 0) {
			rc = lsim_cli_fail(&d, rc);
		} else if (!lsim_scenario_declares_slo(sc)) {
			fprintf(stderr,
				"llmsim: --slo: %s: no SLO declared in %s: no classes[] entry sets a "
				"ttft, tpot or e2e target (declare one, or constrain a latency such "
				"as ttft_p99_s)\n",
				s.c[i].name, s.scenario);
			rc = LSIM_EXIT_BADINPUT;
		}
		lsim_scenario_destroy(sc);
		break;
	}
	if (rc != 0) {
		free(own);
		lsim_sweep_destroy(sw);
		return rc;
	}
	const char *sep = s.csv ? "," : "  ";
	printf("configuration%smax_%s%sevaluations", sep, s.rate_key, sep);
	for (size_t i = 0; i < s.n_c; i++)
		printf("%s%s", sep, s.c[i].name);
	printf("%scost_per_mtok_usd%snote\n", sep, sep);
	size_t per = sw ? lsim_sweep_n_runs(sw) / n_points : 1;
	for (size_t p = 0; p < n_points && rc == 0; p++) {
		size_t n_sets = 0;
		const char *const *sets = sw ? lsim_sweep_sets(sw, p * per, &n_sets) : NULL;
		if (sw && !sets) {
			rc = lsim_cli_nomem();
			break;
		}
		if (n_sets > 0 && !strncmp(sets[n_sets - 1], "seed=", 5))
			n_sets--; /* the search sets its own seeds */
		char label[1024] = "";
		size_t len = 0;
		for (size_t k = 0; k < n_sets && len < sizeof label; k++)
			len += (size_t)snprintf(label + len, sizeof label - len, "%s%s", k ? " " : "",
						sets[k]);
		rc = search_one(&s, len ? label : "(scenario)", sets, n_sets);
	}
	free(own);
	lsim_sweep_destroy(sw);
	return rc;
}
