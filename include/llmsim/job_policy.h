/*
 * job_policy.h - what the schedulers and allocators of training jobs
 * (policies/jobs) see of the jobs module (sim/jobs): its configuration,
 * the jobs of a run as an opaque object with the accessors and actions a
 * scheduler uses (the pending queue, starting and preempting jobs, the
 * plan), and the function tables of the schedulers and allocators with
 * their lookup. The rest of the jobs module is in sim/jobs/jobs.h.
 */
#ifndef LLMSIM_JOB_POLICY_H
#define LLMSIM_JOB_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "llmsim/job_spec.h"
#include "llmsim/llmsim.h"

struct lsim_engine;	 /* llmsim/engine.h */
struct lsim_gpu_profile; /* sim/cluster/hw.h */

/* ---- configuration ---- */

struct lsim_jobs_cfg {
	const char *scheduler; /* fcfs | sjf | easy_backfill | las */
	const char *allocator; /* static | dynamic | time_packing */
	/* Hardware of each pool type (aligned with the pool's types; NULL
	 * entries and a NULL array fall back to gpu). Peak FLOP/s and the
	 * price per GPU-hour come from it. */
	const struct lsim_gpu_profile *const *type_profiles;
	const struct lsim_gpu_profile *gpu;
	/* Iteration model (jobs with params > 0). */
	double efficiency;	     /* fraction of peak; 0: profile mfu_max */
	double link_bw;		     /* all-reduce bandwidth per GPU, B/s;
				      * 0: the profile's nvlink_bw */
	lsim_time link_latency;	     /* fixed cost of one all-reduce */
	double grad_bytes_per_param; /* gradient bytes per parameter (2) */
	double ckpt_bytes_per_param; /* checkpoint bytes per parameter (14) */
	double storage_bw;	     /* checkpoint write and read, B/s; 0: free */
	lsim_time start_overhead;    /* before the first iteration */
	lsim_time restart_overhead;  /* before a restart, besides the read */
	/* Failures: each GPU fails after Exp(mtbf); 0 = none. */
	lsim_time gpu_mtbf;
	uint64_t seed;
	/* Virtual clusters: most GPUs each tenant may hold (< 0: no limit);
	 * NULL: the list's quotas, if a list was submitted. */
	const int32_t *tenant_quota;
	size_t n_tenant_quota;
	double price_per_gpu_hour; /* > 0 overrides the profiles' prices */
	/* easy_backfill: pending jobs examined for backfill per pass. */
	int32_t backfill_depth;
	/* Build the plan from every job at each pass instead of keeping the
	 * running jobs' part between passes (same plan, slower: the
	 * reference the kept plan is tested against). */
	bool plan_rebuild;
	/* las: service (GPU-seconds) thresholds of the priority levels:
	 * level k holds jobs below las_threshold x las_multiplier^k;
	 * las_levels 0 orders by exact attained service. */
	double las_threshold;
	double las_multiplier;
	int32_t las_levels;
	lsim_time las_quantum; /* how often preemption is considered */
};

/* ---- the jobs of one run, for the schedulers and allocators ---- */

struct lsim_jobs;

const struct lsim_jobs_cfg *lsim_jobs_config(const struct lsim_jobs *js);
struct lsim_engine *lsim_jobs_engine(const struct lsim_jobs *js);

/* The pending queue, in order: jobs queued to resume (after a failure,
 * a resize or a front preemption) first, then by the scheduler's key. */
size_t lsim_jobs_n_pending(const struct lsim_jobs *js);
int32_t lsim_jobs_pending(const struct lsim_jobs *js, size_t i);
/* Jobs holding GPUs. */
size_t lsim_jobs_n_running(const struct lsim_jobs *js);
int32_t lsim_jobs_running(const struct lsim_jobs *js, size_t i);

const struct lsim_job_spec *lsim_jobs_spec(const struct lsim_jobs *js,
					   int32_t j);
bool lsim_jobs_is_resume(const struct lsim_jobs *js, int32_t j);
/* Whether j is being preempted (checkpointing before its release). */
bool lsim_jobs_is_releasing(const struct lsim_jobs *js, int32_t j);
/* GPU-seconds j has held so far, up to now. */
double lsim_jobs_attained(const struct lsim_jobs *js, int32_t j);
/* Whole GPUs j holds (a share counts as 1). */
int32_t lsim_jobs_held(const struct lsim_jobs *js, int32_t j);
/* Its predicted time to finish from its current state, no failures. */
lsim_time lsim_jobs_predicted(const struct lsim_jobs *js, int32_t j);

/*
 * Whether pending job j can start now: its allocator grants it GPUs on an
 * allowed type (time_packing: and its predicted demand fits over time),
 * within its tenant's quota. lsim_jobs_start starts it (1), or returns 0
 * when it cannot.
 */
bool lsim_jobs_can_start(struct lsim_jobs *js, int32_t j);
int lsim_jobs_start(struct lsim_jobs *js, int32_t j);

/* No whole GPU free and no shared GPU with room left, on any type. */
bool lsim_jobs_pool_full(const struct lsim_jobs *js);

/*
 * Preemption on behalf of pending job j: if the running jobs whose key
 * (computed now) is above j's queued key hold enough GPUs of one allowed
 * type for j to fit, preempts them, worst key first, as few as needed
 * (they queue again in the scheduler's order). Returns how many, or
 * LSIM_ENOMEM. Jobs on a GPU share are neither preempted nor preempt.
 */
int lsim_jobs_preempt_for(struct lsim_jobs *js, int32_t j,
			  double (*key)(const struct lsim_jobs *js, int32_t j));

/*
 * The plan: per GPU type, the predicted GPU demand over time of the jobs
 * holding GPUs and those queued to resume, as a step function from now.
 * Built on first use in a scheduling pass, extended by the jobs started in
 * it and by reservations, dropped at the end of the pass. The running
 * jobs' part is kept from one build to the next (a job's predicted
 * demand in absolute time only changes with its own state), so a build
 * costs the jobs that changed and one merge, not a sort of every job.
 *   plan_earliest: the earliest time j's predicted demand fits (and the
 *     type), LSIM_TIME_MAX if never;
 *   plan_reserve: adds j's demand from `at` on `type` (a reservation);
 *   plan_fits_now: whether j's demand fits from now on its start type.
 */
lsim_time lsim_jobs_plan_earliest(struct lsim_jobs *js, int32_t j,
				  int32_t *type);
int lsim_jobs_plan_reserve(struct lsim_jobs *js, int32_t j, lsim_time at,
			   int32_t type);
bool lsim_jobs_plan_fits_now(struct lsim_jobs *js, int32_t j);

/* ---- the schedulers and allocators (policies/jobs/job_policies.c) ---- */

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
