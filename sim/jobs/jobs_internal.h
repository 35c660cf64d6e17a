/*
 * jobs_internal.h (sim/jobs/) - what the pieces of the jobs module share,
 * included by them only: the records of a job, a GPU, a node, a GPU type,
 * a lend request and the plan's step functions, struct lsim_jobs itself,
 * and the helpers one piece defines for the others. The pieces: jobs.c
 * (the model: pool, lifecycle, traffic, lending), jobs_sched.c (pending
 * queue, allocation choice, passes, the policies' accessors), jobs_plan.c
 * (profiles and the plan), jobs_submit.c (creation, submission, arrival)
 * and jobs_report.c (records, summary, invariants).
 */
#ifndef LLMSIM_JOBS_INTERNAL_H
#define LLMSIM_JOBS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gsl/gsl_rng.h>

#include "jobs/jobs.h"
#include "kernel/array.h"

#define MILLI 1000

enum job_state {
	ST_WAITING,	  /* not arrived yet */
	ST_QUEUED,	  /* waiting for GPUs */
	ST_RESTARTING,	  /* holding GPUs, starting or loading a checkpoint */
	ST_COMPUTING,	  /* running iterations */
	ST_CHECKPOINTING, /* writing a checkpoint, holding GPUs */
	ST_DONE,	  /* finished or rejected */
};

/* What follows the checkpoint being written. */
enum after_ckpt { AFTER_CONT, AFTER_RESIZE, AFTER_RELEASE };

struct job {
	const struct lsim_job_spec *spec;
	int32_t state;
	int32_t phase;
	int64_t done;	   /* iterations completed (at the last boundary) */
	int64_t ckpt_iter; /* iterations in the last checkpoint */
	int64_t total;
	int64_t phase_end; /* iterations at the end of the current phase */
	bool has_ckpt, started, resume, releasing, release_front;
	int32_t after;
	uint64_t type_mask; /* allowed pool types */
	int32_t peak;
	bool varying;	  /* its phases differ in demand */
	lsim_time ckpt_t; /* one checkpoint write (and read) */
	double ckpt_bytes;
	/* on the links (lsim_jobs_use_links): its flows in flight, the
	 * all-reduce of the current iteration or a checkpoint write */
	bool in_comm;
	int32_t flows_left;
	lsim_flow_id *flows;
	int32_t cap_flows;
	/* allocation */
	int32_t type;  /* -1: none */
	int32_t alloc; /* whole GPUs held (1 for a share) */
	int32_t milli; /* milli-GPUs held */
	int32_t *gpus;
	int32_t cap_gpus;
	int32_t run_pos; /* index in the running list, -1 */
	double price_s;	 /* price per GPU-second of the allocation */
	/* the current state */
	int32_t n;	/* GPUs computing (1 for a share) */
	lsim_time it;	/* iteration time of the segment */
	lsim_time seg_start, state_start, state_end, held_since, queued_since;
	int64_t seg_iter0, seg_iter1;
	lsim_event_id ev, fail_ev;
	/* queue order */
	double key;
	uint64_t qseq;
	double since_ckpt_gpu_s; /* compute since the last checkpoint */
	/* its part of the plan's running demand (struct run_plan), as last
	 * computed: what it held then, and the changes after, at absolute
	 * times; dirty: in js->dirty, to be computed again */
	struct pdelta *pd;
	int32_t n_pd;
	int32_t pd_base;
	int32_t pd_type; /* -1: not in the running demand */
	bool dirty;
	struct lsim_job_record rec;
};

struct gpu {
	int32_t node, type;
	int32_t used; /* milli-GPUs in use */
	int32_t owner; /* the job holding it whole, or -1 */
	bool lent;
};

struct node {
	int32_t first, count, type;
	int32_t free_whole; /* GPUs with nothing on them, not lent */
	int32_t lent;
	int32_t promised; /* GPUs still owed to lend requests */
};

struct gtype {
	int32_t total, lent, free_whole;
	int32_t partial; /* GPUs shared and not full */
	const struct lsim_gpu_profile *prof;
	double price_s;
};

struct lend_req {
	int32_t node, n, left;
	lsim_jobs_lend_fn done;
	void *ctx;
};

/* A step function of milli-GPUs in use from now on: u[i] on [t[i], t[i+1]),
 * the last step to infinity. */
struct steps {
	lsim_time *t;
	int64_t *u;
	size_t n, cap;
};

struct seg {
	lsim_time dur;
	int32_t milli;
};

struct delta {
	lsim_time t;
	int32_t d; /* milli-GPUs */
	int32_t type;
};

struct pdelta {
	lsim_time t;
	int64_t d; /* milli-GPUs */
};

/*
 * The predicted demand of the jobs holding GPUs, one type, kept from one
 * plan build to the next: base is the demand at the last build, and
 * (t[i], d[i]) the changes after it, sorted, one per time, none zero. A
 * job's predicted demand in absolute time stays the same until one of
 * its own events, so a build only re-computes the jobs that changed.
 */
struct run_plan {
	lsim_time *t;
	int64_t *d;
	size_t n, cap;
	lsim_time *t2; /* the next build's arrays */
	int64_t *d2;
	size_t cap2;
	int64_t base;
};

struct lsim_jobs {
	struct lsim_engine *eng;
	struct lsim_jobs_cfg cfg;
	struct lsim_net *net; /* NULL: traffic from link_bw and storage_bw */
	const struct lsim_topo *topo;
	const struct lsim_job_scheduler *sched;
	const struct lsim_job_allocator *alloc;
	uint64_t events0;
	/* pool */
	struct gpu *gpus;
	int32_t n_gpus;
	struct node *nodes;
	int32_t n_nodes;
	struct gtype *types;
	int32_t n_types;
	char (*type_names)[32];
	struct lend_req *lends;
	size_t n_lends, cap_lends;
	double lent_gpu_s;
	double lent_before_jobs; /* lent_gpu_s at the first arrival */
	lsim_time lent_since;
	/* jobs */
	struct job *jobs;
	size_t n_jobs, cap_jobs;
	size_t n_ended;
	size_t n_varying; /* jobs not ended whose demand changes over phases */
	const struct lsim_job_list *list; /* streaming arrivals */
	size_t list_base, list_next;
	int32_t *pending;
	size_t n_pending, cap_pending;
	int32_t *running;
	size_t n_running, cap_running;
	uint64_t qseq;
	/* tenants */
	const int32_t *quota;
	size_t n_quota;
	int64_t *tenant_milli;
	size_t n_tenant_milli;
	/* engine hooks */
	bool pass_pending, tick_armed;
	gsl_rng *fail_rng;
	/* plan */
	bool plan_valid;
	struct steps *plan;
	struct delta *deltas;
	size_t cap_deltas;
	int64_t *res_base; /* per type: demand now of jobs queued to resume */
	/* the running jobs' part of the plan, kept between builds (on from
	 * the first build; stale: rebuilt from every job at the next one,
	 * after running out of memory); pend: its changes since the last
	 * build, dirty: the jobs whose profile may have changed since */
	bool run_on, run_stale;
	struct run_plan *run;
	struct delta *pend;
	size_t n_pend, cap_pend;
	int32_t *dirty;
	size_t n_dirty, cap_dirty;
	struct pdelta *pscr;
	size_t cap_pscr;
	struct seg *segs;
	size_t cap_segs;
	/* results */
	struct lsim_job_record *out;
	size_t cap_out;
	double *scratch;
	size_t cap_scratch;
	lsim_time first_arrival, last_end;
	bool any_arrival;
	/* the timeline: every change of state of every job */
	struct lsim_job_event *timeline;
	size_t n_timeline, cap_timeline;
};

/* ---- shared helpers ---- */

static inline lsim_time lsim_jobs_now(const struct lsim_jobs *js)
{
	return lsim_now(js->eng);
}

/* GPUs the job holds (shares count as fractions). */
static inline double lsim_jobs_held_gpus(const struct job *jb)
{
	return (double)jb->milli / MILLI;
}

/* jobs.c */

void lsim_jobs_set_state(struct lsim_jobs *js, struct job *jb,
			 enum job_state st);
void lsim_jobs_set_progress(struct job *jb, int64_t x);
/* Whole GPUs the allocator gives the job in phase p. */
int32_t lsim_jobs_desired(const struct lsim_jobs *js, const struct job *jb,
			  int32_t p);
/* One iteration of phase p on n GPUs of type (lsim_job_iter_time). */
lsim_time lsim_jobs_iter_time_on(const struct lsim_jobs *js,
				 const struct job *jb, int32_t p, int32_t n,
				 int32_t type);
/* The start or restart overhead before the job computes. */
lsim_time lsim_jobs_restart_time(const struct lsim_jobs *js,
				 const struct job *jb);
/* Brings the GPU-seconds lent to inference up to now. */
void lsim_jobs_accrue_lent(struct lsim_jobs *js);
int32_t lsim_jobs_share_gpu(const struct lsim_jobs *js, int32_t type,
			    int32_t milli);

/* jobs_sched.c */

/* A scheduling pass at this instant (the plan is dropped). */
void lsim_jobs_request_pass(struct lsim_jobs *js);
/* The scheduler's next tick, if it has ticks and jobs wait. */
void lsim_jobs_arm_tick(struct lsim_jobs *js);
/* Queues job j (first among the resumes if front); LSIM_ENOMEM. */
int lsim_jobs_enqueue(struct lsim_jobs *js, int32_t j, bool front);
void lsim_jobs_dequeue(struct lsim_jobs *js, int32_t j);
int32_t lsim_jobs_min_gpus(const struct job *jb, int32_t want);
bool lsim_jobs_choose(const struct lsim_jobs *js, const struct job *jb,
		      int32_t *type, int32_t *grant);

/* jobs_plan.c */

bool lsim_jobs_admit(struct lsim_jobs *js, const struct job *jb, int32_t type);
/* Adds jb's profile from `at` on type to the plan of this pass. */
void lsim_jobs_plan_add_job(struct lsim_jobs *js, const struct job *jb,
			    int32_t type, lsim_time at);

#endif
