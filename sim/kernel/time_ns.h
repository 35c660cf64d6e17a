/*
 * time_ns.h - seconds to whole nanoseconds, rounded half away from zero
 * (llround's value), inline for the loops that convert every step's
 * time; lsim_time_from_s is this function.
 */
#ifndef LLMSIM_TIME_NS_H
#define LLMSIM_TIME_NS_H

#include <math.h>

#include "llmsim/llmsim.h"

static inline lsim_time lsim_time_ns_of_s(double seconds)
{
	double ns = seconds * 1e9;
	if (!(ns > -9.0e18 && ns < 9.0e18))
		return (lsim_time)llround(ns); /* out of range (or NaN) */
	/* llround's value, without its call: the truncation and the
	 * fraction left are exact, ties go away from zero (no branch on the
	 * fraction: it is as likely above a half as below) */
	long long i = (long long)ns;
	double frac = ns - (double)i;
	return (lsim_time)(i + (frac >= 0.5) - (frac <= -0.5));
}

#endif
