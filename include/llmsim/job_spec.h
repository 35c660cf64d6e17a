/*
 * job_spec.h - one training or fine-tuning job as the job model takes it:
 * its phases of GPU demand, iteration cost and checkpoints. The lists of
 * them, pool descriptions, readers and generators are in
 * traces/job_specs.h; the jobs' simulation is sim/jobs/jobs.h, and what
 * the job schedulers and allocators see of it is llmsim/job_policy.h.
 */
#ifndef LLMSIM_JOB_SPEC_H
#define LLMSIM_JOB_SPEC_H

#include <stdint.h>

#include "llmsim/llmsim.h"

/* One phase: a run of iterations with a fixed GPU demand. */
struct lsim_job_phase {
	int64_t iterations; /* >= 1 */
	int32_t gpus;	    /* GPUs the job computes on in this phase (>= 1) */
};

enum lsim_job_kind { LSIM_JOB_TRAIN, LSIM_JOB_FINETUNE };

/*
 * A gang-scheduled training or fine-tuning job. Its work is the sum of its
 * phases' iterations; an iteration costs either a model-derived time
 * (params > 0: see lsim_job_iter_time in sim/jobs/jobs.h) or iter_time.
 */
struct lsim_job_spec {
	uint64_t id;	   /* as named by the source (row number, CSV id) */
	lsim_time arrival; /* ns; non-decreasing within a list */
	int32_t tenant;	   /* index in the list's tenants (0 if none) */
	int32_t kind;	   /* enum lsim_job_kind (a label: same model) */
	int32_t gpus_min;  /* elastic: fewest GPUs it runs on; 0 = rigid */
	int32_t gpu_milli; /* 1..999: a share of one GPU (Alibaba); 0 = whole */
	const char *gpu_types; /* "A|B": allowed GPU types; NULL or "" = any */
	double params;	       /* model parameters; 0: iter_time is given */
	double tokens_per_iter; /* tokens per iteration (global batch) */
	lsim_time iter_time;	/* one iteration on phase.gpus GPUs (params 0) */
	int64_t ckpt_every;	/* iterations between checkpoints; 0 = none */
	double ckpt_bytes;	/* 0: params x the run's bytes per parameter */
	const struct lsim_job_phase *phases; /* owned by the list */
	int32_t n_phases;		     /* >= 1 */
	int32_t src_line;		     /* line in its file (0: generated) */
};

/* Peak GPU demand over the phases. */
int32_t lsim_job_peak_gpus(const struct lsim_job_spec *s);
/* Total iterations over the phases. */
int64_t lsim_job_total_iterations(const struct lsim_job_spec *s);

#endif
