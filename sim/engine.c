/* sim/engine.c - to be written in this change. */
typedef int lsim_unwritten_engine;
