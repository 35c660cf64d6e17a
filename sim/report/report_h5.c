/*
 * report_h5.c - the per-run HDF5 report: /requests, /instances and
 * /timeseries compound tables, the one-row /summary table (its values
 * also as attributes) with /summary_units beside it, the effective
 * configuration in /config and provenance attributes on /provenance.
 * Layout in docs/output.md.
 *
 * Every object is created with time tracking off, so the same results
 * give a byte-identical file (the high-level H5TB/H5LT creators use the
 * default creation properties, which store modification times, and are
 * therefore not used for objects). The file is written to path.tmp and
 * renamed when complete. HDF5's automatic error printing is silenced for
 * the duration of the call.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hdf5.h>

#include "kernel/infile.h"
#include "report/report.h"

/* Fixed length of the strings in /summary_units. */
#define UNIT_LEN 8
/* Target bytes per chunk of a table. */
#define CHUNK_BYTES 65536

/* State of one write: the ids to close and the first error. */
struct h5w {
	const char *path;
	struct lsim_diag *d;
	int rc;
	hid_t file;
	hid_t dcpl0; /* dataset creation: no time tracking, contiguous */
	hid_t gcpl;  /* group creation: no time tracking */
};

/*
 * HDF5 1.10 frees a file whose close failed (a write error while flushing:
 * a full disk) but keeps its id, and its clean-up at exit then closes that
 * id again and crashes. Every writer here closes what it opens, so there is
 * nothing for that clean-up to do: it is switched off, which HDF5 allows
 * only before it initialises, hence a constructor.
 */
__attribute__((constructor)) static void no_atexit_cleanup(void)
{
	H5dont_atexit();
}

/* Captures the innermost HDF5 error description of the current stack. */
static herr_t walk_first(unsigned n, const H5E_error2_t *e, void *data)
{
	if (n == 0 && e->desc)
		snprintf(data, 256, "%s", e->desc);
	return 0;
}

static int fail(struct h5w *w, const char *what)
{
	if (w->rc != 0)
		return w->rc;
	char why[256] = "";
	H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_first, why);
	/* A failed read or write describes itself in several lines, with the
	 * system's reason as "error message = '...'": keep that reason. */
	const char *sys = strstr(why, "error message = '");
	if (sys) {
		sys += strlen("error message = '");
		size_t n = strcspn(sys, "'");
		memmove(why, sys, n);
		why[n] = '\0';
	}
	w->rc = lsim_diag_set(w->d, LSIM_EIO, w->path, 0, 0, "", "%s%s%s",
			      what, why[0] ? ": " : "", why);
	return w->rc;
}

/* A fixed-length, NUL-terminated C string type of len bytes. */
static hid_t str_type(size_t len)
{
	hid_t t = H5Tcopy(H5T_C_S1);
	if (t < 0)
		return t;
	if (H5Tset_size(t, len ? len : 1) < 0 ||
	    H5Tset_strpad(t, H5T_STR_NULLTERM) < 0) {
		H5Tclose(t);
		return -1;
	}
	return t;
}

/* One member of a compound type: name, offset and HDF5 type. */
struct member {
	const char *name;
	size_t off;
	hid_t type; /* a predefined type, or a string type of length len */
	size_t len; /* > 0: fixed-length string of len bytes */
};

#define M(S, f, t) {#f, offsetof(struct S, f), t, 0}
#define MS(S, f) {#f, offsetof(struct S, f), 0, sizeof(((struct S *)0)->f)}

/* Builds the in-memory compound type for a row of size bytes. */
static hid_t compound(const struct member *m, size_t nm, size_t size)
{
	hid_t t = H5Tcreate(H5T_COMPOUND, size);
	if (t < 0)
		return t;
	for (size_t i = 0; i < nm; i++) {
		hid_t mt = m[i].len ? str_type(m[i].len) : m[i].type;
		herr_t e = mt < 0 ? -1 : H5Tinsert(t, m[i].name, m[i].off, mt);
		if (m[i].len && mt >= 0)
			H5Tclose(mt);
		if (e < 0) {
			H5Tclose(t);
			return -1;
		}
	}
	return t;
}

/*
 * Writes n rows of the compound memory type mt as the 1-D dataset name.
 * The file type is the packed copy of mt (no padding bytes). Tables of
 * more than one row are chunked and, where available, shuffled and
 * deflated.
 */
/* Where a table's rows come from: an array, or a reader that copies rows
 * first .. first+n-1 into buf (rows of a long run held on disk). */
struct rows {
	const void *array;
	int (*read)(const void *ctx, size_t first, size_t n, void *buf);
	const void *ctx;
};

/* Rows are written in slabs of this many bytes or more. */
#define SLAB_BYTES ((size_t)1 << 22)

static int write_rows(hid_t ds, hid_t mt, const struct rows *src, size_t n)
{
	if (n == 0)
		return 0;
	if (src->array)
		return H5Dwrite(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT,
				src->array) < 0 ? -1 : 0;
	size_t size = H5Tget_size(mt);
	size_t slab = size ? SLAB_BYTES / size : 1;
	if (slab < 1)
		slab = 1;
	void *buf = malloc(slab * size);
	hid_t fspace = H5Dget_space(ds);
	int rc = (!buf || fspace < 0) ? -1 : 0;
	for (size_t at = 0; rc == 0 && at < n; at += slab) {
		hsize_t start[1] = {at}, count[1] = {n - at < slab ? n - at : slab};
		hid_t mspace = H5Screate_simple(1, count, NULL);
		if (mspace < 0 || src->read(src->ctx, at, (size_t)count[0], buf) != 0 ||
		    H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count,
					NULL) < 0 ||
		    H5Dwrite(ds, mt, mspace, fspace, H5P_DEFAULT, buf) < 0)
			rc = -1;
		if (mspace >= 0)
			H5Sclose(mspace);
	}
	if (fspace >= 0)
		H5Sclose(fspace);
	free(buf);
	return rc;
}

static int write_table_from(struct h5w *w, hid_t loc, const char *name,
			    hid_t mt, const struct rows *src, size_t n)
{
	hid_t ft = -1, space = -1, dcpl = -1, ds = -1;
	hsize_t dims[1] = {n};
	ft = H5Tcopy(mt);
	if (ft < 0 || H5Tpack(ft) < 0)
		goto out;
	space = H5Screate_simple(1, dims, NULL);
	if (space < 0)
		goto out;
	dcpl = H5Pcopy(w->dcpl0);
	if (dcpl < 0)
		goto out;
	size_t row = H5Tget_size(ft);
	if (n > 1 && row > 0) {
		hsize_t chunk[1] = {CHUNK_BYTES / row};
		if (chunk[0] < 1)
			chunk[0] = 1;
		if (chunk[0] > n)
			chunk[0] = n;
		if (H5Pset_chunk(dcpl, 1, chunk) < 0)
			goto out;
		if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0 &&
		    (H5Pset_shuffle(dcpl) < 0 || H5Pset_deflate(dcpl, 6) < 0))
			goto out;
	}
	ds = H5Dcreate2(loc, name, ft, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	if (ds < 0)
		goto out;
	if (write_rows(ds, mt, src, n) != 0) {
		H5Dclose(ds);
		ds = -1;
		goto out;
	}
	H5Dclose(ds);
	H5Pclose(dcpl);
	H5Sclose(space);
	H5Tclose(ft);
	return 0;
out:;
	char what[96];
	snprintf(what, sizeof what, "cannot write /%s", name);
	int rc = fail(w, what); /* before closing: that clears the stack */
	if (dcpl >= 0)
		H5Pclose(dcpl);
	if (space >= 0)
		H5Sclose(space);
	if (ft >= 0)
		H5Tclose(ft);
	return rc;
}

static int write_table(struct h5w *w, hid_t loc, const char *name, hid_t mt,
		       const void *rows, size_t n)
{
	struct rows src = {.array = rows};
	return write_table_from(w, loc, name, mt, &src, n);
}

static int read_reqs(const void *ctx, size_t first, size_t n, void *buf)
{
	return lsim_results_read_reqs(ctx, first, n, buf);
}

/* Attaches a scalar attribute of memory type mt to obj. */
static int attr(struct h5w *w, hid_t obj, const char *name, hid_t mt,
		const void *val)
{
	hid_t space = H5Screate(H5S_SCALAR);
	hid_t a = space < 0 ? -1
			    : H5Acreate2(obj, name, mt, space, H5P_DEFAULT,
					 H5P_DEFAULT);
	herr_t e = a < 0 ? -1 : H5Awrite(a, mt, val);
	int rc = 0;
	if (e < 0) {
		char what[160];
		snprintf(what, sizeof what, "cannot write attribute %s", name);
		rc = fail(w, what);
	}
	if (a >= 0)
		H5Aclose(a);
	if (space >= 0)
		H5Sclose(space);
	return rc;
}

/* A stored time series' recorded period (docs/output.md): attribute
 * period_s of the table. */
static int period_attr(struct h5w *w, const char *table, double period_s)
{
	hid_t ds = H5Dopen2(w->file, table, H5P_DEFAULT);
	if (ds < 0)
		return fail(w, "cannot open a time series to note its period");
	int rc = attr(w, ds, "period_s", H5T_NATIVE_DOUBLE, &period_s);
	H5Dclose(ds);
	return rc;
}

static int attr_str(struct h5w *w, hid_t obj, const char *name,
		    const char *val)
{
	if (!val)
		val = "";
	hid_t t = str_type(strlen(val) + 1);
	if (t < 0)
		return fail(w, "cannot create a string type");
	int rc = attr(w, obj, name, t, val);
	H5Tclose(t);
	return rc;
}

/* The effective configuration as a scalar fixed-length string. */
static int write_config(struct h5w *w, const char *yaml)
{
	if (!yaml)
		yaml = "";
	hid_t t = str_type(strlen(yaml) + 1);
	hid_t space = H5Screate(H5S_SCALAR);
	hid_t ds = (t < 0 || space < 0)
			   ? -1
			   : H5Dcreate2(w->file, "config", t, space, H5P_DEFAULT,
					w->dcpl0, H5P_DEFAULT);
	herr_t e = ds < 0 ? -1
			  : H5Dwrite(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, yaml);
	int rc = e < 0 ? fail(w, "cannot write /config") : 0;
	if (ds >= 0)
		H5Dclose(ds);
	if (space >= 0)
		H5Sclose(space);
	if (t >= 0)
		H5Tclose(t);
	return rc;
}

/* Names behind an index column, one per line (index = line number). */
static int attr_names(struct h5w *w, hid_t obj, const char *name,
		      const char *const *names, size_t n)
{
	size_t len = 1;
	for (size_t i = 0; i < n; i++)
		len += strlen(names[i]) + 1;
	char *s = malloc(len), *p = s;
	if (!s)
		return fail(w, "out of memory");
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s%s", i ? "\n" : "", names[i]);
	*p = '\0';
	int rc = attr_str(w, obj, name, s);
	free(s);
	return rc;
}

static int write_requests(struct h5w *w, const struct lsim_results *r)
{
	hid_t types[] = {H5T_NATIVE_UINT64, H5T_NATIVE_DOUBLE, H5T_NATIVE_DOUBLE,
			 H5T_NATIVE_DOUBLE, H5T_NATIVE_DOUBLE, H5T_NATIVE_INT32,
			 H5T_NATIVE_INT32, H5T_NATIVE_INT32, H5T_NATIVE_INT32,
			 H5T_NATIVE_INT32, H5T_NATIVE_INT32, H5T_NATIVE_INT32,
			 H5T_NATIVE_INT32, H5T_NATIVE_INT32};
	struct member m[] = {
		M(lsim_req_record, id, types[0]),
		M(lsim_req_record, arrival, types[1]),
		M(lsim_req_record, first_scheduled, types[2]),
		M(lsim_req_record, first_token, types[3]),
		M(lsim_req_record, finish, types[4]),
		M(lsim_req_record, prompt_tokens, types[5]),
		M(lsim_req_record, output_tokens, types[6]),
		M(lsim_req_record, instance, types[7]),
		M(lsim_req_record, preemptions, types[8]),
		M(lsim_req_record, status, types[9]),
		M(lsim_req_record, qos_class, types[10]),
		M(lsim_req_record, predicted_output, types[11]),
		M(lsim_req_record, reject_reason, types[12]),
		M(lsim_req_record, slo_met, types[13]),
		M(lsim_req_record, tenant, types[13]),
		M(lsim_req_record, model, types[13]),
		M(lsim_req_record, prefill_instance, types[13]),
		M(lsim_req_record, gpu_time_s, types[1]),
		M(lsim_req_record, gpu_util_mean, types[1]),
		M(lsim_req_record, gpu_util_max, types[1]),
		M(lsim_req_record, kv_peak_bytes, types[1]),
	};
	hid_t mt = compound(m, sizeof m / sizeof m[0],
			    sizeof(struct lsim_req_record));
	if (mt < 0)
		return fail(w, "cannot build the /requests type");
	struct rows src = {.array = r->reqs, .read = read_reqs, .ctx = r};
	int rc = write_table_from(w, w->file, "requests", mt, &src, r->n_reqs);
	H5Tclose(mt);
	if (rc != 0)
		return rc;
	hid_t ds = H5Dopen2(w->file, "requests", H5P_DEFAULT);
	if (ds < 0)
		return fail(w, "cannot reopen /requests");
	rc = attr_str(w, ds, "status_codes",
		      "0=finished 1=rejected 2=failed 3=unfinished");
	if (rc == 0)
		rc = attr_names(w, ds, "model_names", r->model_names, r->n_models);
	if (rc == 0)
		rc = attr_names(w, ds, "tenant_names", r->tenant_names,
				r->n_tenant_names);
	H5Dclose(ds);
	return rc;
}

static int write_instances(struct h5w *w, const struct lsim_results *r)
{
	hid_t types[] = {H5T_NATIVE_INT32, 0, 0, H5T_NATIVE_INT32,
			 H5T_NATIVE_DOUBLE, H5T_NATIVE_DOUBLE, H5T_NATIVE_DOUBLE,
			 H5T_NATIVE_DOUBLE, H5T_NATIVE_INT64, H5T_NATIVE_INT64,
			 H5T_NATIVE_INT64, H5T_NATIVE_INT64, H5T_NATIVE_DOUBLE,
			 H5T_NATIVE_DOUBLE, H5T_NATIVE_INT32, H5T_NATIVE_INT64};
	struct member m[] = {
		M(lsim_inst_record, id, types[0]),
		MS(lsim_inst_record, gpu),
		MS(lsim_inst_record, model),
		M(lsim_inst_record, tp, types[3]),
		M(lsim_inst_record, node, types[14]),
		M(lsim_inst_record, start, types[4]),
		M(lsim_inst_record, ready, types[5]),
		M(lsim_inst_record, stop, types[6]),
		M(lsim_inst_record, busy_s, types[7]),
		M(lsim_inst_record, iterations, types[8]),
		M(lsim_inst_record, tokens, types[9]),
		M(lsim_inst_record, preemptions, types[10]),
		M(lsim_inst_record, kv_blocks, types[11]),
		M(lsim_inst_record, energy_j, types[12]),
		M(lsim_inst_record, cost_usd, types[13]),
		M(lsim_inst_record, prompt_tokens, types[15]),
		M(lsim_inst_record, prefix_hit_tokens, types[15]),
		M(lsim_inst_record, swaps, types[15]),
		M(lsim_inst_record, swap_bytes, types[13]),
		M(lsim_inst_record, role, types[14]),
		M(lsim_inst_record, kv_sent_bytes, types[13]),
		M(lsim_inst_record, failed_at, types[13]),
		M(lsim_inst_record, carbon_g, types[13]),
		M(lsim_inst_record, pp, types[14]),
		M(lsim_inst_record, pp_bytes, types[13]),
		M(lsim_inst_record, work_s, types[13]),
		M(lsim_inst_record, spot, types[14]),
		M(lsim_inst_record, gpu_util, types[13]),
		M(lsim_inst_record, gpu_busy, types[13]),
		M(lsim_inst_record, model_flops, types[13]),
		M(lsim_inst_record, hbm_bytes, types[13]),
		M(lsim_inst_record, mfu, types[13]),
		M(lsim_inst_record, mbu, types[13]),
	};
	/* Copy the rows so that the bytes after each string's NUL are zero:
	 * fixed-length strings are written whole. */
	struct lsim_inst_record *rows = NULL;
	if (r->n_insts > 0) {
		rows = calloc(r->n_insts, sizeof *rows);
		if (!rows)
			return w->rc = lsim_diag_set(w->d, LSIM_ENOMEM, w->path, 0,
						     0, "", "out of memory");
	}
	for (size_t i = 0; i < r->n_insts; i++) {
		struct lsim_inst_record *o = &rows[i];
		const struct lsim_inst_record *in = &r->insts[i];
		*o = *in;
		memset(o->gpu, 0, sizeof o->gpu);
		memset(o->model, 0, sizeof o->model);
		memcpy(o->gpu, in->gpu, strnlen(in->gpu, sizeof o->gpu - 1));
		memcpy(o->model, in->model,
		       strnlen(in->model, sizeof o->model - 1));
	}
	hid_t mt = compound(m, sizeof m / sizeof m[0],
			    sizeof(struct lsim_inst_record));
	int rc = mt < 0 ? fail(w, "cannot build the /instances type")
			: write_table(w, w->file, "instances", mt, rows,
				      r->n_insts);
	if (mt >= 0)
		H5Tclose(mt);
	free(rows);
	return rc;
}

static int write_timeseries(struct h5w *w, const struct lsim_results *r)
{
	hid_t types[] = {H5T_NATIVE_DOUBLE, H5T_NATIVE_INT32, H5T_NATIVE_DOUBLE,
			 H5T_NATIVE_DOUBLE, H5T_NATIVE_INT32, H5T_NATIVE_INT32,
			 H5T_NATIVE_DOUBLE};
	struct member m[] = {
		M(lsim_ts_sample, t, types[0]),
		M(lsim_ts_sample, instance, types[1]),
		M(lsim_ts_sample, gpu_busy, types[2]),
		M(lsim_ts_sample, kv_util, types[3]),
		M(lsim_ts_sample, queue_len, types[4]),
		M(lsim_ts_sample, running, types[5]),
		M(lsim_ts_sample, power_w, types[6]),
		M(lsim_ts_sample, arrival_rate, types[6]),
		M(lsim_ts_sample, gpu_util, types[6]),
	};
	hid_t mt = compound(m, sizeof m / sizeof m[0],
			    sizeof(struct lsim_ts_sample));
	if (mt < 0)
		return fail(w, "cannot build the /timeseries type");
	int rc = write_table(w, w->file, "timeseries", mt, r->ts, r->n_ts);
	H5Tclose(mt);
	return rc == 0 ? period_attr(w, "timeseries", r->ts_period_s) : rc;
}

/* /classes: SLO attainment per QoS class (empty without classes). The
 * records are calloc'd by the core, so the name's padding is zero. */
static int write_classes(struct h5w *w, const struct lsim_results *r)
{
	hid_t d = H5T_NATIVE_DOUBLE;
	struct member m[] = {
		MS(lsim_class_record, name),
		M(lsim_class_record, share, d),
		M(lsim_class_record, ttft_target, d),
		M(lsim_class_record, tpot_target, d),
		M(lsim_class_record, e2e_target, d),
		M(lsim_class_record, requests, d),
		M(lsim_class_record, completed, d),
		M(lsim_class_record, rejected, d),
		M(lsim_class_record, ttft_attainment, d),
		M(lsim_class_record, tpot_attainment, d),
		M(lsim_class_record, e2e_attainment, d),
		M(lsim_class_record, slo_attainment, d),
		M(lsim_class_record, goodput_rps, d),
		M(lsim_class_record, ttft_mean_s, d),
	};
	hid_t mt = compound(m, sizeof m / sizeof m[0],
			    sizeof(struct lsim_class_record));
	if (mt < 0)
		return fail(w, "cannot build the /classes type");
	int rc = write_table(w, w->file, "classes", mt, r->classes, r->n_classes);
	H5Tclose(mt);
	return rc;
}

/* The 1-D dataset name of n rows of a compound type with the members m. */
static int write_records(struct h5w *w, const char *name, const struct member *m,
			 size_t nm, size_t row, const void *rows, size_t n)
{
	hid_t mt = compound(m, nm, row);
	if (mt < 0) {
		char what[96];
		snprintf(what, sizeof what, "cannot build the /%s type", name);
		return fail(w, what);
	}
	int rc = write_table(w, w->file, name, mt, rows, n);
	H5Tclose(mt);
	return rc;
}

static int write_jobs(struct h5w *w, const struct lsim_results *r)
{
	hid_t d = H5T_NATIVE_DOUBLE, i32 = H5T_NATIVE_INT32, i64 = H5T_NATIVE_INT64;
	struct member m[] = {
		M(lsim_job_row, id, H5T_NATIVE_UINT64),
		M(lsim_job_row, tenant, i32),
		M(lsim_job_row, status, i32),
		M(lsim_job_row, gpus_peak, i32),
		M(lsim_job_row, restarts, i32),
		M(lsim_job_row, failures, i32),
		M(lsim_job_row, preemptions, i32),
		M(lsim_job_row, resizes, i32),
		M(lsim_job_row, iterations, i64),
		M(lsim_job_row, lost_iterations, i64),
		M(lsim_job_row, arrival, d),
		M(lsim_job_row, first_start, d),
		M(lsim_job_row, finish, d),
		M(lsim_job_row, queued_s, d),
		M(lsim_job_row, alloc_gpu_s, d),
		M(lsim_job_row, useful_gpu_s, d),
		M(lsim_job_row, lost_gpu_s, d),
		M(lsim_job_row, overhead_gpu_s, d),
		M(lsim_job_row, cost_usd, d),
		M(lsim_job_row, energy_j, d),
	};
	int rc = write_records(w, "jobs", m, sizeof m / sizeof m[0],
			   sizeof(struct lsim_job_row), r->jobs, r->n_jobs);
	if (rc != 0)
		return rc;
	struct member t[] = {
		M(lsim_job_sample, t, d),
		M(lsim_job_sample, held, i32),
		M(lsim_job_sample, lent, i32),
		M(lsim_job_sample, free, i32),
		M(lsim_job_sample, pending, i32),
		M(lsim_job_sample, fragmented, i32),
	};
	rc = write_records(w, "job_timeseries", t, sizeof t / sizeof t[0],
			   sizeof(struct lsim_job_sample), r->job_ts, r->n_job_ts);
	if (rc == 0)
		rc = period_attr(w, "job_timeseries", r->job_ts_period_s);
	if (rc != 0)
		return rc;
	struct member e[] = {
		M(lsim_job_event_row, t, d),
		M(lsim_job_event_row, job, i32),
		M(lsim_job_event_row, state, i32),
		M(lsim_job_event_row, gpus, d),
	};
	rc = write_records(w, "job_timeline", e, sizeof e / sizeof e[0],
			   sizeof(struct lsim_job_event_row), r->job_timeline, r->n_job_timeline);
	return rc;
}

static int write_tenants(struct h5w *w, const struct lsim_results *r)
{
	hid_t d = H5T_NATIVE_DOUBLE;
	struct member m[] = {
		M(lsim_tenant_record, tenant, H5T_NATIVE_INT32),
		MS(lsim_tenant_record, name),
		M(lsim_tenant_record, requests, d),
		M(lsim_tenant_record, completed, d),
		M(lsim_tenant_record, tokens, d),
		M(lsim_tenant_record, cost_usd, d),
		M(lsim_tenant_record, energy_j, d),
		M(lsim_tenant_record, carbon_g, d),
		M(lsim_tenant_record, cost_per_mtok_usd, d),
	};
	int rc = write_records(w, "tenants", m, sizeof m / sizeof m[0],
			   sizeof(struct lsim_tenant_record), r->tenants, r->n_tenants);
	return rc;
}

static int write_links(struct h5w *w, const struct lsim_results *r)
{
	hid_t d = H5T_NATIVE_DOUBLE;
	struct member m[] = {
		M(lsim_link_record, id, H5T_NATIVE_INT32),
		MS(lsim_link_record, kind),
		M(lsim_link_record, bw, d),
		M(lsim_link_record, latency_s, d),
		M(lsim_link_record, bytes, d),
		M(lsim_link_record, busy_s, d),
		M(lsim_link_record, mean_util, d),
		M(lsim_link_record, msgs, H5T_NATIVE_INT64),
		MS(lsim_link_record, from),
		MS(lsim_link_record, to),
	};
	int rc = write_records(w, "links", m, sizeof m / sizeof m[0],
			   sizeof(struct lsim_link_record), r->links, r->n_links);
	if (rc != 0)
		return rc;
	struct member t[] = {
		M(lsim_link_sample, t, d),
		M(lsim_link_sample, link, H5T_NATIVE_INT32),
		M(lsim_link_sample, util, d),
	};
	rc = write_records(w, "link_timeseries", t, sizeof t / sizeof t[0],
			   sizeof(struct lsim_link_sample), r->link_ts, r->n_link_ts);
	return rc == 0 ? period_attr(w, "link_timeseries", r->link_ts_period_s) : rc;
}

/* The unit strings of the summary, one fixed-length field per metric. */
struct summary_units {
#define LSIM_X_UNIT(name, unit, help) char name[UNIT_LEN];
	LSIM_SUMMARY_FIELDS(LSIM_X_UNIT)
#undef LSIM_X_UNIT
};

static int write_summary(struct h5w *w, const struct lsim_results *r)
{
	const struct lsim_summary *s = &r->summary;
	hid_t dt = H5Tcreate(H5T_COMPOUND, sizeof(struct lsim_summary));
	hid_t st = str_type(UNIT_LEN);
	hid_t ut = H5Tcreate(H5T_COMPOUND, sizeof(struct summary_units));
	herr_t e = (dt < 0 || st < 0 || ut < 0) ? -1 : 0;
	struct summary_units units;
	memset(&units, 0, sizeof units);
#define LSIM_X_INS(name, unit, help)                                          \
	if (e >= 0)                                                           \
		e = H5Tinsert(dt, #name, offsetof(struct lsim_summary, name), \
			      H5T_NATIVE_DOUBLE);                             \
	if (e >= 0)                                                           \
		e = H5Tinsert(ut, #name,                                      \
			      offsetof(struct summary_units, name), st);      \
	snprintf(units.name, sizeof units.name, "%s", unit);
	LSIM_SUMMARY_FIELDS(LSIM_X_INS)
#undef LSIM_X_INS
	int rc = e < 0 ? fail(w, "cannot build the /summary type") : 0;
	if (rc == 0)
		rc = write_table(w, w->file, "summary", dt, s, 1);
	if (rc == 0)
		rc = write_table(w, w->file, "summary_units", ut, &units, 1);
	if (rc == 0) {
		hid_t ds = H5Dopen2(w->file, "summary", H5P_DEFAULT);
		if (ds < 0)
			rc = fail(w, "cannot reopen /summary");
		/* one attribute per field of each group, through g */
#define LSIM_X_ATTR(name, unit, help)                                    \
	if (rc == 0)                                                     \
		rc = attr(w, ds, #name, H5T_NATIVE_DOUBLE, &g->name);
		{
			const struct lsim_summary *g = s;
			LSIM_SUMMARY_FIELDS(LSIM_X_ATTR)
		}
		if (r->has_serverless) {
			const struct lsim_serverless_summary *g = &r->serverless;
			LSIM_SERVERLESS_FIELDS(LSIM_X_ATTR)
		}
		if (r->has_kv_offload) {
			const struct lsim_kv_offload_summary *g = &r->kv_offload;
			LSIM_KV_OFFLOAD_FIELDS(LSIM_X_ATTR)
		}
		if (r->has_lora) {
			const struct lsim_lora_summary *g = &r->lora;
			LSIM_LORA_FIELDS(LSIM_X_ATTR)
		}
#undef LSIM_X_ATTR
		if (ds >= 0)
			H5Dclose(ds);
	}
	if (ut >= 0)
		H5Tclose(ut);
	if (st >= 0)
		H5Tclose(st);
	if (dt >= 0)
		H5Tclose(dt);
	return rc;
}

static int write_provenance(struct h5w *w, const struct lsim_results *r)
{
	const struct lsim_run_info *in = &r->info;
	hid_t g = H5Gcreate2(w->file, "provenance", H5P_DEFAULT, w->gcpl,
			     H5P_DEFAULT);
	if (g < 0)
		return fail(w, "cannot create /provenance");
	uint64_t seed = in->seed;
	int rc = attr_str(w, g, "version", in->version);
	if (rc == 0)
		rc = attr(w, g, "seed", H5T_NATIVE_UINT64, &seed);
	if (rc == 0)
		rc = attr_str(w, g, "run_id", in->run_id);
	if (rc == 0)
		rc = attr_str(w, g, "scenario", in->scenario);
	if (rc == 0)
		rc = attr_str(w, g, "hw_profile", in->hw_profile);
	if (rc == 0)
		rc = attr_str(w, g, "hw_source", in->hw_source);
	if (rc == 0)
		rc = attr_str(w, g, "perf_model", in->perf_model);
	H5Gclose(g);
	return rc;
}

/* What an HDF5 file's creation needs at least (its metadata cache and
 * buffers take about 2.5 MB; twice that, to be sure). */
#define H5F_HEADROOM ((size_t)6 << 20)

static int write_all(struct h5w *w, const char *tmp,
		     const struct lsim_results *r)
{
	hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
	if (fcpl < 0 || H5Pset_obj_track_times(fcpl, 0) < 0) {
		if (fcpl >= 0)
			H5Pclose(fcpl);
		return fail(w, "cannot set up file creation");
	}
	/* HDF5 1.10's H5Fcreate does not check that its metadata cache
	 * could be allocated (H5AC_create dereferences it: SIGSEGV with
	 * memory nearly gone, leaving the .tmp file). Make sure the room is
	 * there first: a block of H5F_HEADROOM, freed again just before. */
	void *volatile probe = malloc(H5F_HEADROOM); /* volatile: not elided */
	if (!probe) {
		H5Pclose(fcpl);
		return w->rc = lsim_diag_set(w->d, LSIM_ENOMEM, w->path, 0, 0, "",
					     "out of memory creating the report");
	}
	free(probe);
	w->file = H5Fcreate(tmp, H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
	if (w->file < 0)
		fail(w, "cannot create the report file");
	H5Pclose(fcpl);
	if (w->file < 0)
		return w->rc;
	int rc = write_config(w, r->info.config_yaml);
	if (rc == 0)
		rc = write_provenance(w, r);
	if (rc == 0)
		rc = write_summary(w, r);
	if (rc == 0)
		rc = write_requests(w, r);
	if (rc == 0)
		rc = write_instances(w, r);
	if (rc == 0)
		rc = write_timeseries(w, r);
	if (rc == 0)
		rc = write_classes(w, r);
	if (rc == 0)
		rc = write_tenants(w, r);
	if (rc == 0)
		rc = write_jobs(w, r);
	if (rc == 0)
		rc = write_links(w, r);
	herr_t e = H5Fclose(w->file);
	w->file = -1;
	if (rc == 0 && e < 0)
		rc = fail(w, "cannot close the report file");
	return rc;
}

int lsim_report_h5_init(struct lsim_diag *d)
{
	if (H5open() < 0)
		return lsim_diag_set(d, LSIM_ENOMEM, "", 0, 0, "",
				     "cannot start the HDF5 library (out of memory?)");
	return 0;
}

int lsim_report_h5_stage(const char *path, const struct lsim_results *r,
			 struct lsim_diag *d)
{
	if (!path || !r || (r->n_reqs && !r->reqs && !r->req_store) ||
	    (r->n_insts && !r->insts) || (r->n_ts && !r->ts))
		return lsim_diag_set(d, LSIM_EINVAL, path ? path : "", 0, 0, "",
				     "missing report path or results");
	size_t len = strlen(path);
	char *tmp = malloc(len + 5);
	if (!tmp)
		return lsim_diag_set(d, LSIM_ENOMEM, path, 0, 0, "",
				     "out of memory");
	memcpy(tmp, path, len);
	memcpy(tmp + len, ".tmp", 5);

	/* Library code must not print: silence HDF5's error stack printing
	 * until this call returns. */
	H5E_auto2_t old_func = NULL;
	void *old_data = NULL;
	H5Eget_auto2(H5E_DEFAULT, &old_func, &old_data);
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);

	struct h5w w = {.path = path, .d = d, .file = -1, .dcpl0 = -1,
			.gcpl = -1};
	w.dcpl0 = H5Pcreate(H5P_DATASET_CREATE);
	w.gcpl = H5Pcreate(H5P_GROUP_CREATE);
	int rc;
	if (w.dcpl0 < 0 || w.gcpl < 0 ||
	    H5Pset_obj_track_times(w.dcpl0, 0) < 0 ||
	    H5Pset_obj_track_times(w.gcpl, 0) < 0)
		rc = fail(&w, "cannot set up creation properties");
	else
		rc = write_all(&w, tmp, r);
	if (w.gcpl >= 0)
		H5Pclose(w.gcpl);
	if (w.dcpl0 >= 0)
		H5Pclose(w.dcpl0);
	if (rc == 0 && lsim_sync_path(tmp) != 0)
		rc = lsim_diag_set(d, LSIM_EIO, path, 0, 0, "",
				   "cannot write %s: %s", tmp, strerror(errno));
	if (rc != 0)
		remove(tmp);

	H5Eset_auto2(H5E_DEFAULT, old_func, old_data);
	free(tmp);
	return rc;
}

int lsim_report_h5_commit(const char *path, struct lsim_diag *d)
{
	char tmp[4200];
	if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
		return lsim_diag_set(d, LSIM_EINVAL, path, 0, 0, "", "path too long");
	if (rename(tmp, path) != 0) {
		int rc = lsim_diag_set(d, LSIM_EIO, path, 0, 0, "",
				       "cannot rename %s to the report: %s", tmp,
				       strerror(errno));
		remove(tmp);
		return rc;
	}
	return 0;
}

int lsim_report_h5_write(const char *path, const struct lsim_results *r,
			 struct lsim_diag *d)
{
	int rc = lsim_report_h5_stage(path, r, d);
	return rc != 0 ? rc : lsim_report_h5_commit(path, d);
}
