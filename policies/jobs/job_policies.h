/*
 * job_policies.h - the schedulers and allocators of training jobs, as
 * plain function tables local to the jobs module (sim/jobs/jobs.c): which
 * pending job starts next, and how many GPUs a job holds in each phase.
 */
#ifndef LLMSIM_JOB_POLICIES_H
#define LLMSIM_JOB_POLICIES_H

#include <stdbool.h>
#include <stdint.h>

#include "../../sim/jobs/jobs.h"

struct lsim_job_scheduler {
	const char *name;
	const char *summary;
	/* Order of a job entering the pending queue: lower first, ties in
	 * the order they were queued. */
	double (*key)(const struct lsim_jobs *js, int32_t j);
	/* Starts jobs (lsim_jobs_start); called once per instant at which
	 * something changed. */
	void (*pass)(struct lsim_jobs *js);
	/* Called every cfg.las_quantum while jobs wait and others run
	 * (preemption), or NULL. */
	void (*tick)(struct lsim_jobs *js);
};

struct lsim_job_allocator {
	const char *name;
	const char *summary;
	/* GPUs job s wants when it (re)starts in phase p. */
	int32_t (*desired)(const struct lsim_job_spec *s, int32_t p);
	/* The allocation follows the phases: a checkpoint and a restart at
	 * each change of demand. */
	bool resize;
	/* A new job starts only if its predicted demand over time fits. */
	bool plan_admission;
};

/* By name, or NULL. */
const struct lsim_job_scheduler *lsim_job_scheduler_find(const char *name);
const struct lsim_job_allocator *lsim_job_allocator_find(const char *name);
/* "fcfs, sjf, ..." for messages. */
const char *lsim_job_scheduler_names(void);
const char *lsim_job_allocator_names(void);

#endif
