/*
 * test_units.c - values with units: durations, sizes, bandwidths, power,
 * prices, and the rejection of malformed ones.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "config.h"

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
	assert_true(parse_ok(LSIM_K_TIME, "2") == 2e9); /* plain = seconds */
	assert_true(parse_ok(LSIM_K_TIME, "10us") == 1e4);
	assert_true(parse_ok(LSIM_K_TIME, "3 ns") == 3);
	assert_true(parse_ok(LSIM_K_TIME, "2min") == 120e9);
	assert_true(parse_ok(LSIM_K_TIME, "1h") == 3600e9);
}

static void test_bytes_bw(void **state)
{
	(void)state;
	assert_true(parse_ok(LSIM_K_BYTES, "80GB") == 80e9);
	assert_true(parse_ok(LSIM_K_BYTES, "24GiB") == 24.0 * 1073741824.0);
	assert_true(parse_ok(LSIM_K_BYTES, "512") == 512);
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
	assert_true(parse_ok(LSIM_K_PRICE, "4") == 4);
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
		cmocka_unit_test(test_bytes_bw),
		cmocka_unit_test(test_power_price),
		cmocka_unit_test(test_rejects),
		cmocka_unit_test(test_format_roundtrip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
