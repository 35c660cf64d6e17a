/*
 * bench.h - the C interface of the CUDA microbenchmarks (calibrate/bench/
 * *.cu): device discovery and one measurement run that appends its rows
 * and the machine description to a raw table (calibrate/fit.h). Built
 * only when meson finds nvcc and the CUDA runtime.
 */
#ifndef LLMSIM_CALIB_BENCH_H
#define LLMSIM_CALIB_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "fit.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Number of CUDA devices into *count. Returns 0, or -1 with the CUDA
 * error string in err when the runtime cannot count them (no driver).
 * *count == 0 with return 0 is "no device"; err then holds the CUDA
 * string for that case.
 */
int lsim_bench_devices(int *count, char *err, size_t size);

struct lsim_bench_opts {
	int device;
	bool quick;	/* fewer repetitions and levels */
	FILE *progress; /* one line per step, or NULL */
};

/*
 * Runs every benchmark on the device and appends rows and meta entries to
 * raw. Returns 0, or -1 with a message in err (a CUDA or cuBLAS call that
 * failed, naming it).
 */
int lsim_bench_measure(const struct lsim_bench_opts *o,
		       struct lsim_calib_raw *raw, char *err, size_t size);

#ifdef __cplusplus
}
#endif

#endif
