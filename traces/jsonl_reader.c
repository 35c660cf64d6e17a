/*
 * jsonl_reader.c - the streaming JSONL trace reader: one JSON object per
 * line (vLLM benchmark-style requests.jsonl), parsed with json-c one line
 * at a time. Times are converted from the number's own text, exactly.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "kernel/infile.h"
#include "workload_internal.h"

struct jsonl_reader {
	struct lsim_workload base;
	FILE *f;
	double size; /* bytes of a regular file, else 0 */
	char *path;
	char *line; /* getline buffer */
	size_t line_cap;
	int lineno;
	json_tokener *tok;
	const char *arrival_key; /* chosen on the first line */
	int arrival_scale;	 /* 9: seconds, 6: milliseconds */
	bool have_first;
	lsim_time t0, prev;
	uint64_t *hashes; /* hash_ids of the current line */
	size_t hash_cap;
	/* the keys read: the known layouts, or the scenario's mapping */
	const char *pkeys[3], *okeys[3];
	size_t n_keys;
	bool mapped;		 /* arrival key and unit fixed by the mapping */
	bool datetime;		 /* mapped arrival is a datetime string */
	bool unordered;		 /* any line order (lsim_workload_jsonl_open_sorted) */
	char *map_keys[3 + LSIM_N_LABELS]; /* owned copies: a, p, o, labels */
	char label_buf[LSIM_N_LABELS][256];
};

static const char *const prompt_keys[] = {"input_toks", "prompt_len",
					  "input_length"};
static const char *const output_keys[] = {"output_toks", "output_len",
					  "output_length"};
static const struct {
	const char *key;
	int scale;
} arrival_keys[] = {{"queued_ts", 9}, {"arrival_time", 9}, {"timestamp", 6}};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static bool blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return false;
	return true;
}

/*
 * Reads one token count from the first of keys[] present in o; the index
 * of that key goes to *which unless which is NULL.
 */
static int get_count(struct jsonl_reader *r, json_object *o,
		     const char *const *keys, size_t nkeys, const char *what,
		     int32_t *out, size_t *which, struct lsim_diag *d)
{
	json_object *v = NULL;
	size_t k = 0;
	while (k < nkeys && !json_object_object_get_ex(o, keys[k], &v))
		k++;
	if (k == nkeys && nkeys == 1)
		return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0,
				     keys[0], "no %s length: expected '%s'", what, keys[0]);
	if (k == nkeys)
		return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0,
				     keys[0], "no %s length: expected '%s', '%s' or '%s'",
				     what, keys[0], keys[1], keys[2]);
	double x;
	if (json_object_is_type(v, json_type_int)) {
		x = (double)json_object_get_int64(v);
	} else if (json_object_is_type(v, json_type_double)) {
		x = json_object_get_double(v);
		if (!isfinite(x) || x != floor(x))
			return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0,
					     keys[k], "%s length %s is not an integer",
					     what, json_object_to_json_string(v));
	} else {
		return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0,
				     keys[k], "%s length %s is not a number", what,
				     json_object_to_json_string(v));
	}
	if (x < 0 || x > INT32_MAX)
		return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0,
				     keys[k], "%s length %.0f is %s", what, x,
				     x < 0 ? "negative" : "too large");
	*out = (int32_t)x;
	if (which)
		*which = k;
	return 0;
}

/* Reads the arrival of o under key (scale 9: s, 6: ms) in ns, absolute. */
static int get_arrival(struct jsonl_reader *r, json_object *o, const char *key,
		       int scale, int64_t *t, struct lsim_diag *d)
{
	json_object *v = NULL;
	if (!json_object_object_get_ex(o, key, &v))
		return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0, key,
				     "no '%s' here, though the first line has it", key);
	int64_t unit = scale == 9 ? LSIM_S : LSIM_MS;
	if (r->datetime) {
		if (!json_object_is_type(v, json_type_string))
			return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0,
					     key, "time %s is not a datetime string",
					     json_object_to_json_string(v));
		if (lsim_wl_parse_datetime(json_object_get_string(v), t) != 0)
			return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0,
					     key, "time %s is malformed (expected "
						  "YYYY-MM-DD HH:MM:SS[.fraction][Z|+HH:MM])",
					     json_object_to_json_string(v));
		return 0;
	}
	if (json_object_is_type(v, json_type_int)) {
		if (__builtin_mul_overflow(json_object_get_int64(v), unit, t))
			return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0,
					     key, "time %s is out of range",
					     json_object_to_json_string(v));
		return 0;
	}
	if (!json_object_is_type(v, json_type_double))
		return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0, key,
				     "time %s is not a number",
				     json_object_to_json_string(v));
	/* json-c keeps the number's text: convert it exactly */
	const char *text = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
	if (!isfinite(json_object_get_double(v)))
		return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0, key,
				     "time %s is not a finite number", text);
	int rc = lsim_wl_parse_decimal(text, scale, t);
	if (rc == LSIM_EFORMAT) { /* not plain decimal text: go via double */
		double x = json_object_get_double(v) * (double)unit;
		if (!(fabs(x) < 9.2e18)) {
			rc = LSIM_ERANGE;
		} else {
			*t = (int64_t)llround(x);
			rc = 0;
		}
	}
	if (rc != 0)
		return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0, key,
				     "time %s is out of range", text);
	return 0;
}

/* Mooncake's optional "hash_ids": prefix-block ids, one per 512 tokens. */
static int get_hashes(struct jsonl_reader *r, json_object *o,
		      struct lsim_req_spec *out, struct lsim_diag *d)
{
	json_object *a = NULL;
	out->hashes = NULL;
	out->n_hashes = 0;
	out->hash_block_tokens = 0;
	if (!json_object_object_get_ex(o, "hash_ids", &a) || !a)
		return 0;
	if (!json_object_is_type(a, json_type_array))
		return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0,
				     "hash_ids", "hash_ids must be a list of integers");
	size_t n = json_object_array_length(a);
	if (n > (size_t)INT32_MAX / 2)
		return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0,
				     "hash_ids", "too many hash_ids");
	if (n > r->hash_cap) {
		uint64_t *p = realloc(r->hashes, n * sizeof *p);
		if (!p)
			return lsim_diag_set(d, LSIM_ENOMEM, r->path, r->lineno, 0,
					     "hash_ids", "out of memory");
		r->hashes = p;
		r->hash_cap = n;
	}
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(a, i);
		if (!e || !json_object_is_type(e, json_type_int) ||
		    json_object_get_int64(e) < 0)
			return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0,
					     "hash_ids",
					     "hash_ids[%zu] is not a non-negative integer", i);
		/* ids are unsigned 64-bit: json-c keeps those past 2^63 as
		 * uint64 (get_int64 would clamp them to one value, and distinct
		 * blocks would share a cache entry), and clamps those past
		 * 2^64 - 1 to it, so that value cannot be told apart: refused */
		uint64_t id = json_object_get_uint64(e);
		if (id == UINT64_MAX)
			return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0,
					     "hash_ids",
					     "hash_ids[%zu] is 2^64 - 1 or more: ids must be below "
					     "18446744073709551615", i);
		r->hashes[i] = id;
	}
	out->hashes = r->hashes;
	out->n_hashes = (int32_t)n;
	out->hash_block_tokens = 512;
	return 0;
}

/* The mapped label keys (class, model, tenant, lora): strings or
 * numbers; the LoRA adapter also null, the base model (as ""). An
 * adapter's name must fit the buffer whole: cut, two names could merge. */
static int get_labels(struct jsonl_reader *r, json_object *o,
		      struct lsim_req_spec *out, struct lsim_diag *d)
{
	enum { LORA = 3 };
	const char **labels[LSIM_N_LABELS] = {&out->class_label, &out->model_label,
					       &out->tenant_label, &out->lora_label};
	for (int k = 0; k < LSIM_N_LABELS; k++) {
		const char *key = r->map_keys[3 + k];
		json_object *v = NULL;
		if (!key)
			continue;
		if (!json_object_object_get_ex(o, key, &v))
			return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0, key,
					     "no '%s' here", key);
		if (!v && k == LORA) {
			r->label_buf[k][0] = '\0';
			*labels[k] = r->label_buf[k];
			continue;
		}
		if (!v)
			return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0, key,
					     "no '%s' here", key);
		const char *s = json_object_is_type(v, json_type_string)
					? json_object_get_string(v)
					: json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
		if (json_object_is_type(v, json_type_object) ||
		    json_object_is_type(v, json_type_array))
			return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0, key,
					     "'%s' must be a string or a number", key);
		if (k == LORA && strlen(s) >= sizeof r->label_buf[k])
			return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0, key,
					     "'%s' names an adapter of %zu bytes: at most %zu",
					     key, strlen(s), sizeof r->label_buf[k] - 1);
		snprintf(r->label_buf[k], sizeof r->label_buf[k], "%s", s);
		*labels[k] = r->label_buf[k];
	}
	return 0;
}

static int parse_object(struct jsonl_reader *r, json_object *o,
			struct lsim_req_spec *out, struct lsim_diag *d)
{
	/* the first good line chooses the arrival field for the whole file */
	const char *akey = r->arrival_key;
	int scale = r->arrival_scale;
	for (size_t i = 0; i < N_OF(arrival_keys) && !akey; i++)
		if (json_object_object_get_ex(o, arrival_keys[i].key, NULL)) {
			akey = arrival_keys[i].key;
			scale = arrival_keys[i].scale;
		}
	if (!akey)
		return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0,
				     "queued_ts",
				     "no arrival time: expected 'queued_ts' (s), 'arrival_time' (s) or 'timestamp' (ms)");
	if (r->mapped && !json_object_object_get_ex(o, akey, NULL))
		return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0, akey,
				     "no arrival time: expected '%s'", akey);
	int64_t t = 0;
	int rc = get_arrival(r, o, akey, scale, &t, d);
	if (rc != 0)
		return rc;
	if (r->have_first && t < r->prev && !r->unordered)
		return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0,
				     akey,
				     "arrival is earlier than the previous line's; lines must be in arrival order");
	if (r->have_first && r->t0 < 0 && t > INT64_MAX + r->t0)
		return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0,
				     akey,
				     "arrival is too far from the first line's");
	size_t pk = 0;
	rc = get_count(r, o, r->pkeys, r->n_keys, "prompt", &out->prompt_tokens,
		       &pk, d);
	if (rc == 0)
		rc = get_count(r, o, r->okeys, r->n_keys, "output",
			       &out->output_tokens, NULL, d);
	if (rc == 0)
		rc = get_labels(r, o, out, d);
	if (rc != 0)
		return rc;
	if (out->prompt_tokens == 0)
		return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0,
				     r->pkeys[pk],
				     "prompt length is 0; a request needs at least one prompt token");
	rc = get_hashes(r, o, out, d);
	if (rc != 0)
		return rc;
	/* the line is good: only now does it set the origin and the order */
	r->arrival_key = akey;
	r->arrival_scale = scale;
	if (!r->have_first) {
		r->have_first = true;
		r->t0 = t;
	}
	r->prev = t;
	out->arrival = t - r->t0;
	out->src_path = r->path;
	out->src_line = r->lineno;
	out->src_col = 0;
	out->src_key = r->pkeys[pk];
	return 1;
}

/* Reads and checks the next non-blank line: 1, 0 at the end, or an error. */
static int jsonl_line(struct jsonl_reader *r, struct lsim_req_spec *out,
		      struct lsim_diag *d)
{
	for (;;) {
		ssize_t n;
		int err = lsim_read_line(r->f, &r->line, &r->line_cap, &n, r->path,
					 r->lineno + 1, d);
		if (err != 0)
			return err;
		if (n < 0) {
			return 0;
		}
		r->lineno++;
		char *s = r->line;
		size_t len = (size_t)n;
		if (r->lineno == 1 && len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) {
			s += 3;
			len -= 3;
		}
		while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == '\r'))
			len--;
		s[len] = '\0';
		if (blank(s, len))
			continue;
		if (len >= INT32_MAX)
			return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0,
					     "", "line too long");
		json_tokener_reset(r->tok);
		/* the terminating NUL ends a bare number too */
		json_object *o = json_tokener_parse_ex(r->tok, s, (int)len + 1);
		enum json_tokener_error je = json_tokener_get_error(r->tok);
		size_t end = json_tokener_get_parse_end(r->tok);
		if (!o || je != json_tokener_success) {
			json_object_put(o);
			return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno,
					     (int)(end < len ? end : len) + 1, "",
					     "bad JSON: %s",
					     je == json_tokener_continue
						     ? "the line ends inside a value"
						     : json_tokener_error_desc(je));
		}
		if (end < len && !blank(s + end, len - end)) {
			json_object_put(o);
			return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno,
					     (int)end + 1, "",
					     "bad JSON: text after the object");
		}
		if (!json_object_is_type(o, json_type_object)) {
			json_object_put(o);
			return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 1, "",
					     "bad JSON: the line is not a JSON object");
		}
		int rc = parse_object(r, o, out, d);
		json_object_put(o);
		return rc;
	}
}

static int jsonl_next(struct lsim_workload *w, struct lsim_req_spec *out,
		      struct lsim_diag *d)
{
	struct jsonl_reader *r = (struct jsonl_reader *)w;
	int rc;
	do
		rc = jsonl_line(r, out, d);
	while (rc < 0 && lsim_wl_skip_line(w, rc, d));
	if (rc == 0 && !r->have_first) {
		/* a whole-file error, never skipped */
		if (w->skipped > 0)
			return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0,
					     "workload.path",
					     "no valid lines: all %llu were skipped",
					     (unsigned long long)w->skipped);
		return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno, 0,
				     "workload.path",
				     "no requests: the file holds no JSON lines");
	}
	return rc;
}

static void jsonl_destroy(struct lsim_workload *w)
{
	struct jsonl_reader *r = (struct jsonl_reader *)w;
	if (r->f)
		fclose(r->f);
	if (r->tok)
		json_tokener_free(r->tok);
	free(r->path);
	free(r->line);
	free(r->hashes);
	for (size_t k = 0; k < N_OF(r->map_keys); k++)
		free(r->map_keys[k]);
	free(r);
}

static double jsonl_fraction(struct lsim_workload *w)
{
	const struct jsonl_reader *r = (const struct jsonl_reader *)w;
	return lsim_file_fraction(r->f, r->size);
}

static const struct lsim_workload_ops jsonl_ops = {
	.next = jsonl_next,
	.destroy = jsonl_destroy,
	.fraction = jsonl_fraction,
};

int lsim_workload_jsonl_open(const char *path, struct lsim_workload **out,
			     struct lsim_diag *d)
{
	return lsim_workload_jsonl_open_map(path, NULL, out, d);
}

int lsim_workload_jsonl_open_map(const char *path, const struct lsim_csv_map *map,
				 struct lsim_workload **out, struct lsim_diag *d)
{
	if (!out)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "",
				     "lsim_workload_jsonl_open: NULL out");
	*out = NULL;
	if (!path)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "",
				     "lsim_workload_jsonl_open: NULL path");
	struct jsonl_reader *r = calloc(1, sizeof *r);
	if (!r)
		return lsim_diag_set(d, LSIM_ENOMEM, path, 0, 0, "", "out of memory");
	lsim_workload_init_base(&r->base, &jsonl_ops);
	r->path = strdup(path);
	r->tok = json_tokener_new();
	bool nomem = false;
	if (map) {
		const char *keys[3 + LSIM_N_LABELS] = {
			map->arrival_col, map->prompt_col, map->output_col,
			map->class_col,	  map->model_col,  map->tenant_col,
			map->lora_col};
		for (size_t k = 0; k < N_OF(keys); k++)
			if (keys[k] && keys[k][0] && !(r->map_keys[k] = strdup(keys[k])))
				nomem = true;
	}
	if (map && map->arrival_col && map->arrival_col[0]) {
		r->mapped = true;
		r->arrival_key = r->map_keys[0];
		r->arrival_scale = map->arrival_format == LSIM_TF_MILLISECONDS ? 6 : 9;
		r->datetime = map->arrival_format == LSIM_TF_DATETIME;
		r->pkeys[0] = r->map_keys[1];
		r->okeys[0] = r->map_keys[2];
		r->n_keys = 1;
		if (!nomem && (!r->map_keys[0] || !r->map_keys[1] || !r->map_keys[2])) {
			jsonl_destroy(&r->base);
			return lsim_diag_set(d, LSIM_EINVAL, path, 0, 0,
					     "workload.arrival_column",
					     "a JSONL mapping needs the arrival, prompt and "
					     "output keys");
		}
	} else {
		memcpy(r->pkeys, prompt_keys, sizeof prompt_keys);
		memcpy(r->okeys, output_keys, sizeof output_keys);
		r->n_keys = N_OF(prompt_keys);
	}
	if (!r->path || !r->tok || nomem) {
		jsonl_destroy(&r->base);
		return lsim_diag_set(d, LSIM_ENOMEM, path, 0, 0, "", "out of memory");
	}
	int orc = lsim_open_input(path, "workload.path", &r->f, d);
	if (orc < 0) {
		jsonl_destroy(&r->base);
		return orc;
	}
	if (!r->f) {
		int e = errno;
		jsonl_destroy(&r->base);
		return lsim_diag_set(d, e == ENOENT ? LSIM_ENOENT : LSIM_EIO, path,
				     0, 0, "workload.path", "cannot open trace: %s",
				     e ? strerror(e) : "unknown error");
	}
	struct stat st;
	if (fstat(fileno(r->f), &st) == 0 && S_ISDIR(st.st_mode)) {
		jsonl_destroy(&r->base);
		return lsim_diag_set(d, LSIM_EINVAL, path, 0, 0, "workload.path",
				     "is a folder, not a file");
	}
	if (fstat(fileno(r->f), &st) == 0 && S_ISREG(st.st_mode))
		r->size = (double)st.st_size;
	*out = &r->base;
	return 0;
}

/* ---- a measured run's log, taken in arrival order ---- */

struct sorted_source {
	struct lsim_workload base;
	struct lsim_workload *reader; /* owns the src_path of the requests */
	struct lsim_req_spec *reqs;   /* sorted; hashes owned here */
	size_t n, next;
};

static int sorted_next(struct lsim_workload *w, struct lsim_req_spec *out,
		       struct lsim_diag *d)
{
	(void)d;
	struct sorted_source *s = (struct sorted_source *)w;
	if (s->next == s->n)
		return 0;
	*out = s->reqs[s->next++];
	return 1;
}

static void sorted_destroy(struct lsim_workload *w)
{
	struct sorted_source *s = (struct sorted_source *)w;
	for (size_t i = 0; i < s->n; i++)
		free((void *)s->reqs[i].hashes);
	free(s->reqs);
	lsim_workload_destroy(s->reader);
	free(s);
}

static double sorted_fraction(struct lsim_workload *w)
{
	const struct sorted_source *s = (const struct sorted_source *)w;
	return s->n ? (double)s->next / (double)s->n : 1;
}

static const struct lsim_workload_ops sorted_ops = {
	.next = sorted_next,
	.destroy = sorted_destroy,
	.fraction = sorted_fraction,
};

/* arrival, then the line order (the reader's ids count lines in order) */
static int by_arrival(const void *a, const void *b)
{
	const struct lsim_req_spec *x = a, *y = b;
	if (x->arrival != y->arrival)
		return x->arrival < y->arrival ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

int lsim_workload_jsonl_open_sorted(const char *path, struct lsim_workload **out,
				    uint64_t *n_back, lsim_time *max_back,
				    struct lsim_diag *d)
{
	if (!out)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "",
				     "lsim_workload_jsonl_open_sorted: NULL out");
	*out = NULL;
	struct sorted_source *s = calloc(1, sizeof *s);
	if (!s)
		return lsim_diag_set(d, LSIM_ENOMEM, path ? path : "", 0, 0, "",
				     "out of memory");
	lsim_workload_init_base(&s->base, &sorted_ops);
	int rc = lsim_workload_jsonl_open(path, &s->reader, d);
	if (rc == 0)
		((struct jsonl_reader *)s->reader)->unordered = true;
	size_t cap = 0;
	uint64_t back = 0;
	lsim_time worst = 0;
	while (rc == 0) {
		struct lsim_req_spec q;
		int got = lsim_workload_next(s->reader, &q, d);
		if (got <= 0) {
			rc = got;
			break;
		}
		if (s->n > 0 && q.arrival < s->reqs[s->n - 1].arrival) {
			back++;
			lsim_time step = s->reqs[s->n - 1].arrival - q.arrival;
			worst = step > worst ? step : worst;
		}
		if (s->n == cap) {
			size_t nc = cap ? 2 * cap : 256;
			struct lsim_req_spec *p = realloc(s->reqs, nc * sizeof *p);
			if (!p) {
				rc = lsim_diag_set(d, LSIM_ENOMEM, path, q.src_line, 0, "",
						   "out of memory");
				break;
			}
			s->reqs = p;
			cap = nc;
		}
		if (q.n_hashes > 0) {
			uint64_t *h = malloc((size_t)q.n_hashes * sizeof *h);
			if (!h) {
				rc = lsim_diag_set(d, LSIM_ENOMEM, path, q.src_line, 0, "",
						   "out of memory");
				break;
			}
			memcpy(h, q.hashes, (size_t)q.n_hashes * sizeof *h);
			q.hashes = h;
		}
		/* no label keys without a mapping, so no borrowed label text */
		q.class_label = q.model_label = q.tenant_label = q.lora_label = NULL;
		s->reqs[s->n++] = q;
	}
	if (rc != 0) {
		sorted_destroy(&s->base);
		return rc;
	}
	qsort(s->reqs, s->n, sizeof *s->reqs, by_arrival);
	/* the origin is the earliest arrival, as in the file sorted first */
	lsim_time t0 = s->n ? s->reqs[0].arrival : 0;
	for (size_t i = 0; i < s->n; i++)
		s->reqs[i].arrival -= t0;
	if (n_back)
		*n_back = back;
	if (max_back)
		*max_back = worst;
	*out = &s->base;
	return 0;
}
