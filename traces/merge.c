/*
 * merge.c - several sources merged into one stream in arrival order, each
 * request tagged with the index of its source as its tenant. Streaming:
 * one pending request per source.
 */
#include <stdlib.h>
#include <string.h>

#include "workload_internal.h"

struct merger {
	struct lsim_workload base;
	size_t n;
	struct lsim_workload **src;
	struct lsim_req_spec *pending;
	bool *has, *ended;
	bool tag;
};

static int merger_next(struct lsim_workload *w, struct lsim_req_spec *out,
		       struct lsim_diag *d)
{
	struct merger *m = (struct merger *)w;
	size_t best = m->n;
	for (size_t i = 0; i < m->n; i++) {
		if (!m->has[i] && !m->ended[i]) {
			/* the pending request's hashes stay valid: this source is
			 * not read again until that request has been handed on */
			int rc = lsim_workload_next(m->src[i], &m->pending[i], d);
			if (rc < 0)
				return rc;
			m->has[i] = rc == 1;
			m->ended[i] = rc == 0;
		}
		if (m->has[i] && (best == m->n ||
				  m->pending[i].arrival < m->pending[best].arrival))
			best = i;
	}
	uint64_t skipped = 0;
	for (size_t i = 0; i < m->n; i++)
		skipped += lsim_workload_skipped(m->src[i]);
	if (skipped > 0 && !m->base.first_skip.msg[0])
		for (size_t i = 0; i < m->n && !m->base.first_skip.msg[0]; i++)
			if (lsim_workload_skipped(m->src[i]) > 0)
				m->base.first_skip = *lsim_workload_first_skip(m->src[i]);
	m->base.skipped = skipped;
	if (best == m->n)
		return 0;
	*out = m->pending[best];
	if (m->tag)
		out->tenant = (int32_t)best;
	m->has[best] = false;
	return 1;
}

static void merger_destroy(struct lsim_workload *w)
{
	struct merger *m = (struct merger *)w;
	for (size_t i = 0; i < m->n; i++)
		lsim_workload_destroy(m->src[i]);
	free(m->src);
	free(m->pending);
	free(m->has);
	free(m->ended);
	free(m);
}

/* The source furthest behind: the merged stream ends with the last. */
static double merger_fraction(struct lsim_workload *w)
{
	const struct merger *m = (const struct merger *)w;
	double f = 1;
	for (size_t i = 0; i < m->n; i++) {
		double x = m->ended[i] ? 1 : lsim_workload_fraction(m->src[i]);
		if (x < 0)
			return -1;
		f = x < f ? x : f;
	}
	return f;
}

static const struct lsim_workload_ops merger_ops = {
	.next = merger_next,
	.destroy = merger_destroy,
	.fraction = merger_fraction,
};

int lsim_workload_merge_create(struct lsim_workload **srcs, size_t n,
			       bool tag_tenants, struct lsim_workload **out,
			       struct lsim_diag *d)
{
	*out = NULL;
	struct merger *m = calloc(1, sizeof *m);
	if (m) {
		m->src = calloc(n ? n : 1, sizeof *m->src);
		m->pending = calloc(n ? n : 1, sizeof *m->pending);
		m->has = calloc(n ? n : 1, sizeof *m->has);
		m->ended = calloc(n ? n : 1, sizeof *m->ended);
	}
	if (!m || !m->src || !m->pending || !m->has || !m->ended) {
		for (size_t i = 0; i < n; i++)
			lsim_workload_destroy(srcs[i]);
		if (m)
			merger_destroy(&m->base);
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "out of memory");
	}
	lsim_workload_init_base(&m->base, &merger_ops);
	memcpy(m->src, srcs, n * sizeof *srcs);
	m->n = n;
	m->tag = tag_tenants;
	*out = &m->base;
	return 0;
}
