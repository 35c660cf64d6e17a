/*
 * llmsim.h - the base vocabulary shared by every part of llmsim: simulated
 * time, error codes, diagnostics for bad input, and the version.
 *
 * Conventions used across the public API:
 *   - lsim_ prefix for public names, LSIM_ for macros and enum values;
 *   - lifecycle verbs: lsim_X_create / lsim_X_destroy for heap objects,
 *     lsim_X_init / lsim_X_release for caller-owned structs; destroy and
 *     release accept NULL;
 *   - functions that can fail return 0 on success or a negative LSIM_E*
 *     code, and fill a caller-supplied struct lsim_diag with a message that
 *     names file, line, column and key when the failure is bad input.
 *     Library code never prints.
 */
#ifndef LLMSIM_LLMSIM_H
#define LLMSIM_LLMSIM_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define LSIM_VERSION "0.1.0"

/* Simulated time: signed 64-bit nanoseconds (about 292 years of range). */
typedef int64_t lsim_time;

#define LSIM_NS ((lsim_time)1)
#define LSIM_US ((lsim_time)1000)
#define LSIM_MS ((lsim_time)1000000)
#define LSIM_S ((lsim_time)1000000000)
#define LSIM_TIME_MAX INT64_MAX

/* Seconds (double) <-> nanoseconds, rounding to nearest. */
lsim_time lsim_time_from_s(double seconds);
double lsim_time_to_s(lsim_time t);

/* Error codes: one list, never renumbered. */
enum lsim_err {
	LSIM_OK = 0,
	LSIM_ENOMEM = -1,  /* allocation failed */
	LSIM_EINVAL = -2,  /* bad input: config, trace, profile or argument */
	LSIM_EIO = -3,     /* file could not be read or written */
	LSIM_ENOENT = -4,  /* named thing (file, model, policy) not found */
	LSIM_ERANGE = -5,  /* value outside its declared bounds */
	LSIM_EFORMAT = -6, /* file content does not follow its format */
	LSIM_ESTATE = -7,  /* call not valid in the object's current state */
	LSIM_EPLUGIN = -8, /* plugin could not be loaded or has a bad ABI */
	LSIM_EBUSY = -9,   /* no room for it now (e.g. no free GPUs) */
};

const char *lsim_strerror(int err);

/*
 * Where and why an input was rejected. file/key may be empty, line/col 0
 * when unknown. Filled by lsim_diag_set; printed by the CLI as
 * "file:line:col: key: message".
 */
struct lsim_diag {
	char file[256];
	int line;
	int col;
	char key[128];
	char msg[768];
};

/*
 * Fills d (which may be NULL) and returns err, so callers can write
 * `return lsim_diag_set(d, LSIM_EINVAL, file, line, col, key, "...", ...)`.
 */
int lsim_diag_set(struct lsim_diag *d, int err, const char *file, int line,
		  int col, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

/*
 * For err < 0 and a d (which may be NULL) without a message yet: sets the
 * message to lsim_strerror(err), keeping file, line, column and key, so
 * that an error such as LSIM_ENOMEM, returned from deep inside without a
 * diagnostic, still reaches the user with one. Returns err.
 */
int lsim_diag_ensure(struct lsim_diag *d, int err);

/* Formats d as "file:line:col: key: msg" into buf. */
void lsim_diag_format(const struct lsim_diag *d, char *buf, size_t size);

#endif
