/*
 * lifecycle.c - how instances come and go over the cluster's links: the
 * network of a run, and the cold start of an instance (its weights move
 * from the storage service to each of its GPUs as flows that share the
 * links with all other traffic, then the engine starts up).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

int lsim_sim_set_network(struct lsim_sim *s, const struct lsim_topo_params *p,
			 struct lsim_diag *d)
{
	if (s->net)
		return lsim_diag_set(d, LSIM_ESTATE, "", 0, 0, "network",
				     "the network is already built");
	s->net = lsim_net_create(s->eng);
	if (!s->net)
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "", "out of memory");
	int rc = lsim_topo_build(&s->topo, s->net, p, d);
	if (rc != 0) {
		lsim_net_destroy(s->net);
		s->net = NULL;
	}
	return rc;
}

double lsim_instance_pcie_util(const struct lsim_instance *in)
{
	const struct lsim_sim *s = in->sim;
	double u = 0;
	if (!s->net || in->gpu0 < 0)
		return 0;
	for (int32_t k = 0; k < in->tp; k++) {
		int32_t links[2] = {s->topo.pcie_up[in->gpu0 + k],
				    s->topo.pcie_down[in->gpu0 + k]};
		for (int j = 0; j < 2; j++) {
			struct lsim_link_info li;
			if (links[j] >= 0 && lsim_link_get(s->net, links[j], &li) == 0 &&
			    li.util > u)
				u = li.util;
		}
	}
	return u;
}

static void engine_started(struct lsim_engine *eng, void *subject, uint64_t arg)
{
	(void)eng;
	(void)arg;
	struct lsim_instance *in = subject;
	lsim_sim_instance_ready(in->sim, in);
}

static void weights_loaded(void *ctx, lsim_flow_id flow, uint64_t arg)
{
	(void)flow;
	(void)arg;
	struct lsim_instance *in = ctx;
	struct lsim_sim *s = in->sim;
	if (--in->loads_left > 0)
		return;
	if (in->engine_init <= 0)
		lsim_sim_instance_ready(s, in);
	else if (!lsim_schedule_in(s->eng, in->engine_init, engine_started, in, 0) &&
		 !s->error) {
		s->error = LSIM_ENOMEM;
		lsim_stop(s->eng);
	}
}

int lsim_instance_cold_start(struct lsim_instance *in, lsim_time engine_init,
			     struct lsim_diag *d)
{
	struct lsim_sim *s = in->sim;
	if (!s->net || in->gpu0 < 0 || !in->model)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "cold_start",
				     "instance %d: a cold start needs the cluster's links, "
				     "a placement and a model", (int)in->id);
	double bytes = lsim_model_weight_bytes(in->model) / (double)in->tp;
	in->state = LSIM_INST_LOADING;
	in->start = lsim_now(s->eng);
	in->ready = -1;
	in->engine_init = engine_init;
	in->loads_left = in->tp;
	for (int32_t k = 0; k < in->tp; k++) {
		int32_t path[LSIM_PATH_MAX];
		int n = lsim_topo_path_storage_to_gpu(&s->topo, in->gpu0 + k, path);
		if (n < 0)
			return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "cold_start",
					     "instance %d: GPU %d is not in the cluster",
					     (int)in->id, (int)(in->gpu0 + k));
		struct lsim_flow_req fr = {
			.path = path, .n_hops = n, .bytes = bytes,
			.done = weights_loaded, .ctx = in,
		};
		lsim_flow_id id;
		int rc = lsim_flow_start(s->net, &fr, &id, d);
		if (rc != 0)
			return rc;
	}
	return 0;
}
