/*
 * import_internal.h - what the pieces of `llmsim profile import` and
 * `llmsim profile compare` share (profile_import.c, import_llmservingsim.c,
 * import_vidur.c, import_splitwise.c, profile_compare.c): file and CSV field
 * helpers, the records every source is read into, the staging folder, and
 * the reader of each source format. Included by nothing else.
 */
#ifndef LLMSIM_IMPORT_INTERNAL_H
#define LLMSIM_IMPORT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "kernel/csv.h"
#include "import/profile_import.h"

#define PATH_LEN 1024
#define NAME_LEN 48

int lsim_imp_nomem(struct lsim_diag *d, const char *what);
bool lsim_imp_is_dir(const char *path);
bool lsim_imp_is_file(const char *path);
const char *lsim_imp_base_name(const char *path);
/* buf = a/b; false when it does not fit. */
bool lsim_imp_pjoin(char *buf, size_t size, const char *a, const char *b);
/* The tp<N> sub-folders of dir, ascending; returns how many (at most max). */
int lsim_imp_list_tp_dirs(const char *dir, const char *must_hold, int *tp, int max);
void lsim_imp_int_list(char *buf, size_t size, const int *v, int n);

/* ------------------------------------------------------------------ */
/* CSV fields                                                          */
/* ------------------------------------------------------------------ */

/*
 * The loop over a file's data rows, `while (lsim_imp_more_rows(c, &rc, d))`:
 * while *rc is 0, reads the next row (fields trimmed); false at the end
 * (*rc stays 0) or on an error (*rc gets it).
 */
bool lsim_imp_more_rows(struct lsim_csv *c, int *rc, struct lsim_diag *d);
/*
 * Field col as a finite number >= lo (an integer when asked). Errors name
 * the file, the row's line, the field's byte column and the column name.
 */
int lsim_imp_num_field(const struct lsim_csv *c, int col, double lo, bool integer, double *out,
		       struct lsim_diag *d);
/* The end of a file's rows: rc, or, when rc is 0 and there were no data
 * rows (n == 0), an error saying so; adds n to *rows unless rows is NULL. */
int lsim_imp_rows_end(const struct lsim_csv *c, int rc, size_t n, size_t *rows,
		      struct lsim_diag *d);

/* ------------------------------------------------------------------ */
/* Records                                                             */
/* ------------------------------------------------------------------ */

enum rec_kind {
	REC_DENSE,  /* tp<N>/dense.csv: layer,tokens,time_us */
	REC_SEQ,    /* tp<N>/per_sequence.csv: layer,sequences,time_us */
	REC_ATTN,   /* tp<N>/attention.csv: prefill_chunk,kv_prefill,n_decode,kv_decode,time_us */
	REC_AR_TP,  /* tp<N>/allreduce.csv: bytes,time_us */
	REC_NET_AR, /* network/all_reduce.csv: num_workers,devices_per_node,bytes,time_us */
	REC_NET_SR, /* network/send_recv.csv: same columns */
	REC_ITER,   /* tp<N>/iteration.csv: batch_size,prompt_tokens,output_tokens,prompt_us,token_us,runs */
	N_REC_KINDS
};

struct rec {
	int kind, tp;
	char name[NAME_LEN];
	double k[4];
	double v[2]; /* microseconds */
};

struct recs {
	struct rec *a;
	size_t n, cap;
};

struct rec *lsim_imp_rec_push(struct recs *rs, int kind, int tp, const char *name,
			      struct lsim_diag *d);

/* ------------------------------------------------------------------ */
/* Staging: files written inside outdir, renamed into place at the end  */
/* ------------------------------------------------------------------ */

struct stage {
	const char *outdir;
	char dir[PATH_LEN];
	struct lsim_import_result *r;
};

/* Opens staging/rel for writing and records rel among the files written. */
int lsim_imp_stage_open(struct stage *st, const char *rel, FILE **out, struct lsim_diag *d);
int lsim_imp_stage_close(FILE *f, const char *rel, struct lsim_diag *d);

/* Adds tp to the result's sorted list of degrees. */
void lsim_imp_result_add_tp(struct lsim_import_result *r, int tp);
void lsim_imp_note_add(struct lsim_import_result *r, const char *text);

/* The readers of each source format: rows into rs, notes into r. */
/* import_llmservingsim.c: *copied when a profile in the current layout was
 * copied into the staging folder as it is (then rs stays empty). */
int lsim_imp_llmservingsim(const struct lsim_import_opts *o, struct stage *st,
			   struct recs *rs, struct lsim_import_result *r, bool *copied,
			   struct lsim_diag *d);
/* import_vidur.c */
int lsim_imp_vidur(const struct lsim_import_opts *o, struct recs *rs,
		   struct lsim_import_result *r, struct lsim_diag *d);
/* import_splitwise.c: model and gpu (size bytes each) get the labels whose
 * rows were kept. */
int lsim_imp_splitwise(const struct lsim_import_opts *o, struct recs *rs,
		       struct lsim_import_result *r, char *model, char *gpu, size_t size,
		       struct lsim_diag *d);

#endif
