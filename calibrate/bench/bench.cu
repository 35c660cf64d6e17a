/*
 * bench.cu - the measurement run: device discovery, the machine
 * description (meta rows: GPU, memory, clocks, driver and CUDA versions,
 * date, tool version, repetitions), the shared helpers of common.cuh, and
 * the order in which the benchmarks run.
 */
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <thread>

#include <cublas_v2.h>

#include "common.cuh"

int bench_fail(bench_ctx *c, const char *what, const char *msg)
{
	snprintf(c->err, c->errsize, "%s failed: %s", what, msg);
	return -1;
}

void bench_note(bench_ctx *c, const char *fmt, ...)
{
	if (!c->progress)
		return;
	va_list ap;
	va_start(ap, fmt);
	fputs("llmsim-calibrate: ", c->progress);
	vfprintf(c->progress, fmt, ap);
	fputc('\n', c->progress);
	fflush(c->progress);
	va_end(ap);
}

double bench_now(void)
{
	using clk = std::chrono::steady_clock;
	return std::chrono::duration<double>(clk::now().time_since_epoch()).count();
}

void bench_sleep(double s)
{
	if (s > 0)
		std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

int bench_row(bench_ctx *c, const struct lsim_calib_row *proto,
	      std::vector<double> &samples)
{
	struct lsim_calib_row row = *proto;
	lsim_calib_stats(samples.data(), samples.size(), &row);
	if (lsim_calib_raw_add(c->raw, &row) != 0)
		return bench_fail(c, "recording a row", "out of memory");
	return 0;
}

extern "C" int lsim_bench_devices(int *count, char *err, size_t size)
{
	*count = 0;
	cudaError_t e = cudaGetDeviceCount(count);
	if (e != cudaSuccess) {
		*count = 0;
		snprintf(err, size, "%s", cudaGetErrorString(e));
		return -1;
	}
	if (*count == 0)
		snprintf(err, size, "%s", cudaGetErrorString(cudaErrorNoDevice));
	return 0;
}

static void meta(bench_ctx *c, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void meta(bench_ctx *c, const char *key, const char *fmt, ...)
{
	char buf[128];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	lsim_calib_raw_set_meta(c->raw, key, buf);
}

/* The kernel module version from /proc (no NVML needed), or "?". */
static void driver_version(char *buf, size_t size)
{
	snprintf(buf, size, "?");
	FILE *f = fopen("/proc/driver/nvidia/version", "r");
	if (!f)
		return;
	char line[512];
	if (fgets(line, sizeof line, f)) {
		const char *p = strstr(line, "Kernel Module");
		if (p) {
			p += strlen("Kernel Module");
			while (*p == ' ' || *p == '\t')
				p++;
			size_t n = strcspn(p, " \t\n");
			snprintf(buf, size, "%.*s", (int)n, p);
		}
	}
	fclose(f);
}

static int describe(bench_ctx *c)
{
	cudaDeviceProp prop;
	CK(c, cudaGetDeviceProperties(&prop, c->device));
	c->sm_count = prop.multiProcessorCount;
	int mem_khz = 0, count = 0, drv = 0, rt = 0;
	/* not every device reports its memory clock: then no peak_mem_bw */
	if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate,
				   c->device) != cudaSuccess) {
		mem_khz = 0;
		cudaGetLastError();
	}
	CK(c, cudaGetDeviceCount(&count));
	CK(c, cudaDriverGetVersion(&drv));
	CK(c, cudaRuntimeGetVersion(&rt));
	char bus[32] = "?";
	cudaDeviceGetPCIBusId(bus, sizeof bus, c->device);
	char dv[64];
	driver_version(dv, sizeof dv);
	int cb_major = 0, cb_minor = 0, cb_patch = 0;
	cublasGetProperty(MAJOR_VERSION, &cb_major);
	cublasGetProperty(MINOR_VERSION, &cb_minor);
	cublasGetProperty(PATCH_LEVEL, &cb_patch);
	char date[32];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);

	meta(c, "tool", "llmsim-calibrate");
	meta(c, "tool_version", "%s", LSIM_VERSION);
	meta(c, "date", "%s", date);
	meta(c, "quick", "%s", c->quick ? "yes" : "no");
	meta(c, "repetitions", "%s",
	     c->quick ? "transfers 3-20, contention 30 copies per thread, hbm 5, gemm 5, launch 10 x 100"
		      : "transfers 10-100, contention 300 copies per thread, hbm 20, gemm 20, launch 50 x 100");
	meta(c, "device", "%d", c->device);
	meta(c, "device_count", "%d", count);
	meta(c, "gpu_name", "%s", prop.name);
	meta(c, "compute_capability", "%d.%d", prop.major, prop.minor);
	meta(c, "sm_count", "%d", prop.multiProcessorCount);
	meta(c, "total_mem", "%zu", prop.totalGlobalMem);
	meta(c, "mem_clock_khz", "%d", mem_khz);
	meta(c, "mem_bus_bits", "%d", prop.memoryBusWidth);
	/* double data rate: two transfers per memory clock */
	if (mem_khz > 0 && prop.memoryBusWidth > 0)
		meta(c, "peak_mem_bw", "%.6g",
		     2.0 * mem_khz * 1e3 * prop.memoryBusWidth / 8.0);
	meta(c, "async_engines", "%d", prop.asyncEngineCount);
	meta(c, "pci_bus_id", "%s", bus);
	meta(c, "driver_version", "%s", dv);
	meta(c, "cuda_driver", "%d.%d", drv / 1000, drv % 1000 / 10);
	meta(c, "cuda_runtime", "%d.%d", rt / 1000, rt % 1000 / 10);
	meta(c, "cublas_version", "%d.%d.%d", cb_major, cb_minor, cb_patch);
	bench_note(c, "device %d: %s, %d SMs, %.1f GB, PCI %s, driver %s, CUDA %d.%d",
		   c->device, prop.name, prop.multiProcessorCount,
		   prop.totalGlobalMem / 1e9, bus, dv, rt / 1000, rt % 1000 / 10);
	return 0;
}

extern "C" int lsim_bench_measure(const struct lsim_bench_opts *o,
				  struct lsim_calib_raw *raw, char *err,
				  size_t size)
{
	bench_ctx c;
	c.device = o->device;
	c.quick = o->quick;
	c.progress = o->progress;
	c.raw = raw;
	c.err = err;
	c.errsize = size;
	c.sm_count = 1;
	c.h2d_bw = 0;
	CK(&c, cudaSetDevice(o->device));
	int rc = describe(&c);
	/* transfers first: contention needs the link's bandwidth */
	if (rc == 0)
		rc = bench_transfer(&c);
	if (rc == 0)
		rc = bench_contention(&c);
	if (rc == 0)
		rc = bench_interference(&c);
	if (rc == 0)
		rc = bench_hbm(&c);
	if (rc == 0)
		rc = bench_gemm(&c);
	if (rc == 0)
		rc = bench_launch(&c);
	if (rc == 0)
		rc = bench_p2p(&c);
	return rc;
}
