/*
 * hbm.cu - device memory bandwidth with SM kernels (not the copy engine):
 * copy b = a and triad a = b + s c over float4 arrays of 64 MiB to 1 GiB,
 * timed with CUDA events. Bytes moved: 2 arrays for copy, 3 for triad.
 */
#include "common.cuh"

namespace {

__global__ void fill(float4 *p, size_t n, float v)
{
	size_t stride = size_t(gridDim.x) * blockDim.x;
	for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
	     i += stride)
		p[i] = make_float4(v, v + 1, v + 2, v + 3);
}

__global__ void copy(float4 *__restrict__ b, const float4 *__restrict__ a,
		     size_t n)
{
	size_t stride = size_t(gridDim.x) * blockDim.x;
	for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
	     i += stride)
		b[i] = a[i];
}

__global__ void triad(float4 *__restrict__ a, const float4 *__restrict__ b,
		      const float4 *__restrict__ c, float s, size_t n)
{
	size_t stride = size_t(gridDim.x) * blockDim.x;
	for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
	     i += stride) {
		float4 x = b[i], y = c[i];
		a[i] = make_float4(x.x + s * y.x, x.y + s * y.y, x.z + s * y.z,
				   x.w + s * y.w);
	}
}

} /* namespace */

int bench_hbm(bench_ctx *c)
{
	size_t free_b = 0, total_b = 0;
	CK(c, cudaMemGetInfo(&free_b, &total_b));
	size_t max_size = size_t(1) << 30;
	while (max_size > (size_t(16) << 20) && 3 * max_size > free_b / 2)
		max_size /= 2;
	dev_buf a, b, d;
	CK(c, cudaMalloc(&a.p, max_size));
	CK(c, cudaMalloc(&b.p, max_size));
	CK(c, cudaMalloc(&d.p, max_size));
	event_t e0, e1;
	CK(c, cudaEventCreate(&e0.e));
	CK(c, cudaEventCreate(&e1.e));
	int grid = c->sm_count * 8, block = 256;
	size_t n_all = max_size / sizeof(float4);
	fill<<<grid, block>>>((float4 *)a.p, n_all, 1.0f);
	fill<<<grid, block>>>((float4 *)b.p, n_all, 2.0f);
	fill<<<grid, block>>>((float4 *)d.p, n_all, 3.0f);
	CK(c, cudaGetLastError());
	CK(c, cudaDeviceSynchronize());
	int reps = c->quick ? 5 : 20;
	size_t first = c->quick ? max_size : (size_t(64) << 20);
	if (first > max_size)
		first = max_size;
	for (size_t size = first; size <= max_size; size *= 4) {
		size_t n = size / sizeof(float4);
		for (int kind = 0; kind < 2; kind++) {
			std::vector<double> t;
			for (int i = 0; i < reps + 3; i++) {
				CK(c, cudaEventRecord(e0.e));
				if (kind == 0)
					copy<<<grid, block>>>((float4 *)b.p,
							      (const float4 *)a.p, n);
				else
					triad<<<grid, block>>>((float4 *)a.p,
							       (const float4 *)b.p,
							       (const float4 *)d.p,
							       0.5f, n);
				CK(c, cudaGetLastError());
				CK(c, cudaEventRecord(e1.e));
				CK(c, cudaEventSynchronize(e1.e));
				float ms = 0;
				CK(c, cudaEventElapsedTime(&ms, e0.e, e1.e));
				if (i >= 3)
					t.push_back(ms * 1e-3);
			}
			struct lsim_calib_row r;
			lsim_calib_row_clear(&r);
			snprintf(r.bench, sizeof r.bench, "hbm");
			snprintf(r.variant, sizeof r.variant, "%s",
				 kind == 0 ? "copy" : "triad");
			r.size = double(size);
			if (bench_row(c, &r, t))
				return -1;
			struct lsim_calib_row *last = &c->raw->rows[c->raw->n_rows - 1];
			last->value = (kind == 0 ? 2.0 : 3.0) * double(size) /
				      last->median_s;
			snprintf(last->unit, sizeof last->unit, "B/s");
			bench_note(c, "hbm %s %zu MiB: %.1f GB/s",
				   kind == 0 ? "copy" : "triad", size >> 20,
				   last->value / 1e9);
		}
		if (size == max_size)
			break;
		if (size * 4 > max_size)
			size = max_size / 4; /* end on the largest size */
	}
	return 0;
}
