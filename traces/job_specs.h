/*
 * job_specs.h - the inputs of the training-job model: job
 * specifications (gang size, phases of GPU demand, iteration cost,
 * checkpoints), owned lists of them with tenant names and quotas, GPU pool
 * descriptions, and what produces them: readers for the Alibaba GPU v2023
 * pod and node lists and for a generic job CSV, and seeded generators that
 * draw from an empirical runtime distribution (Philly) or from published
 * cluster statistics (Helios, Acme). The job specification itself is in
 * llmsim/job_spec.h; the simulation of jobs is sim/jobs/jobs.h.
 */
#ifndef LLMSIM_TRACE_JOBS_H
#define LLMSIM_TRACE_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "llmsim/job_spec.h"
#include "llmsim/llmsim.h"

/*
 * Splits a duration into iterations x iteration time exactly: the
 * iteration is the largest of 1 s, 1 ms, 1 us, 1 ns that divides dur (a
 * zero duration is one iteration of zero time).
 */
void lsim_job_split_duration(lsim_time dur, int64_t *iterations,
			     lsim_time *iter_time);

/*
 * An owned list of job specs, their phases and strings, and the tenants
 * (virtual clusters) they belong to. Reader statistics count the rows a
 * reader left out on purpose (not errors).
 */
struct lsim_job_list {
	struct lsim_job_spec *jobs;
	size_t n, cap;
	char **tenants;	 /* names, by index */
	int32_t *quota;	 /* per tenant: most GPUs it may hold; < 0 = no limit */
	size_t n_tenants, cap_tenants;
	char **strings; /* interned gpu_types */
	size_t n_strings, cap_strings;
	/* reader statistics */
	size_t skipped_no_gpu;	    /* Alibaba: CPU-only pods (num_gpu 0) */
	size_t skipped_unscheduled; /* Alibaba: pods never scheduled */
	size_t skipped_open;	    /* Alibaba: no deletion time and no end_s */
};

void lsim_job_list_init(struct lsim_job_list *l);
void lsim_job_list_release(struct lsim_job_list *l); /* accepts NULL */

/*
 * Appends a copy of s with a copy of its phases (s->phases is read, then
 * replaced by the list's copy) and an interned copy of s->gpu_types.
 */
int lsim_job_list_add(struct lsim_job_list *l, const struct lsim_job_spec *s);

/* Index of tenant name, added (quota: no limit) when new; < 0 on ENOMEM. */
int32_t lsim_job_list_tenant(struct lsim_job_list *l, const char *name);

/* Sorts the jobs by arrival, keeping the order of equal arrivals. */
void lsim_job_list_sort(struct lsim_job_list *l);

/* ---- GPU pool descriptions ---- */

struct lsim_pool_spec {
	int32_t n_nodes, cap_nodes;
	int32_t *node_gpus; /* GPUs of each node */
	int32_t *node_type; /* index into types */
	char (*types)[32];  /* type names */
	int32_t n_types, cap_types;
};

void lsim_pool_spec_init(struct lsim_pool_spec *p);
void lsim_pool_spec_release(struct lsim_pool_spec *p); /* accepts NULL */
/* Adds count nodes of gpus GPUs of the named type (added if new). */
int lsim_pool_spec_add(struct lsim_pool_spec *p, int32_t count, int32_t gpus,
		       const char *type);
/* Index of a type name, or -1. */
int32_t lsim_pool_spec_type(const struct lsim_pool_spec *p, const char *name);

/* ---- readers ---- */

/*
 * Alibaba GPU cluster trace v2023 (openb) pod list: columns name, num_gpu,
 * gpu_milli, gpu_spec, qos, creation_time, deletion_time, scheduled_time
 * (others ignored). A pod with num_gpu >= 1 becomes a rigid one-phase job
 * arriving at creation_time and running deletion_time - scheduled_time;
 * its tenant is its qos class, its type constraint gpu_spec. A pod with
 * num_gpu 1 and gpu_milli below 1000 asks for that share of one GPU.
 * CPU-only pods and pods never scheduled are counted in the list's
 * statistics and left out; so are pods with no deletion time when end_s is
 * 0 (with end_s > 0 they run until end_s). Bad values are LSIM_EFORMAT
 * naming file, line, column and key. Jobs are appended and the list sorted.
 */
int lsim_jobs_read_alibaba_pods(const char *path, double end_s,
				struct lsim_job_list *l, struct lsim_diag *d);

/*
 * Alibaba v2023 node list: columns sn, gpu, model. Nodes with gpu 0 are
 * left out; the model column names the GPU type.
 */
int lsim_jobs_read_alibaba_nodes(const char *path, struct lsim_pool_spec *p,
				 struct lsim_diag *d);

/*
 * The generic job CSV (docs/jobs.md): arrival_s required; then per row
 * either `phases` ("gpus:iterations;...") or `gpus` with one of
 * `duration_s` and `iterations`. Optional columns: id, tenant, kind
 * (train|finetune), gpus_min, gpu_milli, gpu_type, iter_s, params,
 * tokens_per_iter, ckpt_every, ckpt_interval_s, ckpt_bytes. Iterations and
 * phases need iter_s or params with tokens_per_iter. Arrivals must not
 * decrease. Errors name file, line, column and key.
 */
int lsim_jobs_read_csv(const char *path, struct lsim_job_list *l,
		       struct lsim_diag *d);

/*
 * Helios per-VC daily GPU counts (`date`, one column per VC, `total`): the
 * row of `date` (NULL: the first) becomes the list's tenants, each VC with
 * its GPUs as quota; VCs with 0 GPUs that day are left out.
 */
int lsim_jobs_read_vc_quotas(const char *path, const char *date,
			     struct lsim_job_list *l, struct lsim_diag *d);

/* One row of a published cluster summary (Acme cluster_summary.csv or
 * Helios helios_cluster_summary.csv): GPU-job statistics. */
struct lsim_cluster_stats {
	char name[32];
	double avg_run_s, med_run_s; /* run time of GPU jobs */
	double max_run_s;	     /* 0 when not published */
	double avg_gpus, med_gpus;
	int32_t max_gpus; /* 0 when not published */
	double avg_queue_s, med_queue_s;
};

int lsim_jobs_read_cluster_stats(const char *path, const char *cluster,
				 struct lsim_cluster_stats *out,
				 struct lsim_diag *d);

/* ---- generators ---- */

struct lsim_job_gen_params {
	uint64_t seed;
	size_t count;	       /* jobs to draw */
	double rate;	       /* arrivals per second (Poisson); 0: from load */
	double load;	       /* with rate 0: offered GPU-time / capacity */
	int32_t capacity_gpus; /* the pool the load refers to */
	double mean_gpus;      /* mean GPUs per job (>= 1); 0: the source's */
	int32_t max_gpus;      /* largest job (powers of two up to it, and up
				* to capacity_gpus); 0: the source's */
	lsim_time min_duration; /* shorter draws are raised to it */
	lsim_time ckpt_interval; /* 0: no checkpoints */
	double ckpt_bytes;
};

/* Defaults: seed 1, 1000 jobs, rate 0 with load 0.8 (capacity_gpus must
 * then be set), the source's mean and largest sizes, runs of >= 1 s, no
 * checkpoints. */
void lsim_job_gen_defaults(struct lsim_job_gen_params *p);

/*
 * Jobs with runtimes drawn from an empirical distribution: a CSV with a
 * `runtime` column in seconds (one value per job, e.g. the Philly runtimes)
 * and an optional `count` column (how many jobs had that value). Sizes
 * follow the power-of-two law of lsim_job_size_law with mean p->mean_gpus
 * (0: 1.928, the Philly mean of the Acme summary); tenants are drawn in
 * proportion to the list's tenant quotas (all equal when none is set).
 * Runtimes are whole seconds. Appends p->count jobs.
 */
int lsim_jobs_gen_empirical(const char *runtime_csv,
			    const struct lsim_job_gen_params *p,
			    struct lsim_job_list *l, struct lsim_diag *d);

/*
 * Jobs from a cluster's published statistics: runtimes lognormal with the
 * published median and mean (sigma^2 = 2 ln(mean/median)), capped at the
 * published maximum; sizes from the power-of-two law with the published
 * mean GPUs (p->mean_gpus overrides) up to the published maximum.
 */
int lsim_jobs_gen_stats(const struct lsim_cluster_stats *st,
			const struct lsim_job_gen_params *p,
			struct lsim_job_list *l, struct lsim_diag *d);

/*
 * The GPU-count law of the generators: P(2^k) proportional to q^k for
 * 2^k <= max_gpus, with q solved (GSL Brent) so that the mean is
 * mean_gpus. Fills prob[0..*n) (n <= 31) and returns 0, or LSIM_ERANGE
 * when mean_gpus is outside [1, largest size).
 */
int lsim_job_size_law(double mean_gpus, int32_t max_gpus, double *prob,
		      int *n);

/*
 * Phases of a job whose demand is high early, lower later, with spikes at
 * epoch boundaries (the seed whitepaper's shape): `epochs` epochs of
 * iters_per_epoch iterations; the first high_epochs at gpus_high, the rest
 * at gpus_low; after every epoch but the last, spike_iters iterations at
 * spike_gpus (0: no spikes). Writes at most cap phases, merging neighbours
 * of equal demand; returns the count or LSIM_ERANGE if cap is too small.
 */
int lsim_job_phases_epochs(int32_t epochs, int64_t iters_per_epoch,
			   int32_t high_epochs, int32_t gpus_high,
			   int32_t gpus_low, int32_t spike_gpus,
			   int64_t spike_iters, struct lsim_job_phase *out,
			   int32_t cap);

#endif
