/*
 * stream.c - memory and speed of replaying a long trace: writes a
 * generated CSV of N requests (Poisson arrivals, lognormal lengths; GSL,
 * fixed seed) to a temporary folder, runs `llmsim run` on it as a child
 * process with the given scenario, and prints
 *   bench stream NAME requests=N wall_s=W requests_per_s=R peak_rss_mb=M
 *   bench memory requests=N peak_rss_mb=M
 * where peak_rss_mb is the child's maximum resident set (getrusage); the
 * second line is the memory figure alone, one per trace length, so runs of
 * different N (stream-1M-csv, stream-10M-csv) line up.
 * Usage: stream NAME LLMSIM SCENARIO N RATE [key=value ...]
 */
#define _DEFAULT_SOURCE /* wait4 */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int write_trace(const char *path, long n, double rate)
{
	FILE *f = fopen(path, "w");
	gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
	if (!f || !g) {
		if (f)
			fclose(f);
		gsl_rng_free(g);
		return -1;
	}
	gsl_rng_set(g, 42);
	fputs("arrival_s,prompt_tokens,output_tokens\n", f);
	double t = 0;
	for (long i = 0; i < n; i++) {
		t += gsl_ran_exponential(g, 1.0 / rate);
		long p = lround(gsl_ran_lognormal(g, 6.5, 0.8));
		long o = lround(gsl_ran_lognormal(g, 5.0, 0.7));
		fprintf(f, "%.6f,%ld,%ld\n", t, p < 1 ? 1 : p > 8000 ? 8000 : p,
			o < 1 ? 1 : o > 2000 ? 2000 : o);
	}
	gsl_rng_free(g);
	return fclose(f) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	if (argc < 6) {
		fprintf(stderr, "usage: stream NAME LLMSIM SCENARIO N RATE [key=value ...]\n");
		return 2;
	}
	long n = atol(argv[4]);
	double rate = atof(argv[5]);
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/lsim_stream_XXXXXX", tmp);
	if (!mkdtemp(dir)) {
		perror("stream: mkdtemp");
		return 1;
	}
	char trace[4200], out[4200], pathset[4300];
	snprintf(trace, sizeof trace, "%s/trace.csv", dir);
	snprintf(out, sizeof out, "%s/out", dir);
	snprintf(pathset, sizeof pathset, "workload.path=%s", trace);
	if (write_trace(trace, n, rate) != 0) {
		perror("stream: writing the trace");
		return 1;
	}
	/* llmsim run SCENARIO -o OUT --quiet --set workload.kind=auto
	 * --set workload.path=TRACE [--set key=value ...] */
	int extra = argc - 6;
	char **args = calloc((size_t)(10 + 2 * extra), sizeof *args);
	int k = 0;
	args[k++] = argv[2];
	args[k++] = "run";
	args[k++] = argv[3];
	args[k++] = "-o";
	args[k++] = out;
	args[k++] = "--quiet";
	args[k++] = "--set";
	args[k++] = "workload.kind=auto";
	args[k++] = "--set";
	args[k++] = pathset;
	for (int i = 0; i < extra; i++) {
		args[k++] = "--set";
		args[k++] = argv[6 + i];
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid_t pid = fork();
	if (pid == 0) {
		execv(args[0], args);
		perror("stream: exec");
		_exit(127);
	}
	int status = 0;
	struct rusage ru;
	if (pid < 0 || wait4(pid, &status, 0, &ru) < 0) {
		perror("stream: running llmsim");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	free(args);
	double wall = (double)(t1.tv_sec - t0.tv_sec) +
		      (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	double rss_mb = (double)ru.ru_maxrss / 1024.0; /* Linux: KiB */
	if (ok) {
		printf("bench stream %s requests=%ld wall_s=%.1f requests_per_s=%.0f "
		       "peak_rss_mb=%.1f\n",
		       argv[1], n, wall, (double)n / wall, rss_mb);
		printf("bench memory requests=%ld peak_rss_mb=%.1f\n", n, rss_mb);
	} else {
		fprintf(stderr, "stream: llmsim failed (status %d)\n", status);
	}
	/* leave nothing behind */
	char cmd[8500];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "stream: could not remove %s\n", dir);
	return ok ? 0 : 1;
}
