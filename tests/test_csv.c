/*
 * test_csv.c - unit tests of the shared streaming CSV reader (sim/kernel/csv.c):
 * quoted fields holding commas, "" escapes and line breaks, CRLF ends, a
 * byte-order mark, blank lines, the line and column of every record and
 * field (also after a multi-line field), short and long rows, trimming,
 * buffer growth, and the errors: missing column (header line, column
 * name), empty file, unclosed quote, text after a quote, NUL byte, no file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel/csv.h"

/* A temporary file holding n bytes of text (NULs allowed). */
struct tmp {
	char path[1024];
};

static void tmp_write(struct tmp *t, const char *text, size_t n)
{
	const char *base = getenv("LSIM_BUILD_ROOT");
	snprintf(t->path, sizeof t->path, "%s/test_csv_XXXXXX", base ? base : ".");
	int fd = mkstemp(t->path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, n), (ssize_t)n);
	assert_int_equal(close(fd), 0);
}

static struct lsim_csv *open_text(struct tmp *t, const char *text)
{
	tmp_write(t, text, strlen(text));
	struct lsim_csv *r = NULL;
	struct lsim_diag d;
	memset(&d, 0, sizeof d);
	int rc = lsim_csv_open(t->path, &r, &d);
	if (rc != 0)
		fail_msg("%s:%d:%d: %s", d.file, d.line, d.col, d.msg);
	assert_non_null(r);
	return r;
}

/* Reads the next record, which must exist, start on line and have nf fields. */
static void next_record(struct lsim_csv *r, int line, int nf)
{
	struct lsim_diag d;
	memset(&d, 0, sizeof d);
	int rc = lsim_csv_next(r, &d);
	if (rc != 1)
		fail_msg("rc %d: %s:%d:%d: %s", rc, d.file, d.line, d.col, d.msg);
	assert_int_equal(lsim_csv_line(r), line);
	assert_int_equal(lsim_csv_fields(r), nf);
}

static void test_rfc4180(void **state)
{
	(void)state;
	static const char text[] =
		"\xEF\xBB\xBF\" id\",name,note\r\n" /* 1: BOM, quoted name */
		"\r\n"				    /* 2: blank */
		"1,\"a, b\",\"say \"\"hi\"\"\"\r\n" /* 3 */
		"   \t\r\n"			    /* 4: blank */
		"2,\"multi\r\n"			    /* 5: a field over 3 lines */
		"line\n"			    /* 6 */
		"field\",x\r\n"			    /* 7 */
		"3,,\"\"\n"			    /* 8: empty fields */
		"4,last,\"end\"";		    /* 9: no final newline */
	struct tmp t;
	struct lsim_csv *r = open_text(&t, text);
	assert_string_equal(lsim_csv_path(r), t.path);
	assert_int_equal(lsim_csv_columns(r), 3);
	assert_string_equal(lsim_csv_name(r, 0), "id");
	assert_string_equal(lsim_csv_name(r, 1), "name");
	assert_string_equal(lsim_csv_name(r, 2), "note");
	assert_null(lsim_csv_name(r, 3));
	assert_null(lsim_csv_name(r, -1));
	assert_int_equal(lsim_csv_column(r, "note"), 2);
	assert_int_equal(lsim_csv_column(r, "id"), 0);
	assert_int_equal(lsim_csv_column(r, " id"), -1);
	assert_int_equal(lsim_csv_column(r, "x"), -1);
	assert_int_equal(lsim_csv_line(r), 1);

	next_record(r, 3, 3);
	assert_string_equal(lsim_csv_field(r, 0), "1");
	assert_string_equal(lsim_csv_field(r, 1), "a, b");
	assert_string_equal(lsim_csv_field(r, 2), "say \"hi\"");
	assert_int_equal(lsim_csv_field_col(r, 0), 1);
	assert_int_equal(lsim_csv_field_col(r, 1), 3);
	assert_int_equal(lsim_csv_field_col(r, 2), 10);
	assert_null(lsim_csv_field(r, 3));
	assert_null(lsim_csv_field(r, -1));
	assert_int_equal(lsim_csv_field_col(r, 3), 0);

	next_record(r, 5, 3);
	assert_string_equal(lsim_csv_field(r, 0), "2");
	assert_string_equal(lsim_csv_field(r, 1), "multi\nline\nfield");
	assert_int_equal(lsim_csv_field_col(r, 1), 3);
	/* "x" follows `field",` on the record's third physical line */
	assert_string_equal(lsim_csv_field(r, 2), "x");
	assert_int_equal(lsim_csv_field_col(r, 2), 8);

	/* line numbers go on counting the lines inside the quoted field */
	next_record(r, 8, 3);
	assert_string_equal(lsim_csv_field(r, 0), "3");
	assert_string_equal(lsim_csv_field(r, 1), "");
	assert_string_equal(lsim_csv_field(r, 2), "");
	assert_int_equal(lsim_csv_field_col(r, 2), 4);

	next_record(r, 9, 3);
	assert_string_equal(lsim_csv_field(r, 1), "last");
	assert_string_equal(lsim_csv_field(r, 2), "end");

	struct lsim_diag d;
	assert_int_equal(lsim_csv_next(r, &d), 0);
	assert_int_equal(lsim_csv_next(r, &d), 0);
	assert_int_equal(lsim_csv_line(r), 9);
	lsim_csv_close(r);
	unlink(t.path);
}

static void test_short_and_long_rows(void **state)
{
	(void)state;
	struct tmp t;
	struct lsim_csv *r = open_text(&t, "a,b,c\n1,2\n\n1,2,3,4\n5\n");
	next_record(r, 2, 2);
	assert_string_equal(lsim_csv_field(r, 1), "2");
	assert_null(lsim_csv_field(r, 2));
	assert_int_equal(lsim_csv_field_col(r, 2), 0);
	next_record(r, 4, 4);
	assert_string_equal(lsim_csv_field(r, 3), "4");
	assert_int_equal(lsim_csv_field_col(r, 3), 7);
	next_record(r, 5, 1);
	assert_string_equal(lsim_csv_field(r, 0), "5");
	assert_null(lsim_csv_field(r, 1));
	lsim_csv_close(r);
	unlink(t.path);

	/* a header alone: no records, and the line stays the header's */
	r = open_text(&t, "a,b\n\n\n");
	struct lsim_diag d;
	assert_int_equal(lsim_csv_next(r, &d), 0);
	assert_int_equal(lsim_csv_line(r), 1);
	lsim_csv_close(r);
	unlink(t.path);
}

static void test_require(void **state)
{
	(void)state;
	struct tmp t;
	struct lsim_csv *r = open_text(&t, "a, b ,c\n1,2,3\n");
	const char *const ok[3] = {"c", "b", "a"};
	int idx[3] = {-5, -5, -5};
	struct lsim_diag d;
	memset(&d, 0, sizeof d);
	assert_int_equal(lsim_csv_require(r, ok, 3, idx, &d), 0);
	assert_int_equal(idx[0], 2);
	assert_int_equal(idx[1], 1);
	assert_int_equal(idx[2], 0);

	const char *const bad[3] = {"a", "zz", "c"};
	assert_int_equal(lsim_csv_require(r, bad, 3, idx, &d), LSIM_EFORMAT);
	assert_string_equal(d.file, t.path);
	assert_int_equal(d.line, 1);
	assert_int_equal(d.col, 0);
	assert_string_equal(d.key, "zz");
	assert_non_null(strstr(d.msg, "'zz'"));
	assert_non_null(strstr(d.msg, "a, b, c")); /* the header's columns */
	/* records are unaffected by the failed lookup */
	next_record(r, 2, 3);
	assert_string_equal(lsim_csv_field(r, 2), "3");
	lsim_csv_close(r);
	unlink(t.path);

	/* blank lines before the header: the error names the header's line */
	r = open_text(&t, "\n \n\"x\",y\n");
	const char *const miss[1] = {"z"};
	assert_int_equal(lsim_csv_require(r, miss, 1, idx, &d), LSIM_EFORMAT);
	assert_int_equal(d.line, 3);
	assert_string_equal(d.key, "z");
	lsim_csv_close(r);
	unlink(t.path);
}

static void test_trim_and_growth(void **state)
{
	(void)state;
	struct tmp t;
	/* 40 fields, one of 1000 characters: buffers grow past their first size */
	char text[2400];
	size_t n = 0;
	for (int i = 0; i < 40; i++)
		n += (size_t)snprintf(text + n, sizeof text - n, "%sh%d", i ? "," : "", i);
	n += (size_t)snprintf(text + n, sizeof text - n, "\n  x ,\" y \",");
	for (int i = 0; i < 1000; i++)
		text[n++] = (char)('a' + i % 26);
	for (int i = 3; i < 40; i++)
		n += (size_t)snprintf(text + n, sizeof text - n, ",%d", i);
	text[n++] = '\n';
	text[n] = '\0';
	struct lsim_csv *r = open_text(&t, text);
	assert_int_equal(lsim_csv_columns(r), 40);
	assert_int_equal(lsim_csv_column(r, "h39"), 39);
	next_record(r, 2, 40);
	assert_string_equal(lsim_csv_field(r, 0), "  x ");
	assert_string_equal(lsim_csv_field_trim(r, 0), "x");
	assert_string_equal(lsim_csv_field(r, 0), "x");
	assert_string_equal(lsim_csv_field_trim(r, 0), "x"); /* idempotent */
	assert_int_equal(lsim_csv_field_col(r, 0), 1);
	assert_string_equal(lsim_csv_field(r, 1), " y ");
	assert_string_equal(lsim_csv_field_trim(r, 1), "y");
	assert_int_equal(lsim_csv_field_col(r, 1), 6);
	assert_null(lsim_csv_field_trim(r, 40));
	const char *big = lsim_csv_field(r, 2);
	assert_int_equal(strlen(big), 1000);
	assert_int_equal(big[0], 'a');
	assert_int_equal(big[999], 'a' + 999 % 26);
	assert_int_equal(lsim_csv_field_col(r, 2), 12);
	assert_string_equal(lsim_csv_field(r, 39), "39");
	/* 12 + 1000 + ",3" .. ",9" (7 x 2) + ",10" .. ",38" (29 x 3) + 1 */
	assert_int_equal(lsim_csv_field_col(r, 39), 1114);
	lsim_csv_close(r);
	unlink(t.path);
}

/* Opens text (n bytes) and reads it to the end; returns the first error. */
static int read_all(const char *text, size_t n, struct lsim_diag *d, struct tmp *t)
{
	tmp_write(t, text, n);
	struct lsim_csv *r = NULL;
	memset(d, 0, sizeof *d);
	int rc = lsim_csv_open(t->path, &r, d);
	if (rc == 0) {
		while ((rc = lsim_csv_next(r, d)) == 1)
			;
	} else {
		assert_null(r);
	}
	lsim_csv_close(r);
	unlink(t->path);
	return rc;
}

static void test_errors(void **state)
{
	(void)state;
	struct tmp t;
	struct lsim_diag d;

	assert_int_equal(read_all("", 0, &d, &t), LSIM_EFORMAT);
	assert_int_equal(d.line, 1);
	assert_string_equal(d.file, t.path);
	assert_int_equal(read_all("\n \r\n\t\n", 6, &d, &t), LSIM_EFORMAT);
	assert_int_equal(d.line, 1);

	/* a quote opened on line 3 and never closed */
	static const char open_quote[] = "a,b\n1,2\n3,\"x\ny\n\n";
	assert_int_equal(read_all(open_quote, strlen(open_quote), &d, &t), LSIM_EFORMAT);
	assert_int_equal(d.line, 3);
	assert_int_equal(d.col, 0);

	/* text after a closing quote: line 3, the 'y' at column 6 */
	static const char after[] = "a,b\n1,2\n3,\"x\"y\n";
	assert_int_equal(read_all(after, strlen(after), &d, &t), LSIM_EFORMAT);
	assert_int_equal(d.line, 3);
	assert_int_equal(d.col, 6);
	assert_string_equal(d.key, "");

	/* a NUL byte on line 2, column 3 */
	static const char nul[] = "a,b\n1,\0x\n";
	assert_int_equal(read_all(nul, sizeof nul - 1, &d, &t), LSIM_EFORMAT);
	assert_int_equal(d.line, 2);
	assert_int_equal(d.col, 3);

	/* the same in the header */
	assert_int_equal(read_all("\"a\"b\n1\n", 7, &d, &t), LSIM_EFORMAT);
	assert_int_equal(d.line, 1);
	assert_int_equal(d.col, 4);

	/* no such file */
	struct lsim_csv *r = (struct lsim_csv *)&r;
	memset(&d, 0, sizeof d);
	assert_int_equal(lsim_csv_open("no/such/file.csv", &r, &d), LSIM_ENOENT);
	assert_null(r);
	assert_string_equal(d.file, "no/such/file.csv");
	assert_int_equal(d.line, 0);
	assert_string_equal(d.key, "");
	assert_true(d.msg[0] != '\0');
	assert_int_equal(lsim_csv_open(NULL, &r, &d), LSIM_EINVAL);
	assert_int_equal(lsim_csv_open("x.csv", NULL, NULL), LSIM_EINVAL);
	lsim_csv_close(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc4180),
		cmocka_unit_test(test_short_and_long_rows),
		cmocka_unit_test(test_require),
		cmocka_unit_test(test_trim_and_growth),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
