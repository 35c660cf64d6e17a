/* sim/perf_roofline.c - to be written in this change. */
typedef int lsim_unwritten_perf_roofline;
