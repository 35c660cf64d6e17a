/*
 * params.h - declared parameters: the one table format used for every
 * configurable key, by the core's scenario sections and by policies
 * (built-in or plugin). Each key is declared once with its type, default,
 * bounds, unit and help; the table drives parsing, validation, the
 * effective-config dump, `llmsim policies` and the docs.
 */
#ifndef LLMSIM_PARAMS_H
#define LLMSIM_PARAMS_H

#include <stddef.h>

enum lsim_ktype {
	LSIM_K_INT,    /* int64_t */
	LSIM_K_DOUBLE, /* double */
	LSIM_K_BOOL,   /* bool */
	LSIM_K_STRING, /* const char * (points into the doc or a literal) */
	LSIM_K_ENUM,   /* int: index into choices "a|b|c" */
	/* values with a dimension: the text must give a unit (only 0 may go
	 * without); a bare number is refused, defaults included */
	LSIM_K_TIME,   /* lsim_time ns: "250ms", "2s" */
	LSIM_K_BYTES,  /* double bytes: "80GB", "24GiB", "512B" */
	LSIM_K_BW,     /* double B/s: "64GB/s", "100Gb/s" */
	LSIM_K_POWER,  /* double W: "700W", "1.2kW" */
	LSIM_K_PRICE,  /* double USD/hour: "$2.5/h" */
};

struct lsim_keydef {
	const char *name;
	enum lsim_ktype type;
	size_t offset;	     /* offsetof the field in the bound struct */
	const char *def;     /* default as text; NULL = required */
	double min, max;     /* bounds (after unit conversion); min > max = none */
	const char *choices; /* ENUM: "a|b|c" */
	const char *help;
	const char *unit;    /* shown in listings; NULL = implied by the type */
};

#define LSIM_NOBOUNDS 1, 0

/*
 * Parses text as a value of type t (INT, DOUBLE, TIME, BYTES, BW, POWER,
 * PRICE) into *out (as double; TIME in ns). Returns 0, or LSIM_EINVAL with
 * a short reason in *why. TIME, BYTES, BW, POWER and PRICE need a unit
 * unless the value is 0.
 */
int lsim_units_parse(enum lsim_ktype t, const char *text, double *out,
		     const char **why);

#endif
