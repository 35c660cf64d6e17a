/*
 * csv_reader.c - the CSV trace source (a header row naming the arrival,
 * prompt and output columns; records read through the shared RFC 4180
 * reader of sim/kernel/csv.c), and the exact decimal and datetime parsers that
 * turn trace timestamps into integer nanoseconds (shared with the JSONL
 * reader).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/csv.h"
#include "workload_internal.h"

/* ---- exact number and time parsing ---- */

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

#define MAX_SIG_DIGITS 40

int lsim_wl_parse_decimal(const char *s, int scale, int64_t *out)
{
	const char *p = s;
	while (is_space(*p))
		p++;
	bool neg = false;
	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	/* value = 0.D x 10^pos, D the significant digits */
	char dig[MAX_SIG_DIGITS];
	int nd = 0;
	int64_t pos = 0;
	bool any = false;
	for (; is_digit(*p); p++) {
		any = true;
		if (nd == 0 && *p == '0')
			continue;
		if (nd == MAX_SIG_DIGITS)
			return LSIM_ERANGE; /* 40 integer digits */
		dig[nd++] = *p;
		pos++;
	}
	if (*p == '.') {
		for (p++; is_digit(*p); p++) {
			any = true;
			if (nd == 0 && *p == '0')
				pos--;
			else if (nd < MAX_SIG_DIGITS)
				dig[nd++] = *p; /* later digits cannot change rounding */
		}
	}
	if (!any)
		return LSIM_EFORMAT;
	if (*p == 'e' || *p == 'E') {
		p++;
		bool eneg = false;
		if (*p == '+' || *p == '-')
			eneg = *p++ == '-';
		if (!is_digit(*p))
			return LSIM_EFORMAT;
		int64_t e = 0;
		for (; is_digit(*p); p++)
			if (e < 100000)
				e = e * 10 + (*p - '0');
		pos += eneg ? -e : e;
	}
	while (is_space(*p))
		p++;
	if (*p != '\0')
		return LSIM_EFORMAT;
	if (nd == 0) {
		*out = 0;
		return 0;
	}
	int64_t k = pos + scale; /* digits of D left of the unit point */
	if (k > 19)
		return LSIM_ERANGE;
	uint64_t r = 0;
	if (k == 0)
		r = dig[0] >= '5';
	for (int64_t i = 0; i < k; i++) {
		uint64_t dv = i < nd ? (uint64_t)(dig[i] - '0') : 0;
		if (r > (UINT64_MAX - dv) / 10)
			return LSIM_ERANGE;
		r = r * 10 + dv;
	}
	if (k > 0 && k < nd && dig[k] >= '5')
		r++;
	if (r > (uint64_t)INT64_MAX)
		return LSIM_ERANGE;
	*out = neg ? -(int64_t)r : (int64_t)r;
	return 0;
}

int64_t lsim_wl_days_from_civil(int64_t y, int m, int d)
{
	/* H. Hinnant, "chrono-Compatible Low-Level Date Algorithms" */
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t mp = m > 2 ? m - 3 : m + 9;
	int64_t doy = (153 * mp + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* Reads exactly n digits at *p into *v. */
static bool fixed_digits(const char **p, int n, int *v)
{
	int x = 0;
	for (int i = 0; i < n; i++) {
		if (!is_digit((*p)[i]))
			return false;
		x = x * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*v = x;
	return true;
}

static bool leap_year(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int lsim_wl_parse_datetime(const char *s, int64_t *out)
{
	static const int mdays[12] = {31, 28, 31, 30, 31, 30,
				      31, 31, 30, 31, 30, 31};
	const char *p = s;
	int y, mo, da, h, mi, se;
	while (is_space(*p))
		p++;
	if (!fixed_digits(&p, 4, &y) || *p++ != '-' ||
	    !fixed_digits(&p, 2, &mo) || *p++ != '-' ||
	    !fixed_digits(&p, 2, &da) || (*p != ' ' && *p != 'T'))
		return LSIM_EFORMAT;
	p++;
	if (!fixed_digits(&p, 2, &h) || *p++ != ':' ||
	    !fixed_digits(&p, 2, &mi) || *p++ != ':' ||
	    !fixed_digits(&p, 2, &se))
		return LSIM_EFORMAT;
	if (mo < 1 || mo > 12 || da < 1 ||
	    da > mdays[mo - 1] + (mo == 2 && leap_year(y)) || h > 23 ||
	    mi > 59 || se > 59)
		return LSIM_EFORMAT;
	int64_t frac = 0;
	if (*p == '.') {
		p++;
		int n = 0;
		for (; is_digit(*p); p++, n++) {
			if (n == 9)
				return LSIM_EFORMAT; /* more than ns precision */
			frac = frac * 10 + (*p - '0');
		}
		if (n == 0)
			return LSIM_EFORMAT;
		for (; n < 9; n++)
			frac *= 10;
	}
	int64_t off_s = 0;
	if (*p == 'Z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p++ == '-' ? -1 : 1, oh, om = 0;
		if (!fixed_digits(&p, 2, &oh))
			return LSIM_EFORMAT;
		if (*p == ':')
			p++;
		if (is_digit(*p) && !fixed_digits(&p, 2, &om))
			return LSIM_EFORMAT;
		if (oh > 23 || om > 59)
			return LSIM_EFORMAT;
		off_s = sign * (oh * 3600 + om * 60);
	}
	while (is_space(*p))
		p++;
	if (*p != '\0')
		return LSIM_EFORMAT;
	int64_t secs = lsim_wl_days_from_civil(y, mo, da) * 86400 +
		       h * 3600 + mi * 60 + se - off_s;
	int64_t ns;
	if (__builtin_mul_overflow(secs, (int64_t)1000000000, &ns) ||
	    __builtin_add_overflow(ns, frac, &ns))
		return LSIM_ERANGE;
	*out = ns;
	return 0;
}

/* ---- the CSV trace source ---- */

enum { COL_ARRIVAL, COL_PROMPT, COL_OUTPUT, N_COLS };

struct csv_reader {
	struct lsim_workload base;
	struct lsim_csv *csv;
	/* mapping */
	char *names[N_COLS];
	int idx[N_COLS];
	int need; /* fields a row must have */
	/* optional label columns: QoS class, model, tenant, LoRA adapter */
	char *label_name[LSIM_N_LABELS];
	int label_idx[LSIM_N_LABELS]; /* -1 without one */
	enum lsim_time_format fmt;
	bool have_first;
	lsim_time t0, prev;
	/* Mooncake's CSV layout: hash_ids (prefix-block ids, one per 512
	 * tokens, space-separated) and num_blocks (their count), or -1 */
	int hash_idx, nblocks_idx;
	uint64_t *hashes;
	size_t hash_cap;
};

/*
 * Parses a token count: 0 on success, 1 not an integer, 2 negative,
 * 3 too large.
 */
static int parse_count(const char *s, int64_t *v)
{
	while (is_space(*s))
		s++;
	bool neg = *s == '-';
	if (*s == '+' || *s == '-')
		s++;
	if (!is_digit(*s))
		return 1;
	int64_t x = 0;
	bool big = false;
	for (; is_digit(*s); s++) {
		x = x * 10 + (*s - '0');
		if (x > INT32_MAX) {
			big = true;
			x = INT32_MAX;
		}
	}
	while (is_space(*s))
		s++;
	if (*s != '\0')
		return 1;
	if (neg && x > 0)
		return 2;
	if (big)
		return 3;
	*v = x;
	return 0;
}

static int row_count(struct csv_reader *r, int which, const char *what,
		     int32_t *out, struct lsim_diag *d)
{
	static const char *const why[4] = {"", "is not a non-negative integer",
					   "is negative", "is too large"};
	int i = r->idx[which];
	const char *s = lsim_csv_field(r->csv, i);
	int64_t v = 0;
	int bad = parse_count(s, &v);
	if (bad)
		return lsim_diag_set(d, LSIM_EFORMAT, lsim_csv_path(r->csv),
				     lsim_csv_line(r->csv), lsim_csv_field_col(r->csv, i),
				     r->names[which], "%s token count '%s' %s", what, s,
				     why[bad]);
	*out = (int32_t)v;
	return 0;
}

/*
 * Mooncake's "hash_ids" column: the prompt's prefix-block ids, one per 512
 * tokens, separated by spaces (the JSONL layout's list, written out); an
 * empty field is a prompt with no ids. With a "num_blocks" column the count
 * must match it: a cell cut short would otherwise shorten the prefix
 * silently.
 */
static int row_hashes(struct csv_reader *r, struct lsim_req_spec *out,
		      struct lsim_diag *d)
{
	out->hashes = NULL;
	out->n_hashes = 0;
	out->hash_block_tokens = 0;
	if (r->hash_idx < 0)
		return 0;
	const char *path = lsim_csv_path(r->csv);
	int line = lsim_csv_line(r->csv);
	int col = lsim_csv_field_col(r->csv, r->hash_idx);
	const char *s = lsim_csv_field(r->csv, r->hash_idx);
	size_t n = 0;
	for (const char *p = s; *p;) {
		while (is_space(*p))
			p++;
		if (!*p)
			break;
		if (!is_digit(*p))
			return lsim_diag_set(d, LSIM_EFORMAT, path, line, col, "hash_ids",
					     "hash_ids[%zu] is not a non-negative integer "
					     "(ids are separated by spaces)", n);
		uint64_t id = 0;
		for (; is_digit(*p); p++) {
			unsigned dv = (unsigned)(*p - '0');
			if (id > (UINT64_MAX - 1 - dv) / 10)
				return lsim_diag_set(d, LSIM_EFORMAT, path, line, col,
						     "hash_ids",
						     "hash_ids[%zu] is 2^64 - 1 or more: ids must "
						     "be below 18446744073709551615", n);
			id = id * 10 + dv;
		}
		if (*p && !is_space(*p))
			return lsim_diag_set(d, LSIM_EFORMAT, path, line, col, "hash_ids",
					     "hash_ids[%zu] is not a non-negative integer "
					     "(ids are separated by spaces)", n);
		if (n >= (size_t)INT32_MAX / 2)
			return lsim_diag_set(d, LSIM_EFORMAT, path, line, col, "hash_ids",
					     "too many hash_ids");
		if (n == r->hash_cap) {
			size_t cap = r->hash_cap ? 2 * r->hash_cap : 64;
			uint64_t *q = realloc(r->hashes, cap * sizeof *q);
			if (!q)
				return lsim_diag_set(d, LSIM_ENOMEM, path, line, col,
						     "hash_ids", "out of memory");
			r->hashes = q;
			r->hash_cap = cap;
		}
		r->hashes[n++] = id;
	}
	if (r->nblocks_idx >= 0) {
		const char *nb = lsim_csv_field(r->csv, r->nblocks_idx);
		int64_t v = 0;
		if (parse_count(nb, &v) != 0 || v != (int64_t)n)
			return lsim_diag_set(d, LSIM_EFORMAT, path, line,
					     lsim_csv_field_col(r->csv, r->nblocks_idx),
					     "num_blocks",
					     "num_blocks is '%s' but hash_ids has %zu ids", nb, n);
	}
	out->hashes = n ? r->hashes : NULL;
	out->n_hashes = (int32_t)n;
	out->hash_block_tokens = n ? 512 : 0;
	return 0;
}

/* Reads and checks one record: 1, 0 at the end, or an error about it. */
static int csv_row(struct csv_reader *r, struct lsim_req_spec *out,
		   struct lsim_diag *d)
{
	int rc = lsim_csv_next(r->csv, d);
	if (rc <= 0)
		return rc;
	const char *path = lsim_csv_path(r->csv);
	int line = lsim_csv_line(r->csv), nf = lsim_csv_fields(r->csv);
	int ncol = lsim_csv_columns(r->csv);
	if (nf < r->need) {
		int missing = 0;
		for (int c = 0; c < N_COLS; c++)
			if (r->idx[c] >= nf)
				missing = c;
		return lsim_diag_set(d, LSIM_EFORMAT, path, line, 0, r->names[missing],
				     "row has %d fields; column '%s' is field %d", nf,
				     r->names[missing], r->idx[missing] + 1);
	}
	if (nf < ncol)
		return lsim_diag_set(d, LSIM_EFORMAT, path, line, 0,
				     lsim_csv_name(r->csv, nf),
				     "row has %d fields but the header has %d columns", nf,
				     ncol);
	if (nf > ncol)
		return lsim_diag_set(d, LSIM_EFORMAT, path, line,
				     lsim_csv_field_col(r->csv, ncol), "",
				     "row has %d fields but the header has %d columns; "
				     "field %d has no column",
				     nf, ncol, ncol + 1);
	int ia = r->idx[COL_ARRIVAL];
	int col = lsim_csv_field_col(r->csv, ia);
	const char *ts = lsim_csv_field(r->csv, ia);
	int64_t t = 0;
	switch (r->fmt) {
	case LSIM_TF_SECONDS: rc = lsim_wl_parse_decimal(ts, 9, &t); break;
	case LSIM_TF_MILLISECONDS: rc = lsim_wl_parse_decimal(ts, 6, &t); break;
	case LSIM_TF_DATETIME: rc = lsim_wl_parse_datetime(ts, &t); break;
	}
	if (rc != 0) {
		static const char *const expect[3] = {
			"a number of seconds", "a number of milliseconds",
			"YYYY-MM-DD HH:MM:SS[.fraction][Z|+HH:MM]"};
		return lsim_diag_set(d, LSIM_EFORMAT, path, line, col,
				     r->names[COL_ARRIVAL], "time '%s' %s (expected %s)",
				     ts, rc == LSIM_ERANGE ? "is out of range" : "is malformed",
				     expect[r->fmt]);
	}
	if (r->have_first && t < r->prev)
		return lsim_diag_set(d, LSIM_EFORMAT, path, line, col,
				     r->names[COL_ARRIVAL],
				     "time '%s' is earlier than the previous row's; rows must be in time order",
				     ts);
	if (r->have_first && r->t0 < 0 && t > INT64_MAX + r->t0)
		return lsim_diag_set(d, LSIM_EFORMAT, path, line, col,
				     r->names[COL_ARRIVAL],
				     "time '%s' is too far from the first row's", ts);
	rc = row_count(r, COL_PROMPT, "prompt", &out->prompt_tokens, d);
	if (rc == 0)
		rc = row_count(r, COL_OUTPUT, "output", &out->output_tokens, d);
	if (rc == 0)
		rc = row_hashes(r, out, d);
	if (rc != 0)
		return rc;
	if (out->prompt_tokens == 0)
		return lsim_diag_set(d, LSIM_EFORMAT, path, line,
				     lsim_csv_field_col(r->csv, r->idx[COL_PROMPT]),
				     r->names[COL_PROMPT],
				     "prompt token count is 0; a request needs at least one prompt token");
	/* the row is good: only now does it set the time origin and order */
	if (!r->have_first) {
		r->have_first = true;
		r->t0 = t;
	}
	r->prev = t;
	out->arrival = t - r->t0;
	out->src_path = path;
	out->src_line = line;
	out->src_col = lsim_csv_field_col(r->csv, r->idx[COL_PROMPT]);
	out->src_key = r->names[COL_PROMPT];
	const char **labels[LSIM_N_LABELS] = {&out->class_label, &out->model_label,
					       &out->tenant_label, &out->lora_label};
	for (int k = 0; k < LSIM_N_LABELS; k++)
		if (r->label_idx[k] >= 0)
			*labels[k] = lsim_csv_field(r->csv, r->label_idx[k]);
	return 1;
}

static int csv_next(struct lsim_workload *w, struct lsim_req_spec *out,
		    struct lsim_diag *d)
{
	struct csv_reader *r = (struct csv_reader *)w;
	int rc;
	do
		rc = csv_row(r, out, d);
	while (rc < 0 && lsim_wl_skip_line(w, rc, d));
	if (rc == 0 && !r->have_first) {
		/* a whole-file error, never skipped */
		if (w->skipped > 0)
			return lsim_diag_set(d, LSIM_EFORMAT, lsim_csv_path(r->csv),
					     lsim_csv_line(r->csv), 0, "workload.path",
					     "no valid data rows: all %llu were skipped",
					     (unsigned long long)w->skipped);
		return lsim_diag_set(d, LSIM_EFORMAT, lsim_csv_path(r->csv),
				     lsim_csv_line(r->csv), 0, "workload.path",
				     "no data rows after the header: the trace holds no requests");
	}
	return rc;
}

static void csv_destroy(struct lsim_workload *w)
{
	struct csv_reader *r = (struct csv_reader *)w;
	lsim_csv_close(r->csv);
	free(r->hashes);
	for (int c = 0; c < N_COLS; c++)
		free(r->names[c]);
	for (int k = 0; k < LSIM_N_LABELS; k++)
		free(r->label_name[k]);
	free(r);
}

static double csv_fraction(struct lsim_workload *w)
{
	return lsim_csv_fraction(((struct csv_reader *)w)->csv);
}

static const struct lsim_workload_ops csv_ops = {
	.next = csv_next,
	.destroy = csv_destroy,
	.fraction = csv_fraction,
};

int lsim_workload_csv_open(const char *path, const struct lsim_csv_map *map,
			   struct lsim_workload **out, struct lsim_diag *d)
{
	static const char *const keys[N_COLS] = {"workload.arrival_column",
						 "workload.prompt_column",
						 "workload.output_column"};
	if (!out)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "",
				     "lsim_workload_csv_open: NULL out");
	*out = NULL;
	if (!path || !map)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "",
				     "lsim_workload_csv_open: NULL argument");
	const char *cols[N_COLS] = {map->arrival_col, map->prompt_col,
				    map->output_col};
	for (int c = 0; c < N_COLS; c++)
		if (!cols[c] || !cols[c][0])
			return lsim_diag_set(d, LSIM_EINVAL, path, 0, 0, keys[c],
					     "no column name given");
	if (map->arrival_format != LSIM_TF_SECONDS &&
	    map->arrival_format != LSIM_TF_MILLISECONDS &&
	    map->arrival_format != LSIM_TF_DATETIME)
		return lsim_diag_set(d, LSIM_EINVAL, path, 0, 0,
				     "workload.time_format",
				     "unknown time format %d", (int)map->arrival_format);
	struct csv_reader *r = calloc(1, sizeof *r);
	if (!r)
		return lsim_diag_set(d, LSIM_ENOMEM, path, 0, 0, "", "out of memory");
	lsim_workload_init_base(&r->base, &csv_ops);
	r->fmt = map->arrival_format;
	static const char *const label_keys[LSIM_N_LABELS] = {
		"workload.class_column", "workload.model_column",
		"workload.tenant_column", "workload.lora_column"};
	const char *label_cols[LSIM_N_LABELS] = {map->class_col, map->model_col,
						 map->tenant_col, map->lora_col};
	int rc = 0;
	for (int k = 0; k < LSIM_N_LABELS; k++) {
		r->label_idx[k] = -1;
		if (label_cols[k] && label_cols[k][0] &&
		    !(r->label_name[k] = strdup(label_cols[k])))
			rc = lsim_diag_set(d, LSIM_ENOMEM, path, 0, 0, "", "out of memory");
	}
	for (int c = 0; c < N_COLS && rc == 0; c++)
		if (!(r->names[c] = strdup(cols[c])))
			rc = lsim_diag_set(d, LSIM_ENOMEM, path, 0, 0, "", "out of memory");
	if (rc == 0) {
		rc = lsim_csv_open(path, &r->csv, d);
		/* the file itself cannot be read: name the setting that gave it */
		if (rc != 0 && rc != LSIM_ENOMEM && d && d->line == 0)
			snprintf(d->key, sizeof d->key, "workload.path");
	}
	if (rc == 0)
		rc = lsim_csv_require(r->csv, (const char *const *)r->names, N_COLS,
				      r->idx, d);
	for (int k = 0; k < LSIM_N_LABELS && rc == 0; k++) {
		const char *cn = r->label_name[k];
		if (!cn)
			continue;
		rc = lsim_csv_require(r->csv, &cn, 1, &r->label_idx[k], d);
		if (rc != 0 && d)
			snprintf(d->key, sizeof d->key, "%s", label_keys[k]);
	}
	r->hash_idx = r->nblocks_idx = -1;
	if (rc == 0) {
		r->hash_idx = lsim_csv_column(r->csv, "hash_ids");
		if (r->hash_idx >= 0)
			r->nblocks_idx = lsim_csv_column(r->csv, "num_blocks");
	}
	for (int c = 0; c < N_COLS && rc == 0; c++)
		if (r->idx[c] + 1 > r->need)
			r->need = r->idx[c] + 1;
	for (int k = 0; k < LSIM_N_LABELS && rc == 0; k++)
		if (r->label_idx[k] + 1 > r->need)
			r->need = r->label_idx[k] + 1;
	if (rc != 0) {
		csv_destroy(&r->base);
		return rc;
	}
	*out = &r->base;
	return 0;
}
