/*
 * fit.h - calibration data and fits: the raw measurement table written by
 * llmsim-calibrate (one row per measurement, a few "meta" rows describing
 * the machine), its CSV reader and writer, the model fits (host link
 * latency + bandwidth, PCIe interference curve, GEMM efficiency curve) and
 * the writer of a hardware profile in the format sim/cluster/hw.c loads. Plain C
 * and GSL: nothing here needs a GPU. Inputs are checked before they reach
 * GSL; a program that wants no abort() from GSL's default error handler
 * even on degenerate data calls gsl_set_error_handler_off() (the CLI does).
 */
#ifndef LLMSIM_CALIB_FIT_H
#define LLMSIM_CALIB_FIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "cluster/hw.h"
#include "llmsim/llmsim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- single-model fits ---- */

/* time(size) = latency_s + size / bandwidth (size in bytes, bandwidth B/s). */
struct lsim_transfer_fit {
	double latency_s;
	double bandwidth;
	double rms_rel; /* root mean square of (model - measured) / measured */
	size_t n;	/* points used */
};

/*
 * Weighted least squares of t = latency + size / bandwidth over n points
 * (weights 1 / t^2, i.e. relative errors count, so small copies pin the
 * latency and large ones the bandwidth). Needs 2 distinct sizes and
 * positive times; a fitted bandwidth <= 0 is LSIM_EINVAL. A negative
 * latency (noise on a tiny one) is reported as fitted.
 */
int lsim_fit_transfer(const double *size, const double *t, size_t n,
		      struct lsim_transfer_fit *out, struct lsim_diag *d);

/* slowdown(u) = 1 + a * u / (1 - u)^b, u = PCIe utilisation in [0, 1). */
struct lsim_interference_fit {
	double a, b;
	double rms_rel;
	size_t n;
};

/*
 * Nonlinear least squares (gsl_multifit_nlinear, trust region with
 * Levenberg-Marquardt steps) of the slowdown curve, residuals relative to
 * the measured slowdown. Needs 2 points with distinct u in (0, 0.99];
 * points with u outside [0, 1) are LSIM_EINVAL.
 */
int lsim_fit_interference(const double *u, const double *slowdown, size_t n,
			  struct lsim_interference_fit *out,
			  struct lsim_diag *d);

/* The curve itself is the simulator's: lsim_pcie_slowdown in sim/cluster/hw.h. */

/* eff(m) = e_max * m / (m + m_half), m = tokens (GEMM rows). */
struct lsim_efficiency_fit {
	double e_max, m_half;
	double rms_rel;
	size_t n;
};

/*
 * Nonlinear least squares of the efficiency curve with relative
 * residuals, started from the linear fit of 1/eff against 1/m. Needs 2
 * distinct m > 0 and eff > 0. eff may be any positive scale (a fraction
 * of peak, or FLOP/s): e_max comes back in the same scale.
 */
int lsim_fit_efficiency(const double *m, const double *eff, size_t n,
			struct lsim_efficiency_fit *out, struct lsim_diag *d);

/* The curve above; m <= 0 gives 0. */
double lsim_gemm_efficiency(double e_max, double m_half, double m);

/* ---- raw measurements ---- */

/*
 * One row of the raw table. Numeric fields that do not apply are NAN
 * (empty in the CSV). Times are seconds; "value" is a figure derived from
 * the median in "unit" (B/s for copies, FLOP/s for GEMMs, s for launches).
 */
struct lsim_calib_row {
	char bench[16];	  /* transfer, contention, interference, hbm, gemm, launch, p2p */
	char variant[32]; /* e.g. h2d_pinned, probe, copy, bf16, eager, to1 */
	double size;	  /* bytes per copy or per array */
	double m, n, k;	  /* GEMM shape: m tokens, n x k weights */
	double threads;	  /* background copy threads */
	double util;	  /* measured PCIe utilisation of the background */
	double reps;	  /* timed repetitions */
	double median_s, min_s, p10_s, p90_s;
	double value;
	char unit[16];
	int line; /* CSV line when loaded from a file, else 0 */
};

struct lsim_calib_meta {
	char key[32];
	char value[128];
};

/* The raw table: rows plus machine description (meta). Caller-owned. */
struct lsim_calib_raw {
	char file[256]; /* where it was loaded from ("" if built in memory) */
	struct lsim_calib_row *rows;
	size_t n_rows, cap_rows;
	struct lsim_calib_meta *meta;
	size_t n_meta, cap_meta;
};

void lsim_calib_raw_init(struct lsim_calib_raw *raw);
void lsim_calib_raw_release(struct lsim_calib_raw *raw);

/* A row with every numeric field NAN and empty strings. */
void lsim_calib_row_clear(struct lsim_calib_row *row);

/*
 * Sorts samples[0..n-1] in place and fills row's reps, median_s, min_s,
 * p10_s and p90_s (GSL quantiles of the sorted data). n = 0 leaves NAN.
 */
void lsim_calib_stats(double *samples, size_t n, struct lsim_calib_row *row);

/* Appends a copy of row; LSIM_ENOMEM on failure. */
int lsim_calib_raw_add(struct lsim_calib_raw *raw,
		       const struct lsim_calib_row *row);

/* Sets (or replaces) a meta entry; values longer than 127 bytes are cut. */
int lsim_calib_raw_set_meta(struct lsim_calib_raw *raw, const char *key,
			    const char *value);

/* The meta value for key, or NULL. */
const char *lsim_calib_raw_meta(const struct lsim_calib_raw *raw,
				const char *key);

/*
 * The CSV columns, in order: bench, variant, size, m, n, k, threads, util,
 * reps, median_s, min_s, p10_s, p90_s, value, unit, note. Meta rows have
 * bench "meta", the key in variant and the value in note.
 */
extern const char *const lsim_calib_columns[];
#define LSIM_CALIB_NCOLUMNS 16

/*
 * Reads a raw CSV (columns by name, any order, extra columns ignored) into
 * raw, which must be initialised. A missing column, a non-numeric value, an
 * unknown bench or a row without the fields its bench needs is an error
 * naming file, line, column and key.
 */
int lsim_calib_raw_load(const char *path, struct lsim_calib_raw *raw,
			struct lsim_diag *d);

/* Writes raw as CSV (meta rows first); LSIM_EIO names the path. */
int lsim_calib_raw_save(const struct lsim_calib_raw *raw, const char *path,
			struct lsim_diag *d);

/* ---- the whole fit ---- */

enum lsim_xfer_kind {
	LSIM_XFER_H2D_PINNED,
	LSIM_XFER_D2H_PINNED,
	LSIM_XFER_H2D_PAGEABLE,
	LSIM_XFER_D2H_PAGEABLE,
	LSIM_XFER_N
};

/* Name of a transfer kind as used in the CSV variant column. */
const char *lsim_xfer_name(enum lsim_xfer_kind k);

#define LSIM_CALIB_MAX_GEMM 16

struct lsim_gemm_shape_fit {
	char dtype[32];
	double n, k;
	struct lsim_efficiency_fit fit; /* e_max in FLOP/s */
};

struct lsim_calib_fit {
	bool have_xfer[LSIM_XFER_N];
	struct lsim_transfer_fit xfer[LSIM_XFER_N];
	bool have_bidir;
	double bidir_bw; /* both directions together, largest pinned size, B/s */
	bool have_interference;
	struct lsim_interference_fit interference;
	bool have_gemm;
	char gemm_dtype[32];		/* dtype of the pooled fit: bf16, else fp16 */
	struct lsim_efficiency_fit gemm; /* all shapes of gemm_dtype; e_max in FLOP/s */
	struct lsim_gemm_shape_fit shapes[LSIM_CALIB_MAX_GEMM];
	size_t n_shapes;
	bool have_hbm;
	double hbm_bw; /* best copy/triad bandwidth, B/s */
	bool have_launch;
	double launch_eager_s, launch_graph_s; /* graph: NAN if not measured */
	bool have_p2p;
	double p2p_bw; /* best peer-to-peer bandwidth, B/s */
};

/* Probe rows with a higher utilisation are saturated and left out of the fit. */
#define LSIM_CALIB_UTIL_MAX 0.98

/*
 * Fits everything the raw table holds: each transfer kind, the bidirectional
 * aggregate, the interference curve (points from contention and
 * interference probe rows: u = util, slowdown = median / median of the
 * row of the same bench with threads 0; rows with util above
 * LSIM_CALIB_UTIL_MAX are skipped), GEMM efficiency (achieved FLOP/s
 * per dtype and shape, and pooled), HBM, launch and P2P bandwidth. Parts
 * with no rows are left out (have_* false); a part whose fit fails is an
 * error naming the file and the bench.
 */
int lsim_calib_fit_raw(const struct lsim_calib_raw *raw,
		       struct lsim_calib_fit *fit, struct lsim_diag *d);

/*
 * Writes a hardware profile (calibrate/profiles/NAME.yaml format) to path.
 * name must equal the file name without ".yaml" for the simulator to load
 * it. Measured keys come from fit; keys a benchmark cannot measure (peak
 * bf16, TDP, idle power, price, host issue latency, the GPU fabric keys,
 * and any part not measured) come from the base profile base_dir/base_name.yaml when
 * base_name is not NULL (its key_provenance lines are carried over), else
 * from placeholders tagged "estimate". A comment block records the
 * provenance: GPU, memory, driver and CUDA versions, date, tool version,
 * repetitions and the residual of every fit. Errors: a base profile that
 * does not load (its diagnostic), LSIM_EIO naming path.
 */
int lsim_calib_write_profile(const char *path, const char *name,
			     const struct lsim_calib_raw *raw,
			     const struct lsim_calib_fit *fit,
			     const char *base_dir, const char *base_name,
			     struct lsim_diag *d);

/*
 * Number of profile keys lsim_calib_write_profile fills with placeholders
 * for this fit when there is no base profile; their names, comma
 * separated, go to buf.
 */
size_t lsim_calib_placeholders(const struct lsim_calib_fit *fit,
			       const struct lsim_calib_raw *raw, char *buf,
			       size_t size);

#ifdef __cplusplus
}
#endif

#endif
