/* selftest.c: exercises the CPU mock of libcuda.so.1 and libcublas.so.13
 * through the real CUDA 11.8 headers, the way the Go backend uses them:
 * init and device queries, contexts per thread, allocation accounting and
 * OOM, copies and their range checks, pinned memory, modules loaded from
 * nvcc's PTX, launches (indices, math, atomics, launch limits), streams and
 * events, and S/D GEMM against a naive reference.
 *
 * Built and run by scripts/cuda/build-mock.sh:
 *   selftest PTX   (PTX = cuda/internal/mock/testdata/selftest.ptx)
 * The kernels come from selftest_kernels.cu, compiled with -DSTRATA_MOCK and
 * linked into this program; they register with the mock at start-up. */
#define _GNU_SOURCE
#include <cublas_v2.h>
#include <cuda.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock.h"

static int passed, failed;

#define CHECK(cond, ...)                                                  \
	do {                                                                  \
		if (cond) {                                                       \
			passed++;                                                     \
		} else {                                                          \
			failed++;                                                     \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                 \
			fprintf(stderr, "\n");                                        \
		}                                                                 \
	} while (0)
#define EQ(call, want) CHECK((r = (call)) == (want), "got %d, want %d", (int)r, (int)(want))
#define OK(call) EQ(call, CUDA_SUCCESS)
#define BOK(call) CHECK((b = (call)) == CUBLAS_STATUS_SUCCESS, "cublas status %d", (int)b)

static char *read_file(const char *path) {
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	if (fread(s, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		free(s);
		return NULL;
	}
	fclose(f);
	s[n] = 0;
	return s;
}

static void *no_context_thread(void *arg) {
	CUdeviceptr d;
	*(CUresult *)arg = cuMemAlloc(&d, 64);
	return NULL;
}

/* Reference column-major GEMM in double. */
static void ref_gemm(int ta, int tb, int m, int n, int k, double alpha, const double *A, int lda, const double *B,
                     int ldb, double beta, double *C, int ldc) {
	for (int j = 0; j < n; j++)
		for (int i = 0; i < m; i++) {
			double s = 0;
			for (int l = 0; l < k; l++) {
				double a = ta ? A[l + (size_t)i * lda] : A[i + (size_t)l * lda];
				double b = tb ? B[j + (size_t)l * ldb] : B[l + (size_t)j * ldb];
				s += a * b;
			}
			double *c = &C[i + (size_t)j * ldc];
			*c = alpha * s + (beta == 0 ? 0 : beta * *c);
		}
}

static void test_gemm(cublasHandle_t h) {
	cublasStatus_t b;
	CUresult r;
	/* sizes on both sides of the mock's 64-row x 4-column blocking */
	static const int sizes[][4] = {{7, 5, 6, 3}, {130, 9, 33, 1}};
	for (int sz = 0; sz < 2; sz++)
	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++) {
			const int m = sizes[sz][0], n = sizes[sz][1], k = sizes[sz][2], pad = sizes[sz][3];
			int lda = (ta ? k : m) + pad, ldb = (tb ? n : k) + pad, ldc = m + pad;
			int acols = ta ? m : k, bcols = tb ? k : n;
			size_t na = (size_t)lda * acols, nb = (size_t)ldb * bcols, nc = (size_t)ldc * n;
			float *hA = malloc(na * 4), *hB = malloc(nb * 4), *hC = malloc(nc * 4);
			double *dA = malloc(na * 8), *dB = malloc(nb * 8), *dC = malloc(nc * 8), *ref = malloc(nc * 8);
			for (size_t i = 0; i < na; i++)
				dA[i] = hA[i] = (float)((int)(i * 7 % 11) - 5) / 4;
			for (size_t i = 0; i < nb; i++)
				dB[i] = hB[i] = (float)((int)(i * 5 % 13) - 6) / 8;
			for (size_t i = 0; i < nc; i++)
				dC[i] = hC[i] = (float)i;
			memcpy(ref, dC, nc * 8);
			ref_gemm(ta, tb, m, n, k, 1.5, dA, lda, dB, ldb, 0.5, ref, ldc);

			CUdeviceptr A, B, C, A64, B64, C64;
			OK(cuMemAlloc(&A, na * 4));
			OK(cuMemAlloc(&B, nb * 4));
			OK(cuMemAlloc(&C, nc * 4));
			OK(cuMemcpyHtoD(A, hA, na * 4));
			OK(cuMemcpyHtoD(B, hB, nb * 4));
			OK(cuMemcpyHtoD(C, hC, nc * 4));
			float alpha = 1.5f, beta = 0.5f;
			BOK(cublasSgemm(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &alpha,
			                (float *)A, lda, (float *)B, ldb, &beta, (float *)C, ldc));
			OK(cuMemcpyDtoH(hC, C, nc * 4));
			double worst = 0;
			for (int j = 0; j < n; j++)
				for (int i = 0; i < m; i++)
					worst = fmax(worst, fabs(hC[i + j * ldc] - ref[i + j * ldc]));
			CHECK(worst < 1e-4, "Sgemm %dx%dx%d ta=%d tb=%d: max error %g", m, n, k, ta, tb, worst);
			/* padding rows of C are untouched */
			CHECK(hC[m] == (float)m, "Sgemm wrote C's padding: %g", hC[m]);

			OK(cuMemAlloc(&A64, na * 8));
			OK(cuMemAlloc(&B64, nb * 8));
			OK(cuMemAlloc(&C64, nc * 8));
			OK(cuMemcpyHtoD(A64, dA, na * 8));
			OK(cuMemcpyHtoD(B64, dB, nb * 8));
			for (size_t i = 0; i < nc; i++)
				dC[i] = NAN; /* beta == 0 must not read C */
			OK(cuMemcpyHtoD(C64, dC, nc * 8));
			double dalpha = 1.5, dbeta = 0;
			for (size_t i = 0; i < nc; i++)
				ref[i] = 0;
			ref_gemm(ta, tb, m, n, k, 1.5, dA, lda, dB, ldb, 0, ref, ldc);
			BOK(cublasDgemm(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &dalpha,
			                (double *)A64, lda, (double *)B64, ldb, &dbeta, (double *)C64, ldc));
			OK(cuMemcpyDtoH(dC, C64, nc * 8));
			worst = 0;
			for (int j = 0; j < n; j++)
				for (int i = 0; i < m; i++)
					worst = fmax(worst, isnan(dC[i + j * ldc]) ? INFINITY : fabs(dC[i + j * ldc] - ref[i + j * ldc]));
			CHECK(worst < 1e-12, "Dgemm beta=0 %dx%dx%d ta=%d tb=%d: max error %g", m, n, k, ta, tb, worst);

			cuMemFree(A), cuMemFree(B), cuMemFree(C), cuMemFree(A64), cuMemFree(B64), cuMemFree(C64);
			free(hA), free(hB), free(hC), free(dA), free(dB), free(dC), free(ref);
		}

	/* strided batched: 3 independent 4x3 * 3x2 products */
	{
		const int M = 4, N = 2, K = 3, batch = 3;
		long long sA = M * K + 1, sB = K * N + 2, sC = M * N + 3;
		float hA[64], hB[64], hC[64];
		for (int i = 0; i < 64; i++)
			hA[i] = (float)(i % 5) - 2, hB[i] = (float)(i % 3) - 1, hC[i] = -7;
		CUdeviceptr A, B, C;
		OK(cuMemAlloc(&A, sizeof hA));
		OK(cuMemAlloc(&B, sizeof hB));
		OK(cuMemAlloc(&C, sizeof hC));
		OK(cuMemcpyHtoD(A, hA, sizeof hA));
		OK(cuMemcpyHtoD(B, hB, sizeof hB));
		OK(cuMemcpyHtoD(C, hC, sizeof hC));
		float one = 1, zero = 0;
		BOK(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &one, (float *)A, M, sA, (float *)B, K,
		                              sB, &zero, (float *)C, M, sC, batch));
		float out[64];
		OK(cuMemcpyDtoH(out, C, sizeof out));
		int bad = 0;
		for (int q = 0; q < batch; q++)
			for (int j = 0; j < N; j++)
				for (int i = 0; i < M; i++) {
					float s = 0;
					for (int l = 0; l < K; l++)
						s += hA[q * sA + i + l * M] * hB[q * sB + l + j * K];
					bad += out[q * sC + i + j * M] != s;
				}
		CHECK(bad == 0, "SgemmStridedBatched: %d wrong elements", bad);
		CHECK(out[M * N] == -7, "SgemmStridedBatched wrote between batches");

		/* alpha == 0 reads neither A nor B (NaN there stays out); k == 0 scales C by beta */
		{
			float nan_in[64], half = 0.5f, c0[64];
			for (int i = 0; i < 64; i++)
				nan_in[i] = NAN, c0[i] = 2;
			OK(cuMemcpyHtoD(A, nan_in, sizeof nan_in));
			OK(cuMemcpyHtoD(C, c0, sizeof c0));
			BOK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &zero, (float *)A, M, (float *)B, K, &half,
			                (float *)C, M));
			BOK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, 0, &one, (float *)A, M, (float *)B, K, &half,
			                (float *)C, M));
			OK(cuMemcpyDtoH(out, C, sizeof out));
			CHECK(out[0] == 0.5f && out[M * N - 1] == 0.5f && out[M * N] == 2, "alpha=0 / k=0: %g %g %g", out[0],
			      out[M * N - 1], out[M * N]);
		}
		/* argument checks as cuBLAS does them */
		CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &one, (float *)A, M - 1, (float *)B, K, &zero,
		                  (float *)C, M) == CUBLAS_STATUS_INVALID_VALUE,
		      "lda < m accepted");
		CHECK(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, M, N, K, &one, (float *)A, K - 1, (float *)B, K, &zero,
		                  (float *)C, M) == CUBLAS_STATUS_INVALID_VALUE,
		      "lda < k (transposed) accepted");
		CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, -1, N, K, &one, (float *)A, M, (float *)B, K, &zero,
		                  (float *)C, M) == CUBLAS_STATUS_INVALID_VALUE,
		      "m < 0 accepted");
		/* a host pointer as a matrix: an illegal address on a GPU */
		CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &one, hA, M, (float *)B, K, &zero, (float *)C, M) ==
		          CUBLAS_STATUS_EXECUTION_FAILED,
		      "host pointer accepted as A");
		/* B too short for its leading dimension */
		CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &one, (float *)A, M, (float *)B, 62, &zero,
		                  (float *)C, M) == CUBLAS_STATUS_EXECUTION_FAILED,
		      "B past its allocation accepted");
		cuMemFree(A), cuMemFree(B), cuMemFree(C);
	}
	CHECK(cublasSaxpy(h, 1, NULL, NULL, 1, NULL, 1) == CUBLAS_STATUS_NOT_SUPPORTED, "unimplemented cuBLAS call");
}

int main(int argc, char **argv) {
	if (argc != 2) {
		fprintf(stderr, "usage: %s selftest.ptx\n", argv[0]);
		return 2;
	}
	setenv("MOCKCUDA_QUIET", "1", 1); /* the errors below are deliberate */
	CUresult r;
	cublasStatus_t b;
	int v;

	/* ---- init ---- */
	OK(cuDriverGetVersion(&v));
	CHECK(v == 13000, "driver version %d", v);
	EQ(cuDeviceGetCount(&v), CUDA_ERROR_NOT_INITIALIZED);
	setenv("MOCKCUDA_NODEVICE", "1", 1);
	EQ(cuInit(0), CUDA_ERROR_NO_DEVICE);
	unsetenv("MOCKCUDA_NODEVICE");
	setenv("MOCKCUDA_MEM_BYTES", "64M", 1);
	OK(cuInit(0));

	/* ---- device ---- */
	CUdevice dev;
	OK(cuDeviceGetCount(&v));
	CHECK(v == 1, "%d devices", v);
	OK(cuDeviceGet(&dev, 0));
	EQ(cuDeviceGet(&dev, 1), CUDA_ERROR_INVALID_DEVICE);
	char name[64];
	OK(cuDeviceGetName(name, sizeof name, dev));
	CHECK(strcmp(name, "strata CPU mock") == 0, "name %s", name);
	size_t total;
	OK(cuDeviceTotalMem(&total, dev));
	CHECK(total == 64u << 20, "total %zu", total);
	int major, minor, sms, tpb, gy, warp, ua, map, other;
	OK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
	OK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
	OK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
	OK(cuDeviceGetAttribute(&tpb, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev));
	OK(cuDeviceGetAttribute(&gy, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, dev));
	OK(cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev));
	OK(cuDeviceGetAttribute(&ua, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, dev));
	OK(cuDeviceGetAttribute(&map, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, dev));
	OK(cuDeviceGetAttribute(&other, CU_DEVICE_ATTRIBUTE_ECC_ENABLED, dev));
	CHECK(major == 9 && minor == 0 && sms == 132 && tpb == 1024 && gy == 65535 && warp == 32 && ua == 1 &&
	          map == 1 && other == 0,
	      "attributes %d.%d %d %d %d %d %d %d %d", major, minor, sms, tpb, gy, warp, ua, map, other);

	/* ---- contexts ---- */
	CUdeviceptr d;
	EQ(cuMemAlloc(&d, 64), CUDA_ERROR_INVALID_CONTEXT);
	CUcontext ctx, cur;
	OK(cuDevicePrimaryCtxRetain(&ctx, dev));
	OK(cuCtxSetCurrent(ctx));
	OK(cuCtxGetCurrent(&cur));
	CHECK(cur == ctx, "current context");
	pthread_t th;
	CUresult other_thread = CUDA_SUCCESS;
	pthread_create(&th, NULL, no_context_thread, &other_thread);
	pthread_join(th, NULL);
	CHECK(other_thread == CUDA_ERROR_INVALID_CONTEXT, "another thread allocated without a context: %d",
	      (int)other_thread);

	/* ---- memory accounting, OOM ---- */
	size_t free0, tot;
	OK(cuMemGetInfo(&free0, &tot));
	CHECK(tot == 64u << 20 && free0 == tot, "meminfo %zu/%zu", free0, tot);
	CUdeviceptr big1, big2;
	OK(cuMemAlloc(&big1, 48u << 20));
	EQ(cuMemAlloc(&big2, 32u << 20), CUDA_ERROR_OUT_OF_MEMORY);
	size_t free1;
	OK(cuMemGetInfo(&free1, &tot));
	CHECK(free1 == free0 - (48u << 20), "free after 48 MiB: %zu", free1);
	OK(cuMemFree(big1));
	OK(cuMemAlloc(&big2, 32u << 20));
	OK(cuMemFree(big2));
	EQ(cuMemAlloc(&d, 0), CUDA_ERROR_INVALID_VALUE);

	/* ---- copies, poison, range checks ---- */
	enum { N = 1000 };
	float hx[N], hy[N], out[N];
	for (int i = 0; i < N; i++)
		hx[i] = (float)i / 8, hy[i] = (float)(N - i);
	CUdeviceptr x, y, y2;
	OK(cuMemAlloc(&x, sizeof hx));
	OK(cuMemAlloc(&y, sizeof hy));
	OK(cuMemAlloc(&y2, sizeof hy));
	OK(cuMemcpyDtoH(out, x, sizeof out));
	CHECK(isnan(out[0]) && isnan(out[N - 1]), "fresh device memory is not poisoned (NaN)");
	OK(cuMemcpyHtoD(x, hx, sizeof hx));
	OK(cuMemcpyHtoD(y, hy, sizeof hy));
	OK(cuMemcpyDtoD(y2, y, sizeof hy));
	OK(cuMemcpyDtoH(out, y2, sizeof out));
	CHECK(memcmp(out, hy, sizeof out) == 0, "HtoD/DtoD/DtoH round trip");
	EQ(cuMemcpyDtoH(out, x + 4, sizeof out), CUDA_ERROR_INVALID_VALUE);
	EQ(cuMemcpyHtoD(x + sizeof hx, hx, 4), CUDA_ERROR_INVALID_VALUE);
	EQ(cuMemcpyDtoH(out, (CUdeviceptr)(uintptr_t)hx, 4), CUDA_ERROR_INVALID_VALUE);
	EQ(cuMemFree(x + 4), CUDA_ERROR_INVALID_VALUE);
	OK(cuMemsetD32(y2, 0x3f800000u, N)); /* 1.0f */
	OK(cuMemcpyDtoH(out, y2, sizeof out));
	CHECK(out[0] == 1.0f && out[N - 1] == 1.0f, "memset D32");
	OK(cuMemsetD8(y2, 0, sizeof hy));
	OK(cuMemcpyDtoH(out, y2, sizeof out));
	CHECK(out[0] == 0 && out[N - 1] == 0, "memset D8");
	EQ(cuMemsetD32(y2 + 2, 0, 4), CUDA_ERROR_INVALID_VALUE);
	EQ(cuMemsetD32(y2, 0, N + 1), CUDA_ERROR_INVALID_VALUE);
	CUdeviceptr base;
	size_t sz;
	OK(cuMemGetAddressRange(&base, &sz, y2 + 100));
	CHECK(base == y2 && sz == sizeof hy, "address range");
	unsigned int mt;
	OK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, y2 + 8));
	CHECK(mt == CU_MEMORYTYPE_DEVICE, "memory type %u", mt);

	/* ---- modules ---- */
	char *ptx = read_file(argv[1]);
	CHECK(ptx != NULL, "cannot read %s", argv[1]);
	if (!ptx)
		goto done;
	CUmodule mod;
	OK(cuModuleLoadData(&mod, ptx));
	CUfunction axpy, idx, math, atom, f;
	OK(cuModuleGetFunction(&axpy, mod, "strata_selftest_axpy"));
	OK(cuModuleGetFunction(&idx, mod, "strata_selftest_index"));
	OK(cuModuleGetFunction(&math, mod, "strata_selftest_math"));
	OK(cuModuleGetFunction(&atom, mod, "strata_selftest_atomics"));
	EQ(cuModuleGetFunction(&f, mod, "strata_selftest"), CUDA_ERROR_NOT_FOUND);
	EQ(cuModuleGetFunction(&f, mod, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
	{
		CUmodule m2;
		/* in the PTX but not compiled into the mock */
		OK(cuModuleLoadData(&m2, ".version 7.8\n.target sm_80\n.address_size 64\n"
		                         ".visible .entry ghost(\n\t.param .u64 ghost_param_0\n)\n{\n\tret;\n}\n"));
		EQ(cuModuleGetFunction(&f, m2, "ghost"), CUDA_ERROR_NOT_FOUND);
		/* compiled into the mock but not in the PTX */
		EQ(cuModuleGetFunction(&f, m2, "strata_selftest_axpy"), CUDA_ERROR_NOT_FOUND);
		OK(cuModuleUnload(m2));
		/* a stale PTX: the parameter count differs */
		OK(cuModuleLoadData(&m2, ".version 7.8\n.target sm_80\n"
		                         ".visible .entry strata_selftest_axpy(\n\t.param .u64 p0,\n\t.param .f64 p1\n)\n"));
		EQ(cuModuleGetFunction(&f, m2, "strata_selftest_axpy"), CUDA_ERROR_INVALID_PTX);
		EQ(cuModuleLoadData(&m2, ".version 9.1\n.target sm_80\n"), CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
		EQ(cuModuleLoadData(&m2, ".version 8.0\n.target sm_100\n"), CUDA_ERROR_INVALID_PTX);
		EQ(cuModuleLoadData(&m2, "\x7f" "ELF...."), CUDA_ERROR_NOT_SUPPORTED);
	}

	/* ---- launches ---- */
	{
		long long n = N;
		double a = 2.0;
		void *args[] = {&n, &a, &x, &y};
		unsigned long long before = strata_mock_stat("launches");
		OK(cuLaunchKernel(axpy, 3, 1, 1, 128, 1, 1, 0, NULL, args, NULL)); /* grid-stride: 384 threads */
		CHECK(strata_mock_stat("launches") == before + 1, "launch counter");
		OK(cuCtxSynchronize());
		OK(cuMemcpyDtoH(out, y, sizeof out));
		int bad = 0;
		for (int i = 0; i < N; i++)
			bad += out[i] != 2.0f * hx[i] + hy[i];
		CHECK(bad == 0, "axpy: %d wrong", bad);

		/* launch limits */
		EQ(cuLaunchKernel(axpy, 1, 1, 1, 1025, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
		EQ(cuLaunchKernel(axpy, 1, 1, 1, 32, 32, 2, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
		EQ(cuLaunchKernel(axpy, 1, 1, 1, 1, 1, 65, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
		EQ(cuLaunchKernel(axpy, 1, 65536, 1, 32, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
		EQ(cuLaunchKernel(axpy, 1, 1, 65536, 32, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
		EQ(cuLaunchKernel(axpy, 0x80000000u, 1, 1, 32, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
		EQ(cuLaunchKernel(axpy, 0, 1, 1, 32, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
		EQ(cuLaunchKernel(axpy, 1, 1, 1, 32, 1, 1, 16, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
		EQ(cuLaunchKernel(axpy, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
		OK(cuLaunchKernel(axpy, 1, 1, 1, 1024, 1, 1, 0, NULL, args, NULL));
	}
	{
		/* every block and thread of a 3-D grid runs once, with the right indices */
		const unsigned g[3] = {3, 2, 2}, bl[3] = {4, 3, 2};
		size_t cnt = (size_t)g[0] * g[1] * g[2] * bl[0] * bl[1] * bl[2];
		CUdeviceptr o;
		OK(cuMemAlloc(&o, cnt * 8));
		void *args[] = {&o};
		OK(cuLaunchKernel(idx, g[0], g[1], g[2], bl[0], bl[1], bl[2], 0, NULL, args, NULL));
		unsigned long long *rec = malloc(cnt * 8);
		OK(cuMemcpyDtoH(rec, o, cnt * 8));
		int bad = 0;
		for (unsigned bz = 0; bz < g[2]; bz++)
			for (unsigned by = 0; by < g[1]; by++)
				for (unsigned bx = 0; bx < g[0]; bx++)
					for (unsigned tz = 0; tz < bl[2]; tz++)
						for (unsigned ty = 0; ty < bl[1]; ty++)
							for (unsigned tx = 0; tx < bl[0]; tx++) {
								size_t blk = ((size_t)bz * g[1] + by) * g[0] + bx;
								size_t t = ((size_t)tz * bl[1] + ty) * bl[0] + tx;
								unsigned long long want = bx | by << 8 | bz << 16 | (unsigned long long)tx << 24 |
								                          (unsigned long long)ty << 32 | (unsigned long long)tz << 40;
								bad += rec[blk * bl[0] * bl[1] * bl[2] + t] != want;
							}
		CHECK(bad == 0, "3-D index kernel: %d wrong records", bad);
		free(rec);
		cuMemFree(o);
	}
	{
		/* math overloads, isnan, INFINITY */
		enum { M = 8 };
		float in[M] = {-2.5f, -1, 0, 0.5f, 3, NAN, INFINITY, -INFINITY};
		float yf[M];
		double yd[M];
		long long flags[M];
		CUdeviceptr din, dyf, dyd, dfl;
		OK(cuMemAlloc(&din, sizeof in));
		OK(cuMemAlloc(&dyf, sizeof yf));
		OK(cuMemAlloc(&dyd, sizeof yd));
		OK(cuMemAlloc(&dfl, sizeof flags));
		OK(cuMemcpyHtoD(din, in, sizeof in));
		long long n = M;
		void *args[] = {&n, &din, &dyf, &dyd, &dfl};
		OK(cuLaunchKernel(math, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
		OK(cuMemcpyDtoH(yf, dyf, sizeof yf));
		OK(cuMemcpyDtoH(yd, dyd, sizeof yd));
		OK(cuMemcpyDtoH(flags, dfl, sizeof flags));
		int bad = 0;
		for (int i = 0; i < 5; i++) {
			float v = in[i], a = fabsf(v);
			float wf = tanhf(v) + expf(v * 0.125f) + sqrtf(a) + logf(1.0f + a) + fmaxf(v, 0) + fminf(v, 0) + v * v;
			double dv = v, da = fabs(dv);
			double wd = tanh(dv) + exp(dv * 0.125) + sqrt(da) + log(1 + da) + fmax(dv, 0) + fmin(dv, 0) + dv * dv;
			bad += fabsf(yf[i] - wf) > 1e-5f * fmaxf(1, fabsf(wf)) || fabs(yd[i] - wd) > 1e-12 * fmax(1, fabs(wd)) ||
			       flags[i] != 0;
		}
		bad += flags[5] != 1 || flags[6] != 2 || flags[7] != 3;
		CHECK(bad == 0, "math kernel: %d wrong", bad);
		cuMemFree(din), cuMemFree(dyf), cuMemFree(dyd), cuMemFree(dfl);
	}
	{
		/* atomics over 5 blocks of 64 threads, 300 active */
		long long n = 300;
		float fs = 0;
		double ds = 0;
		int cnt = 0, mx = -1000;
		unsigned ucnt = 0;
		unsigned long long us = 0;
		CUdeviceptr dfs, dds, dc, dm, duc, dus;
		OK(cuMemAlloc(&dfs, 4));
		OK(cuMemAlloc(&dds, 8));
		OK(cuMemAlloc(&dc, 4));
		OK(cuMemAlloc(&dm, 4));
		OK(cuMemAlloc(&duc, 4));
		OK(cuMemAlloc(&dus, 8));
		OK(cuMemcpyHtoD(dfs, &fs, 4));
		OK(cuMemcpyHtoD(dds, &ds, 8));
		OK(cuMemcpyHtoD(dc, &cnt, 4));
		OK(cuMemcpyHtoD(dm, &mx, 4));
		OK(cuMemcpyHtoD(duc, &ucnt, 4));
		OK(cuMemcpyHtoD(dus, &us, 8));
		void *args[] = {&n, &x, &dfs, &dds, &dc, &dm, &duc, &dus};
		OK(cuLaunchKernel(atom, 5, 1, 1, 64, 1, 1, 0, NULL, args, NULL));
		OK(cuMemcpyDtoH(&fs, dfs, 4));
		OK(cuMemcpyDtoH(&ds, dds, 8));
		OK(cuMemcpyDtoH(&cnt, dc, 4));
		OK(cuMemcpyDtoH(&mx, dm, 4));
		OK(cuMemcpyDtoH(&ucnt, duc, 4));
		OK(cuMemcpyDtoH(&us, dus, 8));
		double want = 0;
		for (int i = 0; i < 300; i++)
			want += hx[i];
		CHECK(fabs(fs - want) < 1e-3 && ds == want && cnt == 300 && mx == (int)(hx[299] * 100) && ucnt == 300 &&
		          us == 299ull * 300 / 2,
		      "atomics: %g %g %d %d %u %llu", fs, ds, cnt, mx, ucnt, us);
		cuMemFree(dfs), cuMemFree(dds), cuMemFree(dc), cuMemFree(dm), cuMemFree(duc), cuMemFree(dus);
	}

	/* ---- streams and events ---- */
	{
		CUstream s;
		CUevent e0, e1, en;
		OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
		OK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
		OK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
		OK(cuEventCreate(&en, CU_EVENT_DISABLE_TIMING));
		OK(cuEventRecord(e0, s));
		OK(cuMemcpyHtoDAsync(y, hy, sizeof hy, s));
		OK(cuMemsetD32Async(y2, 0, N, s));
		long long n = N;
		double a = 1.0;
		void *args[] = {&n, &a, &x, &y};
		OK(cuLaunchKernel(axpy, 8, 1, 1, 128, 1, 1, 0, s, args, NULL));
		OK(cuMemcpyDtoHAsync(out, y, sizeof out, s));
		OK(cuEventRecord(e1, s));
		OK(cuStreamWaitEvent(NULL, e1, 0));
		OK(cuStreamQuery(s));
		OK(cuStreamSynchronize(s));
		OK(cuEventSynchronize(e1));
		float ms = -1;
		OK(cuEventElapsedTime(&ms, e0, e1));
		CHECK(ms >= 0, "elapsed %g ms", ms);
		OK(cuEventRecord(en, s));
		EQ(cuEventElapsedTime(&ms, e0, en), CUDA_ERROR_INVALID_HANDLE);
		CHECK(out[10] == hx[10] + hy[10], "async axpy: %g", out[10]);
		OK(cuEventDestroy(e0));
		OK(cuEventDestroy(e1));
		OK(cuEventDestroy(en));
		OK(cuStreamDestroy(s));
		EQ(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
	}

	/* ---- pinned and registered host memory ---- */
	{
		float *pin;
		OK(cuMemHostAlloc((void **)&pin, sizeof hx, CU_MEMHOSTALLOC_DEVICEMAP));
		CUdeviceptr dpin;
		OK(cuMemHostGetDevicePointer(&dpin, pin, 0));
		CHECK(dpin == (CUdeviceptr)(uintptr_t)pin, "mapped pinned pointer differs");
		memcpy(pin, hy, sizeof hy);
		long long n = N;
		double a = -1.0;
		void *args[] = {&n, &a, &x, &dpin}; /* a kernel writes the pinned buffer directly */
		OK(cuLaunchKernel(axpy, 4, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
		CHECK(pin[7] == hy[7] - hx[7], "zero-copy axpy: %g", pin[7]);
		OK(cuMemcpyDtoH(out, dpin, sizeof out)); /* pinned memory is device-accessible */
		OK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dpin));
		CHECK(mt == CU_MEMORYTYPE_HOST, "pinned memory type %u", mt);
		EQ(cuMemFreeHost(pin + 1), CUDA_ERROR_INVALID_VALUE);
		OK(cuMemFreeHost(pin));
		EQ(cuMemHostGetDevicePointer(&dpin, pin, 0), CUDA_ERROR_INVALID_VALUE);

		static float reg[4096];
		OK(cuMemHostRegister(reg, sizeof reg, CU_MEMHOSTREGISTER_DEVICEMAP));
		EQ(cuMemHostRegister(reg + 8, 64, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
		OK(cuMemHostGetDevicePointer(&dpin, reg + 4, 0));
		CHECK(dpin == (CUdeviceptr)(uintptr_t)(reg + 4), "registered pointer");
		OK(cuMemcpyHtoD(dpin, hx, 64));
		OK(cuMemHostUnregister(reg));
		EQ(cuMemHostUnregister(reg), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
	}

	/* ---- cuBLAS ---- */
	{
		cublasHandle_t h;
		BOK(cublasCreate(&h));
		CUstream s;
		OK(cuStreamCreate(&s, 0));
		BOK(cublasSetStream(h, (cudaStream_t)s));
		cudaStream_t got;
		BOK(cublasGetStream(h, &got));
		CHECK(got == (cudaStream_t)s, "cublas stream");
		test_gemm(h);
		CHECK(strata_mock_stat("gemms") >= 17, "gemm counter %llu", strata_mock_stat("gemms"));
		BOK(cublasDestroy(h));
		CHECK(cublasDestroy(h) == CUBLAS_STATUS_NOT_INITIALIZED, "double destroy");
		OK(cuStreamDestroy(s));
	}

	/* ---- a generated fallback ---- */
	{
		CUarray arr;
		CUDA_ARRAY_DESCRIPTOR desc = {0};
		EQ(cuArrayCreate(&arr, &desc), CUDA_ERROR_NOT_SUPPORTED);
	}

	/* ---- teardown: a created context owns its memory ---- */
	{
		CUcontext c2;
		OK(cuCtxCreate(&c2, 0, dev));
		OK(cuMemAlloc(&d, 1 << 20));
		size_t f1, f2;
		OK(cuMemGetInfo(&f1, &tot));
		OK(cuCtxDestroy(c2));
		OK(cuCtxGetCurrent(&cur));
		CHECK(cur == ctx, "after destroying a pushed context the previous one is current");
		OK(cuMemGetInfo(&f2, &tot));
		CHECK(f2 == f1 + (1 << 20), "cuCtxDestroy released its memory: %zu -> %zu", f1, f2);
	}
	cuMemFree(x), cuMemFree(y), cuMemFree(y2);
	OK(cuModuleUnload(mod));
	EQ(cuLaunchKernel(axpy, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
	OK(cuDevicePrimaryCtxRelease(dev));
	free(ptx);

done:
	printf("mock-selftest: %d passed, %d failed\n", passed, failed);
	return failed != 0;
}
