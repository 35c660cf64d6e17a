/*
 * search.c - `llmsim search FILE.yaml --slo ...`: capacity search at
 * steady state. For each configuration (a scenario alone, or each point
 * of a sweep file's axes) and each seed, the highest request rate at which
 * the run is stable and the SLO constraints hold after its warm-up
 * (steady.h: MSER-5, a backlog trend test), by bisection over the rate key;
 * the capacity is the lower 95% confidence bound of the seeds' mean, and
 * runs ten times longer at that rate check it. The question Vidur-Search
 * and DistServe answer, over llmsim's wider model. Runs are in process,
 * one after the other.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_statistics_double.h>

#include "cli/cli.h"
#include "kernel/config.h"
#include "report/report.h"
#include "run/scenario.h"
#include "report/steady.h"
#include "cli/sweep.h"

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
	int64_t verify; /* the check's runs are this many times longer (0: none) */
	const char *user_sets[64]; /* --set, before each configuration's own */
	size_t n_user;
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

/* One run: the configuration at a rate with one seed (and extra sets),
 * judged at steady state (steady.h). */
struct point {
	double m[16];	/* each constraint's metric over the kept window */
	double cost;	/* cost_per_mtok_usd of the run */
	bool ok;	/* stable, and every constraint holds */
	struct lsim_steady st;
};

/* Whether v meets constraint c (NaN meets none). */
static bool meets(const struct constraint *c, double v)
{
	return c->at_least ? v >= c->bound : v <= c->bound;
}

/* A new array of the --set overrides, then sets, with room for `extra`
 * more entries after them; *n is how many it holds. NULL: out of memory. */
static const char **overrides(const struct search *s, const char *const *sets, size_t n_sets,
			      size_t extra, size_t *n)
{
	const char **all = calloc(s->n_user + n_sets + extra + 1, sizeof *all);
	*n = 0;
	if (!all)
		return NULL;
	for (size_t k = 0; k < s->n_user; k++)
		all[(*n)++] = s->user_sets[k];
	for (size_t k = 0; k < n_sets; k++)
		all[(*n)++] = sets[k];
	return all;
}

/* Runs the point; returns 0, or an exit status after printing the error. */
static int evaluate(const struct search *s, const char *const *sets, size_t n_sets, double rate,
		    size_t seed, const char *const *extra, size_t n_extra, struct point *p)
{
	size_t n;
	const char **all = overrides(s, sets, n_sets, n_extra + 2, &n);
	char rate_set[300], seed_set[64];
	if (!all)
		return lsim_cli_nomem();
	snprintf(rate_set, sizeof rate_set, "%s=%.9g", s->rate_key, rate);
	all[n++] = rate_set;
	if (s->seeds) {
		snprintf(seed_set, sizeof seed_set, "seed=%lld", (long long)s->seeds[seed]);
		all[n++] = seed_set;
	}
	for (size_t k = 0; k < n_extra; k++)
		all[n++] = extra[k];
	struct lsim_diag d = {0};
	struct lsim_scenario *sc = NULL;
	const struct lsim_results *res = NULL;
	int rc = lsim_scenario_load(s->scenario, all, n, &sc, &d);
	if (rc == 0)
		rc = lsim_scenario_run(sc, NULL, NULL, &res, &d);
	if (rc == 0)
		rc = lsim_steady_analyse(res, &p->st);
	int status = 0;
	if (rc != 0) {
		fprintf(stderr, "llmsim: search at %s:", rate_set);
		for (size_t k = 0; k < n; k++)
			fprintf(stderr, " %s", all[k]);
		fputc('\n', stderr);
		status = lsim_cli_fail(&d, rc);
	} else {
		p->ok = p->st.stable;
		for (size_t i = 0; i < s->n_c && status == 0; i++) {
			p->m[i] = NAN;
			summary_value(&p->st.summary, s->c[i].name, &p->m[i]);
			/* no request completed in the kept window: every latency
			 * is undefined (NaN), and the point fails its constraints */
			if (isnan(p->m[i]) && p->st.summary.completed == 0) {
				p->ok = false;
				continue;
			}
			if (isnan(p->m[i])) { /* e.g. mfu with no model (service mode) */
				fprintf(stderr, "llmsim: --slo: %s is not defined in the run at %s "
					"(docs/output.md)\n", s->c[i].name, rate_set);
				status = LSIM_EXIT_BADINPUT;
			}
			if (!meets(&s->c[i], p->m[i]))
				p->ok = false;
		}
		p->cost = res->summary.cost_per_mtok_usd;
	}
	lsim_scenario_destroy(sc);
	free(all);
	return status;
}

/* The run lengths a configuration may use: its own (x1), then 4 and 16
 * times longer for a run too short to settle; the check's runs are
 * s->verify times the longest used. */
#define N_LENGTHS 3
static const int64_t length_factor[N_LENGTHS] = {1, 4, 16};

struct lengths {
	char sets[2 * N_LENGTHS][3][64]; /* [f]: x factor; [N_LENGTHS + f]: x verify too */
	const char *ptr[2 * N_LENGTHS][3];
	size_t n[2 * N_LENGTHS];
	int used; /* the longest used so far */
};

static int lengths_init(const struct search *s, const char *const *sets, size_t n_sets,
			struct lengths *L)
{
	struct lsim_diag d = {0};
	struct lsim_scenario *sc = NULL;
	size_t n;
	const char **base = overrides(s, sets, n_sets, 0, &n);
	if (!base)
		return lsim_cli_nomem();
	int rc = lsim_scenario_load(s->scenario, base, n, &sc, &d);
	free(base);
	L->used = 0;
	for (int f = 0; f < 2 * N_LENGTHS && rc == 0; f++) {
		int64_t k = length_factor[f % N_LENGTHS] * (f >= N_LENGTHS ? s->verify : 1);
		L->n[f] = 0;
		if (k > 1)
			rc = lsim_scenario_longer(sc, k, L->sets[f], &L->n[f]);
		for (size_t i = 0; i < L->n[f]; i++)
			L->ptr[f][i] = L->sets[f][i];
	}
	lsim_scenario_destroy(sc);
	return rc != 0 ? lsim_cli_fail(&d, rc) : 0;
}

/* One seed at one rate: a run that cannot tell whether it settled (MSER-5
 * found no cut in its first half) while its backlog does not grow is run
 * again 4, then 16 times longer; a run that still does not settle fails. */
static int judge(const struct search *s, const char *const *sets, size_t n_sets, double rate,
		 size_t seed, struct lengths *L, struct point *p, int *evals)
{
	for (int f = L->used; f < N_LENGTHS; f++) {
		int st = evaluate(s, sets, n_sets, rate, seed, L->ptr[f], L->n[f], p);
		(*evals)++;
		if (st != 0)
			return st;
		if (f > L->used)
			L->used = f;
		if (p->st.settled || p->st.growing || p->st.unfinished > 0)
			break;
	}
	return 0;
}

/* The highest rate in [lo, hi] that passes for one seed, by bisection;
 * NAN when lo fails; hi when hi passes. */
static int bisect(const struct search *s, const char *const *sets, size_t n_sets, size_t seed,
		  struct lengths *L, double *cap, int *evals)
{
	struct point p;
	int st = judge(s, sets, n_sets, s->lo, seed, L, &p, evals);
	if (st != 0)
		return st;
	if (!p.ok) {
		*cap = NAN;
		return 0;
	}
	st = judge(s, sets, n_sets, s->hi, seed, L, &p, evals);
	if (st != 0)
		return st;
	if (p.ok) {
		*cap = s->hi;
		return 0;
	}
	double lo = s->lo, hi = s->hi;
	while (hi - lo > s->tol * lo) {
		double mid = 0.5 * (lo + hi);
		st = judge(s, sets, n_sets, mid, seed, L, &p, evals);
		if (st != 0)
			return st;
		if (p.ok)
			lo = mid;
		else
			hi = mid;
	}
	*cap = lo;
	return 0;
}

/* The search for one configuration: a bisection per seed, the capacity
 * as the lower 95% confidence bound of their mean, checked on runs
 * s->verify times longer; prints its row. */
static int search_one(const struct search *s, const char *label, const char *const *sets,
		      size_t n_sets)
{
	size_t ns = s->n_seeds ? s->n_seeds : 1;
	struct lengths *L = malloc(sizeof *L);
	double *caps = malloc(ns * sizeof *caps);
	int evals = 0, st = L && caps ? lengths_init(s, sets, n_sets, L) : lsim_cli_nomem();
	size_t below = 0, above = 0;
	for (size_t k = 0; k < ns && st == 0; k++) {
		st = bisect(s, sets, n_sets, k, L, &caps[k], &evals);
		below += isnan(caps[k]);
		above += caps[k] == s->hi;
	}
	double mean = NAN, ci = NAN, cap = NAN;
	const char *note = "";
	if (st == 0 && below > 0) {
		note = below == ns ? "below --lo" : "below --lo for some seeds";
	} else if (st == 0) {
		mean = gsl_stats_mean(caps, 1, ns);
		if (ns > 1)
			ci = gsl_cdf_tdist_Pinv(0.975, (double)(ns - 1)) *
			     gsl_stats_sd(caps, 1, ns) / sqrt((double)ns);
		cap = ns > 1 ? mean - ci : mean;
		if (cap < s->lo)
			cap = s->lo;
		if (above == ns)
			note = "at least --hi";
	}
	free(caps);

	/* the check: the capacity on runs verify x longer, every seed */
	double m[16] = {0}, cost = 0;
	const char *verified = "-";
	if (st == 0 && !isnan(cap) && s->verify > 1) {
		bool ok = true;
		int f = N_LENGTHS + L->used;
		for (size_t k = 0; k < ns && st == 0; k++) {
			struct point p;
			st = evaluate(s, sets, n_sets, cap, k, L->ptr[f], L->n[f], &p);
			ok = ok && p.st.stable;
			for (size_t i = 0; i < s->n_c; i++)
				m[i] += p.m[i] / (double)ns;
			cost += p.cost / (double)ns;
		}
		for (size_t i = 0; i < s->n_c; i++)
			if (!meets(&s->c[i], m[i]))
				ok = false;
		verified = ok ? "yes" : "no";
		if (st == 0 && !ok)
			fprintf(stderr, "llmsim: warning: %s: the constraints fail at %.6g on runs %lld "
				"times longer: the runs are too short to settle it (make the "
				"workload longer)\n", label, cap,
				(long long)(s->verify * length_factor[L->used]));
	} else {
		for (size_t i = 0; i < s->n_c; i++)
			m[i] = NAN;
		cost = NAN;
	}
	int used = L ? L->used : 0;
	free(L);
	if (st != 0)
		return st;
	const char *sep = s->csv ? "," : "  ";
	printf("%s%s%.6g%s%.6g%s%.3g%s%d%s%lld", label, sep, cap, sep, mean, sep, ci, sep, evals,
	       sep, (long long)length_factor[used]);
	for (size_t i = 0; i < s->n_c; i++)
		printf("%s%.6g", sep, m[i]);
	printf("%s%.6g%s%s%s%s\n", sep, cost, sep, verified, sep, note);
	fflush(stdout);
	return 0;
}

static const char usage_search[] =
	"usage: llmsim search FILE.yaml --slo NAME<=V[,NAME>=V...] [--rate-key KEY]\n"
	"                    [--lo R] [--hi R] [--tol F] [--seeds N] [--verify K]\n"
	"                    [--set key=value]... [--csv]\n"
	"\n"
	"Capacity search at steady state. FILE is a scenario (one configuration) or a\n"
	"sweep file (each point of its axes is a configuration). For each, and for each\n"
	"seed (--seeds N: seeds 1..N; else the sweep file's seeds; else 1..5), the\n"
	"highest value of the rate key (default workload.rate; workload.rate_scale for a\n"
	"trace) in [--lo, --hi] (default 1, 64) at which the run is stable and every\n"
	"constraint holds, found by bisection to a relative width --tol (default 0.02).\n"
	"Each run is judged after its warm-up (MSER-5 on the backlog); a run whose\n"
	"backlog trends up, that does not settle in its first half, or that ends with\n"
	"requests unfinished fails whatever its percentiles. The capacity printed is\n"
	"the lower 95% confidence bound of the seeds' mean, checked on runs --verify\n"
	"times longer (default 10; 0: no check): the metrics printed are those runs'.\n"
	"Constraints name summary metrics (docs/output.md), e.g.\n"
	"--slo ttft_p99_s<=2,slo_attainment>=0.95 (slo_attainment and goodput_rps need\n"
	"a class with a target). docs/sweeps.md explains the rules.\n";

int lsim_cli_search(int argc, char **argv)
{
	struct search s = {.rate_key = "workload.rate", .lo = 1, .hi = 64, .tol = 0.02,
			   .verify = 10};
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
		} else if (!strcmp(a, "--verify") && i + 1 < argc) {
			long v = strtol(argv[++i], &end, 10);
			if (*end || v < 0 || v > 1000 || v == 1) {
				fprintf(stderr, "llmsim: --verify: '%s' is not 0 or 2 to 1000\n", argv[i]);
				return LSIM_EXIT_BADINPUT;
			}
			s.verify = v;
		} else if (!strcmp(a, "--set") && i + 1 < argc) {
			if (s.n_user == sizeof s.user_sets / sizeof *s.user_sets) {
				fprintf(stderr, "llmsim: more than 64 --set\n");
				return LSIM_EXIT_BADINPUT;
			}
			s.user_sets[s.n_user++] = argv[++i];
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
	} else if (fs) {
		s.seeds = (int64_t *)fs;
	} else { /* several seeds, for the answer's confidence interval */
		own = malloc(5 * sizeof *own);
		if (!own) {
			lsim_sweep_destroy(sw);
			return lsim_cli_nomem();
		}
		for (int k = 0; k < 5; k++)
			own[k] = k + 1;
		s.seeds = own;
		s.n_seeds = 5;
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
	printf("configuration%smax_%s%smean%sci95%sevaluations%slength", sep, s.rate_key, sep, sep,
	       sep, sep);
	for (size_t i = 0; i < s.n_c; i++)
		printf("%s%s", sep, s.c[i].name);
	printf("%scost_per_mtok_usd%sverified%snote\n", sep, sep, sep);
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
		size_t kl = strlen(s.rate_key);
		for (size_t k = 0; k < n_sets; k++)
			if (!strncmp(sets[k], s.rate_key, kl) && sets[k][kl] == '=') {
				fprintf(stderr, "llmsim: %s: axes.%s: the search sets this key itself "
					"(it is the rate it varies); remove the axis, or search over "
					"another key with --rate-key\n", s.file, s.rate_key);
				rc = LSIM_EXIT_BADINPUT;
				break;
			}
		if (rc != 0)
			break;
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
