/*
 * shaping.c - workload shaping as a wrapper around any source: a time
 * window, time scaling, thinning (rate scaling down), repetition of the
 * source back to back, and a constant offset (for superposed copies).
 * Streaming: it holds one request at a time, except that a repeated
 * source's first pass, when it is small (REPLAY_MAX_ROWS rows and
 * REPLAY_MAX_BYTES of labels and prefix ids at most), is kept and the
 * later passes replay it instead of reading and parsing the file again.
 * A source opens to the same requests each time (a trace file), so a
 * replay gives what reopening gives, skipped lines included.
 */
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "workload_internal.h"

struct shaper {
	struct lsim_workload base;
	lsim_workload_open_fn open;
	void *ctx;
	struct lsim_shape_params p;
	gsl_rng *rng;
	struct lsim_workload *src;
	uint64_t round;	      /* repetitions started */
	lsim_time offset;     /* start of the current repetition, ns */
	lsim_time last;	      /* last arrival emitted in this repetition (scaled, re-based) */
	lsim_time first;      /* first arrival of the first repetition */
	uint64_t n_round;     /* requests emitted in this repetition */
	lsim_time last_raw;   /* the source's last arrival read (its own clock) */
	lsim_time period;     /* length of one repetition, from the first */
	uint64_t skipped_done; /* bad lines skipped by sources already closed */
	/* the first pass, for the later ones: each request with its
	 * pointers as offsets into arena, and the source's skipped count
	 * after it; recording (the first pass, while it stays small),
	 * replaying (the later passes, from row pos) */
	struct kept_req *kept;
	size_t n_kept, cap_kept;
	char *arena;
	size_t n_arena, cap_arena;
	bool recording, replaying;
	size_t pos;
	uint64_t kept_skipped; /* the source's skipped count at the pass's end */
	uint64_t replay_skipped; /* ... after the row replayed last */
	size_t last_str[6]; /* each string field's last copy in arena */
};

#define REPLAY_MAX_ROWS ((size_t)1 << 20)
#define REPLAY_MAX_BYTES ((size_t)64 << 20)
#define NO_OFF SIZE_MAX

struct kept_req {
	struct lsim_req_spec r; /* its pointers NULL: the offsets below */
	size_t hashes, class_label, model_label, tenant_label, lora_label, src_path, src_key;
	uint64_t skipped;
};

/* Copies n bytes into the arena; its offset, or NO_OFF (the recording
 * stops) past the limit or out of memory. */
static size_t keep_bytes(struct shaper *s, const void *p, size_t n)
{
	size_t at = (s->n_arena + 7) & ~(size_t)7; /* aligned for prefix ids */
	if (at + n > REPLAY_MAX_BYTES)
		return NO_OFF;
	if (at + n > s->cap_arena) {
		size_t c = s->cap_arena ? 2 * s->cap_arena : 4096;
		while (c < at + n)
			c *= 2;
		char *a = realloc(s->arena, c);
		if (!a)
			return NO_OFF;
		s->arena = a;
		s->cap_arena = c;
	}
	memcpy(s->arena + at, p, n);
	s->n_arena = at + n;
	return at;
}

/* Keeps a string, or shares the copy the field's last row kept (*last)
 * when it is the same (a path, a column name, a label repeated). */
static size_t keep_str(struct shaper *s, const char *str, size_t *last, bool *ok)
{
	if (!str)
		return NO_OFF;
	if (*last != NO_OFF && strcmp(s->arena + *last, str) == 0)
		return *last;
	size_t at = keep_bytes(s, str, strlen(str) + 1);
	*ok &= at != NO_OFF;
	if (at != NO_OFF)
		*last = at;
	return at;
}

static void stop_recording(struct shaper *s)
{
	s->recording = false;
	free(s->kept);
	free(s->arena);
	s->kept = NULL;
	s->arena = NULL;
	s->n_kept = s->cap_kept = s->n_arena = s->cap_arena = 0;
	for (int i = 0; i < 6; i++)
		s->last_str[i] = NO_OFF;
}

/* Keeps the first pass's request r (its source has skipped `skipped`
 * lines so far). */
static void record(struct shaper *s, const struct lsim_req_spec *r, uint64_t skipped)
{
	if (s->n_kept == REPLAY_MAX_ROWS) {
		stop_recording(s);
		return;
	}
	if (s->n_kept == s->cap_kept) {
		size_t c = s->cap_kept ? 2 * s->cap_kept : 1024;
		struct kept_req *k = realloc(s->kept, c * sizeof *k);
		if (!k) {
			stop_recording(s);
			return;
		}
		s->kept = k;
		s->cap_kept = c;
	}
	struct kept_req k = {.r = *r, .skipped = skipped};
	bool ok = true;
	k.hashes = NO_OFF;
	if (r->hashes && r->n_hashes > 0) {
		k.hashes = keep_bytes(s, r->hashes, (size_t)r->n_hashes * sizeof *r->hashes);
		ok &= k.hashes != NO_OFF;
	}
	k.class_label = keep_str(s, r->class_label, &s->last_str[0], &ok);
	k.model_label = keep_str(s, r->model_label, &s->last_str[1], &ok);
	k.tenant_label = keep_str(s, r->tenant_label, &s->last_str[2], &ok);
	k.lora_label = keep_str(s, r->lora_label, &s->last_str[5], &ok);
	k.src_path = keep_str(s, r->src_path, &s->last_str[3], &ok);
	k.src_key = keep_str(s, r->src_key, &s->last_str[4], &ok);
	if (!ok) {
		stop_recording(s);
		return;
	}
	k.r.hashes = NULL;
	k.r.class_label = k.r.model_label = k.r.tenant_label = k.r.lora_label = NULL;
	k.r.src_path = k.r.src_key = NULL;
	s->kept[s->n_kept++] = k;
}

static const char *kept_str(const struct shaper *s, size_t off)
{
	return off == NO_OFF ? NULL : s->arena + off;
}

/* The source's next request, read or replayed: as lsim_workload_next. */
static int source_next(struct shaper *s, struct lsim_req_spec *r, struct lsim_diag *d)
{
	if (s->replaying) {
		if (s->pos == s->n_kept) {
			s->replay_skipped = s->kept_skipped;
			return 0;
		}
		const struct kept_req *k = &s->kept[s->pos++];
		*r = k->r;
		if (k->hashes != NO_OFF)
			r->hashes = (const uint64_t *)(const void *)(s->arena + k->hashes);
		r->class_label = kept_str(s, k->class_label);
		r->model_label = kept_str(s, k->model_label);
		r->tenant_label = kept_str(s, k->tenant_label);
		r->lora_label = kept_str(s, k->lora_label);
		r->src_path = kept_str(s, k->src_path);
		r->src_key = kept_str(s, k->src_key);
		s->replay_skipped = k->skipped;
		return 1;
	}
	int rc = lsim_workload_next(s->src, r, d);
	if (s->recording) {
		if (rc == 1)
			record(s, r, lsim_workload_skipped(s->src));
		else if (rc < 0)
			stop_recording(s);
	}
	return rc;
}

/* The wrapper reports the bad lines its sources skipped. */
static void sync_skips(struct shaper *s)
{
	if (s->replaying) {
		s->base.skipped = s->skipped_done + s->replay_skipped;
		return;
	}
	if (!s->src)
		return;
	s->base.skipped = s->skipped_done + lsim_workload_skipped(s->src);
	if (s->base.skipped > 0 && !s->base.first_skip.msg[0])
		s->base.first_skip = *lsim_workload_first_skip(s->src);
}

static int shaper_next(struct lsim_workload *w, struct lsim_req_spec *out,
		       struct lsim_diag *d)
{
	struct shaper *s = (struct shaper *)w;
	for (;;) {
		struct lsim_req_spec r;
		int rc = source_next(s, &r, d);
		sync_skips(s);
		if (rc < 0)
			return rc;
		if (rc == 0 || (s->p.window_end > 0 && r.arrival >= s->p.window_end)) {
			/* end of this repetition */
			if (++s->round >= s->p.repeat || s->n_round == 0)
				return 0;
			if (s->period == 0) {
				/* one mean gap after the last arrival */
				lsim_time span = s->last - s->first;
				lsim_time gap = s->n_round > 1 ? span / (lsim_time)(s->n_round - 1)
							       : LSIM_S;
				s->period = span + (gap > 0 ? gap : 1);
			}
			/* the clock ends at LSIM_TIME_MAX (292 years): a
			 * repetition that would start past it is refused, not
			 * wrapped to a negative time */
			if (s->period > LSIM_TIME_MAX - s->p.offset - s->offset)
				return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.repeat",
						     "repetition %llu of the trace (a period of %.6g s) "
						     "would start past the simulated clock's end "
						     "(292 years); write repeat: %llu at most",
						     (unsigned long long)s->round + 1,
						     lsim_time_to_s(s->period),
						     (unsigned long long)s->round);
			s->offset += s->period;
			s->n_round = 0;
			s->skipped_done = s->base.skipped;
			if (s->recording) { /* the first pass is kept: replay it */
				s->kept_skipped = lsim_workload_skipped(s->src);
				s->recording = false;
				s->replaying = true;
			}
			lsim_workload_destroy(s->src);
			s->src = NULL;
			if (s->replaying) {
				s->pos = 0;
				continue;
			}
			rc = s->open(s->ctx, &s->src, d);
			if (rc != 0)
				return rc;
			continue;
		}
		s->last_raw = r.arrival;
		if (r.arrival < s->p.window_start)
			continue;
		lsim_time t = r.arrival - s->p.window_start;
		if (s->p.time_scale != 1.0)
			t = (lsim_time)llround((double)t * s->p.time_scale);
		/* thinning draws one number per request in the window, kept
		 * or not, so the choice does not depend on what came before */
		if (s->p.keep < 1.0 && gsl_rng_uniform(s->rng) >= s->p.keep)
			continue;
		if (s->round == 0 && s->n_round == 0)
			s->first = t;
		s->last = t;
		s->n_round++;
		if (t > LSIM_TIME_MAX - s->p.offset - s->offset)
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.repeat",
					     "repetition %llu of the trace reaches past the "
					     "simulated clock's end (292 years); write a "
					     "smaller repeat", (unsigned long long)s->round + 1);
		*out = r;
		out->arrival = s->p.offset + s->offset + t;
		return 1;
	}
}

static void shaper_destroy(struct lsim_workload *w)
{
	struct shaper *s = (struct shaper *)w;
	lsim_workload_destroy(s->src);
	free(s->kept);
	free(s->arena);
	free(s);
}

/* Repetitions done plus the current one's share: the source's (bytes
 * read, or rows replayed), or with a window's end the source's time
 * through the window, whichever is further. */
static double shaper_fraction(struct lsim_workload *w)
{
	struct shaper *s = (struct shaper *)w;
	double in = s->replaying ? (s->n_kept ? (double)s->pos / (double)s->n_kept : 1)
		    : s->src	 ? lsim_workload_fraction(s->src)
				 : 1;
	if (s->p.window_end > s->p.window_start) {
		double t = (double)(s->last_raw - s->p.window_start) /
			   (double)(s->p.window_end - s->p.window_start);
		t = t < 0 ? 0 : t > 1 ? 1 : t;
		in = t > in ? t : in;
	}
	if (in < 0)
		return -1;
	double f = ((double)s->round + in) / (double)(s->p.repeat ? s->p.repeat : 1);
	return f > 1 ? 1 : f;
}

static const struct lsim_workload_ops shaper_ops = {
	.next = shaper_next,
	.destroy = shaper_destroy,
	.fraction = shaper_fraction,
};

int lsim_workload_shape_create(lsim_workload_open_fn open, void *ctx,
			       const struct lsim_shape_params *p, gsl_rng *rng,
			       struct lsim_workload **out, struct lsim_diag *d)
{
	*out = NULL;
	if (!(p->time_scale > 0) || !isfinite(p->time_scale))
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.time_scale",
				     "time_scale must be a positive number");
	if (!(p->keep > 0 && p->keep <= 1))
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.keep",
				     "keep must be in (0, 1]");
	if (p->repeat < 1)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.repeat",
				     "repeat must be at least 1");
	if (p->window_end > 0 && p->window_end <= p->window_start)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.window_end",
				     "the window ends before it starts");
	if (p->keep < 1 && !rng)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "workload.keep",
				     "thinning needs a random stream");
	struct shaper *s = calloc(1, sizeof *s);
	if (!s)
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "out of memory");
	lsim_workload_init_base(&s->base, &shaper_ops);
	s->open = open;
	s->ctx = ctx;
	s->p = *p;
	s->rng = rng;
	s->recording = p->repeat > 1;
	for (int i = 0; i < 6; i++)
		s->last_str[i] = NO_OFF;
	int rc = open(ctx, &s->src, d);
	if (rc != 0) {
		free(s);
		return rc;
	}
	*out = &s->base;
	return 0;
}
