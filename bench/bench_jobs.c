/*
 * bench_jobs.c - the job side under load: N jobs (default 100,000) drawn
 * from the Philly runtime distribution (power-of-two sizes, mean 1.928
 * GPUs, up to 128) arriving as a Poisson stream at an offered load of 1.0
 * of a 1,000-GPU pool (125 nodes x 8), run to completion under each job
 * scheduler with the static allocator, then under easy_backfill with the
 * time_packing allocator. For each it prints
 *   bench jobs sched=S alloc=A jobs=N events=E wall_s=... jobs_per_s=...
 *     events_per_s=... makespan_h=... jct_mean_h=... jct_p99_h=...
 *     queue_mean_h=... util_alloc=...
 * Usage: bench_jobs RUNTIME_CSV [jobs [load]].
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jobs/jobs.h"

static double wall(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int run(const struct lsim_job_list *l, const struct lsim_pool_spec *pool,
	       const char *sched, const char *alloc)
{
	struct lsim_engine *eng = lsim_engine_create();
	if (!eng)
		return 1;
	struct lsim_jobs_cfg c;
	lsim_jobs_cfg_defaults(&c);
	c.scheduler = sched;
	c.allocator = alloc;
	c.las_quantum = 600 * LSIM_S;
	struct lsim_diag d = {0};
	struct lsim_jobs *js = NULL;
	int rc = lsim_jobs_create(eng, pool, &c, &js, &d);
	if (!rc)
		rc = lsim_jobs_submit_list(js, l, &d);
	if (rc) {
		fprintf(stderr, "bench_jobs: %s\n", d.msg);
		lsim_jobs_destroy(js);
		lsim_engine_destroy(eng);
		return 1;
	}
	double t0 = wall();
	lsim_run(eng, LSIM_TIME_MAX);
	double dt = wall() - t0;
	struct lsim_jobs_summary s;
	rc = lsim_jobs_summary(js, &s);
	if (!rc && s.n_finished != l->n) {
		fprintf(stderr, "bench_jobs: %zu of %zu jobs finished\n",
			s.n_finished, l->n);
		rc = 1;
	}
	if (!rc)
		printf("bench jobs sched=%s alloc=%s jobs=%zu events=%llu "
		       "wall_s=%.3f jobs_per_s=%.0f events_per_s=%.0f "
		       "makespan_h=%.1f jct_mean_h=%.2f jct_p99_h=%.1f "
		       "queue_mean_h=%.2f util_alloc=%.3f preemptions=%lld\n",
		       sched, alloc, l->n, (unsigned long long)s.events, dt,
		       (double)l->n / dt, (double)s.events / dt,
		       s.makespan_s / 3600, s.jct_mean_s / 3600,
		       s.jct_p99_s / 3600, s.queue_mean_s / 3600, s.util_alloc,
		       (long long)s.preemptions);
	lsim_jobs_destroy(js);
	lsim_engine_destroy(eng);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0) {
		fprintf(stderr, "usage: bench_jobs RUNTIME_CSV [jobs [load]]\n");
		return argc < 2 ? 2 : 0;
	}
	struct lsim_job_gen_params p;
	lsim_job_gen_defaults(&p);
	p.seed = 42;
	p.count = argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : 100000;
	p.load = argc > 3 ? strtod(argv[3], NULL) : 1.0;
	p.capacity_gpus = 1000;
	struct lsim_pool_spec pool;
	lsim_pool_spec_init(&pool);
	struct lsim_job_list l;
	lsim_job_list_init(&l);
	struct lsim_diag d = {0};
	if (lsim_pool_spec_add(&pool, 125, 8, "H100") ||
	    lsim_jobs_gen_empirical(argv[1], &p, &l, &d)) {
		fprintf(stderr, "bench_jobs: %s\n", d.msg);
		return 1;
	}
	static const char *const scheds[] = {"fcfs", "sjf", "easy_backfill",
					     "las"};
	int rc = 0;
	for (size_t i = 0; i < sizeof scheds / sizeof scheds[0]; i++)
		rc |= run(&l, &pool, scheds[i], "static");
	rc |= run(&l, &pool, "easy_backfill", "time_packing");
	lsim_job_list_release(&l);
	lsim_pool_spec_release(&pool);
	return rc;
}
