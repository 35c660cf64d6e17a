/*
 * recstore.h - the per-request records of a run, indexed by arrival
 * order. Records are put as requests end (in any order) and read back in
 * index order by the summary and the report sinks. The store keeps them
 * in memory up to a bound, then spills all of them to an anonymous
 * temporary file, so a run of any length holds a bounded number of
 * records in memory.
 */
#ifndef LLMSIM_RECSTORE_H
#define LLMSIM_RECSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "report/report.h"

struct lsim_recstore;

/* mem_records: records kept in memory before spilling (0: a default of
 * 262,144, about 23 MB). */
struct lsim_recstore *lsim_recstore_create(size_t mem_records);
void lsim_recstore_destroy(struct lsim_recstore *st); /* accepts NULL */

/* Stores rec at index idx (overwriting any earlier one). */
int lsim_recstore_put(struct lsim_recstore *st, uint64_t idx,
		      const struct lsim_req_record *rec);
/* Indices 0 .. count-1 hold records (one past the largest index put, or
 * as set by lsim_recstore_truncate). */
uint64_t lsim_recstore_count(const struct lsim_recstore *st);
/* Forgets indices >= count. */
void lsim_recstore_truncate(struct lsim_recstore *st, uint64_t count);
/* Copies records first .. first+n-1 into buf (indices never put read as
 * zeroed records). */
int lsim_recstore_read(const struct lsim_recstore *st, uint64_t first,
		       size_t n, struct lsim_req_record *buf);
/* The records as one array while the store has not spilled, else NULL. */
const struct lsim_req_record *lsim_recstore_array(const struct lsim_recstore *st);

#endif
