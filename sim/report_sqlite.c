/* sim/report_sqlite.c - to be written in this change. */
typedef int lsim_unwritten_report_sqlite;
