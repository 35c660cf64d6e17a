/*
 * cost.h - money, energy and carbon: cloud instance prices as loaded from
 * calibrate/prices.yaml, billing with a granularity and a minimum, a
 * per-GPU power model P(u), energy from utilisation samples, grid carbon
 * intensity as a constant or a piecewise-constant time series, a
 * per-instance accumulator the simulator feeds with (interval, utilisation),
 * and the arithmetic that turns totals into cost per million tokens and
 * splits them over tenants. Units: USD, watts, joules, gCO2 per kWh, grams
 * of CO2, lsim_time nanoseconds. See docs/cost.md for the formulas.
 */
#ifndef LLMSIM_COST_H
#define LLMSIM_COST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "llmsim/llmsim.h"

struct lsim_gpu_profile;

/* ---- prices (calibrate/prices.yaml) ---- */

/* Billing defaults: per second with a 60 s minimum (AWS, GCP on demand). */
#define LSIM_BILL_GRANULARITY_DEFAULT LSIM_S
#define LSIM_BILL_MINIMUM_DEFAULT (60 * LSIM_S)

/* One priced offer: a whole instance (all its GPUs) at one date. */
struct lsim_instance_price {
	char name[64];	       /* unique id in the file, e.g. "aws-p5.48xlarge" */
	char provider[32];     /* aws | gcp | azure | lambda | runpod | ... */
	char instance[64];     /* the provider's type name, e.g. "p5.48xlarge" */
	char gpu[64];	       /* GPU kind: a calibrate/profiles name where one exists */
	int gpus;	       /* GPUs in one instance */
	double on_demand;      /* USD per instance-hour, on demand */
	double spot;	       /* USD per instance-hour, spot; 0 = not known */
	char region[32];
	char observed[16];     /* date of on_demand: YYYY, YYYY-MM or YYYY-MM-DD */
	char spot_observed[16]; /* date of spot ("" = same as observed) */
	lsim_time billing_granularity; /* usage is rounded up to a multiple */
	lsim_time billing_minimum;     /* shortest usage billed */
	char source[256];      /* URL or citation */
	char note[256];
};

/* A loaded price file: n offers in file order. */
struct lsim_prices {
	char file[256];
	size_t n;
	struct lsim_instance_price *items;
};

/*
 * Loads a price file (top level: `instances:`, a list of mappings; schema in
 * calibrate/prices.md). Unknown keys (with a did-you-mean), missing keys,
 * bad units, bad dates and duplicate names are errors naming file, line and
 * key. On success *out is a new object for lsim_prices_destroy.
 */
int lsim_prices_load(const char *path, struct lsim_prices **out,
		     struct lsim_diag *d);
void lsim_prices_destroy(struct lsim_prices *p);

/*
 * The offer called name. LSIM_ENOENT if none, with a did-you-mean or the
 * list of known names in d.
 */
int lsim_prices_find(const struct lsim_prices *p, const char *name,
		     const struct lsim_instance_price **out,
		     struct lsim_diag *d);

/*
 * The offer with the lowest per-GPU price for GPU kind gpu (spot prices
 * when spot is set, skipping offers without one); ties go to the first in
 * the file. LSIM_ENOENT if none.
 */
int lsim_prices_cheapest(const struct lsim_prices *p, const char *gpu,
			 bool spot, const struct lsim_instance_price **out,
			 struct lsim_diag *d);

/* USD per GPU-hour of an offer (on demand, or spot; 0 if unknown). */
double lsim_price_per_gpu_hour(const struct lsim_instance_price *ip,
			       bool spot);

/* ---- billing ---- */

/*
 * Billed duration of usage [start, stop]: max(stop - start, minimum)
 * rounded up to a multiple of granularity (granularity <= 0: no rounding).
 * stop < start counts as zero-length usage, which still pays the minimum.
 */
lsim_time lsim_billed_ns(lsim_time start, lsim_time stop,
			 lsim_time granularity, lsim_time minimum);

/* USD for usage [start, stop] at price_per_hour, billed as above. */
double lsim_bill(double price_per_hour, lsim_time start, lsim_time stop,
		 lsim_time granularity, lsim_time minimum);

/* The billing terms of one simulated serving instance. */
struct lsim_billing {
	double price_per_hour; /* USD per hour for the GPUs it uses */
	lsim_time granularity;
	lsim_time minimum;
};

/*
 * Terms for a replica using `gpus` GPUs of offer ip: the per-GPU price
 * times gpus (a replica smaller than the instance pays its share), with the
 * offer's granularity and minimum.
 */
void lsim_billing_from_price(struct lsim_billing *b,
			     const struct lsim_instance_price *ip, int gpus,
			     bool spot);

/* USD for usage [start, stop] under terms b. */
double lsim_billing_cost(const struct lsim_billing *b, lsim_time start,
			 lsim_time stop);

/* ---- power ---- */

#define LSIM_POWER_ALPHA_DEFAULT 1.0
#define LSIM_POWER_TABLE_MAX 32

/*
 * Power of one GPU as a function of its utilisation u in [0, 1] (u outside
 * is clamped): P(u) = idle_w + (max_w - idle_w) * u^alpha, or, when n > 0,
 * linear interpolation in the table (u[i], w[i]), held flat beyond its ends.
 */
struct lsim_power_model {
	double idle_w; /* P(0) */
	double max_w;  /* P(1) */
	double alpha;  /* exponent (1 = linear) */
	int n;	       /* table points; 0 = use the formula */
	double u[LSIM_POWER_TABLE_MAX];
	double w[LSIM_POWER_TABLE_MAX];
};

/* The formula. Requires 0 <= idle_w <= max_w and 0 < alpha <= 10. */
int lsim_power_model_init(struct lsim_power_model *pm, double idle_w,
			  double max_w, double alpha, struct lsim_diag *d);

/* The formula from a hardware profile: idle_power, tdp, default alpha. */
int lsim_power_model_init_profile(struct lsim_power_model *pm,
				  const struct lsim_gpu_profile *g,
				  struct lsim_diag *d);

/*
 * A table of n (2..LSIM_POWER_TABLE_MAX) measured points: u strictly
 * increasing inside [0, 1], w >= 0. idle_w and max_w are set to the table's
 * values at u = 0 and u = 1.
 */
int lsim_power_model_init_table(struct lsim_power_model *pm, const double *u,
				const double *w, int n, struct lsim_diag *d);

/*
 * Reads a table from a CSV file with columns `util` and `power_w` (other
 * columns ignored); errors name file, line, column and key.
 */
int lsim_power_model_load_table(struct lsim_power_model *pm, const char *path,
				struct lsim_diag *d);

/*
 * Least-squares line P = c0 + c1 u through n >= 3 measured points (GSL);
 * sets the formula with idle_w = c0, max_w = c0 + c1, alpha = 1. *r2 (may
 * be NULL) receives the coefficient of determination. LSIM_ERANGE if the
 * fit gives a negative idle or a falling line.
 */
int lsim_power_model_fit_linear(struct lsim_power_model *pm, const double *u,
				const double *w, size_t n, double *r2,
				struct lsim_diag *d);

/* Watts of one GPU at utilisation u. */
double lsim_power_w(const struct lsim_power_model *pm, double u);

/* How lsim_energy_samples joins utilisation samples. */
enum lsim_integration {
	LSIM_INTEG_STEP,      /* u[i] holds on [t[i], t[i+1]) */
	LSIM_INTEG_TRAPEZOID, /* power linear between P(u[i]) and P(u[i+1]) */
};

/*
 * Joules of one GPU over [t[0], t[n-1]] from n >= 1 samples (t in ns,
 * non-decreasing). LSIM_EINVAL for times out of order or a NaN utilisation.
 */
int lsim_energy_samples(const struct lsim_power_model *pm, const lsim_time *t,
			const double *u, size_t n, enum lsim_integration how,
			double *joules, struct lsim_diag *d);

/* ---- carbon intensity ---- */

/* Facility PUE default: Uptime Institute 2024 survey average. */
#define LSIM_PUE_DEFAULT 1.56
/* Grid intensity default: world 2023, Ember (lifecycle basis), gCO2e/kWh. */
#define LSIM_CARBON_DEFAULT 481.0

/*
 * Grid carbon intensity over time, piecewise constant: value[i] holds on
 * [time[i], time[i+1]); before the first step the first value holds, after
 * the last step the last. With a period P > 0 the series repeats every P
 * (times must lie in [0, P)), and the last value holds until the first step
 * of the next period.
 */
struct lsim_carbon_series;

/* From arrays (copied): n >= 1 steps, times strictly increasing, values >= 0. */
int lsim_carbon_create(const lsim_time *time, const double *g_per_kwh,
		       size_t n, lsim_time period,
		       struct lsim_carbon_series **out, struct lsim_diag *d);

/*
 * From a CSV file with a `gco2_per_kwh` column and a time column: `time_s`
 * (seconds from the start of the run, exact decimal) or `timestamp` (ISO
 * 8601 date-time; the first row is time 0). Errors (missing column,
 * non-numeric value, time not increasing, negative intensity, no rows) name
 * file, line, column and key.
 */
int lsim_carbon_load(const char *path, lsim_time period,
		     struct lsim_carbon_series **out, struct lsim_diag *d);
void lsim_carbon_destroy(struct lsim_carbon_series *s);

size_t lsim_carbon_steps(const struct lsim_carbon_series *s);

/*
 * A read position in a series. Queries at non-decreasing times cost O(1)
 * amortised; earlier times are found by binary search. Several cursors may
 * share one series.
 */
struct lsim_carbon_cursor {
	const struct lsim_carbon_series *s;
	size_t i; /* step of the last query */
};

void lsim_carbon_cursor_init(struct lsim_carbon_cursor *c,
			     const struct lsim_carbon_series *s);

/* gCO2/kWh at time t. */
double lsim_carbon_at(struct lsim_carbon_cursor *c, lsim_time t);

/*
 * Grams of CO2 for a constant draw of power_w watts over [t0, t1],
 * splitting the interval at every step of the series inside it.
 */
double lsim_carbon_grams(struct lsim_carbon_cursor *c, lsim_time t0,
			 lsim_time t1, double power_w);

/* ---- per-instance accumulator ---- */

/*
 * What one serving instance used: the simulator calls lsim_energy_acc_add
 * for every interval of the instance's life (idle ones with util 0), with
 * the utilisation that held over it.
 */
struct lsim_energy_acc {
	struct lsim_power_model pm; /* per GPU */
	int gpus;
	double pue;		    /* facility energy / IT energy */
	double intensity;	    /* gCO2/kWh when there is no series */
	struct lsim_carbon_cursor carbon; /* carbon.s NULL: constant */
	double gpu_j;		    /* energy of the GPUs */
	double facility_j;	    /* gpu_j * pue */
	double carbon_g;	    /* grams of CO2 of facility_j */
	double util_ns;		    /* integral of u over time, ns */
	lsim_time covered;	    /* sum of the interval lengths */
	lsim_time first, last;	    /* earliest start, latest end; first > last: none */
};

/*
 * Sets up acc for `gpus` GPUs of power model pm (copied), facility pue
 * (>= 1) and carbon: series if not NULL (not copied; must outlive acc),
 * else the constant intensity g_per_kwh.
 */
int lsim_energy_acc_init(struct lsim_energy_acc *acc,
			 const struct lsim_power_model *pm, int gpus,
			 double pue, double g_per_kwh,
			 const struct lsim_carbon_series *series,
			 struct lsim_diag *d);

/*
 * Adds [t0, t1] at utilisation util (clamped to [0, 1]) on every GPU.
 * LSIM_EINVAL (nothing added) if t1 < t0 or util is NaN.
 */
int lsim_energy_acc_add(struct lsim_energy_acc *acc, lsim_time t0,
			lsim_time t1, double util);

/*
 * Adds [t0, t1] at a draw of it_w watts of IT power given by the caller (a
 * GPU's part of one shared among instances, docs/sharing.md), util
 * (clamped to [0, 1]) counted as the utilisation over it. LSIM_EINVAL
 * (nothing added) if t1 < t0, util is NaN or it_w is not >= 0.
 */
int lsim_energy_acc_add_w(struct lsim_energy_acc *acc, lsim_time t0, lsim_time t1,
			  double util, double it_w);

/* Mean utilisation over the covered time (0 if none). */
double lsim_energy_acc_mean_util(const struct lsim_energy_acc *acc);

/* kWh of facility energy. */
double lsim_energy_acc_kwh(const struct lsim_energy_acc *acc);

/*
 * USD for the instance under terms b, billed from its first interval's
 * start to its last interval's end; 0 if nothing was added.
 */
double lsim_energy_acc_cost(const struct lsim_energy_acc *acc,
			    const struct lsim_billing *b);

/* ---- attribution ---- */

/* USD (or J, g) per million tokens; NaN when tokens <= 0. */
double lsim_per_mtok(double amount, double tokens);

/*
 * Splits per-instance amounts (cost, energy or carbon) over tenants in
 * proportion to the tokens each tenant was served on that instance:
 * out[k] = sum_i amount[i] * tokens[i][k] / sum_k' tokens[i][k'].
 * tokens is row-major ninst x ntenants. An instance that served no tokens
 * cannot be attributed: its amount goes to *unattributed (may be NULL).
 * LSIM_EINVAL for a negative or NaN token count.
 */
int lsim_attribute_by_tokens(const double *amount, size_t ninst,
			     const double *tokens, size_t ntenants,
			     double *out, double *unattributed,
			     struct lsim_diag *d);

#endif
