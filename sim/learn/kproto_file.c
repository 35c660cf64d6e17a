/*
 * kproto_file.c - the kproto task profiler's versioned model file: text,
 * one keyword per line, the XGBoost boosters embedded as base64 of their
 * UBJSON buffer (docs/profiler.md); saving through a temporary file, and
 * loading that checks everything and names the line and keyword at fault.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef LSIM_HAVE_XGBOOST
#include <xgboost/c_api.h>
#endif

#include "learn/kproto.h"
#include "learn/kproto_internal.h"

#define MAGIC "llmsim-kproto-model"
#define FORMAT_VERSION 1
#define B64_LINE 76

/* ---- base64 (RFC 4648, with padding) ---- */

static const char b64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void b64_write(FILE *f, const unsigned char *p, size_t n)
{
	size_t col = 0;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)p[i] << 16;
		if (i + 1 < n)
			v |= (unsigned)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		char q[4] = {b64[(v >> 18) & 63], b64[(v >> 12) & 63],
			     i + 1 < n ? b64[(v >> 6) & 63] : '=',
			     i + 2 < n ? b64[v & 63] : '='};
		fwrite(q, 1, 4, f);
		col += 4;
		if (col == B64_LINE) {
			fputc('\n', f);
			col = 0;
		}
	}
	if (col)
		fputc('\n', f);
}

static int b64_value(char ch)
{
	const char *p = ch ? strchr(b64, ch) : NULL;
	return p ? (int)(p - b64) : -1;
}

/* ---- saving ---- */

static int has_newline(const char *s)
{
	return strchr(s, '\n') || strchr(s, '\r');
}

/* A length-prefixed string: "len:bytes". */
static void put_str(FILE *f, const char *s)
{
	fprintf(f, " %zu:%s", strlen(s), s);
}

int lsim_kproto_save(const struct lsim_kproto_model *m, const char *path,
		     struct lsim_diag *d)
{
	for (size_t i = 0; i < m->n_num; i++)
		if (has_newline(m->num_names[i]))
			return lsim_diag_set(d, LSIM_EINVAL, path, 0, 0, "numeric",
					     "a column name holds a line break");
	for (size_t i = 0; i < m->n_cat; i++) {
		if (has_newline(m->cat_names[i]))
			return lsim_diag_set(d, LSIM_EINVAL, path, 0, 0, "categorical",
					     "a column name holds a line break");
		for (size_t l = 0; l < m->n_levels[i]; l++)
			if (has_newline(m->levels[i][l]))
				return lsim_diag_set(d, LSIM_EINVAL, path, 0, 0,
						     m->cat_names[i],
						     "a label holds a line break");
	}
	for (size_t i = 0; i < m->n_tgt; i++)
		if (has_newline(m->tgt_names[i]))
			return lsim_diag_set(d, LSIM_EINVAL, path, 0, 0, "target",
					     "a column name holds a line break");
	size_t len = strlen(path) + 5;
	char *tmp = malloc(len);
	if (!tmp)
		return LSIM_ENOMEM;
	snprintf(tmp, len, "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f) {
		int rc = lsim_diag_set(d, LSIM_EIO, path, 0, 0, "", "cannot write %s: %s",
				       tmp, strerror(errno));
		free(tmp);
		return rc;
	}
	int rc = 0;
	const struct lsim_kp_clusters *c = &m->cl;
	fprintf(f, "%s\nversion %d\n", MAGIC, FORMAT_VERSION);
	fprintf(f, "kind %s\nseed %llu\nrows %zu\n", lsim_kp_kind_name(m->kind),
		(unsigned long long)m->seed, m->n_train);
	fprintf(f, "clusters %zu mu %.17g cost %.17g restart %d iterations %d\n",
		c->k, c->mu, c->cost, c->best_restart, c->iterations);
	fprintf(f, "numeric %zu\n", m->n_num);
	for (size_t i = 0; i < m->n_num; i++) {
		fputs("num", f);
		put_str(f, m->num_names[i]);
		fprintf(f, " %.17g %.17g\n", c->center[i], c->scale[i]);
	}
	fprintf(f, "categorical %zu\n", m->n_cat);
	for (size_t i = 0; i < m->n_cat; i++) {
		fputs("cat", f);
		put_str(f, m->cat_names[i]);
		fprintf(f, " %zu", m->n_levels[i]);
		for (size_t l = 0; l < m->n_levels[i]; l++)
			put_str(f, m->levels[i][l]);
		fputc('\n', f);
	}
	fprintf(f, "targets %zu\n", m->n_tgt);
	for (size_t i = 0; i < m->n_tgt; i++) {
		fputs("tgt", f);
		put_str(f, m->tgt_names[i]);
		fputc('\n', f);
	}
	for (size_t j = 0; j < c->k; j++) {
		fprintf(f, "proto %zu %zu", j, m->sizes[j]);
		for (size_t i = 0; i < m->n_num; i++)
			fprintf(f, " %.17g", c->proto_num[j * m->n_num + i]);
		for (size_t i = 0; i < m->n_cat; i++)
			fprintf(f, " %d", (int)c->proto_cat[j * m->n_cat + i]);
		fputc('\n', f);
	}
	for (size_t t = 0; t < m->n_tgt && rc == 0; t++) {
		for (size_t j = 0; j < c->k && rc == 0; j++) {
			const struct lsim_kp_reg *r = &m->reg[t * c->k + j];
			fprintf(f, "reg %zu %zu %s %.17g", t, j,
				lsim_kp_kind_name(r->kind), r->value);
			if (r->kind == LSIM_KP_LINEAR) {
				fprintf(f, " %zu", m->n_feat + 1);
				for (size_t i = 0; i <= m->n_feat; i++)
					fprintf(f, " %.17g", r->coef[i]);
				fputc('\n', f);
			} else if (r->kind == LSIM_KP_GB || r->kind == LSIM_KP_RF) {
#ifdef LSIM_HAVE_XGBOOST
				bst_ulong n = 0;
				const char *buf = NULL;
				if (XGBoosterSaveModelToBuffer(r->booster,
							       "{\"format\": \"ubj\"}",
							       &n, &buf) != 0) {
					rc = lsim_diag_set(d, LSIM_EIO, path, 0, 0, "reg",
							   "XGBoost cannot save a booster: %s",
							   XGBGetLastError());
					break;
				}
				fprintf(f, " %llu\n", (unsigned long long)n);
				b64_write(f, (const unsigned char *)buf, (size_t)n);
#else
				(void)b64_write;
				rc = lsim_kp_no_xgboost(d, path, 0, r->kind);
#endif
			} else {
				fputc('\n', f);
			}
		}
	}
	fputs("end\n", f);
	if (ferror(f) && rc == 0)
		rc = lsim_diag_set(d, LSIM_EIO, path, 0, 0, "", "write error on %s", tmp);
	if (fclose(f) != 0 && rc == 0)
		rc = lsim_diag_set(d, LSIM_EIO, path, 0, 0, "", "cannot close %s: %s",
				   tmp, strerror(errno));
	if (rc == 0 && rename(tmp, path) != 0)
		rc = lsim_diag_set(d, LSIM_EIO, path, 0, 0, "", "cannot rename %s: %s",
				   tmp, strerror(errno));
	if (rc != 0)
		remove(tmp);
	free(tmp);
	return rc;
}

/* ---- loading ---- */

/* The reader: the file in memory, split into lines in place. */
struct mreader {
	const char *path;
	char *buf;
	size_t len, pos;
	int line;	 /* of cur */
	char *cur;	 /* the current line, NUL-terminated */
	char *p;	 /* position in cur */
	const char *kw;	 /* its keyword, for messages */
	struct lsim_diag *d;
};

__attribute__((format(printf, 3, 4)))
static int mr_err(struct mreader *mr, int col, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return lsim_diag_set(mr->d, LSIM_EFORMAT, mr->path, mr->line, col,
			     mr->kw ? mr->kw : "", "%s", msg);
}

static int mr_col(const struct mreader *mr)
{
	return mr->cur ? (int)(mr->p - mr->cur) + 1 : 0;
}

/* Advances to the next line; 0, or 1 at the end of the file. */
static int mr_next_raw(struct mreader *mr)
{
	if (mr->pos >= mr->len)
		return 1;
	char *s = mr->buf + mr->pos;
	char *e = memchr(s, '\n', mr->len - mr->pos);
	size_t n = e ? (size_t)(e - s) : mr->len - mr->pos;
	mr->pos += n + (e ? 1 : 0);
	s[n] = '\0';
	if (n > 0 && s[n - 1] == '\r')
		s[n - 1] = '\0';
	mr->line++;
	mr->cur = mr->p = s;
	return 0;
}

/* The next line must start with keyword kw (followed by a space or its end). */
static int mr_expect(struct mreader *mr, const char *kw)
{
	mr->kw = kw;
	if (mr_next_raw(mr) != 0) {
		mr->line++;
		mr->cur = NULL;
		return mr_err(mr, 0, "the file ends here; expected '%s' (truncated?)", kw);
	}
	size_t n = strlen(kw);
	if (strncmp(mr->cur, kw, n) != 0 || (mr->cur[n] != ' ' && mr->cur[n] != '\0'))
		return mr_err(mr, 1, "expected '%s', found '%.40s'", kw, mr->cur);
	mr->p = mr->cur + n;
	return 0;
}

/* Skips the one space before a token. */
static int mr_space(struct mreader *mr, const char *what)
{
	if (*mr->p != ' ')
		return mr_err(mr, mr_col(mr), "missing %s", what);
	mr->p++;
	if (*mr->p == ' ' || *mr->p == '\0')
		return mr_err(mr, mr_col(mr), "missing %s", what);
	return 0;
}

static int mr_word(struct mreader *mr, const char *what, char *out, size_t size)
{
	int rc = mr_space(mr, what);
	if (rc != 0)
		return rc;
	size_t n = strcspn(mr->p, " ");
	if (n >= size)
		return mr_err(mr, mr_col(mr), "%s too long", what);
	memcpy(out, mr->p, n);
	out[n] = '\0';
	mr->p += n;
	return 0;
}

static int mr_size(struct mreader *mr, const char *what, size_t max, size_t *out)
{
	int col = mr_col(mr) + 1;
	char w[32];
	int rc = mr_word(mr, what, w, sizeof w);
	if (rc != 0)
		return rc;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(w, &end, 10);
	if (*end || w[0] == '-' || w[0] == '+' || errno == ERANGE || v > max)
		return mr_err(mr, col, "%s must be an integer in [0, %zu], not '%s'",
			      what, max, w);
	*out = (size_t)v;
	return 0;
}

static int mr_double(struct mreader *mr, const char *what, double *out)
{
	int col = mr_col(mr) + 1;
	char w[64];
	int rc = mr_word(mr, what, w, sizeof w);
	if (rc != 0)
		return rc;
	if (strcmp(w, "inf") == 0) { /* the cost of an empty fit */
		*out = INFINITY;
		return 0;
	}
	if (lsim_kp_parse_number(w, out) != 0)
		return mr_err(mr, col, "%s must be a finite number, not '%s'", what, w);
	return 0;
}

/* "key value": a literal word then a value. */
static int mr_lit(struct mreader *mr, const char *lit)
{
	int col = mr_col(mr) + 1;
	char w[32];
	int rc = mr_word(mr, lit, w, sizeof w);
	if (rc != 0)
		return rc;
	if (strcmp(w, lit) != 0)
		return mr_err(mr, col, "expected '%s', found '%s'", lit, w);
	return 0;
}

static int mr_str(struct mreader *mr, const char *what, char **out)
{
	int rc = mr_space(mr, what);
	if (rc != 0)
		return rc;
	int col = mr_col(mr);
	char *end;
	errno = 0;
	unsigned long long n = strtoull(mr->p, &end, 10);
	if (end == mr->p || *end != ':' || errno == ERANGE || *mr->p == '-' ||
	    *mr->p == '+')
		return mr_err(mr, col, "%s must be written LENGTH:TEXT", what);
	if (strlen(end + 1) < n)
		return mr_err(mr, col, "%s is shorter than its length %llu", what, n);
	if (end[1 + n] != ' ' && end[1 + n] != '\0')
		return mr_err(mr, col, "%s is longer than its length %llu", what, n);
	if (!(*out = strndup(end + 1, (size_t)n)))
		return LSIM_ENOMEM;
	mr->p = end + 1 + n;
	return 0;
}

static int mr_eol(struct mreader *mr)
{
	if (*mr->p != '\0')
		return mr_err(mr, mr_col(mr), "unexpected text '%.40s'", mr->p);
	return 0;
}

/* Reads the base64 lines of an n-byte booster (4 characters per 3 bytes,
 * padded, at most B64_LINE a line) and decodes them into out, which has
 * room for n + 2 bytes. */
static int mr_b64(struct mreader *mr, size_t n, unsigned char *out)
{
	size_t want = (n + 2) / 3 * 4, have = 0;
	char *text = malloc(want + 1);
	if (!text)
		return LSIM_ENOMEM;
	int rc = 0;
	while (have < want && rc == 0) {
		if (mr_next_raw(mr) != 0) {
			mr->line++;
			mr->cur = NULL;
			rc = mr_err(mr, 0, "the file ends inside a booster (%zu of %zu base64 characters)",
				    have, want);
			break;
		}
		size_t len = strlen(mr->cur);
		if (len == 0 || len > B64_LINE || len > want - have) {
			rc = mr_err(mr, 1, "a base64 line of %zu characters (%zu of %zu read)",
				    len, have, want);
			break;
		}
		for (size_t i = 0; i < len && rc == 0; i++)
			if (b64_value(mr->cur[i]) < 0 && mr->cur[i] != '=')
				rc = mr_err(mr, (int)i + 1, "not base64: '%c'", mr->cur[i]);
		memcpy(text + have, mr->cur, len);
		have += len;
	}
	size_t got = 0;
	for (size_t i = 0; i < want && rc == 0; i += 4) {
		int v[4];
		for (int j = 0; j < 4; j++) {
			char ch = text[i + (size_t)j];
			bool last = i + 4 == want;
			v[j] = b64_value(ch);
			if (v[j] < 0 && !(ch == '=' && last && j >= 2 &&
					  (j == 3 || text[i + 3] == '=')))
				rc = mr_err(mr, 0, "the booster is not valid base64 (character %zu: '%c')",
					    i + (size_t)j + 1, ch);
		}
		if (rc != 0)
			break;
		unsigned x = (unsigned)v[0] << 18 | (unsigned)v[1] << 12 |
			     (v[2] >= 0 ? (unsigned)v[2] << 6 : 0) | (v[3] >= 0 ? (unsigned)v[3] : 0);
		unsigned char b[3] = {(unsigned char)(x >> 16), (unsigned char)(x >> 8),
				      (unsigned char)x};
		int nb = v[2] < 0 ? 1 : v[3] < 0 ? 2 : 3;
		for (int j = 0; j < nb; j++)
			out[got++] = b[j];
	}
	if (rc == 0 && got != n)
		rc = mr_err(mr, 0, "the booster has %zu bytes, not %zu", got, n);
	free(text);
	return rc;
}

static int load_reg(struct mreader *mr, struct lsim_kproto_model *m,
		    bool *seen)
{
	int rc = mr_expect(mr, "reg");
	size_t t, j;
	char kind[16];
	if (rc == 0)
		rc = mr_size(mr, "target index", m->n_tgt ? m->n_tgt - 1 : 0, &t);
	if (rc == 0)
		rc = mr_size(mr, "cluster index", m->cl.k - 1, &j);
	int kcol = mr_col(mr) + 1;
	if (rc == 0)
		rc = mr_word(mr, "regressor", kind, sizeof kind);
	if (rc != 0)
		return rc;
	if (seen[t * m->cl.k + j])
		return mr_err(mr, 5, "a second regressor for target %zu, cluster %zu", t, j);
	seen[t * m->cl.k + j] = true;
	struct lsim_kp_reg *r = &m->reg[t * m->cl.k + j];
	int kk = lsim_kp_kind_parse(kind);
	if (kk < 0)
		return mr_err(mr, kcol, "unknown regressor '%s' (const, linear, gb, rf)", kind);
	r->kind = (enum lsim_kp_kind)kk;
	if ((rc = mr_double(mr, "value", &r->value)) != 0)
		return rc;
	if (r->kind == LSIM_KP_CONST)
		return mr_eol(mr);
	if (r->kind == LSIM_KP_LINEAR) {
		size_t nc;
		int ccol = mr_col(mr) + 1;
		if ((rc = mr_size(mr, "coefficient count", SIZE_MAX / 16, &nc)) != 0)
			return rc;
		if (nc != m->n_feat + 1)
			return mr_err(mr, ccol, "%zu coefficients, the model has %zu features + 1",
				      nc, m->n_feat);
		if (!(r->coef = malloc(nc * sizeof *r->coef)))
			return LSIM_ENOMEM;
		for (size_t i = 0; i < nc && rc == 0; i++)
			rc = mr_double(mr, "coefficient", &r->coef[i]);
		return rc ? rc : mr_eol(mr);
	}
	size_t nb;
	if ((rc = mr_size(mr, "booster size", (size_t)1 << 34, &nb)) != 0 ||
	    (rc = mr_eol(mr)) != 0)
		return rc;
	if (nb == 0)
		return mr_err(mr, 0, "an empty booster");
	int line = mr->line;
#ifdef LSIM_HAVE_XGBOOST
	unsigned char *buf = malloc(nb + 2);
	if (!buf)
		return LSIM_ENOMEM;
	rc = mr_b64(mr, nb, buf);
	BoosterHandle b = NULL;
	if (rc == 0 && (XGBoosterCreate(NULL, 0, &b) != 0 ||
			XGBoosterLoadModelFromBuffer(b, buf, (bst_ulong)nb) != 0 ||
			XGBoosterSetParam(b, "nthread", "1") != 0))
		rc = lsim_diag_set(mr->d, LSIM_EFORMAT, mr->path, line, 0, "reg",
				   "XGBoost cannot read the booster: %s",
				   XGBGetLastError());
	if (rc == 0)
		r->booster = b;
	else if (b)
		XGBoosterFree(b);
	free(buf);
	return rc;
#else
	(void)mr_b64;
	return lsim_kp_no_xgboost(mr->d, mr->path, line, r->kind);
#endif
}

static int load_body(struct mreader *mr, struct lsim_kproto_model *m)
{
	int rc;
	char w[64];
	size_t v;
	mr->kw = "";
	if (mr_next_raw(mr) != 0 || strcmp(mr->cur, MAGIC) != 0) {
		mr->line = 1;
		return mr_err(mr, 1, "not an llmsim kproto model (the first line is not '%s')",
			      MAGIC);
	}
	if ((rc = mr_expect(mr, "version")) != 0 ||
	    (rc = mr_size(mr, "version", 1000000, &v)) != 0 || (rc = mr_eol(mr)) != 0)
		return rc;
	if (v != FORMAT_VERSION)
		return mr_err(mr, 9, "format version %zu; this llmsim reads version %d",
			      v, FORMAT_VERSION);
	if ((rc = mr_expect(mr, "kind")) != 0 || (rc = mr_word(mr, "kind", w, sizeof w)) != 0 ||
	    (rc = mr_eol(mr)) != 0)
		return rc;
	int kk = lsim_kp_kind_parse(w);
	if (kk != LSIM_KP_LINEAR && kk != LSIM_KP_GB && kk != LSIM_KP_RF)
		return mr_err(mr, 6, "kind must be gb, rf or linear, not '%s'", w);
	m->kind = (enum lsim_kp_kind)kk;
	size_t seed;
	if ((rc = mr_expect(mr, "seed")) != 0 ||
	    (rc = mr_size(mr, "seed", SIZE_MAX, &seed)) != 0 || (rc = mr_eol(mr)) != 0)
		return rc;
	m->seed = seed;
	if ((rc = mr_expect(mr, "rows")) != 0 ||
	    (rc = mr_size(mr, "rows", SIZE_MAX, &m->n_train)) != 0 || (rc = mr_eol(mr)) != 0)
		return rc;
	size_t k;
	struct lsim_kp_clusters *c = &m->cl;
	double mu, cost;
	size_t rs, its;
	if ((rc = mr_expect(mr, "clusters")) != 0 ||
	    (rc = mr_size(mr, "k", 1000000, &k)) != 0 || (rc = mr_lit(mr, "mu")) != 0 ||
	    (rc = mr_double(mr, "mu", &mu)) != 0 || (rc = mr_lit(mr, "cost")) != 0 ||
	    (rc = mr_double(mr, "cost", &cost)) != 0 || (rc = mr_lit(mr, "restart")) != 0 ||
	    (rc = mr_size(mr, "restart", INT32_MAX, &rs)) != 0 ||
	    (rc = mr_lit(mr, "iterations")) != 0 ||
	    (rc = mr_size(mr, "iterations", INT32_MAX, &its)) != 0 || (rc = mr_eol(mr)) != 0)
		return rc;
	if (k == 0)
		return mr_err(mr, 10, "k must be at least 1");
	if (mu < 0)
		return mr_err(mr, 0, "mu must be >= 0");
	size_t nn, ncat, nt;
	if ((rc = mr_expect(mr, "numeric")) != 0 ||
	    (rc = mr_size(mr, "count", 100000, &nn)) != 0 || (rc = mr_eol(mr)) != 0)
		return rc;
	if ((rc = lsim_kp_clusters_alloc(c, k, nn, 0)) != 0)
		return rc;
	c->mu = mu;
	c->cost = cost;
	c->best_restart = (int)rs;
	c->iterations = (int)its;
	m->n_num = nn;
	char **num_names = calloc(nn ? nn : 1, sizeof *num_names);
	if (!num_names)
		return LSIM_ENOMEM;
	for (size_t i = 0; i < nn && rc == 0; i++) {
		if ((rc = mr_expect(mr, "num")) != 0 ||
		    (rc = mr_str(mr, "name", &num_names[i])) != 0 ||
		    (rc = mr_double(mr, "center", &c->center[i])) != 0 ||
		    (rc = mr_double(mr, "scale", &c->scale[i])) != 0 || (rc = mr_eol(mr)) != 0)
			break;
		if (!(c->scale[i] > 0))
			rc = mr_err(mr, 0, "the scale of %s must be > 0", num_names[i]);
	}
	m->num_names = num_names; /* model_alloc below keeps it */
	if (rc != 0)
		return rc;
	if ((rc = mr_expect(mr, "categorical")) != 0 ||
	    (rc = mr_size(mr, "count", 100000, &ncat)) != 0 || (rc = mr_eol(mr)) != 0)
		return rc;
	if (nn + ncat == 0)
		return mr_err(mr, 0, "no attributes");
	m->n_cat = ncat;
	char **cat_names = calloc(ncat ? ncat : 1, sizeof *cat_names);
	char ***levels = calloc(ncat ? ncat : 1, sizeof *levels);
	size_t *n_levels = calloc(ncat ? ncat : 1, sizeof *n_levels);
	m->cat_names = cat_names;
	m->levels = levels;
	m->n_levels = n_levels;
	if (!cat_names || !levels || !n_levels)
		return LSIM_ENOMEM;
	for (size_t i = 0; i < ncat; i++) {
		size_t nl;
		if ((rc = mr_expect(mr, "cat")) != 0 ||
		    (rc = mr_str(mr, "name", &cat_names[i])) != 0 ||
		    (rc = mr_size(mr, "level count", 10000000, &nl)) != 0)
			return rc;
		if (nl == 0)
			return mr_err(mr, 0, "%s has no levels", cat_names[i]);
		if (!(levels[i] = calloc(nl, sizeof *levels[i])))
			return LSIM_ENOMEM;
		for (size_t l = 0; l < nl; l++) {
			if ((rc = mr_str(mr, "label", &levels[i][l])) != 0)
				return rc;
			n_levels[i] = l + 1;
			if (lsim_kp_find_label(levels[i], l, levels[i][l]) >= 0)
				return mr_err(mr, 0, "%s: label '%s' twice", cat_names[i],
					      levels[i][l]);
		}
		if ((rc = mr_eol(mr)) != 0)
			return rc;
	}
	if ((rc = mr_expect(mr, "targets")) != 0 ||
	    (rc = mr_size(mr, "count", 100000, &nt)) != 0 || (rc = mr_eol(mr)) != 0)
		return rc;
	m->n_tgt = nt;
	char **tgt_names = calloc(nt ? nt : 1, sizeof *tgt_names);
	m->tgt_names = tgt_names;
	if (!tgt_names)
		return LSIM_ENOMEM;
	for (size_t i = 0; i < nt; i++)
		if ((rc = mr_expect(mr, "tgt")) != 0 ||
		    (rc = mr_str(mr, "name", &tgt_names[i])) != 0 || (rc = mr_eol(mr)) != 0)
			return rc;
	/* the prototypes' categorical part, then the rest of the model */
	free(c->proto_cat);
	c->n_cat = ncat;
	if (!(c->proto_cat = calloc(k * (ncat ? ncat : 1), sizeof *c->proto_cat)))
		return LSIM_ENOMEM;
	m->reg = calloc(nt * k > 0 ? nt * k : 1, sizeof *m->reg);
	m->sizes = calloc(k, sizeof *m->sizes);
	if (!m->reg || !m->sizes || (rc = lsim_kp_model_scratch(m)) != 0)
		return rc ? rc : LSIM_ENOMEM;
	for (size_t j = 0; j < k; j++) {
		size_t idx;
		if ((rc = mr_expect(mr, "proto")) != 0 ||
		    (rc = mr_size(mr, "cluster index", k - 1, &idx)) != 0)
			return rc;
		if (idx != j)
			return mr_err(mr, 7, "prototype %zu where %zu was expected", idx, j);
		if ((rc = mr_size(mr, "size", SIZE_MAX, &m->sizes[j])) != 0)
			return rc;
		for (size_t i = 0; i < nn; i++)
			if ((rc = mr_double(mr, "coordinate", &c->proto_num[j * nn + i])) != 0)
				return rc;
		for (size_t i = 0; i < ncat; i++) {
			size_t code;
			if ((rc = mr_size(mr, "level code", n_levels[i] - 1, &code)) != 0)
				return rc;
			c->proto_cat[j * ncat + i] = (int32_t)code;
		}
		if ((rc = mr_eol(mr)) != 0)
			return rc;
	}
	bool *seen = calloc(nt * k > 0 ? nt * k : 1, sizeof *seen);
	if (!seen)
		return LSIM_ENOMEM;
	for (size_t i = 0; i < nt * k && rc == 0; i++)
		rc = load_reg(mr, m, seen);
	free(seen);
	if (rc != 0)
		return rc;
	if ((rc = mr_expect(mr, "end")) != 0 || (rc = mr_eol(mr)) != 0)
		return rc;
	while (mr_next_raw(mr) == 0) {
		mr->kw = "";
		if (mr->cur[0] != '\0')
			return mr_err(mr, 1, "text after 'end'");
	}
	return 0;
}

int lsim_kproto_load(const char *path, struct lsim_kproto_model **out,
		     struct lsim_diag *d)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return lsim_diag_set(d, errno == ENOENT ? LSIM_ENOENT : LSIM_EIO, path,
				     0, 0, "", "cannot open the model %s: %s", path,
				     strerror(errno));
	struct mreader mr = {.path = path, .d = d};
	size_t cap = 0;
	int rc = 0;
	for (;;) {
		if (mr.len + 65536 > cap) {
			cap = cap ? cap * 2 : 131072;
			char *b = realloc(mr.buf, cap + 1);
			if (!b) {
				rc = LSIM_ENOMEM;
				break;
			}
			mr.buf = b;
		}
		size_t n = fread(mr.buf + mr.len, 1, cap - mr.len, f);
		mr.len += n;
		if (n == 0)
			break;
	}
	if (rc == 0 && ferror(f))
		rc = lsim_diag_set(d, LSIM_EIO, path, 0, 0, "", "read error");
	fclose(f);
	if (rc == 0 && memchr(mr.buf, '\0', mr.len))
		rc = lsim_diag_set(d, LSIM_EFORMAT, path, 0, 0, "",
				   "a NUL byte: not a text model file");
	struct lsim_kproto_model *m = NULL;
	if (rc == 0 && !(m = calloc(1, sizeof *m)))
		rc = LSIM_ENOMEM;
	if (rc == 0) {
		mr.buf[mr.len] = '\0';
		rc = load_body(&mr, m);
	}
	free(mr.buf);
	if (rc != 0) {
		lsim_kproto_destroy(m);
		return rc;
	}
	*out = m;
	return 0;
}
