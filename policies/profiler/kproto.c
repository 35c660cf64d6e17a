/*
 * kproto.c - the `kproto` profiler: predicts a request's output length at
 * arrival with a model trained by `llmsim profile train` (K-Prototypes
 * clusters, one regressor per cluster; sim/learn/kproto.h). The core reads the
 * model file named by the `model` parameter and attaches the parsed model
 * to this policy's state before init (lsim_kproto_attach); the policy
 * itself opens nothing. Features: the prompt tokens, optionally the QoS
 * class (as a categorical label) and the hour of day of the arrival;
 * attributes the request cannot give take the training mean (numeric) or
 * are unknown (categorical: they match no prototype, then take the chosen
 * cluster's mode).
 */
#include <math.h>
#include <stddef.h>

#include "learn/kproto.h"
#include "registry.h"

static int kp_init(void *state, const struct lsim_policy_ctx *ctx)
{
	const struct lsim_kproto_profiler *s = state;
	/* the core attaches the model before init; without it there is
	 * nothing to predict with */
	return s->m ? 0 : LSIM_ESTATE;
}

static void kp_fini(void *state)
{
	lsim_kproto_detach(state);
}

static int32_t kp_predict(void *state, const struct lsim_request_info *r)
{
	struct lsim_kproto_profiler *s = state;
	struct lsim_kproto_model *m = s->m;
	for (size_t i = 0; i < m->n_num; i++)
		s->num[i] = m->cl.center[i];
	for (size_t i = 0; i < m->n_cat; i++)
		s->cat[i] = -1;
	if (s->prompt_col >= 0)
		s->num[s->prompt_col] = r->prompt_tokens;
	if (s->hour_col >= 0) {
		double h = fmod(s->start_hour + lsim_time_to_s(r->arrival) / 3600.0, 24.0);
		s->num[s->hour_col] = floor(h);
	}
	if (s->class_col >= 0)
		s->cat[s->class_col] = r->qos_class >= 0 &&
					       (size_t)r->qos_class < s->n_class_code
					       ? s->class_code[r->qos_class]
					       : -1;
	lsim_kproto_predict(m, s->num, s->cat, s->out);
	double v = s->out[s->target_idx];
	if (!(v >= 1))
		return 1;
	if (v > 1e9)
		return 1000000000;
	return (int32_t)llround(v);
}

static const struct lsim_profiler_ops kp_ops = {.predict = kp_predict};

#define K(f) offsetof(struct lsim_kproto_profiler, f)
static const struct lsim_keydef kp_params[] = {
	{"model", LSIM_K_STRING, K(model), NULL, LSIM_NOBOUNDS, NULL,
	 "model file from `llmsim profile train`, relative to the scenario (read by the core)", ""},
	{"target", LSIM_K_STRING, K(target), "", LSIM_NOBOUNDS, NULL,
	 "the model's target that is the output length (empty: its first)", ""},
	{"prompt_feature", LSIM_K_STRING, K(prompt_feature), "", LSIM_NOBOUNDS, NULL,
	 "numeric attribute given the prompt tokens (empty: the first numeric)", ""},
	{"class_feature", LSIM_K_STRING, K(class_feature), "", LSIM_NOBOUNDS, NULL,
	 "categorical attribute given the request's QoS class (empty: none)", ""},
	{"class_labels", LSIM_K_STRING, K(class_labels), "", LSIM_NOBOUNDS, NULL,
	 "labels of QoS classes 0, 1, ... as a|b|c (empty: the class index)", ""},
	{"hour_feature", LSIM_K_STRING, K(hour_feature), "", LSIM_NOBOUNDS, NULL,
	 "numeric attribute given the arrival's hour of day (empty: none)", ""},
	{"start_hour", LSIM_K_DOUBLE, K(start_hour), "0", 0, 24, NULL,
	 "hour of day at simulated time 0", "h"},
};
#undef K

const struct lsim_policy_type lsim_prof_kproto = {
	.abi = LSIM_POLICY_ABI, .kind = LSIM_KIND_PROFILER,
	.name = "kproto",
	.summary = "K-Prototypes cluster + per-cluster regressor (llmsim profile train)",
	.state_size = sizeof(struct lsim_kproto_profiler), .params = kp_params,
	.n_params = sizeof kp_params / sizeof kp_params[0], .init = kp_init,
	.fini = kp_fini, .ops = &kp_ops,
};
