/* sim/base.c - to be written in this change. */
typedef int lsim_unwritten_base;
