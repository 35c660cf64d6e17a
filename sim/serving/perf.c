/*
 * perf.c - the backend-independent part of the performance model: the
 * destructor shared by every backend, and the holder count that lets
 * instances share a model. The backends themselves live in
 * perf_roofline.c (analytic) and perf_table.c (measured per-layer tables);
 * their formulas and sources are written up in docs/perf-model.md.
 */
#include <stddef.h>

#include "serving/perf.h"

void lsim_perf_destroy(struct lsim_perf *p)
{
	if (p == NULL)
		return;
	if (p->extra_holders > 0) {
		p->extra_holders--;
		return;
	}
	/* Each backend's destroy releases its state and the handle itself. */
	p->ops->destroy(p);
}

struct lsim_perf *lsim_perf_share(struct lsim_perf *p)
{
	if (p)
		p->extra_holders++;
	return p;
}
