/*
 * mig.h - NVIDIA Multi-Instance GPU profiles: for each GPU kind that has
 * MIG, the GPU instance profiles with their compute slices (sevenths of
 * the SMs) and memory slices (eighths of the memory, its bandwidth and
 * L2), from NVIDIA's MIG user guide (docs/sharing.md).
 */
#ifndef LLMSIM_MIG_H
#define LLMSIM_MIG_H

#include <stddef.h>

#include "cluster/hw.h"

#define LSIM_MIG_COMPUTE_SLICES 7
#define LSIM_MIG_MEMORY_SLICES 8

struct lsim_mig_profile {
	const char *name;  /* e.g. "3g.40gb" */
	int compute;	   /* compute slices: g of 7 */
	int memory;	   /* memory slices: of 8 */
};

/* The MIG profile called name on GPU kind gpu (a profile name such as
 * A100-80GB-SXM); NULL when the kind has no MIG or no such profile. */
const struct lsim_mig_profile *lsim_mig_find(const char *gpu, const char *name);

/* Whether the GPU kind has MIG profiles. */
int lsim_mig_has(const char *gpu);

/* The kind's profile names, ", "-separated, into buf (the kinds that have
 * MIG when gpu has none). */
void lsim_mig_list(const char *gpu, char *buf, size_t size);

/* The GPU as one slice of profile p sees it: p->compute / 7 of its FLOP/s,
 * p->memory / 8 of its memory and of its memory bandwidth. */
void lsim_mig_apply(const struct lsim_mig_profile *p, struct lsim_gpu_profile *g);

#endif
