/*
 * test_units.c - values with units: durations, sizes, bandwidths, power,
 * prices, and the rejection of malformed ones and of bare numbers where
 * a unit is needed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <math.h>

#include "kernel/config.h"
#include "llmsim/llmsim.h"

static double parse_ok(enum lsim_ktype t, const char *s)
{
	double v = -1;
	const char *why = NULL;
	assert_int_equal(lsim_units_parse(t, s, &v, &why), 0);
	return v;
}

static void test_time(void **state)
{
	(void)state;
	assert_true(parse_ok(LSIM_K_TIME, "250ms") == 250e6);
	assert_true(parse_ok(LSIM_K_TIME, "1.5s") == 1.5e9);
	assert_true(parse_ok(LSIM_K_TIME, "0") == 0); /* 0 needs no unit */
	assert_true(parse_ok(LSIM_K_TIME, "10us") == 1e4);
	assert_true(parse_ok(LSIM_K_TIME, "3 ns") == 3);
	assert_true(parse_ok(LSIM_K_TIME, "2min") == 120e9);
	assert_true(parse_ok(LSIM_K_TIME, "1h") == 3600e9);
}

/* Seconds to ns rounds as llround does (half away from zero), without
 * calling it: special cases, then a million values of four kinds. */
static void test_time_from_s(void **state)
{
	(void)state;
	assert_int_equal(lsim_time_from_s(2.5e-9), 3);
	assert_int_equal(lsim_time_from_s(-2.5e-9), -3);
	assert_int_equal(lsim_time_from_s(0.5e-9), 1);
	assert_int_equal(lsim_time_from_s(0.49999999999999994e-9), 0);
	assert_int_equal(lsim_time_from_s(1.0e-9 * 4503599627370495.5), 4503599627370496);
	assert_int_equal(lsim_time_from_s(-0.0), 0);
	uint64_t s = 88172645463325252u;
	int bad = 0;
	for (int n = 0; n < 1000000; n++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		double u = (double)(s >> 11) / 9007199254740992.0, x;
		switch (n % 4) {
		case 0: x = u * 1e4; break;		/* up to 10^4 s */
		case 1: x = (u - 0.5) * 1e-3; break;	/* around 0 */
		case 2: x = (double)((int64_t)(s >> 20) - (INT64_C(1) << 43)) * 0.5e-9;
			break;				/* exact half ns */
		default: x = (u - 0.5) * 1.8e10; break; /* up to 9e18 ns */
		}
		bad += lsim_time_from_s(x) != (lsim_time)llround(x * 1e9);
	}
	assert_int_equal(bad, 0);
}

static void test_bytes_bw(void **state)
{
	(void)state;
	assert_true(parse_ok(LSIM_K_BYTES, "80GB") == 80e9);
	assert_true(parse_ok(LSIM_K_BYTES, "24GiB") == 24.0 * 1073741824.0);
	assert_true(parse_ok(LSIM_K_BYTES, "512B") == 512);
	assert_true(parse_ok(LSIM_K_BW, "0") == 0);
	assert_true(parse_ok(LSIM_K_BW, "0.0") == 0);
	assert_true(parse_ok(LSIM_K_BW, "64GB/s") == 64e9);
	assert_true(parse_ok(LSIM_K_BW, "100Gb/s") == 12.5e9);
	assert_true(parse_ok(LSIM_K_BW, "400Gbps") == 50e9);
	assert_true(parse_ok(LSIM_K_BW, "1GiB/s") == 1073741824.0);
}

static void test_power_price(void **state)
{
	(void)state;
	assert_true(parse_ok(LSIM_K_POWER, "700W") == 700);
	assert_true(parse_ok(LSIM_K_POWER, "1.2kW") == 1200);
	assert_true(parse_ok(LSIM_K_PRICE, "$2.5/h") == 2.5);
	assert_true(parse_ok(LSIM_K_PRICE, "$0.001/s") == 3.6);
	assert_true(parse_ok(LSIM_K_PRICE, "$0") == 0);
	assert_true(parse_ok(LSIM_K_INT, "42") == 42);
}

static void test_rejects(void **state)
{
	(void)state;
	double v;
	const char *why = NULL;
	assert_int_equal(lsim_units_parse(LSIM_K_TIME, "250 parsecs", &v, &why), LSIM_EINVAL);
	assert_non_null(strstr(why, "time unit"));
	assert_int_equal(lsim_units_parse(LSIM_K_BYTES, "GB", &v, &why), LSIM_EINVAL);
	assert_int_equal(lsim_units_parse(LSIM_K_INT, "1.5", &v, &why), LSIM_EINVAL);
	assert_int_equal(lsim_units_parse(LSIM_K_DOUBLE, "3ms", &v, &why), LSIM_EINVAL);
	assert_int_equal(lsim_units_parse(LSIM_K_BW, "", &v, &why), LSIM_EINVAL);
	assert_int_equal(lsim_units_parse(LSIM_K_BW, "nan", &v, &why), LSIM_EINVAL);
	assert_int_equal(lsim_units_parse(LSIM_K_POWER, "1e999W", &v, &why), LSIM_EINVAL);
}

/* A dimensioned value other than 0 says its unit: the bare number is
 * refused, with a hint of what to write; plain numbers and integers stay
 * plain. */
static void test_no_unit(void **state)
{
	(void)state;
	static const struct {
		enum lsim_ktype t;
		const char *text, *hint;
	} cases[] = {
		{LSIM_K_BW, "400", "write 400GB/s or 400Gb/s"},
		{LSIM_K_BW, " 1e9 ", "write 1e9GB/s or 1e9Gb/s"},
		{LSIM_K_TIME, "2", "write 2s or 2ms"},
		{LSIM_K_TIME, "-1", "write -1s or -1ms"},
		{LSIM_K_BYTES, "4096", "write 4096GB, 4096GiB or 4096B"},
		{LSIM_K_POWER, "700", "write 700W or 700kW"},
		{LSIM_K_PRICE, "2.5", "write $2.5/h"},
		{LSIM_K_PRICE, "$2.5", "write $2.5/h"},
		{LSIM_K_PRICE, "4/h", "write $4/h"}, /* no currency */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		double v;
		const char *why = NULL;
		char hint[96] = "";
		assert_int_equal(lsim_units_parse(cases[i].t, cases[i].text, &v, &why),
				 LSIM_EINVAL);
		assert_non_null(strstr(why, "no "));
		assert_true(lsim_units_missing(cases[i].t, cases[i].text, hint, sizeof hint));
		assert_string_equal(hint, cases[i].hint);
	}
	char hint[96] = "";
	/* not a missing unit: 0, a unit given, a wrong unit, no number */
	assert_false(lsim_units_missing(LSIM_K_BW, "0", hint, sizeof hint));
	assert_false(lsim_units_missing(LSIM_K_BW, "400GB/s", hint, sizeof hint));
	assert_false(lsim_units_missing(LSIM_K_TIME, "3 parsecs", hint, sizeof hint));
	assert_false(lsim_units_missing(LSIM_K_TIME, "fast", hint, sizeof hint));
	assert_false(lsim_units_missing(LSIM_K_DOUBLE, "3", hint, sizeof hint));
	assert_false(lsim_units_missing(LSIM_K_INT, "3", hint, sizeof hint));
	assert_string_equal(hint, "");
}

static void test_format_roundtrip(void **state)
{
	(void)state;
	char buf[64];
	lsim_units_format(LSIM_K_TIME, 250e6, buf, sizeof buf);
	assert_string_equal(buf, "250ms");
	assert_true(parse_ok(LSIM_K_TIME, buf) == 250e6);
	lsim_units_format(LSIM_K_BW, 3.35e12, buf, sizeof buf);
	assert_true(parse_ok(LSIM_K_BW, buf) == 3.35e12);
	lsim_units_format(LSIM_K_PRICE, 2.5, buf, sizeof buf);
	assert_string_equal(buf, "$2.5/h");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time),
		cmocka_unit_test(test_time_from_s),
		cmocka_unit_test(test_bytes_bw),
		cmocka_unit_test(test_power_price),
		cmocka_unit_test(test_rejects),
		cmocka_unit_test(test_no_unit),
		cmocka_unit_test(test_format_roundtrip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
