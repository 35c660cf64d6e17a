/* sim/report_h5.c - to be written in this change. */
typedef int lsim_unwritten_report_h5;
