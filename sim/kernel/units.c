/*
 * units.c - values with units in configuration text: durations, bytes,
 * bandwidths, power and prices, converted to SI (ns for durations).
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kernel/config.h"

struct unit {
	const char *name;
	double factor;
};

static const struct unit time_units[] = {
	{"ns", 1.0},	    {"us", 1e3},	 {"ms", 1e6},
	{"s", 1e9},	    {"sec", 1e9},	 {"min", 60e9},
	{"h", 3600e9},	    {"", 1e9},
};

static const struct unit byte_units[] = {
	{"B", 1.0},	  {"KB", 1e3},		{"MB", 1e6},
	{"GB", 1e9},	  {"TB", 1e12},		{"KiB", 1024.0},
	{"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
	{"kB", 1e3},	  {"", 1.0},
};

static const struct unit bw_units[] = {
	{"B/s", 1.0},	{"KB/s", 1e3},	 {"MB/s", 1e6},	  {"GB/s", 1e9},
	{"TB/s", 1e12}, {"KiB/s", 1024.0}, {"MiB/s", 1048576.0},
	{"GiB/s", 1073741824.0}, {"bps", 0.125}, {"Kbps", 125.0},
	{"Mbps", 125e3}, {"Gbps", 125e6}, {"Tbps", 125e9},
	{"Gb/s", 125e6}, {"Mb/s", 125e3}, {"Tb/s", 125e9}, {"", 1.0},
};

static const struct unit power_units[] = {
	{"W", 1.0}, {"kW", 1e3}, {"MW", 1e6}, {"mW", 1e-3}, {"", 1.0},
};

static const struct unit price_units[] = {
	{"/h", 1.0}, {"/hr", 1.0}, {"/hour", 1.0}, {"/min", 60.0},
	{"/s", 3600.0}, {"", 1.0},
};

static int find_unit(const struct unit *u, size_t n, const char *suffix,
		     double *factor)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(u[i].name, suffix) == 0) {
			*factor = u[i].factor;
			return 0;
		}
	}
	return -1;
}

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static const char why_no_unit[] = "no unit";
static const char why_no_time_unit[] = "no time unit (write $N/h)";
static const char why_no_currency[] = "no currency";

static bool dimensioned(enum lsim_ktype t)
{
	return t == LSIM_K_TIME || t == LSIM_K_BYTES || t == LSIM_K_BW ||
	       t == LSIM_K_POWER || t == LSIM_K_PRICE;
}

bool lsim_units_missing(enum lsim_ktype t, const char *text, char *hint,
			size_t size)
{
	double v;
	const char *why = NULL;
	if (!dimensioned(t) || !text ||
	    lsim_units_parse(t, text, &v, &why) == 0 ||
	    (why != why_no_unit && why != why_no_time_unit && why != why_no_currency))
		return false;
	/* the number as written, without blanks and a leading '$' */
	while (isspace((unsigned char)*text))
		text++;
	if (*text == '$')
		text++;
	char num[64];
	size_t len = strlen(text);
	while (len > 0 && isspace((unsigned char)text[len - 1]))
		len--;
	if (len >= sizeof num)
		len = sizeof num - 1;
	memcpy(num, text, len);
	num[len] = '\0';
	if (why == why_no_currency) { /* "4/h": the time unit is there */
		snprintf(hint, size, "write $%s", num);
		return true;
	}
	switch (t) {
	case LSIM_K_TIME:
		snprintf(hint, size, "write %ss or %sms", num, num);
		break;
	case LSIM_K_BYTES:
		snprintf(hint, size, "write %sGB, %sGiB or %sB", num, num, num);
		break;
	case LSIM_K_BW:
		snprintf(hint, size, "write %sGB/s or %sGb/s", num, num);
		break;
	case LSIM_K_POWER:
		snprintf(hint, size, "write %sW or %skW", num, num);
		break;
	default:
		snprintf(hint, size, "write $%s/h", num);
		break;
	}
	return true;
}

int lsim_units_parse(enum lsim_ktype t, const char *text, double *out,
		     const char **why)
{
	const char *dummy;
	if (!why)
		why = &dummy;
	if (!text) {
		*why = "missing value";
		return LSIM_EINVAL;
	}
	while (isspace((unsigned char)*text))
		text++;
	bool dollar = t == LSIM_K_PRICE && *text == '$';
	if (dollar)
		text++;
	if (!*text) {
		*why = "empty value";
		return LSIM_EINVAL;
	}
	errno = 0;
	char *end;
	double v = strtod(text, &end);
	if (end == text || errno == ERANGE || !isfinite(v)) {
		*why = "not a number";
		return LSIM_EINVAL;
	}
	while (isspace((unsigned char)*end))
		end++;
	char suffix[32];
	size_t len = strlen(end);
	while (len > 0 && isspace((unsigned char)end[len - 1]))
		len--;
	if (len >= sizeof suffix) {
		*why = "unknown unit";
		return LSIM_EINVAL;
	}
	memcpy(suffix, end, len);
	suffix[len] = '\0';

	/* a dimensioned quantity says its unit: a bare 400 for a bandwidth
	 * would be 400 B/s, rarely what was meant. Exactly 0 reads the same
	 * in every unit. */
	if (dimensioned(t) && v != 0 && !suffix[0]) {
		*why = dollar ? why_no_time_unit : why_no_unit;
		return LSIM_EINVAL;
	}
	double f = 1.0;
	int rc = 0;
	switch (t) {
	case LSIM_K_INT:
		if (suffix[0] || v != floor(v)) {
			*why = "not an integer";
			return LSIM_EINVAL;
		}
		if (fabs(v) > 9.0e18) {
			*why = "too large (beyond 9e18)";
			return LSIM_EINVAL;
		}
		break;
	case LSIM_K_DOUBLE:
		if (suffix[0]) {
			*why = "expected a plain number";
			return LSIM_EINVAL;
		}
		break;
	case LSIM_K_TIME:
		rc = find_unit(time_units, N_OF(time_units), suffix, &f);
		*why = "unknown time unit (use ns, us, ms, s, min, h)";
		break;
	case LSIM_K_BYTES:
		rc = find_unit(byte_units, N_OF(byte_units), suffix, &f);
		*why = "unknown size unit (use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)";
		break;
	case LSIM_K_BW:
		rc = find_unit(bw_units, N_OF(bw_units), suffix, &f);
		*why = "unknown bandwidth unit (use B/s, MB/s, GB/s, GiB/s, Gb/s, Gbps)";
		break;
	case LSIM_K_POWER:
		rc = find_unit(power_units, N_OF(power_units), suffix, &f);
		*why = "unknown power unit (use W, kW)";
		break;
	case LSIM_K_PRICE:
		rc = find_unit(price_units, N_OF(price_units), suffix, &f);
		*why = "unknown price unit (use $N/h)";
		/* a price says it is dollars: "4/h" is four of what per hour? */
		if (rc == 0 && v != 0 && !dollar) {
			*why = why_no_currency;
			return LSIM_EINVAL;
		}
		break;
	default:
		*why = "not a numeric type";
		return LSIM_EINVAL;
	}
	if (rc != 0)
		return LSIM_EINVAL;
	*why = "";
	*out = v * f;
	return 0;
}

void lsim_units_format(enum lsim_ktype t, double v, char *buf, size_t size)
{
	switch (t) {
	case LSIM_K_TIME:
		if (v != 0 && fmod(v, 1e9) == 0)
			snprintf(buf, size, "%.17gs", v / 1e9);
		else if (v != 0 && fmod(v, 1e6) == 0)
			snprintf(buf, size, "%.17gms", v / 1e6);
		else if (v != 0 && fmod(v, 1e3) == 0)
			snprintf(buf, size, "%.17gus", v / 1e3);
		else
			snprintf(buf, size, "%.17gns", v);
		break;
	case LSIM_K_BYTES:
		snprintf(buf, size, "%.17gB", v);
		break;
	case LSIM_K_BW:
		snprintf(buf, size, "%.17gB/s", v);
		break;
	case LSIM_K_POWER:
		snprintf(buf, size, "%.17gW", v);
		break;
	case LSIM_K_PRICE:
		snprintf(buf, size, "$%.17g/h", v);
		break;
	default:
		snprintf(buf, size, "%.17g", v);
		break;
	}
}
