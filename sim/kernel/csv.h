/*
 * csv.h - the one streaming CSV reader of the library (RFC 4180): a header
 * row, then records read one at a time. Fields may be quoted, with ""
 * for a quote and with commas and line breaks inside; lines end in LF or
 * CRLF; a UTF-8 byte-order mark is skipped; blank lines are skipped. Each
 * field remembers where it starts, so callers can name line and column of
 * a bad value. Used by the trace reader and the table perf backend; each
 * keeps its own number parsing.
 */
#ifndef LLMSIM_CSV_H
#define LLMSIM_CSV_H

#include "llmsim/llmsim.h"

struct lsim_csv;

/*
 * Opens path and reads its header row (the first non-blank record). Header
 * names are kept without surrounding spaces and tabs. Errors: a file that
 * cannot be opened gives LSIM_ENOENT or LSIM_EIO, a folder LSIM_EINVAL, with
 * line 0 and an empty key (a caller may put the name of the setting that
 * gave the path there);
 * an empty file LSIM_EFORMAT on line 1; bad quoting LSIM_EFORMAT.
 */
int lsim_csv_open(const char *path, struct lsim_csv **out, struct lsim_diag *d);

/* Closes the file and frees the reader; NULL is fine. */
void lsim_csv_close(struct lsim_csv *r);

/* The share of the file read so far, in [0, 1]; -1 when not known (not a
 * regular file). */
double lsim_csv_fraction(const struct lsim_csv *r);

/* The path given to lsim_csv_open. */
const char *lsim_csv_path(const struct lsim_csv *r);

/* Number of header columns, and the name of column i (NULL if out of range). */
int lsim_csv_columns(const struct lsim_csv *r);
const char *lsim_csv_name(const struct lsim_csv *r, int i);

/* Index of the first header column called name, or -1. */
int lsim_csv_column(const struct lsim_csv *r, const char *name);

/*
 * Finds each of the n named columns, filling idx[0..n-1]. A missing one is
 * LSIM_EFORMAT on the header's line (1 unless blank lines precede it), key =
 * the column name, with the header's columns listed in the message.
 */
int lsim_csv_require(const struct lsim_csv *r, const char *const *names, int n,
		     int *idx, struct lsim_diag *d);

/*
 * Reads the next record: 1, 0 at the end of the file, or a negative LSIM_E*
 * code with d filled (read error, NUL byte, text after a closing quote, a
 * quote not closed by the end of the file). The record may have more or
 * fewer fields than the header; callers check lsim_csv_fields.
 */
int lsim_csv_next(struct lsim_csv *r, struct lsim_diag *d);

/* Number of fields of the current record. */
int lsim_csv_fields(const struct lsim_csv *r);

/* Field i of the current record, unquoted, or NULL when i is out of range. */
const char *lsim_csv_field(const struct lsim_csv *r, int i);

/*
 * Field i without surrounding spaces and tabs (removed in place, so later
 * lsim_csv_field calls see the trimmed text too), or NULL.
 */
const char *lsim_csv_field_trim(struct lsim_csv *r, int i);

/*
 * The 1-based line on which the current record starts (after the end of
 * the file: that of the last record read, the header if none).
 */
int lsim_csv_line(const struct lsim_csv *r);

/*
 * The 1-based byte column at which field i starts on its physical line (for
 * a quoted field, its opening quote), or 0 when i is out of range.
 */
int lsim_csv_field_col(const struct lsim_csv *r, int i);

#endif
