/*
 * job_policies.c - the job schedulers and allocators of sim/jobs, which
 * they see through llmsim/job_policy.h.
 *
 * Schedulers (the order of the pending queue and which jobs start):
 *   fcfs           arrival order; the head blocks the queue (strict).
 *   sjf            shortest predicted run time first; jobs that do not fit
 *                  are passed over.
 *   easy_backfill  arrival order; when the head does not fit it gets a
 *                  reservation at the earliest time its predicted demand
 *                  fits, and later jobs start now only if they fit without
 *                  touching that reservation (EASY, Lifka 1995).
 *   las            least attained service (GPU-seconds held), discretized
 *                  into levels as in Tiresias (Gu et al., NSDI 2019), FIFO
 *                  within a level; passes over jobs that do not fit, and
 *                  every quantum preempts jobs of a worse level for a
 *                  waiting job of a better one.
 * Jobs queued to resume (after a failure or a resize) come before all
 * others under every scheduler, and a resume that does not fit blocks the
 * queue: it was running and is owed its GPUs first.
 *
 * Allocators (how many GPUs a job holds):
 *   static        its peak demand over all phases, for its whole life.
 *   dynamic       the demand of its current phase; each change of demand
 *                 costs a checkpoint, a release and a restart.
 *   time_packing  as dynamic, and a new job starts only when its predicted
 *                 demand over time fits under the pool beside the predicted
 *                 demand of the jobs already admitted (see docs/jobs.md).
 */
#include <string.h>

#include "llmsim/job_policy.h"

/* ---- keys ---- */

static double key_fcfs(const struct lsim_jobs *js, int32_t j)
{
	return lsim_time_to_s(lsim_jobs_spec(js, j)->arrival);
}

static double key_sjf(const struct lsim_jobs *js, int32_t j)
{
	return lsim_time_to_s(lsim_jobs_predicted(js, j));
}

/* Level * 1e12 + arrival seconds: levels first, FIFO inside a level. */
static double key_las(const struct lsim_jobs *js, int32_t j)
{
	const struct lsim_jobs_cfg *c = lsim_jobs_config(js);
	double a = lsim_jobs_attained(js, j);
	if (c->las_levels <= 0)
		return a;
	int level = 0;
	double th = c->las_threshold;
	while (level < c->las_levels - 1 && a >= th) {
		level++;
		th *= c->las_multiplier;
	}
	return level * 1e12 + lsim_time_to_s(lsim_jobs_spec(js, j)->arrival);
}

/* ---- passes ---- */

/* Starts the head while it fits. Returns true if the queue is empty. */
static bool start_heads(struct lsim_jobs *js)
{
	while (lsim_jobs_n_pending(js) > 0) {
		if (!lsim_jobs_start(js, lsim_jobs_pending(js, 0)))
			return false;
	}
	return true;
}

static void pass_fcfs(struct lsim_jobs *js)
{
	start_heads(js);
}

/* In queue order, starts whatever fits; stops at a resume that does not. */
static void pass_greedy(struct lsim_jobs *js)
{
	size_t i = 0;
	while (i < lsim_jobs_n_pending(js) && !lsim_jobs_pool_full(js)) {
		int32_t j = lsim_jobs_pending(js, i);
		if (lsim_jobs_start(js, j))
			continue;
		if (lsim_jobs_is_resume(js, j))
			return;
		i++;
	}
}

static void pass_easy(struct lsim_jobs *js)
{
	if (start_heads(js) || lsim_jobs_n_pending(js) < 2 ||
	    lsim_jobs_pool_full(js))
		return;
	int32_t head = lsim_jobs_pending(js, 0);
	int32_t depth = lsim_jobs_config(js)->backfill_depth;
	/* the plan costs a sweep over the running jobs: only when some
	 * candidate fits now */
	size_t i = 1;
	for (; i < lsim_jobs_n_pending(js) && (int32_t)i <= depth; i++)
		if (lsim_jobs_can_start(js, lsim_jobs_pending(js, i)))
			break;
	if (i >= lsim_jobs_n_pending(js) || (int32_t)i > depth)
		return;
	depth -= (int32_t)i - 1;
	/* a resume is in the plan already, as starting now */
	if (!lsim_jobs_is_resume(js, head)) {
		int32_t type = 0;
		lsim_time at = lsim_jobs_plan_earliest(js, head, &type);
		if (at != LSIM_TIME_MAX &&
		    lsim_jobs_plan_reserve(js, head, at, type) != 0)
			return;
	}
	while (i < lsim_jobs_n_pending(js) && depth-- > 0 &&
	       !lsim_jobs_pool_full(js)) {
		int32_t j = lsim_jobs_pending(js, i);
		if (lsim_jobs_can_start(js, j) && lsim_jobs_plan_fits_now(js, j) &&
		    lsim_jobs_start(js, j))
			continue;
		i++;
	}
}

/* Every quantum: waiting jobs of a better level preempt running ones. */
static void tick_las(struct lsim_jobs *js)
{
	enum { LOOK = 64 };
	int32_t look[LOOK];
	size_t n = 0;
	for (size_t i = 0; i < lsim_jobs_n_pending(js) && n < LOOK; i++)
		look[n++] = lsim_jobs_pending(js, i);
	for (size_t i = 0; i < n; i++) {
		if (lsim_jobs_can_start(js, look[i]))
			continue; /* the next pass starts it */
		if (lsim_jobs_preempt_for(js, look[i], key_las) < 0)
			return;
	}
}

static const struct lsim_job_scheduler schedulers[] = {
	{"fcfs", "arrival order, the head blocks", key_fcfs, pass_fcfs, NULL},
	{"sjf", "shortest predicted run time first", key_sjf, pass_greedy,
	 NULL},
	{"easy_backfill", "arrival order, EASY backfilling around the head",
	 key_fcfs, pass_easy, NULL},
	{"las", "least attained GPU service, Tiresias-like levels, preemptive",
	 key_las, pass_greedy, tick_las},
};

/* ---- allocators ---- */

static int32_t desired_peak(const struct lsim_job_spec *s, int32_t p)
{
	(void)p;
	return lsim_job_peak_gpus(s);
}

static int32_t desired_phase(const struct lsim_job_spec *s, int32_t p)
{
	return s->phases[p].gpus;
}

static const struct lsim_job_allocator allocators[] = {
	{"static", "peak demand reserved for the whole job", desired_peak,
	 false, false},
	{"dynamic", "each phase's demand, resized by checkpoint and restart",
	 desired_phase, true, false},
	{"time_packing",
	 "dynamic, admitting a job only if its demand over time fits",
	 desired_phase, true, true},
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

const struct lsim_job_scheduler *lsim_job_scheduler_find(const char *name)
{
	for (size_t i = 0; name && i < N_OF(schedulers); i++)
		if (strcmp(schedulers[i].name, name) == 0)
			return &schedulers[i];
	return NULL;
}

const struct lsim_job_allocator *lsim_job_allocator_find(const char *name)
{
	for (size_t i = 0; name && i < N_OF(allocators); i++)
		if (strcmp(allocators[i].name, name) == 0)
			return &allocators[i];
	return NULL;
}

const char *lsim_job_scheduler_names(void)
{
	return "fcfs, sjf, easy_backfill, las";
}

const char *lsim_job_allocator_names(void)
{
	return "static, dynamic, time_packing";
}
