/*
 * gemm.cu - cuBLAS GEMM throughput against tokens: Y[M x N] = X[M x K] W^T
 * with W[N x K] model-shaped (4096 x 4096, 4096 x 14336, 14336 x 4096),
 * M = 1 .. 8192 in powers of 2, bf16 and fp16 inputs and outputs with
 * fp32 accumulation (cublasGemmEx, CUBLAS_COMPUTE_32F), timed per call
 * with CUDA events. The rows give the efficiency curve eff(M).
 */
#include <algorithm>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cublas_v2.h>

#include "common.cuh"

namespace {

struct handle_t {
	cublasHandle_t h = nullptr;
	handle_t() = default;
	handle_t(const handle_t &) = delete;
	handle_t &operator=(const handle_t &) = delete;
	~handle_t()
	{
		if (h)
			cublasDestroy(h);
	}
};

/* Pseudo-random values in [-1, 1) from the index (no RNG state needed). */
template <typename T> __global__ void fill(T *p, size_t n, unsigned seed)
{
	size_t stride = size_t(gridDim.x) * blockDim.x;
	for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
	     i += stride) {
		unsigned x = unsigned(i) * 2654435761u ^ seed;
		x ^= x >> 15;
		x *= 2246822519u;
		x ^= x >> 13;
		float v = float(x & 0xffff) / 32768.0f - 1.0f;
		p[i] = T(v);
	}
}

const char *cublas_msg(cublasStatus_t s)
{
	return cublasGetStatusString(s);
}

#define CKB(c, call)                                                        \
	do {                                                                \
		cublasStatus_t s_ = (call);                                 \
		if (s_ != CUBLAS_STATUS_SUCCESS)                            \
			return bench_fail((c), #call, cublas_msg(s_));      \
	} while (0)

} /* namespace */

int bench_gemm(bench_ctx *c)
{
	struct shape {
		int n, k;
	};
	static const shape full[] = {{4096, 4096}, {4096, 14336}, {14336, 4096}};
	const size_t n_shapes = c->quick ? 2 : 3;
	const int m_max = c->quick ? 4096 : 8192;
	const int m_step = c->quick ? 4 : 2;
	size_t w_elems = 0, x_elems = 0, y_elems = 0;
	for (size_t s = 0; s < n_shapes; s++) {
		w_elems = std::max(w_elems, size_t(full[s].n) * full[s].k);
		x_elems = std::max(x_elems, size_t(m_max) * full[s].k);
		y_elems = std::max(y_elems, size_t(m_max) * full[s].n);
	}
	/* bf16 and fp16 are both 2 bytes: one set of buffers serves both */
	dev_buf w, x, y;
	CK(c, cudaMalloc(&w.p, w_elems * 2));
	CK(c, cudaMalloc(&x.p, x_elems * 2));
	CK(c, cudaMalloc(&y.p, y_elems * 2));
	handle_t h;
	CKB(c, cublasCreate(&h.h));
	event_t e0, e1;
	CK(c, cudaEventCreate(&e0.e));
	CK(c, cudaEventCreate(&e1.e));
	const int warm = c->quick ? 2 : 5, reps = c->quick ? 5 : 20;
	const float alpha = 1.0f, beta = 0.0f;
	int grid = c->sm_count * 8;
	for (int dt = 0; dt < 2; dt++) {
		cudaDataType_t type = dt == 0 ? CUDA_R_16BF : CUDA_R_16F;
		const char *name = dt == 0 ? "bf16" : "fp16";
		if (dt == 0) {
			fill<__nv_bfloat16><<<grid, 256>>>((__nv_bfloat16 *)w.p, w_elems, 1u);
			fill<__nv_bfloat16><<<grid, 256>>>((__nv_bfloat16 *)x.p, x_elems, 2u);
		} else {
			fill<__half><<<grid, 256>>>((__half *)w.p, w_elems, 1u);
			fill<__half><<<grid, 256>>>((__half *)x.p, x_elems, 2u);
		}
		CK(c, cudaGetLastError());
		CK(c, cudaDeviceSynchronize());
		for (size_t s = 0; s < n_shapes; s++) {
			int n = full[s].n, k = full[s].k;
			for (int m = 1; m <= m_max; m *= m_step) {
				std::vector<double> t;
				for (int i = 0; i < warm + reps; i++) {
					CK(c, cudaEventRecord(e0.e));
					/* column-major: Y^T (N x M) = W (N x K) . X^T (K x M) */
					CKB(c, cublasGemmEx(h.h, CUBLAS_OP_T, CUBLAS_OP_N, n, m,
							    k, &alpha, w.p, type, k, x.p, type,
							    k, &beta, y.p, type, n,
							    CUBLAS_COMPUTE_32F,
							    CUBLAS_GEMM_DEFAULT));
					CK(c, cudaEventRecord(e1.e));
					CK(c, cudaEventSynchronize(e1.e));
					float ms = 0;
					CK(c, cudaEventElapsedTime(&ms, e0.e, e1.e));
					if (i >= warm)
						t.push_back(ms * 1e-3);
				}
				struct lsim_calib_row r;
				lsim_calib_row_clear(&r);
				snprintf(r.bench, sizeof r.bench, "gemm");
				snprintf(r.variant, sizeof r.variant, "%s", name);
				r.m = m;
				r.n = n;
				r.k = k;
				if (bench_row(c, &r, t))
					return -1;
				struct lsim_calib_row *last =
					&c->raw->rows[c->raw->n_rows - 1];
				last->value = 2.0 * m * double(n) * k / last->median_s;
				snprintf(last->unit, sizeof last->unit, "FLOP/s");
			}
			bench_note(c, "gemm %s N=%d K=%d: M = 1..%d done", name, n, k,
				   m_max);
		}
	}
	return 0;
}
