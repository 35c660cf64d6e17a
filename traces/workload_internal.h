/*
 * workload_internal.h - private to traces/: the vtable behind struct
 * lsim_workload, and the exact text-to-time parsers the CSV and JSONL
 * readers share. Not installed, not part of the public API.
 */
#ifndef LLMSIM_WORKLOAD_INTERNAL_H
#define LLMSIM_WORKLOAD_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "workload.h"

struct lsim_workload_ops {
	/*
	 * Fills prompt, output and arrival of *out (the id is assigned by
	 * lsim_workload_next). Returns 1, 0 at the end, or a negative
	 * LSIM_E* code with d filled (d is never NULL here).
	 */
	int (*next)(struct lsim_workload *w, struct lsim_req_spec *out,
		    struct lsim_diag *d);
	void (*destroy)(struct lsim_workload *w); /* frees w itself */
	/* The share of the source delivered so far, in [0, 1], or -1 when
	 * it cannot tell (NULL: cannot tell). For progress reports only. */
	double (*fraction)(struct lsim_workload *w);
};

/*
 * The common head of every source; each implementation embeds it as its
 * first member and casts. lsim_workload_next (traces/generator.c) assigns
 * ids, keeps the end sticky, and replays the first error on later calls.
 */
struct lsim_workload {
	const struct lsim_workload_ops *ops;
	uint64_t next_id;
	bool done;
	int err;		 /* 0, or the error every later call returns */
	struct lsim_diag err_diag; /* the diagnostic of that error */
	enum lsim_on_error on_error; /* what a trace reader does with a bad line */
	uint64_t skipped;	     /* lines skipped under LSIM_ON_ERROR_SKIP */
	struct lsim_diag first_skip; /* the diagnostic of the first of them */
};

/* Sets up the common head; the implementation fills its own part. */
void lsim_workload_init_base(struct lsim_workload *w,
			     const struct lsim_workload_ops *ops);

/*
 * For trace readers, after reading one line (or CSV record) failed with
 * rc: under LSIM_ON_ERROR_SKIP and rc == LSIM_EFORMAT, counts the line,
 * keeps d if it is the first one skipped, clears d and returns true (the
 * reader goes on with the next line). Otherwise returns false and the
 * reader returns rc. Readers call it only for errors about one line, never
 * for errors about the whole file. (traces/generator.c)
 */
bool lsim_wl_skip_line(struct lsim_workload *w, int rc, struct lsim_diag *d);

/*
 * Parses a decimal number ("12", "-0.5", "1.25e3") exactly into an integer
 * count of 10^-scale units, rounding half away from zero at the first
 * dropped digit: scale 9 turns seconds into ns, scale 6 milliseconds into
 * ns. Surrounding spaces are allowed. Returns 0, LSIM_EFORMAT for text
 * that is not a number, LSIM_ERANGE when the result leaves int64.
 * (traces/csv_reader.c)
 */
int lsim_wl_parse_decimal(const char *s, int scale, int64_t *out);

/*
 * Parses "YYYY-MM-DD HH:MM:SS[.f{1,9}][Z|+HH:MM|-HH:MM]" ('T' also accepted
 * between date and time) into ns since 1970-01-01 00:00:00 UTC, exactly,
 * with integer arithmetic. Without a suffix the time is taken as UTC.
 * Returns 0, LSIM_EFORMAT or LSIM_ERANGE. (traces/csv_reader.c)
 */
int lsim_wl_parse_datetime(const char *s, int64_t *out);

/* Days from 1970-01-01 to the proleptic Gregorian date y-m-d. */
int64_t lsim_wl_days_from_civil(int64_t y, int m, int d);

#endif
