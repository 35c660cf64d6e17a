/*
 * hold.c - the classic "hold" benchmark of the event engine: keep N events
 * pending, and repeatedly fire the earliest one, whose handler schedules a
 * replacement at now + an exponential increment. Prints one line per size:
 *   bench hold pending=N events_per_s=X
 * Usage: bench_hold [ops_per_size]. Without an argument each size runs for
 * about 1.5 s of wall time after a warm-up of N events.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "llmsim/engine.h"

/* Exponential increments: INC_TABLE independent draws made before the
 * clock starts, consumed in order (a pre-drawn random stream), so that the
 * benchmark measures the engine, not log() or a random read of a 512 KB
 * table (which cost a quarter of each event at N = 10^4). */
#define INC_TABLE 65536u
#define MEAN_INC_NS 1000000.0 /* 1 ms mean: ties are rare, as in a real run */

struct hold {
	lsim_time inc[INC_TABLE];
	uint64_t rng;   /* xorshift64 state, for drawing the table */
	uint64_t next;  /* the stream's position in inc[] */
	uint64_t left;  /* events to fire before stopping */
	int failed;
};

static uint64_t xorshift64(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

static lsim_time next_inc(struct hold *h)
{
	return h->inc[h->next++ & (INC_TABLE - 1)];
}

static void fire(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	struct hold *h = subject;
	if (!lsim_schedule_in(eng, next_inc(h), fire, h, arg))
		h->failed = 1;
	if (--h->left == 0 || h->failed)
		lsim_stop(eng);
}

static double wall_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs the hold model with n pending events. ops == 0 means "about 1.5 s".
 * Returns events per second, or a negative value on failure. */
static double run_size(struct hold *h, uint64_t n, uint64_t ops)
{
	struct lsim_engine *eng = lsim_engine_create();
	if (!eng)
		return -1.0;
	h->failed = 0;
	for (uint64_t i = 0; i < n; i++)
		if (!lsim_schedule(eng, next_inc(h), fire, h, i))
			h->failed = 1;
	/* warm-up: one full turnover brings the queue to its steady state */
	h->left = n;
	lsim_run(eng, LSIM_TIME_MAX);

	uint64_t done = 0;
	double t0 = wall_s(), t1 = t0;
	uint64_t batch = ops ? ops : 1000000u;
	do {
		h->left = batch;
		done += lsim_run(eng, LSIM_TIME_MAX);
		t1 = wall_s();
	} while (!ops && !h->failed && t1 - t0 < 1.5);
	int bad = h->failed || lsim_pending(eng) != n;
	lsim_engine_destroy(eng);
	if (bad || t1 <= t0)
		return -1.0;
	return (double)done / (t1 - t0);
}

int main(int argc, char **argv)
{
	uint64_t ops = 0;
	if (argc > 1) {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(argv[1], &end, 10);
		if (errno || *end || v == 0) {
			fprintf(stderr, "usage: %s [ops_per_size]\n", argv[0]);
			return 2;
		}
		ops = v;
	}
	struct hold *h = malloc(sizeof *h);
	if (!h)
		return 1;
	h->rng = 0x9e3779b97f4a7c15u;
	h->next = 0;
	for (uint32_t i = 0; i < INC_TABLE; i++) {
		/* u in (0, 1): the midpoints of 2^53 equal cells */
		double u = ((double)(xorshift64(&h->rng) >> 11) + 0.5) /
			   9007199254740992.0;
		h->inc[i] = (lsim_time)(-MEAN_INC_NS * log(u)) + 1;
	}
	static const uint64_t sizes[] = {100, 10000, 1000000};
	int rc = 0;
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		double rate = run_size(h, sizes[i], ops);
		if (rate < 0) {
			fprintf(stderr, "bench hold: pending=%" PRIu64 " failed\n",
				sizes[i]);
			rc = 1;
			continue;
		}
		printf("bench hold pending=%" PRIu64 " events_per_s=%" PRIu64 "\n",
		       sizes[i], (uint64_t)(rate + 0.5));
		fflush(stdout);
	}
	free(h);
	return rc;
}
