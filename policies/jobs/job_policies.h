/*
 * job_policies.h - the schedulers and allocators of training jobs, as
 * plain function tables (policies/jobs/job_policies.c). Their tables and
 * the jobs as they see them are declared in llmsim/job_policy.h; this
 * header only brings that in.
 */
#ifndef LLMSIM_JOB_POLICIES_H
#define LLMSIM_JOB_POLICIES_H

#include "llmsim/job_policy.h"

#endif
