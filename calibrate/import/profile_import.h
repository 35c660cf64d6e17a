/*
 * profile_import.h - `llmsim profile import` and `llmsim profile compare`.
 *
 * import turns published GPU measurements into the per-layer tables the
 * `table` perf backend reads (tp<N>/dense.csv, per_sequence.csv,
 * attention.csv), or into per-iteration tables where the source has no
 * per-layer data:
 *   llmservingsim - LLMServingSim profiler output: the current layout
 *                   (checked and copied) or the older v0 `layers.csv`;
 *   vidur         - Vidur per-operator CSVs (mlp.csv, attention.csv) summed
 *                   into per-layer rows, and its NCCL all_reduce.csv /
 *                   send_recv.csv into bytes -> time tables;
 *   splitwise     - Splitwise perf_model.csv (prompt and per-token time per
 *                   batch configuration) into tp<N>/iteration.csv.
 * The mapping rules are in docs/profiles.md.
 *
 * compare puts llmsim's roofline prediction beside a measured table: per
 * decoder layer and per iteration, for prefills of 1..8192 tokens and
 * decode batches, wherever the table has measurements.
 *
 * The library functions return LSIM_E* codes with a diagnostic and never
 * print; the subcommands that parse arguments and print are
 * sim/cli/profile_cli.c.
 */
#ifndef LLMSIM_PROFILE_IMPORT_H
#define LLMSIM_PROFILE_IMPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "kernel/config.h"
#include "cluster/hw.h"
#include "llmsim/llmsim.h"

enum lsim_import_from {
	LSIM_IMPORT_LLMSERVINGSIM,
	LSIM_IMPORT_VIDUR,
	LSIM_IMPORT_SPLITWISE,
};

/* "llmservingsim" | "vidur" | "splitwise" -> *out; LSIM_EINVAL otherwise. */
int lsim_import_from_parse(const char *name, int *out);

struct lsim_import_opts {
	int from;		  /* enum lsim_import_from */
	const char *const *src;	  /* source files or folders */
	size_t n_src;
	const char *outdir;	  /* created if missing */
	const char *model;	  /* label; Splitwise: the `model` rows to keep (NULL: the only one) */
	const char *gpu;	  /* label; Splitwise: the `hardware` rows to keep (NULL: the only one) */
	int tp;			  /* import this tensor-parallel degree only (0: all) */
};

#define LSIM_IMPORT_MAX_TP 16
#define LSIM_IMPORT_MAX_FILES 64

struct lsim_import_result {
	char layout[16];	     /* "layers" (table backend) or "iteration" */
	int n_tp;
	int tp[LSIM_IMPORT_MAX_TP];  /* degrees written, ascending */
	bool loadable[LSIM_IMPORT_MAX_TP]; /* tp[i] loads through the table backend */
	int n_files;
	char files[LSIM_IMPORT_MAX_FILES][96]; /* written, relative to outdir */
	size_t rows_read;	     /* data rows read from the sources */
	char note[512];		     /* what the source lacked, "" if nothing */
};

/*
 * Reads the sources and writes outdir/tp<N>/... and outdir/import.yaml.
 * Everything is written into a staging folder inside outdir, checked (every
 * per-layer tp folder is loaded through the table backend), then renamed
 * into place file by file; a failed import writes no file into outdir (which
 * it creates if missing). Bad source rows give LSIM_EFORMAT naming file,
 * line, byte column and column name.
 */
int lsim_profile_import(const struct lsim_import_opts *o, struct lsim_import_result *r,
			struct lsim_diag *d);

struct lsim_compare_opts {
	const char *perf_dir; /* an imported folder (holding tp<N>/) */
	const char *gpu;      /* hardware profile name */
	const char *model;    /* catalogue model name */
	int tp;		      /* 0: the only tp<N> folder there */
	const char *data_dir; /* profiles/ and models.yaml; NULL: lsim_data_dir() */
	/* > 0: first fit the serving stack's launch_latency and mfu_max to
	 * the per-iteration table tp<fit_tp>/iteration.csv (lsim_fit_overheads),
	 * then compare tp with the fitted values */
	int fit_tp;
};

/* One batch: `batch` sequences of `tokens` new tokens after `context` cached. */
struct lsim_compare_point {
	bool decode;
	int batch, tokens, context;
	double meas_layer_s, roof_layer_s; /* NAN for a per-iteration table */
	double meas_iter_s, roof_iter_s;
};

struct lsim_compare_result {
	char layout[16];   /* "layers" or "iteration" */
	char gpu[64], model[64];
	int tp, n_layers;
	bool tp_comm;	   /* tp > 1 and measured all-reduce times were added */
	struct lsim_compare_point *pts;
	size_t n;
	/* mean |roofline / measured - 1| over the points of each phase
	 * (0 prefill, 1 decode); NAN when the phase has no point */
	double mean_abs_layer[2], mean_abs_iter[2];
	/* with fit_tp: the fit, and the profile's values it replaced */
	bool fitted;
	int fit_tp;
	double fit_launch_s, fit_mfu_max;
	double prof_launch_s, prof_mfu_max;
	double fit_mean_abs[2]; /* per phase, on the fitted table */
	size_t fit_screened;	/* its rows left out of the fit (lsim_fit_overheads) */
	/* the host issue latency (fitted when host_fitted, else the
	 * profile's), and the largest value the fitted table cannot see: below
	 * it every row's GPU time exceeds the host's issue of its kernels
	 * (lsim_host_issue_unseen) */
	bool host_fitted;
	double host_issue_s, prof_host_issue_s, fit_host_unseen_s;
};

int lsim_profile_compare(const struct lsim_compare_opts *o, struct lsim_compare_result *r,
			 struct lsim_diag *d);
void lsim_compare_result_release(struct lsim_compare_result *r); /* NULL is fine */

/*
 * Fits two constants of a serving stack to a per-iteration table (rows of
 * one model on one GPU at one tensor-parallel degree, measured as
 * whole iterations): launch_latency, the cost of each kernel of a decoder
 * layer (and of the iteration's own kernels), which does not shrink with
 * tensor parallelism, and mfu_max, the stack's fraction of peak FLOP/s in
 * large GEMMs, which does. The rest of the profile (bandwidths, the fabric
 * the NCCL model times the all-reduces on) stays as it is. Minimises the sum over the two
 * phases of the mean |roofline / measured - 1| (robust to an outlying
 * row): mfu_max on a grid of 0.005 in [0.10, 1], launch_latency exactly
 * for each (iteration time is linear in it: a weighted median). A prefill
 * row measured faster than the same prompts in a smaller batch is left
 * out (*screened, optional, gets how many). *g gets the fitted values;
 * mean_abs (optional) the fit's mean |error| per phase on the kept rows.
 *
 * Then the host floor: with those two fixed, the host issue latency that
 * minimises the same objective (the iteration takes max(GPU time, kernels
 * x it)); when that minimum beats every value the rows cannot see
 * (lsim_host_issue_unseen) the table sees a floor: host_issue_s is set to
 * it, the two are fitted again with it, and so on until it stays
 * (*host_fitted, optional, gets true). Otherwise the profile's
 * host_issue_s stays.
 */
int lsim_fit_overheads(const char *iteration_csv, const struct lsim_model_arch *m, int tp,
		       struct lsim_gpu_profile *g, double mean_abs[2], size_t *screened,
		       bool *host_fitted, struct lsim_diag *d);

/*
 * The largest host_issue_latency (s per kernel) that the rows of a
 * per-iteration table cannot see: the smallest roofline GPU time of a row,
 * with no host floor, over the kernels of an iteration
 * (lsim_perf_roofline_kernels). Any host issue latency from 0 to it
 * predicts every row the same, so the table cannot fit one there.
 */
int lsim_host_issue_unseen(const char *iteration_csv, const struct lsim_model_arch *m, int tp,
			   const struct lsim_gpu_profile *g, double *bound_s, struct lsim_diag *d);

/* A text table, or one JSON object, into b. */
void lsim_compare_format(const struct lsim_compare_result *r, bool json, struct lsim_buf *b);

/* Signed relative error of the roofline: roof / meas - 1. */
double lsim_compare_err(double meas, double roof);

#endif
