/*
 * report_csv.c - CSV exports of one run: requests.csv, instances.csv,
 * timeseries.csv (columns named as the struct members, one header row)
 * and summary.csv (name,value,unit). Every file is written to NAME.tmp and
 * synced first; only when all are complete are they renamed into place
 * (lsim_report_csv_commit), so a failed write leaves the files already
 * there as they were. Real numbers are printed in the shortest of
 * %.15g, %.16g, %.17g that reads back to the same double, so values are
 * exact and the output is deterministic. Layout in docs/output.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "kernel/infile.h"
#include "report/report.h"

/* Writes x exactly, in as few digits as possible; NaN (not defined) as
 * "nan". */
static void put_real(FILE *f, double x)
{
	if (isnan(x)) {
		fputs("nan", f);
		return;
	}
	char buf[40];
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, sizeof buf, "%.*g", prec, x);
		if (prec == 17 || strtod(buf, NULL) == x)
			break;
	}
	fputs(buf, f);
}

/* n values, each after a comma. */
static void put_reals(FILE *f, const double *v, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		fputc(',', f);
		put_real(f, v[k]);
	}
}

/* Writes s as a CSV field, quoted when it holds a separator or quote. */
static void put_str(FILE *f, const char *s, size_t max)
{
	size_t n = strnlen(s, max);
	bool quote = false;
	for (size_t i = 0; i < n && !quote; i++)
		quote = s[i] == ',' || s[i] == '"' || s[i] == '\r' ||
			s[i] == '\n';
	if (!quote) {
		fwrite(s, 1, n, f);
		return;
	}
	fputc('"', f);
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '"')
			fputc('"', f);
		fputc(s[i], f);
	}
	fputc('"', f);
}

static int put_request(void *ctx, const struct lsim_req_record *q)
{
	FILE *f = ctx;
	fprintf(f, "%" PRIu64 ",", q->id);
	put_real(f, q->arrival);
	fputc(',', f);
	put_real(f, q->first_scheduled);
	fputc(',', f);
	put_real(f, q->first_token);
	fputc(',', f);
	put_real(f, q->finish);
	fprintf(f, ",%" PRId32 ",%" PRId32 ",%" PRId32 ",%" PRId32
		   ",%" PRId32 ",%" PRId32 ",%" PRId32 ",%" PRId32
		   ",%" PRId32 ",%" PRId32 ",%" PRId32 ",%" PRId32,
		q->prompt_tokens, q->output_tokens, q->instance,
		q->preemptions, q->status, q->qos_class,
		q->predicted_output, q->reject_reason, q->slo_met,
		q->tenant, q->model, q->prefill_instance);
	const double v[] = {q->gpu_time_s, q->gpu_util_mean, q->gpu_util_max,
			    q->kv_peak_bytes};
	put_reals(f, v, sizeof v / sizeof v[0]);
	fputc('\n', f);
	return ferror(f) ? LSIM_EIO : 0;
}

static int put_requests(FILE *f, const struct lsim_results *r)
{
	fputs("id,arrival,first_scheduled,first_token,finish,prompt_tokens,"
	      "output_tokens,instance,preemptions,status,qos_class,"
	      "predicted_output,reject_reason,slo_met,tenant,model,prefill_instance,"
	      "gpu_time_s,gpu_util_mean,gpu_util_max,kv_peak_bytes\n",
	      f);
	return lsim_results_each_req(r, put_request, f);
}

static int put_instances(FILE *f, const struct lsim_results *r)
{
	fputs("id,gpu,model,tp,node,start,ready,stop,busy_s,iterations,tokens,"
	      "preemptions,kv_blocks,energy_j,cost_usd,prompt_tokens,"
	      "prefix_hit_tokens,swaps,swap_bytes,role,kv_sent_bytes,failed_at,carbon_g,"
	      "pp,pp_bytes,work_s,spot,gpu_util,gpu_busy,model_flops,hbm_bytes,mfu,mbu\n",
	      f);
	for (size_t i = 0; i < r->n_insts; i++) {
		const struct lsim_inst_record *in = &r->insts[i];
		fprintf(f, "%" PRId32 ",", in->id);
		put_str(f, in->gpu, sizeof in->gpu);
		fputc(',', f);
		put_str(f, in->model, sizeof in->model);
		fprintf(f, ",%" PRId32 ",%" PRId32 ",", in->tp, in->node);
		put_real(f, in->start);
		fputc(',', f);
		put_real(f, in->ready);
		fputc(',', f);
		put_real(f, in->stop);
		fputc(',', f);
		put_real(f, in->busy_s);
		fprintf(f, ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",",
			in->iterations, in->tokens, in->preemptions,
			in->kv_blocks);
		put_real(f, in->energy_j);
		fputc(',', f);
		put_real(f, in->cost_usd);
		fprintf(f, ",%" PRId64 ",%" PRId64 ",%" PRId64 ",", in->prompt_tokens,
			in->prefix_hit_tokens, in->swaps);
		put_real(f, in->swap_bytes);
		fprintf(f, ",%" PRId32 ",", in->role);
		put_real(f, in->kv_sent_bytes);
		fputc(',', f);
		put_real(f, in->failed_at);
		fputc(',', f);
		put_real(f, in->carbon_g);
		fprintf(f, ",%" PRId32 ",", in->pp);
		put_real(f, in->pp_bytes);
		fputc(',', f);
		put_real(f, in->work_s);
		fprintf(f, ",%" PRId32, in->spot);
		const double v[] = {in->gpu_util, in->gpu_busy, in->model_flops,
				    in->hbm_bytes, in->mfu, in->mbu};
		put_reals(f, v, sizeof v / sizeof v[0]);
		fputc('\n', f);
	}
	return 0;
}

static int put_timeseries(FILE *f, const struct lsim_results *r)
{
	fputs("t,instance,gpu_busy,kv_util,queue_len,running,power_w,"
	      "arrival_rate,gpu_util\n", f);
	for (size_t i = 0; i < r->n_ts; i++) {
		const struct lsim_ts_sample *s = &r->ts[i];
		put_real(f, s->t);
		fprintf(f, ",%" PRId32 ",", s->instance);
		put_real(f, s->gpu_busy);
		fputc(',', f);
		put_real(f, s->kv_util);
		fprintf(f, ",%" PRId32 ",%" PRId32 ",", s->queue_len, s->running);
		put_real(f, s->power_w);
		fputc(',', f);
		put_real(f, s->arrival_rate);
		fputc(',', f);
		put_real(f, s->gpu_util);
		fputc('\n', f);
	}
	return 0;
}

static int put_classes(FILE *f, const struct lsim_results *r)
{
	fputs("name,share,ttft_target,tpot_target,e2e_target,requests,completed,"
	      "rejected,ttft_attainment,tpot_attainment,e2e_attainment,"
	      "slo_attainment,goodput_rps,ttft_mean_s\n",
	      f);
	for (size_t i = 0; i < r->n_classes; i++) {
		const struct lsim_class_record *c = &r->classes[i];
		const double v[] = {c->share, c->ttft_target, c->tpot_target,
				    c->e2e_target, c->requests, c->completed,
				    c->rejected, c->ttft_attainment,
				    c->tpot_attainment, c->e2e_attainment,
				    c->slo_attainment, c->goodput_rps,
				    c->ttft_mean_s};
		put_str(f, c->name, sizeof c->name);
		put_reals(f, v, sizeof v / sizeof v[0]);
		fputc('\n', f);
	}
	return 0;
}

static int put_jobs(FILE *f, const struct lsim_results *r)
{
	fputs("id,tenant,status,gpus_peak,restarts,failures,preemptions,resizes,"
	      "iterations,lost_iterations,arrival,first_start,finish,queued_s,"
	      "alloc_gpu_s,useful_gpu_s,lost_gpu_s,overhead_gpu_s,cost_usd,energy_j\n", f);
	for (size_t i = 0; i < r->n_jobs; i++) {
		const struct lsim_job_row *j = &r->jobs[i];
		fprintf(f, "%" PRIu64 ",%" PRId32 ",%" PRId32 ",%" PRId32 ",%" PRId32
			   ",%" PRId32 ",%" PRId32 ",%" PRId32 ",%" PRId64 ",%" PRId64,
			j->id, j->tenant, j->status, j->gpus_peak, j->restarts,
			j->failures, j->preemptions, j->resizes, j->iterations,
			j->lost_iterations);
		const double v[] = {j->arrival, j->first_start, j->finish, j->queued_s,
				    j->alloc_gpu_s, j->useful_gpu_s, j->lost_gpu_s,
				    j->overhead_gpu_s, j->cost_usd, j->energy_j};
		put_reals(f, v, sizeof v / sizeof v[0]);
		fputc('\n', f);
	}
	return 0;
}

static int put_job_timeseries(FILE *f, const struct lsim_results *r)
{
	fputs("t,held,lent,free,pending,fragmented\n", f);
	for (size_t i = 0; i < r->n_job_ts; i++) {
		const struct lsim_job_sample *s = &r->job_ts[i];
		put_real(f, s->t);
		fprintf(f, ",%" PRId32 ",%" PRId32 ",%" PRId32 ",%" PRId32 ",%" PRId32 "\n",
			s->held, s->lent, s->free, s->pending, s->fragmented);
	}
	return 0;
}

static int put_job_timeline(FILE *f, const struct lsim_results *r)
{
	fputs("t,job,state,gpus\n", f);
	for (size_t i = 0; i < r->n_job_timeline; i++) {
		const struct lsim_job_event_row *e = &r->job_timeline[i];
		put_real(f, e->t);
		fprintf(f, ",%" PRId32 ",%" PRId32 ",", e->job, e->state);
		put_real(f, e->gpus);
		fputc('\n', f);
	}
	return 0;
}

static int put_tenants(FILE *f, const struct lsim_results *r)
{
	fputs("tenant,name,requests,completed,tokens,cost_usd,energy_j,carbon_g,"
	      "cost_per_mtok_usd\n", f);
	for (size_t i = 0; i < r->n_tenants; i++) {
		const struct lsim_tenant_record *t = &r->tenants[i];
		fprintf(f, "%" PRId32 ",", t->tenant);
		put_str(f, t->name, sizeof t->name);
		const double v[] = {t->requests, t->completed, t->tokens, t->cost_usd,
				    t->energy_j, t->carbon_g, t->cost_per_mtok_usd};
		put_reals(f, v, sizeof v / sizeof v[0]);
		fputc('\n', f);
	}
	return 0;
}

static int put_links(FILE *f, const struct lsim_results *r)
{
	fputs("id,kind,bw,latency_s,bytes,busy_s,mean_util,msgs,from,to\n", f);
	for (size_t i = 0; i < r->n_links; i++) {
		const struct lsim_link_record *l = &r->links[i];
		fprintf(f, "%" PRId32 ",", l->id);
		put_str(f, l->kind, sizeof l->kind);
		const double v[] = {l->bw, l->latency_s, l->bytes, l->busy_s,
				    l->mean_util};
		put_reals(f, v, sizeof v / sizeof v[0]);
		fprintf(f, ",%" PRId64 ",", l->msgs);
		put_str(f, l->from, sizeof l->from);
		fputc(',', f);
		put_str(f, l->to, sizeof l->to);
		fputc('\n', f);
	}
	return 0;
}

static int put_link_timeseries(FILE *f, const struct lsim_results *r)
{
	fputs("t,link,util\n", f);
	for (size_t i = 0; i < r->n_link_ts; i++) {
		const struct lsim_link_sample *l = &r->link_ts[i];
		put_real(f, l->t);
		fprintf(f, ",%" PRId32 ",", l->link);
		put_real(f, l->util);
		fputc('\n', f);
	}
	return 0;
}

static int put_summary(FILE *f, const struct lsim_results *r)
{
	fputs("name,value,unit\n", f);
	/* one row per field of each group written, through its pointer g */
#define LSIM_X_ROW(name, unit, help)        \
	fputs(#name ",", f);                \
	put_real(f, g->name);               \
	fputs("," unit "\n", f);
	{
		const struct lsim_summary *g = &r->summary;
		LSIM_SUMMARY_FIELDS(LSIM_X_ROW)
	}
	if (r->has_serverless) {
		const struct lsim_serverless_summary *g = &r->serverless;
		LSIM_SERVERLESS_FIELDS(LSIM_X_ROW)
	}
	if (r->has_kv_offload) {
		const struct lsim_kv_offload_summary *g = &r->kv_offload;
		LSIM_KV_OFFLOAD_FIELDS(LSIM_X_ROW)
	}
	if (r->has_lora) {
		const struct lsim_lora_summary *g = &r->lora;
		LSIM_LORA_FIELDS(LSIM_X_ROW)
	}
#undef LSIM_X_ROW
	return 0;
}

/* The names behind the model and tenant index columns of requests.csv. */
static int put_labels(FILE *f, const struct lsim_results *r)
{
	fputs("column,index,name\n", f);
	for (size_t i = 0; i < r->n_models; i++) {
		fprintf(f, "model,%zu,", i);
		put_str(f, r->model_names[i], strlen(r->model_names[i]));
		fputc('\n', f);
	}
	for (size_t i = 0; i < r->n_tenant_names; i++) {
		fprintf(f, "tenant,%zu,", i);
		put_str(f, r->tenant_names[i], strlen(r->tenant_names[i]));
		fputc('\n', f);
	}
	return 0;
}

/* Writes dir/name.tmp with put(), synced to the disk; removed on failure. */
static int write_one(const char *dir, const char *name,
		     int (*put)(FILE *, const struct lsim_results *),
		     const struct lsim_results *r, struct lsim_diag *d)
{
	size_t len = strlen(dir) + strlen(name) + 2;
	char *path = malloc(2 * len + 4);
	if (!path)
		return lsim_diag_set(d, LSIM_ENOMEM, dir, 0, 0, "",
				     "out of memory");
	char *tmp = path + len;
	snprintf(path, len, "%s/%s", dir, name);
	snprintf(tmp, len + 4, "%s/%s.tmp", dir, name);
	int rc = 0;
	FILE *f = fopen(tmp, "w");
	if (!f) {
		rc = lsim_diag_set(d, LSIM_EIO, path, 0, 0, "",
				   "cannot create %s: %s", tmp, strerror(errno));
		free(path);
		return rc;
	}
	int bad = put(f, r) != 0 || fflush(f) != 0 || ferror(f) ||
		  fsync(fileno(f)) != 0;
	if (fclose(f) != 0 || bad)
		rc = lsim_diag_set(d, LSIM_EIO, path, 0, 0, "",
				   "cannot write %s: %s", tmp, strerror(errno));
	if (rc != 0)
		remove(tmp);
	free(path);
	return rc;
}

/* The files, in the order they are written. */
static const struct {
	const char *name;
	int (*put)(FILE *, const struct lsim_results *);
	bool jobs_only; /* written for runs with training jobs */
} files[] = {
	{"requests.csv", put_requests, false},
	{"instances.csv", put_instances, false},
	{"timeseries.csv", put_timeseries, false},
	{"summary.csv", put_summary, false},
	{"classes.csv", put_classes, false},
	{"labels.csv", put_labels, false},
	{"tenants.csv", put_tenants, false},
	{"jobs.csv", put_jobs, true},
	{"job_timeseries.csv", put_job_timeseries, true},
	{"job_timeline.csv", put_job_timeline, true},
	{"links.csv", put_links, false},
	{"link_timeseries.csv", put_link_timeseries, false},
};
#define N_FILES (sizeof files / sizeof files[0])

static bool written(size_t i, const struct lsim_results *r)
{
	return !files[i].jobs_only || r->n_jobs > 0;
}

const char *lsim_report_csv_name(size_t i)
{
	return i < N_FILES ? files[i].name : NULL;
}

int lsim_report_csv_stage(const char *dir, const struct lsim_results *r,
			  struct lsim_diag *d)
{
	if (!dir || !r || (r->n_reqs && !r->reqs && !r->req_store) ||
	    (r->n_insts && !r->insts) || (r->n_ts && !r->ts))
		return lsim_diag_set(d, LSIM_EINVAL, dir ? dir : "", 0, 0, "",
				     "missing output folder or results");
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < N_FILES; i++)
		if (written(i, r))
			rc = write_one(dir, files[i].name, files[i].put, r, d);
	if (rc != 0)
		lsim_report_csv_unstage(dir);
	return rc;
}

int lsim_report_csv_commit(const char *dir, const struct lsim_results *r,
			   struct lsim_diag *d)
{
	char path[4200], tmp[4300];
	int rc = 0;
	for (size_t i = 0; i < N_FILES; i++) {
		if (!written(i, r))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, files[i].name);
		snprintf(tmp, sizeof tmp, "%s.tmp", path);
		if (rc == 0 && rename(tmp, path) != 0)
			rc = lsim_diag_set(d, LSIM_EIO, path, 0, 0, "",
					   "cannot rename %s: %s", tmp, strerror(errno));
	}
	if (rc != 0)
		lsim_report_csv_unstage(dir);
	return rc;
}

void lsim_report_csv_unstage(const char *dir)
{
	char path[4300];
	for (size_t i = 0; dir && i < N_FILES; i++)
		if (snprintf(path, sizeof path, "%s/%s.tmp", dir, files[i].name) <
		    (int)sizeof path)
			remove(path);
}

int lsim_report_csv_write(const char *dir, const struct lsim_results *r,
			  struct lsim_diag *d)
{
	int rc = lsim_report_csv_stage(dir, r, d);
	return rc != 0 ? rc : lsim_report_csv_commit(dir, r, d);
}
