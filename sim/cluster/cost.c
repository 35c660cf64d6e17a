/*
 * cost.c - prices (calibrate/prices.yaml through the config tree and key
 * tables), billing, the per-GPU power model and its GSL line fit, energy
 * from utilisation samples, the carbon-intensity series (CSV through the
 * shared reader) with its cursor, the per-instance accumulator, and the
 * per-token and per-tenant arithmetic. See cost.h and docs/cost.md.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_fit.h>
#include <gsl/gsl_statistics_double.h>

#include "kernel/config.h"
#include "cluster/cost.h"
#include "kernel/csv.h"
#include "cluster/hw.h"
#include "workload_internal.h"

/* W x ns per kWh, J per kWh. */
#define WNS_PER_KWH 3.6e15
#define J_PER_KWH 3.6e6
#define NS_PER_HOUR 3.6e12

/* ---- prices ---- */

struct price_raw {
	const char *name, *provider, *instance, *gpu, *region, *observed;
	const char *spot_observed, *source, *note;
	int64_t gpus;
	double on_demand, spot;
	lsim_time granularity, minimum;
};

#define P(f) offsetof(struct price_raw, f)
static const struct lsim_keydef price_keys[] = {
	{"name", LSIM_K_STRING, P(name), NULL, LSIM_NOBOUNDS, NULL, "unique id of the offer"},
	{"provider", LSIM_K_STRING, P(provider), NULL, LSIM_NOBOUNDS, NULL, "cloud provider"},
	{"instance", LSIM_K_STRING, P(instance), NULL, LSIM_NOBOUNDS, NULL, "the provider's instance type"},
	{"gpu", LSIM_K_STRING, P(gpu), NULL, LSIM_NOBOUNDS, NULL, "GPU kind (a hardware profile name where one exists)"},
	{"gpus", LSIM_K_INT, P(gpus), NULL, 1, 1024, NULL, "GPUs in one instance"},
	{"on_demand", LSIM_K_PRICE, P(on_demand), NULL, 0, 1e4, NULL, "USD per instance-hour, on demand"},
	{"spot", LSIM_K_PRICE, P(spot), "0", 0, 1e4, NULL, "USD per instance-hour, spot (0: not known)"},
	{"region", LSIM_K_STRING, P(region), NULL, LSIM_NOBOUNDS, NULL, "region the price applies to"},
	{"observed", LSIM_K_STRING, P(observed), NULL, LSIM_NOBOUNDS, NULL, "date of the on-demand price (YYYY-MM-DD, YYYY-MM or YYYY)"},
	{"spot_observed", LSIM_K_STRING, P(spot_observed), "", LSIM_NOBOUNDS, NULL, "date of the spot price if different"},
	{"billing_granularity", LSIM_K_TIME, P(granularity), "1s", 0, 86400e9, NULL, "usage is rounded up to a multiple of this"},
	{"billing_minimum", LSIM_K_TIME, P(minimum), "60s", 0, 86400e9, NULL, "shortest usage billed"},
	{"source", LSIM_K_STRING, P(source), NULL, LSIM_NOBOUNDS, NULL, "URL or citation of the price"},
	{"note", LSIM_K_STRING, P(note), "", LSIM_NOBOUNDS, NULL, "anything else worth knowing"},
};
#undef P
#define N_PRICE_KEYS (sizeof price_keys / sizeof price_keys[0])

static bool leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* YYYY, YYYY-MM or YYYY-MM-DD, a real date from 1900 to 2199. */
static bool valid_date(const char *s)
{
	static const int mdays[12] = {31, 28, 31, 30, 31, 30,
				      31, 31, 30, 31, 30, 31};
	size_t len = strlen(s);
	if (len != 4 && len != 7 && len != 10)
		return false;
	for (size_t i = 0; i < len; i++) {
		bool dash = i == 4 || i == 7;
		if (dash ? s[i] != '-' : (s[i] < '0' || s[i] > '9'))
			return false;
	}
	int y = atoi(s);
	if (y < 1900 || y > 2199)
		return false;
	if (len == 4)
		return true;
	int m = atoi(s + 5);
	if (m < 1 || m > 12)
		return false;
	if (len == 7)
		return true;
	int day = atoi(s + 8);
	int maxd = mdays[m - 1] + (m == 2 && leap(y));
	return day >= 1 && day <= maxd;
}

/* Copies a bound string into dst; too long is an error at its node. */
static int put_str(char *dst, size_t size, const char *src,
		   const struct lsim_doc *doc, const struct lsim_node *entry,
		   const char *path, const char *key, struct lsim_diag *d)
{
	if (strlen(src) < size) {
		memcpy(dst, src, strlen(src) + 1);
		return 0;
	}
	char full[192];
	snprintf(full, sizeof full, "%s.%s", path, key);
	const struct lsim_node *n = lsim_node_get(entry, key);
	return lsim_cfg_error(d, doc, n ? n : entry, full, LSIM_ERANGE,
			      "longer than %zu characters", size - 1);
}

static int check_date(const char *s, bool optional, const struct lsim_doc *doc,
		      const struct lsim_node *entry, const char *path,
		      const char *key, struct lsim_diag *d)
{
	if ((optional && !*s) || valid_date(s))
		return 0;
	char full[192];
	snprintf(full, sizeof full, "%s.%s", path, key);
	const struct lsim_node *n = lsim_node_get(entry, key);
	return lsim_cfg_error(d, doc, n ? n : entry, full, LSIM_EINVAL,
			      "'%s' is not a date (YYYY-MM-DD, YYYY-MM or YYYY)",
			      s);
}

static int price_entry(const struct lsim_doc *doc, const struct lsim_node *entry,
		       const char *path, struct lsim_instance_price *ip,
		       struct lsim_diag *d)
{
	struct price_raw raw;
	memset(&raw, 0, sizeof raw);
	int rc = lsim_cfg_bind(doc, entry, path, price_keys, N_PRICE_KEYS, NULL,
			       &raw, d);
	if (rc != 0)
		return rc;
	memset(ip, 0, sizeof *ip);
	struct {
		char *dst;
		size_t size;
		const char *src, *key;
	} s[] = {
		{ip->name, sizeof ip->name, raw.name, "name"},
		{ip->provider, sizeof ip->provider, raw.provider, "provider"},
		{ip->instance, sizeof ip->instance, raw.instance, "instance"},
		{ip->gpu, sizeof ip->gpu, raw.gpu, "gpu"},
		{ip->region, sizeof ip->region, raw.region, "region"},
		{ip->observed, sizeof ip->observed, raw.observed, "observed"},
		{ip->spot_observed, sizeof ip->spot_observed, raw.spot_observed,
		 "spot_observed"},
		{ip->source, sizeof ip->source, raw.source, "source"},
		{ip->note, sizeof ip->note, raw.note, "note"},
	};
	for (size_t i = 0; i < sizeof s / sizeof s[0] && rc == 0; i++)
		rc = put_str(s[i].dst, s[i].size, s[i].src, doc, entry, path,
			     s[i].key, d);
	if (rc == 0 && !ip->name[0]) {
		char full[64];
		snprintf(full, sizeof full, "%s.name", path);
		rc = lsim_cfg_error(d, doc, lsim_node_get(entry, "name"), full,
				    LSIM_EINVAL, "empty name");
	}
	if (rc == 0)
		rc = check_date(ip->observed, false, doc, entry, path, "observed", d);
	if (rc == 0)
		rc = check_date(ip->spot_observed, true, doc, entry, path,
				"spot_observed", d);
	if (rc != 0)
		return rc;
	ip->gpus = (int)raw.gpus;
	ip->on_demand = raw.on_demand;
	ip->spot = raw.spot;
	ip->billing_granularity = raw.granularity;
	ip->billing_minimum = raw.minimum;
	return 0;
}

static int prices_fill(const struct lsim_doc *doc, struct lsim_prices *p,
		       struct lsim_diag *d)
{
	static const char *const top[] = {"instances", NULL};
	int rc = lsim_cfg_bind(doc, doc->root, "", NULL, 0, top, NULL, d);
	if (rc != 0)
		return rc;
	const struct lsim_node *list = lsim_node_get(doc->root, "instances");
	if (!list || list->kind != LSIM_NODE_SEQ || list->n == 0)
		return lsim_cfg_error(d, doc, list ? list : doc->root,
				      "instances", LSIM_EFORMAT,
				      "expected a non-empty list 'instances:'");
	p->items = calloc(list->n, sizeof *p->items);
	if (!p->items)
		return LSIM_ENOMEM;
	for (size_t i = 0; i < list->n; i++) {
		char path[48];
		snprintf(path, sizeof path, "instances[%zu]", i);
		const struct lsim_node *entry = list->items[i];
		if (entry->kind != LSIM_NODE_MAP)
			return lsim_cfg_error(d, doc, entry, path, LSIM_EFORMAT,
					      "expected a mapping of keys");
		rc = price_entry(doc, entry, path, &p->items[i], d);
		if (rc != 0)
			return rc;
		for (size_t j = 0; j < i; j++) {
			if (strcmp(p->items[j].name, p->items[i].name) != 0)
				continue;
			char full[64];
			snprintf(full, sizeof full, "%s.name", path);
			return lsim_cfg_error(d, doc, lsim_node_get(entry, "name"),
					      full, LSIM_EINVAL,
					      "duplicate name '%s' (also instances[%zu])",
					      p->items[i].name, j);
		}
		p->n = i + 1;
	}
	return 0;
}

int lsim_prices_load(const char *path, struct lsim_prices **out,
		     struct lsim_diag *d)
{
	*out = NULL;
	struct lsim_doc *doc = NULL;
	int rc = lsim_doc_load_file(path, &doc, d);
	if (rc == LSIM_EIO || rc == LSIM_ENOENT)
		return lsim_diag_set(d, LSIM_ENOENT, path, 0, 0, "prices",
				     "cannot open the price file");
	if (rc != 0)
		return rc;
	struct lsim_prices *p = calloc(1, sizeof *p);
	if (!p) {
		lsim_doc_destroy(doc);
		return LSIM_ENOMEM;
	}
	snprintf(p->file, sizeof p->file, "%s", path);
	rc = prices_fill(doc, p, d);
	lsim_doc_destroy(doc);
	if (rc != 0) {
		lsim_prices_destroy(p);
		return rc;
	}
	*out = p;
	return 0;
}

void lsim_prices_destroy(struct lsim_prices *p)
{
	if (!p)
		return;
	free(p->items);
	free(p);
}

/* Name i of the offers: their id, or their GPU kind when by_gpu. */
static const char *offer_key(const struct lsim_prices *p, size_t i, bool by_gpu)
{
	return by_gpu ? p->items[i].gpu : p->items[i].name;
}

/* ENOENT for an unknown name or GPU: a did-you-mean, else the known ones. */
static int unknown_name(const struct lsim_prices *p, bool by_gpu,
			const char *name, struct lsim_diag *d)
{
	const char *what = by_gpu ? "gpu" : "name";
	const char **names = calloc(p->n ? p->n : 1, sizeof *names);
	if (!names)
		return LSIM_ENOMEM;
	for (size_t i = 0; i < p->n; i++)
		names[i] = offer_key(p, i, by_gpu);
	const char *best = lsim_did_you_mean(name, names, p->n);
	free(names);
	if (best)
		return lsim_diag_set(d, LSIM_ENOENT, p->file, 0, 0, what,
				     "no offer for '%s' (did you mean '%s'?)",
				     name, best);
	char known[512] = "";
	size_t k = 0;
	for (size_t i = 0; i < p->n && k < sizeof known; i++) {
		const char *s = offer_key(p, i, by_gpu);
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = strcmp(offer_key(p, j, by_gpu), s) == 0;
		if (!seen)
			k += (size_t)snprintf(known + k, sizeof known - k,
					      "%s%s", k ? ", " : "", s);
	}
	return lsim_diag_set(d, LSIM_ENOENT, p->file, 0, 0, what,
			     "no offer for '%s'; known: %s", name, known);
}

int lsim_prices_find(const struct lsim_prices *p, const char *name,
		     const struct lsim_instance_price **out,
		     struct lsim_diag *d)
{
	*out = NULL;
	for (size_t i = 0; i < p->n; i++) {
		if (strcmp(p->items[i].name, name) == 0) {
			*out = &p->items[i];
			return 0;
		}
	}
	return unknown_name(p, false, name, d);
}

double lsim_price_per_gpu_hour(const struct lsim_instance_price *ip, bool spot)
{
	return (spot ? ip->spot : ip->on_demand) / ip->gpus;
}

int lsim_prices_cheapest(const struct lsim_prices *p, const char *gpu,
			 bool spot, const struct lsim_instance_price **out,
			 struct lsim_diag *d)
{
	*out = NULL;
	bool any_gpu = false;
	for (size_t i = 0; i < p->n; i++) {
		const struct lsim_instance_price *ip = &p->items[i];
		if (strcmp(ip->gpu, gpu) != 0)
			continue;
		any_gpu = true;
		if (spot && ip->spot <= 0)
			continue;
		if (!*out || lsim_price_per_gpu_hour(ip, spot) <
				     lsim_price_per_gpu_hour(*out, spot))
			*out = ip;
	}
	if (*out)
		return 0;
	if (any_gpu)
		return lsim_diag_set(d, LSIM_ENOENT, p->file, 0, 0, "gpu",
				     "no spot price for GPU '%s'", gpu);
	return unknown_name(p, true, gpu, d);
}

/* ---- billing ---- */

lsim_time lsim_billed_ns(lsim_time start, lsim_time stop,
			 lsim_time granularity, lsim_time minimum)
{
	lsim_time used = 0;
	if (stop > start && __builtin_sub_overflow(stop, start, &used))
		used = LSIM_TIME_MAX;
	if (used < minimum)
		used = minimum;
	if (granularity > 0 && used % granularity != 0) {
		lsim_time q = used / granularity + 1;
		used = q > LSIM_TIME_MAX / granularity ? LSIM_TIME_MAX
						       : q * granularity;
	}
	return used;
}

double lsim_bill(double price_per_hour, lsim_time start, lsim_time stop,
		 lsim_time granularity, lsim_time minimum)
{
	lsim_time ns = lsim_billed_ns(start, stop, granularity, minimum);
	return price_per_hour * ((double)ns / NS_PER_HOUR);
}

void lsim_billing_from_price(struct lsim_billing *b,
			     const struct lsim_instance_price *ip, int gpus,
			     bool spot)
{
	b->price_per_hour = lsim_price_per_gpu_hour(ip, spot) * gpus;
	b->granularity = ip->billing_granularity;
	b->minimum = ip->billing_minimum;
}

double lsim_billing_cost(const struct lsim_billing *b, lsim_time start,
			 lsim_time stop)
{
	return lsim_bill(b->price_per_hour, start, stop, b->granularity,
			 b->minimum);
}

/* ---- power ---- */

int lsim_power_model_init(struct lsim_power_model *pm, double idle_w,
			  double max_w, double alpha, struct lsim_diag *d)
{
	if (!(idle_w >= 0) || !(max_w >= idle_w) || !isfinite(max_w))
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "power",
				     "need 0 <= idle power (%g W) <= maximum power (%g W)",
				     idle_w, max_w);
	if (!(alpha > 0 && alpha <= 10))
		return lsim_diag_set(d, LSIM_ERANGE, "", 0, 0, "alpha",
				     "exponent %g is outside (0, 10]", alpha);
	memset(pm, 0, sizeof *pm);
	pm->idle_w = idle_w;
	pm->max_w = max_w;
	pm->alpha = alpha;
	return 0;
}

int lsim_power_model_init_profile(struct lsim_power_model *pm,
				  const struct lsim_gpu_profile *g,
				  struct lsim_diag *d)
{
	return lsim_power_model_init(pm, g->idle_w, g->tdp_w,
				     LSIM_POWER_ALPHA_DEFAULT, d);
}

int lsim_power_model_init_table(struct lsim_power_model *pm, const double *u,
				const double *w, int n, struct lsim_diag *d)
{
	if (n < 2 || n > LSIM_POWER_TABLE_MAX)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "power",
				     "a power table needs 2 to %d points, not %d",
				     LSIM_POWER_TABLE_MAX, n);
	for (int i = 0; i < n; i++) {
		if (!(u[i] >= 0 && u[i] <= 1))
			return lsim_diag_set(d, LSIM_ERANGE, "", 0, 0, "util",
					     "point %d: utilisation %g is outside [0, 1]",
					     i + 1, u[i]);
		if (i > 0 && !(u[i] > u[i - 1]))
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "util",
					     "point %d: utilisation %g is not above the previous %g",
					     i + 1, u[i], u[i - 1]);
		if (!(w[i] >= 0) || !isfinite(w[i]))
			return lsim_diag_set(d, LSIM_ERANGE, "", 0, 0, "power_w",
					     "point %d: power %g W is not a finite value >= 0",
					     i + 1, w[i]);
	}
	memset(pm, 0, sizeof *pm);
	pm->n = n;
	memcpy(pm->u, u, (size_t)n * sizeof *u);
	memcpy(pm->w, w, (size_t)n * sizeof *w);
	pm->alpha = 1;
	pm->idle_w = lsim_power_w(pm, 0);
	pm->max_w = lsim_power_w(pm, 1);
	return 0;
}

/* Parses a whole field as a finite number. */
static int parse_number(const char *s, double *out)
{
	if (!s || !*s)
		return -1;
	errno = 0;
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || errno == ERANGE || !isfinite(v))
		return -1;
	*out = v;
	return 0;
}

/* Field i of the current record as a number; errors name line and column. */
static int csv_number(struct lsim_csv *r, int i, const char *key, double *out,
		      struct lsim_diag *d)
{
	int line = lsim_csv_line(r);
	if (i >= lsim_csv_fields(r))
		return lsim_diag_set(d, LSIM_EFORMAT, lsim_csv_path(r), line, 0,
				     key, "row has %d fields; column '%s' is field %d",
				     lsim_csv_fields(r), key, i + 1);
	const char *s = lsim_csv_field_trim(r, i);
	if (parse_number(s, out) != 0)
		return lsim_diag_set(d, LSIM_EFORMAT, lsim_csv_path(r), line,
				     lsim_csv_field_col(r, i), key,
				     "'%s' is not a number", s);
	return 0;
}

int lsim_power_model_load_table(struct lsim_power_model *pm, const char *path,
				struct lsim_diag *d)
{
	struct lsim_csv *r = NULL;
	int rc = lsim_csv_open(path, &r, d);
	if (rc != 0)
		return rc;
	static const char *const cols[] = {"util", "power_w"};
	int idx[2];
	double u[LSIM_POWER_TABLE_MAX], w[LSIM_POWER_TABLE_MAX];
	int n = 0;
	rc = lsim_csv_require(r, cols, 2, idx, d);
	while (rc == 0 && (rc = lsim_csv_next(r, d)) == 1) {
		int line = lsim_csv_line(r);
		if (n == LSIM_POWER_TABLE_MAX) {
			rc = lsim_diag_set(d, LSIM_EFORMAT, path, line, 0, "",
					   "more than %d points", LSIM_POWER_TABLE_MAX);
			break;
		}
		rc = csv_number(r, idx[0], cols[0], &u[n], d);
		if (rc == 0)
			rc = csv_number(r, idx[1], cols[1], &w[n], d);
		if (rc == 0 && !(u[n] >= 0 && u[n] <= 1))
			rc = lsim_diag_set(d, LSIM_ERANGE, path, line,
					   lsim_csv_field_col(r, idx[0]), cols[0],
					   "utilisation %g is outside [0, 1]", u[n]);
		if (rc == 0 && n > 0 && !(u[n] > u[n - 1]))
			rc = lsim_diag_set(d, LSIM_EFORMAT, path, line,
					   lsim_csv_field_col(r, idx[0]), cols[0],
					   "utilisation %g is not above the previous row's %g",
					   u[n], u[n - 1]);
		if (rc == 0 && w[n] < 0)
			rc = lsim_diag_set(d, LSIM_ERANGE, path, line,
					   lsim_csv_field_col(r, idx[1]), cols[1],
					   "power %g W is negative", w[n]);
		n++;
	}
	if (rc == 0 && n < 2)
		rc = lsim_diag_set(d, LSIM_EFORMAT, path, lsim_csv_line(r), 0, "",
				   "a power table needs at least 2 rows, found %d", n);
	lsim_csv_close(r);
	if (rc != 0)
		return rc;
	return lsim_power_model_init_table(pm, u, w, n, d);
}

int lsim_power_model_fit_linear(struct lsim_power_model *pm, const double *u,
				const double *w, size_t n, double *r2,
				struct lsim_diag *d)
{
	if (n < 3)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "power",
				     "a line fit needs at least 3 points, not %zu", n);
	for (size_t i = 0; i < n; i++)
		if (!isfinite(u[i]) || !isfinite(w[i]))
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "power",
					     "point %zu is not finite", i + 1);
	double c0, c1, cov00, cov01, cov11, sumsq;
	if (gsl_fit_linear(u, 1, w, 1, n, &c0, &c1, &cov00, &cov01, &cov11,
			   &sumsq) != 0 || !isfinite(c0) || !isfinite(c1))
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "power",
				     "the points do not determine a line (all at one utilisation?)");
	if (c0 < 0 || c1 < 0)
		return lsim_diag_set(d, LSIM_ERANGE, "", 0, 0, "power",
				     "fitted line P = %g + %g u is not an idle power >= 0 rising with u",
				     c0, c1);
	if (r2) {
		double tss = gsl_stats_variance(w, 1, n) * (double)(n - 1);
		*r2 = tss > 0 ? 1.0 - sumsq / tss : 1.0;
	}
	return lsim_power_model_init(pm, c0, c0 + c1, 1.0, d);
}

double lsim_power_w(const struct lsim_power_model *pm, double u)
{
	if (!(u > 0))
		u = 0;
	else if (u > 1)
		u = 1;
	if (pm->n == 0) {
		double f = pm->alpha == 1.0 ? u : pow(u, pm->alpha);
		return pm->idle_w + (pm->max_w - pm->idle_w) * f;
	}
	if (u <= pm->u[0])
		return pm->w[0];
	for (int i = 1; i < pm->n; i++) {
		if (u <= pm->u[i]) {
			double a = (u - pm->u[i - 1]) / (pm->u[i] - pm->u[i - 1]);
			return pm->w[i - 1] + a * (pm->w[i] - pm->w[i - 1]);
		}
	}
	return pm->w[pm->n - 1];
}

int lsim_energy_samples(const struct lsim_power_model *pm, const lsim_time *t,
			const double *u, size_t n, enum lsim_integration how,
			double *joules, struct lsim_diag *d)
{
	*joules = 0;
	if (n == 0)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "samples",
				     "no utilisation samples");
	for (size_t i = 0; i < n; i++) {
		if (isnan(u[i]))
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "util",
					     "sample %zu: utilisation is NaN", i + 1);
		if (i > 0 && t[i] < t[i - 1])
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "time",
					     "sample %zu: time %lld ns is before the previous %lld ns",
					     i + 1, (long long)t[i], (long long)t[i - 1]);
	}
	double j = 0;
	for (size_t i = 0; i + 1 < n; i++) {
		double dt = (double)(t[i + 1] - t[i]) / 1e9;
		double p = lsim_power_w(pm, u[i]);
		if (how == LSIM_INTEG_TRAPEZOID)
			p = 0.5 * (p + lsim_power_w(pm, u[i + 1]));
		j += p * dt;
	}
	*joules = j;
	return 0;
}

/* ---- carbon series ---- */

struct lsim_carbon_series {
	size_t n;
	lsim_time period;
	lsim_time *t;
	double *v;
};

int lsim_carbon_create(const lsim_time *time, const double *g_per_kwh,
		       size_t n, lsim_time period,
		       struct lsim_carbon_series **out, struct lsim_diag *d)
{
	*out = NULL;
	if (n == 0)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "carbon",
				     "a carbon series needs at least one step");
	if (period < 0)
		return lsim_diag_set(d, LSIM_ERANGE, "", 0, 0, "period",
				     "period is negative");
	for (size_t i = 0; i < n; i++) {
		if (!(g_per_kwh[i] >= 0) || !isfinite(g_per_kwh[i]))
			return lsim_diag_set(d, LSIM_ERANGE, "", 0, 0, "gco2_per_kwh",
					     "step %zu: intensity %g is not a finite value >= 0",
					     i + 1, g_per_kwh[i]);
		if (i > 0 && time[i] <= time[i - 1])
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "time",
					     "step %zu: time does not increase", i + 1);
		if (period > 0 && (time[i] < 0 || time[i] >= period))
			return lsim_diag_set(d, LSIM_ERANGE, "", 0, 0, "time",
					     "step %zu: time %lld ns is outside the period [0, %lld ns)",
					     i + 1, (long long)time[i], (long long)period);
	}
	struct lsim_carbon_series *s = calloc(1, sizeof *s);
	if (s) {
		s->t = malloc(n * sizeof *s->t);
		s->v = malloc(n * sizeof *s->v);
	}
	if (!s || !s->t || !s->v) {
		lsim_carbon_destroy(s);
		return LSIM_ENOMEM;
	}
	memcpy(s->t, time, n * sizeof *time);
	memcpy(s->v, g_per_kwh, n * sizeof *g_per_kwh);
	s->n = n;
	s->period = period;
	*out = s;
	return 0;
}

void lsim_carbon_destroy(struct lsim_carbon_series *s)
{
	if (!s)
		return;
	free(s->t);
	free(s->v);
	free(s);
}

size_t lsim_carbon_steps(const struct lsim_carbon_series *s)
{
	return s->n;
}

struct growable {
	lsim_time *t;
	double *v;
	size_t n, cap;
};

static int grow_push(struct growable *g, lsim_time t, double v)
{
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 64;
		lsim_time *nt = realloc(g->t, cap * sizeof *nt);
		if (!nt)
			return LSIM_ENOMEM;
		g->t = nt;
		double *nv = realloc(g->v, cap * sizeof *nv);
		if (!nv)
			return LSIM_ENOMEM;
		g->v = nv;
		g->cap = cap;
	}
	g->t[g->n] = t;
	g->v[g->n] = v;
	g->n++;
	return 0;
}

/* Reads one record of a carbon CSV into g. */
static int carbon_row(struct lsim_csv *r, int it, bool iso, int ig,
		      lsim_time period, int64_t *origin, struct growable *g,
		      struct lsim_diag *d)
{
	const char *path = lsim_csv_path(r);
	const char *tkey = iso ? "timestamp" : "time_s";
	int line = lsim_csv_line(r), nf = lsim_csv_fields(r);
	if (nf <= it || nf <= ig) {
		int miss = nf <= it ? it : ig;
		return lsim_diag_set(d, LSIM_EFORMAT, path, line, 0,
				     nf <= it ? tkey : "gco2_per_kwh",
				     "row has %d fields; this column is field %d",
				     nf, miss + 1);
	}
	const char *ts = lsim_csv_field_trim(r, it);
	int tcol = lsim_csv_field_col(r, it);
	int64_t t = 0;
	int rc = iso ? lsim_wl_parse_datetime(ts, &t)
		     : lsim_wl_parse_decimal(ts, 9, &t);
	if (rc != 0)
		return lsim_diag_set(d, LSIM_EFORMAT, path, line, tcol, tkey,
				     "time '%s' %s (expected %s)", ts,
				     rc == LSIM_ERANGE ? "is out of range" : "is malformed",
				     iso ? "YYYY-MM-DD HH:MM:SS[.fraction][Z|+HH:MM]"
					 : "a number of seconds");
	if (iso) {
		if (g->n == 0)
			*origin = t;
		if (__builtin_sub_overflow(t, *origin, &t))
			return lsim_diag_set(d, LSIM_ERANGE, path, line, tcol, tkey,
					     "time '%s' is too far from the first row's",
					     ts);
	}
	if (g->n > 0 && t <= g->t[g->n - 1])
		return lsim_diag_set(d, LSIM_EFORMAT, path, line, tcol, tkey,
				     "time '%s' is not after the previous row's; times must increase",
				     ts);
	if (period > 0 && (t < 0 || t >= period))
		return lsim_diag_set(d, LSIM_ERANGE, path, line, tcol, tkey,
				     "time '%s' is outside the period of %g s", ts,
				     lsim_time_to_s(period));
	const char *vs = lsim_csv_field_trim(r, ig);
	int vcol = lsim_csv_field_col(r, ig);
	double v;
	if (parse_number(vs, &v) != 0)
		return lsim_diag_set(d, LSIM_EFORMAT, path, line, vcol,
				     "gco2_per_kwh", "'%s' is not a number", vs);
	if (v < 0)
		return lsim_diag_set(d, LSIM_ERANGE, path, line, vcol,
				     "gco2_per_kwh", "intensity %g is negative", v);
	return grow_push(g, t, v);
}

/* "a, b, c": the header's columns, for messages. */
static void header_list(const struct lsim_csv *r, char *buf, size_t size)
{
	size_t k = 0;
	buf[0] = '\0';
	for (int i = 0; i < lsim_csv_columns(r) && k < size; i++)
		k += (size_t)snprintf(buf + k, size - k, "%s%s", i ? ", " : "",
				      lsim_csv_name(r, i));
}

int lsim_carbon_load(const char *path, lsim_time period,
		     struct lsim_carbon_series **out, struct lsim_diag *d)
{
	*out = NULL;
	if (period < 0)
		return lsim_diag_set(d, LSIM_ERANGE, path, 0, 0, "period",
				     "period is negative");
	struct lsim_csv *r = NULL;
	int rc = lsim_csv_open(path, &r, d);
	if (rc != 0)
		return rc;
	int it = lsim_csv_column(r, "time_s");
	bool iso = false;
	if (it < 0) {
		it = lsim_csv_column(r, "timestamp");
		iso = it >= 0;
	}
	if (it < 0) {
		char cols[512];
		header_list(r, cols, sizeof cols);
		rc = lsim_diag_set(d, LSIM_EFORMAT, path, lsim_csv_line(r), 0,
				   "time_s",
				   "no column 'time_s' (or 'timestamp') in the header (columns: %s)",
				   cols);
		lsim_csv_close(r);
		return rc;
	}
	static const char *const vname[] = {"gco2_per_kwh"};
	int ig;
	rc = lsim_csv_require(r, vname, 1, &ig, d);
	struct growable g = {0};
	int64_t origin = 0;
	while (rc == 0 && (rc = lsim_csv_next(r, d)) == 1)
		rc = carbon_row(r, it, iso, ig, period, &origin, &g, d);
	if (rc == 0 && g.n == 0)
		rc = lsim_diag_set(d, LSIM_EFORMAT, path, lsim_csv_line(r), 0, "",
				   "no rows after the header");
	lsim_csv_close(r);
	if (rc == 0)
		rc = lsim_carbon_create(g.t, g.v, g.n, period, out, d);
	free(g.t);
	free(g.v);
	return rc;
}

void lsim_carbon_cursor_init(struct lsim_carbon_cursor *c,
			     const struct lsim_carbon_series *s)
{
	c->s = s;
	c->i = 0;
}

/*
 * The step holding position x (x >= t[0]): the last i with t[i] <= x.
 * Tries the cursor's step and the next one before a binary search.
 */
static size_t find_step(struct lsim_carbon_cursor *c, lsim_time x)
{
	const struct lsim_carbon_series *s = c->s;
	size_t n = s->n;
	for (size_t i = c->i; i < n && i <= c->i + 1; i++) {
		if (s->t[i] <= x && (i + 1 == n || x < s->t[i + 1])) {
			c->i = i;
			return i;
		}
	}
	size_t lo = 0, hi = n; /* t[lo] <= x < t[hi] */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->t[mid] <= x)
			lo = mid;
		else
			hi = mid;
	}
	c->i = lo;
	return lo;
}

/* Intensity at t, and the time of the next step after t (> t). */
static double locate(struct lsim_carbon_cursor *c, lsim_time t,
		     lsim_time *next)
{
	const struct lsim_carbon_series *s = c->s;
	size_t n = s->n;
	if (s->period == 0) {
		if (t < s->t[0]) {
			*next = s->t[0];
			return s->v[0];
		}
		size_t i = find_step(c, t);
		*next = i + 1 < n ? s->t[i + 1] : LSIM_TIME_MAX;
		return s->v[i];
	}
	lsim_time P = s->period;
	lsim_time ph = t % P;
	if (ph < 0)
		ph += P;
	lsim_time base;
	if (__builtin_sub_overflow(t, ph, &base))
		base = INT64_MIN;
	lsim_time at;
	double v;
	if (ph < s->t[0]) {
		at = s->t[0];
		v = s->v[n - 1];
	} else {
		size_t i = find_step(c, ph);
		v = s->v[i];
		if (i + 1 < n)
			at = s->t[i + 1];
		else if (__builtin_add_overflow(P, s->t[0], &at))
			at = LSIM_TIME_MAX;
	}
	if (__builtin_add_overflow(base, at, next))
		*next = LSIM_TIME_MAX;
	return v;
}

double lsim_carbon_at(struct lsim_carbon_cursor *c, lsim_time t)
{
	lsim_time next;
	return locate(c, t, &next);
}

double lsim_carbon_grams(struct lsim_carbon_cursor *c, lsim_time t0,
			 lsim_time t1, double power_w)
{
	double g = 0;
	lsim_time t = t0;
	while (t < t1) {
		lsim_time next;
		double v = locate(c, t, &next);
		lsim_time e = next < t1 && next > t ? next : t1;
		g += v * (double)(e - t);
		t = e;
	}
	return g * power_w / WNS_PER_KWH;
}

/* ---- accumulator ---- */

int lsim_energy_acc_init(struct lsim_energy_acc *acc,
			 const struct lsim_power_model *pm, int gpus,
			 double pue, double g_per_kwh,
			 const struct lsim_carbon_series *series,
			 struct lsim_diag *d)
{
	if (gpus < 1)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "gpus",
				     "an instance needs at least one GPU, not %d",
				     gpus);
	if (!(pue >= 1 && pue <= 10))
		return lsim_diag_set(d, LSIM_ERANGE, "", 0, 0, "pue",
				     "PUE %g is outside [1, 10]", pue);
	if (!series && !(g_per_kwh >= 0 && isfinite(g_per_kwh)))
		return lsim_diag_set(d, LSIM_ERANGE, "", 0, 0, "carbon_intensity",
				     "intensity %g is not a finite value >= 0",
				     g_per_kwh);
	memset(acc, 0, sizeof *acc);
	acc->pm = *pm;
	acc->gpus = gpus;
	acc->pue = pue;
	acc->intensity = series ? 0 : g_per_kwh;
	lsim_carbon_cursor_init(&acc->carbon, series);
	acc->first = LSIM_TIME_MAX;
	acc->last = INT64_MIN;
	return 0;
}

int lsim_energy_acc_add(struct lsim_energy_acc *acc, lsim_time t0,
			lsim_time t1, double util)
{
	if (t1 < t0 || isnan(util))
		return LSIM_EINVAL;
	double u = util < 0 ? 0 : util > 1 ? 1 : util;
	return lsim_energy_acc_add_w(acc, t0, t1, u, lsim_power_w(&acc->pm, u) * acc->gpus);
}

int lsim_energy_acc_add_w(struct lsim_energy_acc *acc, lsim_time t0, lsim_time t1,
			  double util, double it_w)
{
	if (t1 < t0 || isnan(util) || !(it_w >= 0))
		return LSIM_EINVAL;
	double u = util < 0 ? 0 : util > 1 ? 1 : util;
	double fac_w = it_w * acc->pue;
	double dt = (double)(t1 - t0); /* ns */
	acc->gpu_j += it_w * dt / 1e9;
	acc->facility_j += fac_w * dt / 1e9;
	if (acc->carbon.s)
		acc->carbon_g += lsim_carbon_grams(&acc->carbon, t0, t1, fac_w);
	else
		acc->carbon_g += fac_w * dt * acc->intensity / WNS_PER_KWH;
	acc->util_ns += u * dt;
	acc->covered += t1 - t0;
	if (t0 < acc->first)
		acc->first = t0;
	if (t1 > acc->last)
		acc->last = t1;
	return 0;
}

double lsim_energy_acc_mean_util(const struct lsim_energy_acc *acc)
{
	return acc->covered > 0 ? acc->util_ns / (double)acc->covered : 0;
}

double lsim_energy_acc_kwh(const struct lsim_energy_acc *acc)
{
	return acc->facility_j / J_PER_KWH;
}

double lsim_energy_acc_cost(const struct lsim_energy_acc *acc,
			    const struct lsim_billing *b)
{
	if (acc->first > acc->last)
		return 0;
	return lsim_billing_cost(b, acc->first, acc->last);
}

/* ---- attribution ---- */

double lsim_per_mtok(double amount, double tokens)
{
	return tokens > 0 ? amount / tokens * 1e6 : NAN;
}

int lsim_attribute_by_tokens(const double *amount, size_t ninst,
			     const double *tokens, size_t ntenants,
			     double *out, double *unattributed,
			     struct lsim_diag *d)
{
	for (size_t i = 0; i < ninst; i++)
		for (size_t k = 0; k < ntenants; k++)
			if (!(tokens[i * ntenants + k] >= 0))
				return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0,
						     "tokens",
						     "instance %zu, tenant %zu: token count %g is not >= 0",
						     i, k, tokens[i * ntenants + k]);
	for (size_t k = 0; k < ntenants; k++)
		out[k] = 0;
	double un = 0;
	for (size_t i = 0; i < ninst; i++) {
		const double *row = tokens + i * ntenants;
		double sum = 0;
		for (size_t k = 0; k < ntenants; k++)
			sum += row[k];
		if (sum <= 0) {
			un += amount[i];
			continue;
		}
		for (size_t k = 0; k < ntenants; k++)
			out[k] += amount[i] * (row[k] / sum);
	}
	if (unattributed)
		*unattributed = un;
	return 0;
}
