/*
 * import_vidur.c - `llmsim profile import --from vidur`: Vidur's
 * per-operator CSVs (mlp.csv, attention.csv) summed into per-layer rows, and
 * its NCCL all_reduce.csv / send_recv.csv into bytes -> time tables. Mapping
 * rules: docs/profiles.md.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "kernel/csv.h"
#include "import/import_internal.h"

/* An optional time field: empty -> 0 (Vidur leaves a kernel it did not run empty). */
static int opt_num_field(const struct lsim_csv *c, int col, double *out, struct lsim_diag *d)
{
	*out = 0.0;
	if (col < 0)
		return 0;
	const char *s = lsim_csv_field(c, col);
	if (!s || !s[0])
		return 0;
	return lsim_imp_num_field(c, col, 0.0, false, out, d);
}

static int bool_field(const struct lsim_csv *c, int col, bool *out, struct lsim_diag *d)
{
	const char *s = lsim_csv_field(c, col);
	if (s && (!strcasecmp(s, "true") || !strcmp(s, "1"))) {
		*out = true;
		return 0;
	}
	if (s && (!strcasecmp(s, "false") || !strcmp(s, "0"))) {
		*out = false;
		return 0;
	}
	return lsim_diag_set(d, LSIM_EFORMAT, lsim_csv_path(c), lsim_csv_line(c),
			     lsim_csv_field_col(c, col), lsim_csv_name(c, col),
			     "'%s' is not True or False", s ? s : "");
}

/* mlp.csv operators -> table rows (docs/profiles.md). */
static const struct {
	const char *op, *name;
} vidur_ops[] = {
	{"emb", "embedding"},
	{"input_layernorm", "input_layernorm"},
	{"attn_pre_proj", "qkv_proj"},
	{"attn_rope", "rotary_emb"},
	{"attn_post_proj", "o_proj"},
	{"post_attention_layernorm", "post_attention_layernorm"},
	{"mlp_up_proj", "gate_up_proj"}, /* "up_proj" for a plain MLP */
	{"mlp_act", "act_fn"},
	{"mlp_down_proj", "down_proj"},
	{"add", "add"},
};
#define N_VIDUR_OPS (sizeof vidur_ops / sizeof vidur_ops[0])

/* Model shape seen in a file: n_embd, query heads, KV heads. */
struct vshape {
	bool set;
	double v[3];
	char file[PATH_LEN];
	int line;
};

static int shape_check(struct vshape *s, const struct lsim_csv *c, const int col[3],
		       struct lsim_diag *d)
{
	double v[3];
	for (int i = 0; i < 3; i++) {
		int rc = lsim_imp_num_field(c, col[i], 1.0, true, &v[i], d);
		if (rc)
			return rc;
	}
	if (!s->set) {
		memcpy(s->v, v, sizeof v);
		snprintf(s->file, sizeof s->file, "%s", lsim_csv_path(c));
		s->line = lsim_csv_line(c);
		s->set = true;
		return 0;
	}
	for (int i = 0; i < 3; i++)
		if (v[i] != s->v[i])
			return lsim_diag_set(d, LSIM_EFORMAT, lsim_csv_path(c), lsim_csv_line(c),
					     lsim_csv_field_col(c, col[i]), lsim_csv_name(c, col[i]),
					     "%g here but %g in %s line %d: one model shape per import",
					     v[i], s->v[i], lsim_imp_base_name(s->file), s->line);
	return 0;
}

static int vidur_mlp(struct lsim_csv *c, struct recs *rs, struct vshape *shape, size_t *rows,
		     struct lsim_diag *d)
{
	const char *names[N_VIDUR_OPS + 5];
	char cols[N_VIDUR_OPS][64];
	int idx[N_VIDUR_OPS + 5];
	for (size_t i = 0; i < N_VIDUR_OPS; i++) {
		snprintf(cols[i], sizeof cols[i], "time_stats.%s.median", vidur_ops[i].op);
		names[i] = cols[i];
	}
	names[N_VIDUR_OPS + 0] = "n_embd";
	names[N_VIDUR_OPS + 1] = "n_head";
	names[N_VIDUR_OPS + 2] = "n_kv_head";
	names[N_VIDUR_OPS + 3] = "num_tokens";
	names[N_VIDUR_OPS + 4] = "num_tensor_parallel_workers";
	int rc = lsim_csv_require(c, names, (int)N_VIDUR_OPS + 5, idx, d);
	int gated_col = lsim_csv_column(c, "use_gated_mlp");
	size_t n = 0;
	while (lsim_imp_more_rows(c, &rc, d)) {
		if ((rc = shape_check(shape, c, idx + N_VIDUR_OPS, d)) != 0)
			break;
		bool gated = true;
		double tokens, tp;
		if ((gated_col >= 0 && (rc = bool_field(c, gated_col, &gated, d)) != 0) ||
		    (rc = lsim_imp_num_field(c, idx[N_VIDUR_OPS + 3], 1.0, true, &tokens, d)) != 0 ||
		    (rc = lsim_imp_num_field(c, idx[N_VIDUR_OPS + 4], 1.0, true, &tp, d)) != 0)
			break;
		for (size_t i = 0; i < N_VIDUR_OPS && rc == 0; i++) {
			double ms;
			if ((rc = lsim_imp_num_field(c, idx[i], 0.0, false, &ms, d)) != 0)
				break;
			const char *name = vidur_ops[i].name;
			if (!gated && !strcmp(name, "gate_up_proj"))
				name = "up_proj";
			struct rec *r = lsim_imp_rec_push(rs, REC_DENSE, (int)tp, name, d);
			if (!r) {
				rc = LSIM_ENOMEM;
				break;
			}
			r->k[0] = tokens;
			r->v[0] = ms * 1000.0;
		}
		n++;
	}
	return lsim_imp_rows_end(c, rc, n, rows, d);
}

static int vidur_attention(struct lsim_csv *c, struct recs *rs, struct vshape *shape,
			   size_t *rows, struct lsim_diag *d)
{
	static const char *const names[] = {"n_embd", "n_q_head", "n_kv_head",
					    "num_tensor_parallel_workers", "batch_size",
					    "prefill_chunk_size", "kv_cache_size", "is_prefill"};
	int idx[8];
	int rc = lsim_csv_require(c, names, 8, idx, d);
	int t_pre = lsim_csv_column(c, "time_stats.attn_prefill.median");
	int t_dec = lsim_csv_column(c, "time_stats.attn_decode.median");
	int t_in = lsim_csv_column(c, "time_stats.attn_input_reshape.median");
	int t_out = lsim_csv_column(c, "time_stats.attn_output_reshape.median");
	int t_save = lsim_csv_column(c, "time_stats.attn_kv_cache_save.median");
	size_t n = 0;
	while (lsim_imp_more_rows(c, &rc, d)) {
		if ((rc = shape_check(shape, c, idx, d)) != 0)
			break;
		bool prefill;
		double tp, bs, chunk, kv, t_main, t_a, t_b, t_c;
		if ((rc = lsim_imp_num_field(c, idx[3], 1.0, true, &tp, d)) != 0 ||
		    (rc = lsim_imp_num_field(c, idx[4], 1.0, true, &bs, d)) != 0 ||
		    (rc = lsim_imp_num_field(c, idx[5], 0.0, true, &chunk, d)) != 0 ||
		    (rc = lsim_imp_num_field(c, idx[6], 0.0, true, &kv, d)) != 0 ||
		    (rc = bool_field(c, idx[7], &prefill, d)) != 0)
			break;
		int tcol = prefill ? t_pre : t_dec;
		if (tcol < 0) {
			rc = lsim_diag_set(d, LSIM_EFORMAT, lsim_csv_path(c), 1, 0,
					   prefill ? "time_stats.attn_prefill.median"
						   : "time_stats.attn_decode.median",
					   "missing column, needed by the %s row on line %d",
					   prefill ? "prefill" : "decode", lsim_csv_line(c));
			break;
		}
		if ((rc = lsim_imp_num_field(c, tcol, 0.0, false, &t_main, d)) != 0 ||
		    (rc = opt_num_field(c, t_in, &t_a, d)) != 0 ||
		    (rc = opt_num_field(c, t_out, &t_b, d)) != 0 ||
		    (rc = opt_num_field(c, t_save, &t_c, d)) != 0)
			break;
		if (prefill && bs != 1.0) {
			rc = lsim_diag_set(d, LSIM_EFORMAT, lsim_csv_path(c), lsim_csv_line(c),
					   lsim_csv_field_col(c, idx[4]), "batch_size",
					   "a prefill row must have batch_size 1, not %g", bs);
			break;
		}
		struct rec *r = lsim_imp_rec_push(rs, REC_ATTN, (int)tp, "", d);
		if (!r) {
			rc = LSIM_ENOMEM;
			break;
		}
		if (prefill) {
			r->k[0] = chunk; /* prefill_chunk */
			r->k[1] = kv;	 /* kv_prefill */
		} else {
			r->k[2] = bs; /* n_decode */
			r->k[3] = kv; /* kv_decode: the context of each decode */
		}
		r->v[0] = (t_main + t_a + t_b + t_c) * 1000.0;
		n++;
	}
	return lsim_imp_rows_end(c, rc, n, rows, d);
}

/* NCCL collectives: all_reduce.csv or send_recv.csv (which = the name). */
static int vidur_network(struct lsim_csv *c, const char *which, int tp_only, struct recs *rs,
			 size_t *rows, struct lsim_diag *d)
{
	char tcol[64];
	snprintf(tcol, sizeof tcol, "time_stats.%s.median", which);
	const char *names[4] = {tcol, "num_workers", "devices_per_node", "size"};
	int idx[4];
	int rc = lsim_csv_require(c, names, 4, idx, d);
	bool ar = !strcmp(which, "all_reduce");
	size_t n = 0;
	while (lsim_imp_more_rows(c, &rc, d)) {
		double ms, workers, dpn, size;
		if ((rc = lsim_imp_num_field(c, idx[0], 0.0, false, &ms, d)) != 0 ||
		    (rc = lsim_imp_num_field(c, idx[1], 1.0, true, &workers, d)) != 0 ||
		    (rc = lsim_imp_num_field(c, idx[2], 1.0, true, &dpn, d)) != 0 ||
		    (rc = lsim_imp_num_field(c, idx[3], 0.0, true, &size, d)) != 0)
			break;
		struct rec *r = lsim_imp_rec_push(rs, ar ? REC_NET_AR : REC_NET_SR, 0, "", d);
		if (!r) {
			rc = LSIM_ENOMEM;
			break;
		}
		r->k[0] = workers;
		r->k[1] = dpn;
		r->k[2] = size;
		r->v[0] = ms * 1000.0;
		/* a TP group lives in one node: all its workers on the same node */
		if (ar && dpn == workers && workers <= 4096 && (tp_only == 0 || workers == tp_only)) {
			r = lsim_imp_rec_push(rs, REC_AR_TP, (int)workers, "", d);
			if (!r) {
				rc = LSIM_ENOMEM;
				break;
			}
			r->k[0] = size;
			r->v[0] = ms * 1000.0;
		}
		n++;
	}
	return lsim_imp_rows_end(c, rc, n, rows, d);
}

enum vkind { V_MLP, V_ATTN, V_AR, V_SR, V_UNKNOWN };

static enum vkind vidur_kind(const struct lsim_csv *c)
{
	if (lsim_csv_column(c, "time_stats.mlp_up_proj.median") >= 0)
		return V_MLP;
	if (lsim_csv_column(c, "time_stats.attn_decode.median") >= 0 ||
	    lsim_csv_column(c, "time_stats.attn_prefill.median") >= 0)
		return V_ATTN;
	if (lsim_csv_column(c, "time_stats.all_reduce.median") >= 0)
		return V_AR;
	if (lsim_csv_column(c, "time_stats.send_recv.median") >= 0)
		return V_SR;
	return V_UNKNOWN;
}

struct vidur_seen {
	struct vshape mlp, attn;
	bool kinds[4];
};

static int vidur_file(const char *path, const struct lsim_import_opts *o, struct recs *rs,
		      struct vidur_seen *seen, size_t *rows, struct lsim_diag *d)
{
	struct lsim_csv *c = NULL;
	int rc = lsim_csv_open(path, &c, d);
	if (rc)
		return rc;
	enum vkind k = vidur_kind(c);
	switch (k) {
	case V_MLP:
		rc = vidur_mlp(c, rs, &seen->mlp, rows, d);
		break;
	case V_ATTN:
		rc = vidur_attention(c, rs, &seen->attn, rows, d);
		break;
	case V_AR:
		rc = vidur_network(c, "all_reduce", o->tp, rs, rows, d);
		break;
	case V_SR:
		rc = vidur_network(c, "send_recv", o->tp, rs, rows, d);
		break;
	default:
		rc = lsim_diag_set(d, LSIM_EFORMAT, path, 1, 0, "time_stats.mlp_up_proj.median",
				   "not a Vidur profile: no column time_stats.mlp_up_proj.median "
				   "(mlp.csv), time_stats.attn_decode.median or "
				   "time_stats.attn_prefill.median (attention.csv), "
				   "time_stats.all_reduce.median or time_stats.send_recv.median");
		break;
	}
	if (k != V_UNKNOWN)
		seen->kinds[k] = true;
	lsim_csv_close(c);
	return rc;
}

int lsim_imp_vidur(const struct lsim_import_opts *o, struct recs *rs,
		   struct lsim_import_result *r, struct lsim_diag *d)
{
	static const char *const known[] = {"mlp.csv", "attention.csv", "all_reduce.csv",
					    "send_recv.csv"};
	struct vidur_seen seen;
	memset(&seen, 0, sizeof seen);
	int rc = 0;
	for (size_t i = 0; i < o->n_src && rc == 0; i++) {
		const char *src = o->src[i];
		if (lsim_imp_is_file(src)) {
			rc = vidur_file(src, o, rs, &seen, &r->rows_read, d);
			continue;
		}
		if (!lsim_imp_is_dir(src))
			return lsim_diag_set(d, LSIM_ENOENT, src, 0, 0, "SRC", "no such file or folder");
		int found = 0;
		for (size_t k = 0; k < sizeof known / sizeof known[0] && rc == 0; k++) {
			char p[PATH_LEN];
			if (snprintf(p, sizeof p, "%s/%s", src, known[k]) >= (int)sizeof p || !lsim_imp_is_file(p))
				continue;
			found++;
			rc = vidur_file(p, o, rs, &seen, &r->rows_read, d);
		}
		if (rc == 0 && found == 0)
			return lsim_diag_set(d, LSIM_ENOENT, src, 0, 0, "SRC",
					     "no Vidur profile here (looked for mlp.csv, "
					     "attention.csv, all_reduce.csv, send_recv.csv)");
	}
	if (rc)
		return rc;
	if (seen.mlp.set && seen.attn.set) {
		for (int i = 0; i < 3; i++)
			if (seen.mlp.v[i] != seen.attn.v[i]) {
				static const char *const what[] = {"n_embd", "n_q_head", "n_kv_head"};
				return lsim_diag_set(d, LSIM_EINVAL, seen.attn.file, seen.attn.line, 0,
						     what[i],
						     "attention profile of another model: %s %g, "
						     "but %g in %s",
						     what[i], seen.attn.v[i], seen.mlp.v[i],
						     lsim_imp_base_name(seen.mlp.file));
			}
	}
	if (seen.kinds[V_MLP]) {
		/*
		 * Vidur does not profile the LM head or the sampler; the table
		 * backend needs a per_sequence.csv, so each tp folder gets one
		 * zero row (charged as 1 ns per iteration).
		 */
		int tps[LSIM_IMPORT_MAX_TP], n = 0;
		for (size_t i = 0; i < rs->n; i++) {
			if (rs->a[i].kind != REC_DENSE)
				continue;
			bool dup = false;
			for (int k = 0; k < n; k++)
				dup = dup || tps[k] == rs->a[i].tp;
			if (!dup && n < LSIM_IMPORT_MAX_TP)
				tps[n++] = rs->a[i].tp;
		}
		for (int k = 0; k < n; k++) {
			struct rec *x = lsim_imp_rec_push(rs, REC_SEQ, tps[k], "not_profiled", d);
			if (!x)
				return LSIM_ENOMEM;
			x->k[0] = 1;
		}
		lsim_imp_note_add(r, "Vidur profiles no LM head or sampler: per_sequence.csv holds one "
				     "zero row 'not_profiled'");
		if (!seen.kinds[V_ATTN])
			lsim_imp_note_add(r, "no attention.csv given: the tp folders lack attention.csv and "
					     "do not load in the table backend");
	}
	return 0;
}
