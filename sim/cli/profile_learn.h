/*
 * profile_learn.h - `llmsim profile train` and `llmsim profile eval`, the
 * command-line side of the kproto task profiler (sim/learn/kproto.h): train a
 * K-Prototypes model with per-cluster regressors from a CSV file, and
 * evaluate the regressors per cluster (MSE table, relative-error CDFs,
 * optionally in HDF5). argv[0] is "train" or "eval". Exit status: 0 done,
 * 2 bad input (printed as file:line:col: key: message), 1 other failures.
 */
#ifndef LLMSIM_PROFILE_LEARN_H
#define LLMSIM_PROFILE_LEARN_H

int lsim_cli_profile_train(int argc, char **argv);
int lsim_cli_profile_eval(int argc, char **argv);

#endif
