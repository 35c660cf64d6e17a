/*
 * csv.c - the streaming RFC 4180 CSV reader declared in csv.h: a small
 * state machine over getline() lines that joins the lines of a quoted
 * field, keeps the current record's fields NUL-terminated back to back in
 * one buffer, and remembers where each field starts.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "kernel/csv.h"
#include "kernel/infile.h"

struct lsim_csv {
	FILE *f;
	double size; /* bytes of a regular file, else 0 */
	char *path;
	char *line; /* getline buffer */
	size_t line_cap;
	int lineno;   /* physical lines read */
	int rec_line; /* first physical line of the current record */
	/* the current record: NUL-terminated fields back to back in buf */
	char *buf;
	size_t buf_len, buf_cap;
	size_t *starts;
	int *cols; /* 1-based column of each field on its physical line */
	int n_fields, fields_cap;
	/* the header */
	char **names;
	int n_names;
	int head_line;
};

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

static int nomem(const struct lsim_csv *r, struct lsim_diag *d)
{
	return lsim_diag_set(d, LSIM_ENOMEM, r->path ? r->path : "", 0, 0, "",
			     "out of memory");
}

static int put_char(struct lsim_csv *r, char c)
{
	if (r->buf_len == r->buf_cap) {
		size_t n = r->buf_cap ? 2 * r->buf_cap : 256;
		char *q = realloc(r->buf, n);
		if (!q)
			return LSIM_ENOMEM;
		r->buf = q;
		r->buf_cap = n;
	}
	r->buf[r->buf_len++] = c;
	return 0;
}

static int begin_field(struct lsim_csv *r, int col)
{
	if (r->n_fields == r->fields_cap) {
		if (r->fields_cap > (1 << 24))
			return LSIM_ENOMEM; /* 16 M fields: not a table */
		int n = r->fields_cap ? 2 * r->fields_cap : 16;
		size_t *st = realloc(r->starts, (size_t)n * sizeof *st);
		if (!st)
			return LSIM_ENOMEM;
		r->starts = st;
		int *co = realloc(r->cols, (size_t)n * sizeof *co);
		if (!co)
			return LSIM_ENOMEM;
		r->cols = co;
		r->fields_cap = n;
	}
	r->starts[r->n_fields] = r->buf_len;
	r->cols[r->n_fields] = col;
	r->n_fields++;
	return 0;
}

static bool blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!is_space(s[i]) && s[i] != '\r')
			return false;
	return true;
}

enum { ST_START, ST_PLAIN, ST_QUOTED, ST_AFTER_QUOTE };

/* Feeds one character of a record to the state machine. */
static int feed(struct lsim_csv *r, int *st, char c, size_t i, struct lsim_diag *d)
{
	switch (*st) {
	case ST_START:
		if (c == '"') {
			*st = ST_QUOTED;
			return 0;
		}
		*st = ST_PLAIN;
		/* fall through */
	case ST_PLAIN:
		break;
	case ST_QUOTED:
		if (c == '"') {
			*st = ST_AFTER_QUOTE;
			return 0;
		}
		return put_char(r, c);
	case ST_AFTER_QUOTE:
		if (c == '"') {
			*st = ST_QUOTED;
			return put_char(r, '"');
		}
		if (c != ',')
			return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno,
					     (int)i + 1, "",
					     "unexpected '%c' after a closing quote", c);
		break;
	}
	if (c != ',')
		return put_char(r, c);
	*st = ST_START;
	int rc = put_char(r, '\0');
	return rc ? rc : begin_field(r, (int)i + 2);
}

/* Reads the next non-blank record: 1, 0 at the end of the file, or an error. */
static int read_record(struct lsim_csv *r, struct lsim_diag *d)
{
	int st = ST_START;
	bool started = false;
	r->n_fields = 0;
	r->buf_len = 0;
	for (;;) {
		ssize_t n;
		int err = lsim_read_line(r->f, &r->line, &r->line_cap, &n, r->path,
					 r->lineno + 1, d);
		if (err != 0)
			return err;
		if (n < 0) {
			if (started)
				return lsim_diag_set(d, LSIM_EFORMAT, r->path,
						     r->rec_line, 0, "",
						     "quoted field not closed before the end of the file");
			return 0;
		}
		r->lineno++;
		char *s = r->line;
		size_t len = (size_t)n;
		if (r->lineno == 1 && len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) {
			s += 3; /* UTF-8 byte order mark */
			len -= 3;
		}
		if (len > 0 && s[len - 1] == '\n')
			len--;
		if (len > 0 && s[len - 1] == '\r')
			len--;
		if (!started) {
			if (blank(s, len))
				continue;
			started = true;
			r->rec_line = r->lineno;
			if (begin_field(r, 1) != 0)
				return nomem(r, d);
		}
		for (size_t i = 0; i < len; i++) {
			if (s[i] == '\0')
				return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->lineno,
						     (int)i + 1, "", "NUL byte in the file");
			int rc = feed(r, &st, s[i], i, d);
			if (rc == LSIM_ENOMEM)
				return nomem(r, d);
			if (rc != 0)
				return rc;
		}
		if (st == ST_QUOTED) { /* the field goes on on the next line */
			if (put_char(r, '\n') != 0)
				return nomem(r, d);
			continue;
		}
		return put_char(r, '\0') != 0 ? nomem(r, d) : 1;
	}
}

/* Copies s without surrounding spaces into a new string. */
static char *trimmed(const char *s)
{
	while (is_space(*s))
		s++;
	size_t n = strlen(s);
	while (n > 0 && is_space(s[n - 1]))
		n--;
	char *t = malloc(n + 1);
	if (t) {
		memcpy(t, s, n);
		t[n] = '\0';
	}
	return t;
}

void lsim_csv_close(struct lsim_csv *r)
{
	if (!r)
		return;
	if (r->f)
		fclose(r->f);
	for (int i = 0; i < r->n_names; i++)
		free(r->names[i]);
	free(r->names);
	free(r->path);
	free(r->line);
	free(r->buf);
	free(r->starts);
	free(r->cols);
	free(r);
}

/* Keeps the record just read as the header. */
static int keep_header(struct lsim_csv *r, struct lsim_diag *d)
{
	r->names = calloc((size_t)r->n_fields, sizeof *r->names);
	if (!r->names)
		return nomem(r, d);
	for (; r->n_names < r->n_fields; r->n_names++)
		if (!(r->names[r->n_names] = trimmed(lsim_csv_field(r, r->n_names))))
			return nomem(r, d);
	r->head_line = r->rec_line;
	return 0;
}

int lsim_csv_open(const char *path, struct lsim_csv **out, struct lsim_diag *d)
{
	if (!out)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "", "lsim_csv_open: NULL out");
	*out = NULL;
	if (!path)
		return lsim_diag_set(d, LSIM_EINVAL, "", 0, 0, "", "lsim_csv_open: NULL path");
	struct lsim_csv *r = calloc(1, sizeof *r);
	if (!r || !(r->path = strdup(path))) {
		free(r);
		return lsim_diag_set(d, LSIM_ENOMEM, path, 0, 0, "", "out of memory");
	}
	int rc = lsim_open_input(path, "", &r->f, d);
	struct stat st;
	if (rc < 0) {
		/* a FIFO or a device: d says so */
	} else if (!r->f) {
		int e = errno;
		rc = lsim_diag_set(d, e == ENOENT ? LSIM_ENOENT : LSIM_EIO, path, 0, 0, "",
				   "cannot open: %s", e ? strerror(e) : "unknown error");
	} else if (fstat(fileno(r->f), &st) == 0 && S_ISDIR(st.st_mode)) {
		rc = lsim_diag_set(d, LSIM_EINVAL, path, 0, 0, "", "is a folder, not a file");
	} else {
		r->size = S_ISREG(st.st_mode) ? (double)st.st_size : 0;
		rc = read_record(r, d);
		if (rc == 0)
			rc = lsim_diag_set(d, LSIM_EFORMAT, path, 1, 0, "",
					   "empty file: a header row is required");
		else if (rc == 1)
			rc = keep_header(r, d);
	}
	if (rc != 0) {
		lsim_csv_close(r);
		return rc;
	}
	*out = r;
	return 0;
}

double lsim_csv_fraction(const struct lsim_csv *r)
{
	return lsim_file_fraction(r->f, r->size);
}

const char *lsim_csv_path(const struct lsim_csv *r)
{
	return r->path;
}

int lsim_csv_columns(const struct lsim_csv *r)
{
	return r->n_names;
}

const char *lsim_csv_name(const struct lsim_csv *r, int i)
{
	return i >= 0 && i < r->n_names ? r->names[i] : NULL;
}

int lsim_csv_column(const struct lsim_csv *r, const char *name)
{
	for (int i = 0; i < r->n_names; i++)
		if (strcmp(r->names[i], name) == 0)
			return i;
	return -1;
}

int lsim_csv_require(const struct lsim_csv *r, const char *const *names, int n,
		     int *idx, struct lsim_diag *d)
{
	for (int c = 0; c < n; c++) {
		idx[c] = lsim_csv_column(r, names[c]);
		if (idx[c] >= 0)
			continue;
		char list[400] = "";
		size_t len = 0;
		for (int j = 0; j < r->n_names && len < sizeof list; j++)
			len += (size_t)snprintf(list + len, sizeof list - len, "%s%s",
						j ? ", " : "", r->names[j]);
		return lsim_diag_set(d, LSIM_EFORMAT, r->path, r->head_line, 0, names[c],
				     "no column '%s' in the header (columns: %s)", names[c],
				     list);
	}
	return 0;
}

int lsim_csv_next(struct lsim_csv *r, struct lsim_diag *d)
{
	return read_record(r, d);
}

int lsim_csv_fields(const struct lsim_csv *r)
{
	return r->n_fields;
}

const char *lsim_csv_field(const struct lsim_csv *r, int i)
{
	return i >= 0 && i < r->n_fields ? r->buf + r->starts[i] : NULL;
}

const char *lsim_csv_field_trim(struct lsim_csv *r, int i)
{
	if (i < 0 || i >= r->n_fields)
		return NULL;
	char *s = r->buf + r->starts[i];
	size_t n = strlen(s);
	while (n > 0 && is_space(s[n - 1]))
		s[--n] = '\0';
	while (is_space(*s))
		s++;
	r->starts[i] = (size_t)(s - r->buf);
	return s;
}

int lsim_csv_line(const struct lsim_csv *r)
{
	return r->rec_line;
}

int lsim_csv_field_col(const struct lsim_csv *r, int i)
{
	return i >= 0 && i < r->n_fields ? r->cols[i] : 0;
}
