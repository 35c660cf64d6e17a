/*
 * kproto.h - the task profiler of Dang et al. ("Resource Management for
 * GPT-based Model Deployed on Clouds", section 4): requests are clustered
 * with K-Prototypes (Huang 1998) over numeric and categorical attributes,
 * then each cluster gets its own regressor per target (gradient boosting
 * and random forest through XGBoost's C API when the build has it, linear
 * least squares through GSL). Also: data tables read from CSV, the
 * versioned model file, the 70/30 per-cluster evaluation (MSE table and
 * relative-error CDFs), and the core side of the `kproto` profiler policy
 * (the core reads the model file; the policy only predicts).
 *
 * Method details (standardisation, the categorical weight mu, restarts,
 * empty clusters, regressor settings, the file format) are in
 * docs/profiler.md. Library code: no printing, errors as LSIM_E* codes
 * with a struct lsim_diag.
 */
#ifndef LLMSIM_KPROTO_H
#define LLMSIM_KPROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel/config.h"
#include "llmsim/policy.h"

/* ---- data tables ---- */

/*
 * n rows of numeric attributes, categorical attributes and targets.
 * Categorical values are codes into the column's level list (labels by
 * first appearance). Row-major arrays; everything is owned.
 */
struct lsim_kp_data {
	size_t n, cap; /* rows, rows allocated */
	size_t n_num, n_cat, n_tgt;
	char **num_names, **cat_names, **tgt_names;
	double *num;	/* n x n_num */
	int32_t *cat;	/* n x n_cat */
	double *tgt;	/* n x n_tgt */
	char ***levels; /* per categorical column, its labels by code */
	size_t *n_levels;
};

/* An empty table with these columns (names are copied). */
int lsim_kp_data_init(struct lsim_kp_data *x, const char *const *num,
		      size_t n_num, const char *const *cat, size_t n_cat,
		      const char *const *tgt, size_t n_tgt);
void lsim_kp_data_release(struct lsim_kp_data *x);

/* Appends a row; cat holds labels (new ones become levels). tgt may be
 * NULL when the table has no targets. */
int lsim_kp_data_add(struct lsim_kp_data *x, const double *num,
		     const char *const *cat, const double *tgt);

/* The code of label in categorical column col, or -1. */
int32_t lsim_kp_level(const struct lsim_kp_data *x, size_t col,
		      const char *label);

/*
 * Reads the named columns of a CSV file (header row; sim/kernel/csv.h). Numbers
 * must be finite decimals; categorical fields are labels, spaces around
 * them removed. Errors name file, line, column and the column's name.
 */
int lsim_kp_data_read_csv(const char *path, const char *const *num,
			  size_t n_num, const char *const *cat, size_t n_cat,
			  const char *const *tgt, size_t n_tgt,
			  struct lsim_kp_data *x, struct lsim_diag *d);

/* ---- K-Prototypes ---- */

struct lsim_kp_opts {
	size_t k;	/* clusters, 1 <= k <= rows */
	double mu;	/* weight of one categorical mismatch; < 0: default */
	int restarts;	/* random initialisations, best cost kept (>= 1) */
	uint64_t seed;	/* of the initialisations (GSL mt19937) */
	int max_iter;	/* assignment/update rounds per restart; 0: 100 */
};

/*
 * The clustering: numeric attributes are standardised, z = (x - center)
 * / scale with the column's mean and sample standard deviation (scale 1
 * for a constant column); prototypes hold standardised means and
 * categorical modes. Distance: squared Euclidean on z plus mu times the
 * number of categorical mismatches (an unknown label, code -1, mismatches
 * every prototype).
 */
struct lsim_kp_clusters {
	size_t k, n_num, n_cat;
	double mu;
	double *center, *scale; /* per numeric column */
	double *proto_num;	/* k x n_num, standardised */
	int32_t *proto_cat;	/* k x n_cat */
	double cost;		/* total distance of the rows, best restart */
	int best_restart;	/* 0-based */
	int iterations;		/* rounds of the best restart */
};

/*
 * Clusters x (targets ignored). assign, if not NULL, receives each row's
 * cluster (n entries). Restart r uses the r-th initialisation drawn from
 * one stream seeded with o->seed, so more restarts never give a higher
 * cost for the same seed.
 */
int lsim_kp_cluster(const struct lsim_kp_data *x, const struct lsim_kp_opts *o,
		    struct lsim_kp_clusters *c, int32_t *assign,
		    struct lsim_diag *d);
void lsim_kp_clusters_release(struct lsim_kp_clusters *c);

/* The nearest prototype (ties: the lowest index) of a raw row; its
 * distance in *dist when dist is not NULL. */
size_t lsim_kp_nearest(const struct lsim_kp_clusters *c, const double *num,
		       const int32_t *cat, double *dist);

/* ---- regressors and the model ---- */

enum lsim_kp_kind {
	LSIM_KP_CONST,	/* the training mean (clusters too small to fit) */
	LSIM_KP_LINEAR, /* ordinary least squares (GSL) */
	LSIM_KP_GB,	/* gradient-boosted trees (XGBoost) */
	LSIM_KP_RF,	/* random forest (XGBoost) */
};

/* "const", "linear", "gb", "rf"; lsim_kp_kind_parse returns -1 for others. */
const char *lsim_kp_kind_name(enum lsim_kp_kind k);
int lsim_kp_kind_parse(const char *s);

/* Does this build have XGBoost (gb and rf)? */
bool lsim_kp_have_xgboost(void);

/* One fitted regressor. Features: the standardised numeric attributes,
 * then one indicator per level of each categorical attribute. */
struct lsim_kp_reg {
	enum lsim_kp_kind kind;
	double value;	 /* CONST: the prediction; GB, RF: base score */
	double *coef;	 /* LINEAR: intercept, then one per feature */
	void *booster;	 /* GB, RF: the XGBoost BoosterHandle */
};

struct lsim_kproto_model {
	struct lsim_kp_clusters cl;
	size_t n_num, n_cat, n_tgt;
	char **num_names, **cat_names, **tgt_names;
	char ***levels;
	size_t *n_levels;
	size_t n_feat;		/* regressor features */
	enum lsim_kp_kind kind; /* what was asked for at training */
	uint64_t seed;
	size_t n_train;		/* rows it was trained on */
	size_t *sizes;		/* rows per cluster at training */
	struct lsim_kp_reg *reg; /* [t * k + c] */
	double *feat;		/* scratch: one feature row */
	int32_t *cat_fill;	/* scratch: its labels */
};

/*
 * Clusters x with o, then fits one regressor of the given kind (LINEAR,
 * GB or RF) per (target, cluster). GB and RF without XGBoost are
 * LSIM_ENOENT with a message saying so.
 */
int lsim_kproto_train(const struct lsim_kp_data *x, const struct lsim_kp_opts *o,
		      enum lsim_kp_kind kind, struct lsim_kproto_model **out,
		      struct lsim_diag *d);
void lsim_kproto_destroy(struct lsim_kproto_model *m);

/*
 * Predicts every target (out[n_tgt]) for one raw row: num[n_num] as in the
 * data, cat[n_cat] as codes into the model's levels (-1: unknown; it
 * matches no prototype, then takes the chosen cluster's mode for the
 * regressor). Returns the cluster. Uses the model's scratch buffers: one
 * caller at a time.
 */
size_t lsim_kproto_predict(struct lsim_kproto_model *m, const double *num,
			   const int32_t *cat, double *out);

/* Index of a column name in the model, or -1. */
int lsim_kproto_num_index(const struct lsim_kproto_model *m, const char *name);
int lsim_kproto_cat_index(const struct lsim_kproto_model *m, const char *name);
int lsim_kproto_tgt_index(const struct lsim_kproto_model *m, const char *name);
int32_t lsim_kproto_level(const struct lsim_kproto_model *m, size_t col,
			  const char *label);

/*
 * The model file: text, first line "llmsim-kproto-model", second
 * "version 1", one keyword per line, XGBoost boosters as base64 of their
 * UBJSON buffer (docs/profiler.md). Saving writes path.tmp and renames it.
 * Loading validates everything; errors name the file, the line and the
 * keyword.
 */
int lsim_kproto_save(const struct lsim_kproto_model *m, const char *path,
		     struct lsim_diag *d);
int lsim_kproto_load(const char *path, struct lsim_kproto_model **out,
		     struct lsim_diag *d);

/* ---- evaluation (paper's Table 2 and relative-error CDFs) ---- */

#define LSIM_KP_EVAL_KINDS 3

struct lsim_kp_eval {
	size_t k, n_tgt, n_kinds;
	enum lsim_kp_kind kinds[LSIM_KP_EVAL_KINDS]; /* rf, gb, linear: those built */
	uint64_t seed;
	size_t n_rows, n_unknown; /* rows; rows with a label the model lacks */
	size_t *n_train, *n_test; /* per cluster */
	double *mse;	  /* [(t * k + c) * n_kinds + m]; NAN: no test row */
	double *mse_all;  /* [t * n_kinds + m] over every test row */
	double **relerr;  /* [t * n_kinds + m]: sorted |pred - y| / |y| */
	size_t *n_rel;	  /* per target: test rows with y != 0 */
};

/*
 * Assigns each row of x (read with the model's columns) to the model's
 * nearest prototype; within each cluster shuffles the rows (GSL, seed)
 * and trains rf, gb and linear on the first round(0.7 n) of them, testing
 * on the rest.
 */
int lsim_kproto_evaluate(const struct lsim_kproto_model *m,
			 const struct lsim_kp_data *x, uint64_t seed,
			 struct lsim_kp_eval *e, struct lsim_diag *d);
void lsim_kp_eval_release(struct lsim_kp_eval *e);

/* ---- the kproto profiler policy (policies/profiler/kproto.c) ---- */

/* Its state: the parameters, then what lsim_kproto_attach sets. */
struct lsim_kproto_profiler {
	const char *model;	    /* model file, relative to the scenario */
	const char *target;	    /* target predicted ("": the first) */
	const char *prompt_feature; /* numeric column fed the prompt tokens */
	const char *class_feature;  /* categorical column fed the QoS class */
	const char *class_labels;   /* "a|b": labels of classes 0, 1 ... */
	const char *hour_feature;   /* numeric column fed the hour of day */
	double start_hour;	    /* hour of day at simulated time 0 */
	/* attached by the core */
	struct lsim_kproto_model *m;
	int32_t target_idx, prompt_col, class_col, hour_col;
	int32_t *class_code; /* per QoS class: level code (-1: unknown) */
	size_t n_class_code;
	double *num;
	int32_t *cat;
	double *out;
};

extern const struct lsim_policy_type lsim_prof_kproto;

struct lsim_policy;

/*
 * The core's half of the kproto profiler: for a policy of type
 * lsim_prof_kproto, reads the model file named by its `model` parameter
 * (relative to base_dir unless absolute), checks the feature names
 * against the model and hands the parsed model to the policy's state.
 * Does nothing (returns 0) for any other policy. Called by the core after
 * the parameters are bound and before init; params is the policy's
 * section (for positions in messages), key its dotted path. Defined in
 * sim/run/kproto_attach.c, beside the policy instances it reads.
 */
int lsim_kproto_attach(struct lsim_policy *p, const struct lsim_doc *doc,
		       const struct lsim_node *params, const char *key,
		       const char *base_dir, struct lsim_diag *d);

/* Frees what lsim_kproto_attach put in the state (the policy's fini). */
void lsim_kproto_detach(struct lsim_kproto_profiler *s);

#endif
