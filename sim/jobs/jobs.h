/*
 * jobs.h (sim/) - training and fine-tuning jobs on the event engine: a GPU
 * pool (nodes of typed GPUs, whole or shared in milli-GPUs), the job
 * lifecycle (queue, start, compute, checkpoint, resize, failure, restart,
 * preemption), lending GPUs to inference and taking them back, per-job
 * records and a summary. Which job starts and how many GPUs it holds are
 * decided by the schedulers and allocators of policies/jobs, which see the
 * jobs through llmsim/job_policy.h. The job specifications and their
 * readers are in traces/job_specs.h.
 */
#ifndef LLMSIM_JOBS_H
#define LLMSIM_JOBS_H

#include <stdbool.h>
#include <stdint.h>

#include "job_specs.h"
#include "cluster/hw.h"
#include "cluster/links.h"
#include "llmsim/engine.h"
#include "llmsim/job_policy.h"

/* ---- configuration (struct lsim_jobs_cfg: llmsim/job_policy.h) ---- */

/* Defaults: fcfs, static, 2 B/param gradients, 14 B/param checkpoints,
 * 100 backfill candidates, las 3600 GPU-s x 10, 2 levels, 60 s quantum. */
void lsim_jobs_cfg_defaults(struct lsim_jobs_cfg *c);

/*
 * Time of one iteration of phase p of s on n GPUs (n <= the phase's GPUs;
 * a gpu_milli job runs on that share of one GPU):
 *   params > 0: 6 x params x tokens_per_iter / (n x peak x efficiency)
 *     + for n > 1 a ring all-reduce 2 (n - 1) / n x params x grad bytes
 *       / link_bw + link_latency;
 *   params == 0: iter_time x phase GPUs / n, rounded up to a ns.
 * Returns LSIM_EINVAL with d filled when a needed number is missing.
 */
int lsim_job_iter_time(const struct lsim_job_spec *s, int32_t p, int32_t n,
		       const struct lsim_gpu_profile *gpu,
		       const struct lsim_jobs_cfg *c, lsim_time *out,
		       struct lsim_diag *d);

/* ---- results ---- */

enum lsim_job_status {
	LSIM_JOB_FINISHED = 0,
	LSIM_JOB_REJECTED = 1,	 /* can never fit its pool type or quota */
	LSIM_JOB_UNFINISHED = 2, /* still queued or running when asked */
};

/* One job, one record, in submission order. Times in ns (-1: never). */
struct lsim_job_record {
	uint64_t id;
	int32_t tenant;
	int32_t status;	   /* enum lsim_job_status */
	int32_t gpus_peak; /* peak phase demand */
	int32_t gpu_milli;
	int32_t gpu_type; /* pool type of the last allocation, -1: none */
	int32_t restarts; /* starts after the first */
	int32_t failures, preemptions, resizes;
	int64_t iterations;	 /* completed and kept (so far, if unfinished) */
	int64_t lost_iterations; /* completed, then lost to failures */
	lsim_time arrival, first_start, finish;
	lsim_time queued; /* total time waiting for GPUs */
	double alloc_gpu_s;    /* GPU-seconds held */
	double useful_gpu_s;   /* GPU-seconds of kept iterations */
	double lost_gpu_s;     /* GPU-seconds of lost iterations */
	double overhead_gpu_s; /* GPU-seconds held in checkpoints, restarts */
	double cost;	       /* alloc_gpu_s x price per GPU-second */
};

struct lsim_jobs_summary {
	size_t n_jobs, n_finished, n_rejected, n_unfinished;
	double makespan_s; /* last end - first arrival */
	double jct_mean_s, jct_p50_s, jct_p90_s, jct_p99_s; /* finished */
	double queue_mean_s, queue_p50_s, queue_p90_s, queue_p99_s;
	double capacity_gpu_s; /* GPUs not lent out, over the makespan */
	double alloc_gpu_s, useful_gpu_s, lost_gpu_s, overhead_gpu_s;
	double util_alloc;  /* alloc_gpu_s / capacity_gpu_s */
	double util_useful; /* useful_gpu_s / capacity_gpu_s */
	int64_t lost_iterations;
	int64_t restarts, failures, preemptions, resizes;
	double cost;
	uint64_t events; /* engine events while jobs were simulated */
};

/* ---- the jobs of one run ---- */

struct lsim_jobs;

/*
 * Creates the job side of a run on eng (borrowed) over the pool (copied).
 * cfg is copied; its strings and arrays must outlive the object. Unknown
 * scheduler or allocator names are LSIM_ENOENT listing the valid ones.
 */
int lsim_jobs_create(struct lsim_engine *eng, const struct lsim_pool_spec *pool,
		     const struct lsim_jobs_cfg *cfg, struct lsim_jobs **out,
		     struct lsim_diag *d);
void lsim_jobs_destroy(struct lsim_jobs *js); /* accepts NULL */

/*
 * Submits every job of l (borrowed until destroy), arriving at their
 * times (streamed: one pending arrival at a time). A job whose numbers
 * cannot be simulated (a model job with no peak FLOP/s, say) is
 * LSIM_EINVAL naming it; nothing is submitted then.
 */
int lsim_jobs_submit_list(struct lsim_jobs *js, const struct lsim_job_list *l,
			  struct lsim_diag *d);
/* Submits one job now (s, its phases and strings borrowed until destroy);
 * returns its index (submission order) or a negative LSIM_E* code. */
int32_t lsim_jobs_submit(struct lsim_jobs *js, const struct lsim_job_spec *s,
			 struct lsim_diag *d);

/*
 * A failure of job j now: the work since its last checkpoint is lost, its
 * GPUs released, and it queues to restart from the checkpoint ahead of
 * new jobs. LSIM_ESTATE if it holds no GPUs.
 */
int lsim_jobs_fail(struct lsim_jobs *js, int32_t j);

/*
 * Preempts job j now: it stops after the iteration in progress (that
 * partial iteration is lost), writes a checkpoint holding its GPUs, then
 * releases them and queues again: ahead of new jobs if front, else in the
 * scheduler's order. LSIM_ESTATE if it holds no GPUs.
 */
int lsim_jobs_preempt(struct lsim_jobs *js, int32_t j, bool front);

/*
 * Lending GPUs to inference: takes n whole GPUs of node away from jobs.
 * Free GPUs go at once; jobs holding the rest are preempted (checkpoint,
 * then release; newest start first). done(ctx, node, n) is called when all
 * n are lent (at once, from this call, if they were free). LSIM_ERANGE if
 * the node has fewer than n GPUs not yet lent or promised.
 */
typedef void (*lsim_jobs_lend_fn)(void *ctx, int32_t node, int32_t n);
int lsim_jobs_reclaim(struct lsim_jobs *js, int32_t node, int32_t n,
		      lsim_jobs_lend_fn done, void *ctx);
/* Gives n lent GPUs of node back to the jobs. */
int lsim_jobs_give_back(struct lsim_jobs *js, int32_t node, int32_t n);

/* The pool now: GPUs in all, lent to inference, free (nothing on them),
 * held by jobs (whole or shared); jobs waiting; and fragmented: free GPUs
 * on nodes with fewer free than the job at the head of the queue needs. */
struct lsim_jobs_occupancy {
	int32_t total, lent, free, held, pending, fragmented;
};
void lsim_jobs_occupancy(const struct lsim_jobs *js, struct lsim_jobs_occupancy *o);

/* Whole GPUs free now (not held, not lent), over all types. */
int32_t lsim_jobs_free_gpus(const struct lsim_jobs *js);
/* GPUs lent out now. */
int32_t lsim_jobs_lent_gpus(const struct lsim_jobs *js);
/* Jobs submitted, and jobs ended (finished or rejected). */
size_t lsim_jobs_submitted(const struct lsim_jobs *js);
size_t lsim_jobs_ended(const struct lsim_jobs *js);

/*
 * Records of every submitted job, in submission order, owned by js and
 * valid until the next call or destroy; jobs not ended are filled in as
 * unfinished as of now.
 */
const struct lsim_job_record *lsim_jobs_records(struct lsim_jobs *js,
						size_t *n);
/* One change of state of one job: 1 queued, 2 restarting (starting or
 * reading a checkpoint), 3 computing, 4 checkpointing, 5 done; gpus: held
 * then (shares count as fractions). */
struct lsim_job_event {
	lsim_time t;
	int32_t job;   /* submission order */
	int32_t state;
	double gpus;
};
/* The timeline so far, in time order (owned by js). */
const struct lsim_job_event *lsim_jobs_timeline(const struct lsim_jobs *js,
					       size_t *n);

/* The summary over the records as of now (quantiles with GSL). */
int lsim_jobs_summary(struct lsim_jobs *js, struct lsim_jobs_summary *out);
/* Invariants (checked after every event in builds with invariants): every
 * job is in the list its state says, once; no GPU is more than fully
 * used. Returns 0, or LSIM_ESTATE with the broken rule in why. */
int lsim_jobs_check(const struct lsim_jobs *js, char *why, size_t n);

/*
 * Moves the jobs' traffic onto the cluster's links (borrowed; the pool's
 * nodes must be the topology's, in order): each iteration of a job with a
 * model size on more than one GPU computes, then its gradient ring
 * all-reduce moves as flows between its GPUs (2 (n - 1) / n x params x
 * grad bytes from each to the next); checkpoints are written from every
 * GPU (its share of the bytes) to the storage service as flows. Without
 * it both take their time from link_bw and storage_bw.
 */
void lsim_jobs_use_links(struct lsim_jobs *js, struct lsim_net *net,
			 const struct lsim_topo *topo);

/* The accessors and actions of the job schedulers and allocators
 * (lsim_jobs_config, lsim_jobs_pending, lsim_jobs_start, the plan, ...) are
 * declared in llmsim/job_policy.h. */

/*
 * A check of the plan kept between passes (the running jobs' predicted
 * demand is not rebuilt from every job at each pass, only for the jobs
 * whose state changed): builds the plan as a pass would and from every
 * job, and compares them. 0 if they are the same step functions,
 * LSIM_ESTATE if not, LSIM_ENOMEM. Changes no result: the next pass
 * builds its plan again.
 */
int lsim_jobs_plan_check(struct lsim_jobs *js);

#endif
