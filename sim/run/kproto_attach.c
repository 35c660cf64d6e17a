/*
 * kproto_attach.c - the core side of the `kproto` profiler policy
 * (policies/profiler/kproto.c): reading the model file its `model`
 * parameter names, checking its feature names against the model, and
 * handing the parsed model to the policy's state (lsim_kproto_attach,
 * declared in sim/learn/kproto.h). It lives in the run room because it
 * needs the policy instance (run/policy_core.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/config.h"
#include "learn/kproto.h"
#include "run/policy_core.h"

/* "a, b, c" of n names into buf. */
static void list_names(char *const *names, size_t n, char *buf, size_t size)
{
	size_t len = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : "",
					names[i]);
	if (n == 0)
		snprintf(buf, size, "none");
}

#define CLASS_CODES_INDEXED 256

int lsim_kproto_attach(struct lsim_policy *p, const struct lsim_doc *doc,
		       const struct lsim_node *params, const char *key,
		       const char *base_dir, struct lsim_diag *d)
{
	if (!p || p->type != &lsim_prof_kproto)
		return 0;
	struct lsim_kproto_profiler *s = p->state;
	char k[192], list[512];
	const struct lsim_node *at = lsim_node_get(params, "model");
	snprintf(k, sizeof k, "%s.model", key);
	if (!s->model || !s->model[0])
		return lsim_cfg_error(d, doc, at ? at : params, k, LSIM_EINVAL,
				      "kproto needs a model file (llmsim profile train ... -o FILE)");
	size_t len = strlen(base_dir ? base_dir : "") + strlen(s->model) + 2;
	char *file = malloc(len);
	if (!file)
		return LSIM_ENOMEM;
	if (s->model[0] == '/' || !base_dir || !base_dir[0])
		snprintf(file, len, "%s", s->model);
	else
		snprintf(file, len, "%s/%s", base_dir, s->model);
	struct lsim_kproto_model *m = NULL;
	int rc = lsim_kproto_load(file, &m, d);
	free(file);
	if (rc == LSIM_ENOENT && d && d->line == 0)
		return lsim_cfg_error(d, doc, at, k, rc, "%s", d->msg);
	if (rc != 0)
		return rc;
	s->target_idx = 0;
	s->prompt_col = s->hour_col = s->class_col = -1;
	if (m->n_tgt == 0) {
		rc = lsim_cfg_error(d, doc, at, k, LSIM_EINVAL,
				    "the model has no targets to predict");
		goto fail;
	}
	if (s->target && s->target[0] &&
	    (s->target_idx = lsim_kproto_tgt_index(m, s->target)) < 0) {
		list_names(m->tgt_names, m->n_tgt, list, sizeof list);
		snprintf(k, sizeof k, "%s.target", key);
		rc = lsim_cfg_error(d, doc, lsim_node_get(params, "target"), k,
				    LSIM_EINVAL, "the model has no target '%s'; it has: %s",
				    s->target, list);
		goto fail;
	}
	if (s->prompt_feature && s->prompt_feature[0]) {
		if ((s->prompt_col = lsim_kproto_num_index(m, s->prompt_feature)) < 0) {
			list_names(m->num_names, m->n_num, list, sizeof list);
			snprintf(k, sizeof k, "%s.prompt_feature", key);
			rc = lsim_cfg_error(d, doc, lsim_node_get(params, "prompt_feature"),
					    k, LSIM_EINVAL,
					    "the model has no numeric attribute '%s'; it has: %s",
					    s->prompt_feature, list);
			goto fail;
		}
	} else if (m->n_num > 0) {
		s->prompt_col = 0;
	}
	if (s->hour_feature && s->hour_feature[0]) {
		s->hour_col = lsim_kproto_num_index(m, s->hour_feature);
		if (s->hour_col < 0 || s->hour_col == s->prompt_col) {
			list_names(m->num_names, m->n_num, list, sizeof list);
			snprintf(k, sizeof k, "%s.hour_feature", key);
			rc = lsim_cfg_error(d, doc, lsim_node_get(params, "hour_feature"),
					    k, LSIM_EINVAL,
					    s->hour_col < 0
						    ? "the model has no numeric attribute '%s'; it has: %s"
						    : "'%s' is already the prompt feature (numeric: %s)",
					    s->hour_feature, list);
			goto fail;
		}
	}
	const char *labels = s->class_labels ? s->class_labels : "";
	if (s->class_feature && s->class_feature[0]) {
		if ((s->class_col = lsim_kproto_cat_index(m, s->class_feature)) < 0) {
			list_names(m->cat_names, m->n_cat, list, sizeof list);
			snprintf(k, sizeof k, "%s.class_feature", key);
			rc = lsim_cfg_error(d, doc, lsim_node_get(params, "class_feature"),
					    k, LSIM_EINVAL,
					    "the model has no categorical attribute '%s'; it has: %s",
					    s->class_feature, list);
			goto fail;
		}
		size_t col = (size_t)s->class_col;
		size_t n = CLASS_CODES_INDEXED;
		if (labels[0]) {
			n = 1;
			for (const char *q = labels; *q; q++)
				n += *q == '|';
		}
		s->class_code = calloc(n, sizeof *s->class_code);
		if (!s->class_code) {
			rc = LSIM_ENOMEM;
			goto fail;
		}
		s->n_class_code = n;
		const char *q = labels;
		for (size_t i = 0; i < n; i++) {
			char lab[128];
			if (labels[0]) {
				size_t l = strcspn(q, "|");
				snprintf(lab, sizeof lab, "%.*s", (int)(l < 127 ? l : 127), q);
				q += l + (q[l] == '|');
			} else {
				snprintf(lab, sizeof lab, "%zu", i);
			}
			s->class_code[i] = lsim_kproto_level(m, col, lab);
			if (labels[0] && s->class_code[i] < 0) {
				list_names(m->levels[col], m->n_levels[col], list, sizeof list);
				snprintf(k, sizeof k, "%s.class_labels", key);
				rc = lsim_cfg_error(d, doc, lsim_node_get(params, "class_labels"),
						    k, LSIM_EINVAL,
						    "'%s' is not a label of %s; its labels: %s",
						    lab, s->class_feature, list);
				goto fail;
			}
		}
	} else if (labels[0]) {
		snprintf(k, sizeof k, "%s.class_labels", key);
		rc = lsim_cfg_error(d, doc, lsim_node_get(params, "class_labels"), k,
				    LSIM_EINVAL, "class_labels needs class_feature");
		goto fail;
	}
	s->num = calloc(m->n_num ? m->n_num : 1, sizeof *s->num);
	s->cat = calloc(m->n_cat ? m->n_cat : 1, sizeof *s->cat);
	s->out = calloc(m->n_tgt, sizeof *s->out);
	if (!s->num || !s->cat || !s->out) {
		rc = LSIM_ENOMEM;
		goto fail;
	}
	s->m = m;
	return 0;
fail:
	s->m = m;
	lsim_kproto_detach(s);
	return rc;
}
