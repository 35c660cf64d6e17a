/*
 * mig.h - NVIDIA Multi-Instance GPU profiles: for each GPU kind that has
 * MIG, the GPU instance profiles with their compute slices (sevenths of
 * the SMs) and memory slices (eighths of the memory, its bandwidth and
 * L2), read from calibrate/mig.yaml (NVIDIA's MIG user guide;
 * docs/sharing.md).
 */
#ifndef LLMSIM_MIG_H
#define LLMSIM_MIG_H

#include <stddef.h>

#include "llmsim/llmsim.h"
#include "cluster/hw.h"

#define LSIM_MIG_COMPUTE_SLICES 7
#define LSIM_MIG_MEMORY_SLICES 8
#define LSIM_MIG_MAX_PROFILES 16

struct lsim_mig_profile {
	char name[24];	/* e.g. "3g.40gb" */
	int compute;	/* compute slices: g of 7 */
	int memory;	/* memory slices: of 8 */
};

/* The MIG profiles of one GPU kind (n 0: the kind has none; kinds then
 * lists the kinds that have, ", "-separated). */
struct lsim_mig_table {
	int n;
	struct lsim_mig_profile p[LSIM_MIG_MAX_PROFILES];
	char kinds[400];
};

/*
 * Reads the MIG table file at path (calibrate/mig.yaml) and keeps in *t
 * the profiles of GPU kind gpu. Every entry of the file is checked (the
 * keys, compute 1-7, memory 1-8, names unique per kind, each kind once):
 * a bad one is an error naming the file, line and key.
 */
int lsim_mig_load(const char *path, const char *gpu, struct lsim_mig_table *t,
		  struct lsim_diag *d);

/* The profile called name in t; NULL when there is none. */
const struct lsim_mig_profile *lsim_mig_find(const struct lsim_mig_table *t, const char *name);

/* t's profile names, ", "-separated, into buf (the kinds that have MIG
 * when t has none). */
void lsim_mig_list(const struct lsim_mig_table *t, char *buf, size_t size);

/* The GPU as one slice of profile p sees it: p->compute / 7 of its FLOP/s,
 * p->memory / 8 of its memory and of its memory bandwidth. */
void lsim_mig_apply(const struct lsim_mig_profile *p, struct lsim_gpu_profile *g);

#endif
