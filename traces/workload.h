/*
 * workload.h - request sources: synthetic generators and streaming trace
 * readers. A source yields requests in non-decreasing arrival order, one at
 * a time; trace files are read incrementally, never loaded whole.
 */
#ifndef LLMSIM_WORKLOAD_H
#define LLMSIM_WORKLOAD_H

#include <gsl/gsl_rng.h>
#include <stdbool.h>
#include <stdint.h>

#include "llmsim/llmsim.h"

struct lsim_req_spec {
	uint64_t id;	       /* 0, 1, 2 ... in arrival order */
	lsim_time arrival;     /* ns since the workload's start (first arrival >= 0) */
	int32_t prompt_tokens; /* >= 1 */
	int32_t output_tokens; /* >= 1; 0 only from traces: the request failed
				* there (BurstGPT logs failures so) */
	/* Prefix-cache block hashes of the prompt (Mooncake hash_ids: one per
	 * 512-token block), or NULL/0. Owned by the workload; valid until the
	 * next call of lsim_workload_next. */
	const uint64_t *hashes;
	int32_t n_hashes;
	int32_t hash_block_tokens; /* tokens per hashed block (512 for Mooncake) */
	int32_t tenant; /* which merged trace it came from (0 for a single source) */
	/* The QoS class, model, tenant and LoRA adapter named by the trace's
	 * label columns (CSV: workload.class_column, model_column,
	 * tenant_column, lora_column; JSONL: the keys they name), or NULL.
	 * An empty lora_label (or JSONL null) is the base model. Valid until
	 * the next call of lsim_workload_next. */
	const char *class_label;
	const char *model_label;
	const char *tenant_label;
	const char *lora_label;
	/* Where a trace request came from (NULL for generators): the file,
	 * line, and the column (1-based; 0 in JSONL) and name of its prompt
	 * field, for messages about the request. Valid until the next call. */
	const char *src_path;
	int32_t src_line, src_col;
	const char *src_key;
};
enum { LSIM_N_LABELS = 4 }; /* class, model, tenant, lora */

struct lsim_workload;

/*
 * Returns 1 and fills *out with the next request, 0 at the end, or a
 * negative LSIM_E* code with d naming file, line and column on bad input.
 */
int lsim_workload_next(struct lsim_workload *w, struct lsim_req_spec *out,
		       struct lsim_diag *d);
void lsim_workload_destroy(struct lsim_workload *w); /* accepts NULL */

/*
 * The share of the workload delivered so far, in [0, 1] (a generator's
 * requests or time against its count or duration, a trace's bytes read,
 * repetitions counted), or -1 when the source cannot tell. For progress
 * reports: it moves with what has been read, not with the simulation.
 */
double lsim_workload_fraction(struct lsim_workload *w);

/* ---- synthetic generator ---- */

enum lsim_arrival_kind {
	LSIM_ARRIVAL_POISSON,
	LSIM_ARRIVAL_GAMMA,
	LSIM_ARRIVAL_WEIBULL, /* inter-arrivals Weibull with the given cv, mean 1/rate */
	LSIM_ARRIVAL_MMPP,    /* 2-state on/off Markov-modulated Poisson (see params) */
	LSIM_ARRIVAL_DIURNAL, /* Poisson with rate(t) = rate * (1 + amplitude sin(2 pi t / period)) */
	LSIM_ARRIVAL_SPIKES,  /* Poisson at rate, times spike_factor inside spikes */
};

enum lsim_len_kind {
	LSIM_LEN_FIXED,	    /* a */
	LSIM_LEN_UNIFORM,   /* integers in [a, b] */
	LSIM_LEN_LOGNORMAL, /* mean a, standard deviation b (of the length, not its log) */
	LSIM_LEN_EMPIRICAL, /* drawn from values[] with equal weight */
	LSIM_LEN_ZIPF,	    /* rank k in [min, max] with P(k) ~ k^-a (a > 0; max required) */
};

struct lsim_len_dist {
	enum lsim_len_kind kind;
	double a, b;
	int32_t min, max;	/* clamp after drawing; max 0 = no upper clamp */
	const int32_t *values;	/* EMPIRICAL only; borrowed for the workload's life */
	size_t n_values;
};

struct lsim_gen_params {
	enum lsim_arrival_kind arrival;
	double rate;	     /* mean requests per second */
	double cv;	     /* coefficient of variation of inter-arrival (gamma) */
	uint64_t count;	     /* stop after this many requests (0: use duration) */
	lsim_time duration;  /* stop at this time (0: use count) */
	struct lsim_len_dist prompt;
	struct lsim_len_dist output;
	/* MMPP: the on and off states last exponential times of these means;
	 * the rate is rate_on while on and rate_off while off (rate unused). */
	double rate_on, rate_off;
	lsim_time mean_on, mean_off;
	/* DIURNAL: relative amplitude in [0, 1) and period. */
	double amplitude;
	lsim_time period;
	/* SPIKES: every spike_every, a spike of spike_length at spike_factor x rate. */
	lsim_time spike_every, spike_length;
	double spike_factor;
	/* Joint empirical lengths: if n_pairs > 0, (prompt, output) pairs are
	 * drawn together from pairs[2*i], pairs[2*i+1] (uniformly) and the
	 * prompt/output distributions are ignored. Borrowed. */
	const int32_t *pairs;
	size_t n_pairs;
};

/*
 * arrivals_rng and lengths_rng are separate streams, borrowed (not owned):
 * changing length distributions must not shift arrival times.
 */
int lsim_workload_generator_create(const struct lsim_gen_params *p,
				   gsl_rng *arrivals_rng, gsl_rng *lengths_rng,
				   struct lsim_workload **out,
				   struct lsim_diag *d);

/* ---- trace readers ---- */

enum lsim_time_format {
	LSIM_TF_SECONDS,      /* number: seconds */
	LSIM_TF_MILLISECONDS, /* number: milliseconds */
	LSIM_TF_DATETIME,     /* "YYYY-MM-DD HH:MM:SS[.frac][+HH:MM]" */
};

/* Column mapping for a CSV trace (names as in the header row). */
struct lsim_csv_map {
	const char *arrival_col;
	enum lsim_time_format arrival_format;
	const char *prompt_col;
	const char *output_col;
	const char *class_col; /* optional: a column naming each request's QoS class */
	const char *model_col; /* optional: ... its model */
	const char *tenant_col; /* optional: ... its tenant */
	const char *lora_col; /* optional: ... its LoRA adapter (empty: base model) */
};

/*
 * Opens a CSV trace with a header row. Arrival times are made relative to
 * the first row. Rows must be in non-decreasing time order (an error
 * otherwise). Handles CRLF and quoted fields. Rows with output 0 are
 * passed on with output 0 (the run decides: workload.zero_output).
 */
int lsim_workload_csv_open(const char *path, const struct lsim_csv_map *map,
			   struct lsim_workload **out, struct lsim_diag *d);

/*
 * Opens a vLLM benchmark-style requests.jsonl: one JSON object per line.
 * Fields used: input length from "input_toks" or "prompt_len" or
 * "input_length"; output from "output_toks" or "output_len" or
 * "output_length"; arrival from "queued_ts" (s) if present, else
 * "arrival_time" (s), else "timestamp" (ms). Lines are sorted by arrival
 * on the fly only if already ordered; unordered input is an error.
 */
int lsim_workload_jsonl_open(const char *path, struct lsim_workload **out,
			     struct lsim_diag *d);
/*
 * The same for a measured run's log whose lines need not be in arrival
 * order (a data-parallel vLLM run's engines write requests.jsonl
 * interleaved): reads the whole file, then yields the requests sorted by
 * arrival, a stable sort (equal arrivals keep their line order), arrivals
 * relative to the earliest, src_line still the line in the file. The
 * result equals lsim_workload_jsonl_open's on the file sorted first.
 * *n_back (may be NULL) counts the lines earlier than the line before
 * them, *max_back (may be NULL) is the largest such step back.
 */
int lsim_workload_jsonl_open_sorted(const char *path, struct lsim_workload **out,
				    uint64_t *n_back, lsim_time *max_back,
				    struct lsim_diag *d);
/*
 * The same with the scenario's key mapping (generic JSONL): the arrival
 * under map->arrival_col in map->arrival_format (seconds or milliseconds
 * as numbers, datetime as a string), lengths under map->prompt_col and
 * map->output_col, and optional label keys (class, model, tenant, lora)
 * whose values are strings or numbers (lora: also null, the base model). "hash_ids" is read as for Mooncake.
 * map NULL, or without an arrival key: the known layouts above (with the
 * map's label keys, if any).
 */
int lsim_workload_jsonl_open_map(const char *path, const struct lsim_csv_map *map,
				 struct lsim_workload **out, struct lsim_diag *d);

/* ---- shaping: a wrapper that transforms any source ---- */

struct lsim_shape_params {
	lsim_time window_start; /* keep arrivals at or after this time of the source */
	lsim_time window_end;	/* ... and before this one (0: to the end) */
	double time_scale;	/* multiply (windowed) arrival times: 0.5 = twice as dense */
	double keep;		/* thinning: keep each request with this probability */
	uint64_t repeat;	/* play the source this many times back to back (>= 1) */
	lsim_time offset;	/* added to every arrival (superposed copies) */
};

/* Opens a fresh copy of the source (for repeat); ctx is the caller's. */
typedef int (*lsim_workload_open_fn)(void *ctx, struct lsim_workload **out,
				     struct lsim_diag *d);

/*
 * Wraps the source that open() returns. Arrivals are re-based to the
 * window start, scaled, thinned (rng, borrowed; only used when keep < 1),
 * and each repetition starts one mean inter-arrival gap after the previous
 * one's last arrival. Requests keep their lengths and prefix ids.
 */
int lsim_workload_shape_create(lsim_workload_open_fn open, void *ctx,
			       const struct lsim_shape_params *p, gsl_rng *rng,
			       struct lsim_workload **out, struct lsim_diag *d);

/*
 * Merges sources (ownership passes, also on failure) into one stream in
 * arrival order; ties go to the lower index. Each request's tenant is the
 * index of its source when tag_tenants (otherwise it keeps the tenant its
 * source gave). Every source keeps its own time origin, so all tenants
 * start together.
 */
int lsim_workload_merge_create(struct lsim_workload **srcs, size_t n,
			       bool tag_tenants, struct lsim_workload **out,
			       struct lsim_diag *d);

/* What a trace reader does with a malformed line. */
enum lsim_on_error {
	LSIM_ON_ERROR_FAIL, /* stop with the error (default) */
	LSIM_ON_ERROR_SKIP, /* skip the line, count it, go on */
};

/* Sets the policy for bad lines (trace readers; generators ignore it). */
void lsim_workload_set_on_error(struct lsim_workload *w, enum lsim_on_error mode);
/* Lines skipped so far under LSIM_ON_ERROR_SKIP. */
uint64_t lsim_workload_skipped(const struct lsim_workload *w);
/* The diagnostic of the first skipped line (file, line, column, key). */
const struct lsim_diag *lsim_workload_first_skip(const struct lsim_workload *w);

/*
 * Recognises a trace's format: "jsonl", or a CSV layout ("generic",
 * "azure-llm", "burstgpt", "mooncake-csv", "vidur", "splitwise") with its
 * column map. An unknown header is LSIM_EFORMAT naming the file.
 */
int lsim_workload_detect(const char *path, const char **format,
			 struct lsim_csv_map *map, struct lsim_diag *d);

/* Opens a trace of a recognised format. */
int lsim_workload_open_auto(const char *path, struct lsim_workload **out,
			    struct lsim_diag *d);

#endif
