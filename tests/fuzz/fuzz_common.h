/*
 * fuzz_common.h - helpers shared by the libFuzzer targets: a per-process
 * scratch folder (in /dev/shm where there is one, removed at exit) where
 * each input is written under a fixed file name, since the readers under
 * test take paths; and the checks every target applies to what a reader returns.
 */
#ifndef LLMSIM_FUZZ_COMMON_H
#define LLMSIM_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "llmsim/llmsim.h"

struct lsim_workload;

/*
 * The scratch folder, created by mkdtemp on first use and removed with
 * everything in it at exit. Aborts when it cannot be created.
 */
const char *lsim_fuzz_dir(void);

/*
 * Writes size bytes to <scratch>/rel (rel may name subfolders, created
 * on demand) and puts the full path in path. Aborts on I/O errors: the
 * harness failing is not a finding about the reader.
 */
void lsim_fuzz_write(const char *rel, const void *data, size_t size,
		     char *path, size_t path_size);

/*
 * A small valid per-layer perf table (lsim_perf_table_create): writes
 * <scratch>/rel_dir/ followed by each of lsim_fuzz_table_files
 * (tp1/dense.csv, tp1/attention.csv, tp1/per_sequence.csv) and puts the
 * folder's full path in path. rel_dir "" is the scratch folder itself.
 */
extern const char *const lsim_fuzz_table_files[3];
void lsim_fuzz_write_table(const char *rel_dir, char *path, size_t path_size);

/*
 * Checks the contract of a failed call: rc is a negative LSIM_E* code and
 * d holds a message. Aborts (a finding) otherwise. With LSIM_FUZZ_VERBOSE
 * set in the environment, prints the diagnostic (for triaging seeds).
 */
void lsim_fuzz_check_error(int rc, const struct lsim_diag *d);

/*
 * Reads w to its end or first error, checking every request against the
 * contract of workload.h (ids 0, 1, 2 ..., arrivals >= 0 and
 * non-decreasing, token counts >= 1, hashes readable). Aborts on a
 * violation. Does not destroy w. With LSIM_FUZZ_VERBOSE set, prints the
 * number of requests read.
 */
void lsim_fuzz_drain(struct lsim_workload *w);

#endif
