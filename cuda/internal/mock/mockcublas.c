/* mockcublas.c: a CPU mock of the cuBLAS v2 API, built as libcublas.so.13
 * by scripts/cuda/build-mock.sh (see docs/cuda.md).
 *
 * Implemented: handles (cublasCreate_v2/Destroy_v2), streams and pointer
 * mode (bookkeeping), and a column-major reference S/D GEMM, plain and
 * strided-batched. Arguments are checked as cuBLAS checks them
 * (CUBLAS_STATUS_INVALID_VALUE for bad sizes or leading dimensions), and,
 * when the mock libcuda is loaded, every matrix the call reads or writes
 * must lie inside device-accessible memory: a host pointer passed as a
 * matrix fails with CUBLAS_STATUS_EXECUTION_FAILED instead of an illegal
 * address on the GPU. alpha and beta are read through their pointers in
 * either pointer mode (device pointers are host addresses in the mock).
 * beta == 0 overwrites C without reading it (NaNs in C do not propagate);
 * alpha == 0 does not read A or B.
 * Every other symbol in symbols.txt is generated to return
 * CUBLAS_STATUS_NOT_SUPPORTED (15). */
#define _GNU_SOURCE
#include <cublas_v2.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HANDLE_MAGIC 0x53414c42u

struct cublasContext {
	unsigned magic;
	int alive;
	cudaStream_t stream;
	cublasPointerMode_t mode;
};

typedef int (*range_fn)(const void *, size_t);
typedef void (*diag_fn)(const char *, ...);
typedef void (*count_fn)(void);

/* The mock libcuda's helpers, when it is the loaded libcuda. */
static range_fn device_range(void) { return (range_fn)dlsym(RTLD_DEFAULT, "strata_mock_device_range"); }

static void report(const char *msg, const char *fn, const char *what) {
	diag_fn d = (diag_fn)dlsym(RTLD_DEFAULT, "strata_mock_diag");
	if (d)
		d("%s: %s %s", fn, what, msg);
	else
		fprintf(stderr, "mockcublas: %s: %s %s\n", fn, what, msg);
}

static int valid(cublasHandle_t h) { return h && h->magic == HANDLE_MAGIC && h->alive; }

cublasStatus_t cublasCreate_v2(cublasHandle_t *h) {
	if (!h)
		return CUBLAS_STATUS_INVALID_VALUE;
	struct cublasContext *c = calloc(1, sizeof *c); /* never freed: stale handles stay readable */
	if (!c)
		return CUBLAS_STATUS_ALLOC_FAILED;
	c->magic = HANDLE_MAGIC;
	c->alive = 1;
	c->mode = CUBLAS_POINTER_MODE_HOST;
	*h = c;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t h) {
	if (!valid(h))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	h->alive = 0;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) {
	if (!valid(h))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	h->stream = s;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t h, cudaStream_t *s) {
	if (!valid(h))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (!s)
		return CUBLAS_STATUS_INVALID_VALUE;
	*s = h->stream;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t h, cublasPointerMode_t mode) {
	if (!valid(h))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE)
		return CUBLAS_STATUS_INVALID_VALUE;
	h->mode = mode;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t h, cublasPointerMode_t *mode) {
	if (!valid(h))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (!mode)
		return CUBLAS_STATUS_INVALID_VALUE;
	*mode = h->mode;
	return CUBLAS_STATUS_SUCCESS;
}

/* ---------------------------------------------------------------- GEMM -- */

static int op_ok(cublasOperation_t t) { return t == CUBLAS_OP_N || t == CUBLAS_OP_T || t == CUBLAS_OP_C; }

/* Elements spanned by a rows x cols column-major matrix with leading
 * dimension ld. */
static size_t extent(int rows, int cols, int ld) {
	if (rows <= 0 || cols <= 0)
		return 0;
	return (size_t)(cols - 1) * (size_t)ld + (size_t)rows;
}

/* Validates a (strided-batched) GEMM; 0 when it may run. */
static cublasStatus_t check(const char *fn, cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                            int n, int k, const void *alpha, const void *A, int lda, long long sA, const void *B,
                            int ldb, long long sB, const void *beta, const void *C, int ldc, long long sC,
                            int batch, size_t esz, int reads_ab, int reads_c) {
	if (!valid(h))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	int ar = ta == CUBLAS_OP_N ? m : k, ac = ta == CUBLAS_OP_N ? k : m;
	int br = tb == CUBLAS_OP_N ? k : n, bc = tb == CUBLAS_OP_N ? n : k;
	if (!op_ok(ta) || !op_ok(tb) || m < 0 || n < 0 || k < 0 || batch < 0 || lda < (ar > 1 ? ar : 1) ||
	    ldb < (br > 1 ? br : 1) || ldc < (m > 1 ? m : 1) || !alpha || !beta)
		return CUBLAS_STATUS_INVALID_VALUE;
	if (m == 0 || n == 0 || batch == 0)
		return CUBLAS_STATUS_SUCCESS;
	range_fn in_dev = device_range();
	if (!in_dev)
		return CUBLAS_STATUS_SUCCESS;
	struct {
		const char *what;
		const void *p;
		size_t elems;
		long long stride;
		int used;
	} mats[3] = {
	    {"A", A, extent(ar, ac, lda), sA, reads_ab && k > 0},
	    {"B", B, extent(br, bc, ldb), sB, reads_ab && k > 0},
	    {"C", C, extent(m, n, ldc), sC, 1},
	};
	(void)reads_c;
	for (int i = 0; i < 3; i++) {
		if (!mats[i].used)
			continue;
		for (int b = 0; b < batch; b++) {
			const char *p = (const char *)mats[i].p + (ptrdiff_t)(b * mats[i].stride * (long long)esz);
			if (!mats[i].p || !in_dev(p, mats[i].elems * esz)) {
				char msg[160];
				snprintf(msg, sizeof msg, "(batch %d, %p, %zu elements) is not inside device memory", b,
				         (const void *)p, mats[i].elems);
				report(msg, fn, mats[i].what);
				return CUBLAS_STATUS_EXECUTION_FAILED;
			}
		}
	}
	count_fn count = (count_fn)dlsym(RTLD_DEFAULT, "strata_mock_count_gemm");
	if (count)
		count();
	return CUBLAS_STATUS_SUCCESS;
}

/* C = alpha*op(A)*op(B) + beta*C for one matrix, column-major. Every
 * element is summed over l = 0..k-1 in order, in T, like a straightforward
 * GPU kernel would; the rest only changes the speed. A block of MR rows x
 * NR columns of C is accumulated in registers (2 x NR vectors of 16 bytes,
 * GCC vector extensions, so plain SSE2 code), over the whole of k, from MR
 * contiguous values of op(A) and NR contiguous columns of op(B) per l:
 *  - op(A) = A: read in place (the last partial panel is packed once);
 *    op(A) = A^T: each panel of MR rows is packed;
 *  - op(B) = B: read in place; op(B) = B^T: each NR-column block is packed;
 *  - T,T is computed as C^T = B*A (N,N) and stored transposed.
 * C(i,j) is at C[i*ci + j*cj]. */
#define NR 4
typedef float vf4 __attribute__((vector_size(16)));
typedef double vd2 __attribute__((vector_size(16)));
#define DEFINE_GEMM(NAME, T, V)                                                                            \
	/* the MR x NR block at rows i0.., columns j0.. of C; a: op(A)(i0+r, l) = a[l*as + r];                   \
	 * b[jj]: op(B)(l, j0+jj) = b[jj][l] */                                                                  \
	static void NAME##_block(size_t K, const T *a, size_t as, const T *const *b, T alpha, T beta, T *C,        \
	                         size_t ci, size_t cj, size_t i0, size_t rows, size_t j0, size_t cols, int compute) { \
		enum { VL = 16 / sizeof(T), MR = 2 * VL };                                                            \
		V v[NR][2];                                                                                           \
		memset(v, 0, sizeof v);                                                                               \
		if (compute)                                                                                          \
			for (size_t l = 0; l < K; l++) {                                                                  \
				V a0, a1;                                                                                     \
				memcpy(&a0, a + l * as, sizeof a0);                                                           \
				memcpy(&a1, a + l * as + VL, sizeof a1);                                                      \
				for (int jj = 0; jj < NR; jj++) {                                                             \
					T bv = b[jj][l];                                                                          \
					v[jj][0] += a0 * bv;                                                                      \
					v[jj][1] += a1 * bv;                                                                      \
				}                                                                                             \
			}                                                                                                 \
		T c[NR][MR];                                                                                          \
		memcpy(c, v, sizeof c);                                                                               \
		for (size_t jj = 0; jj < cols; jj++)                                                                  \
			for (size_t r = 0; r < rows; r++) {                                                               \
				T *cc = C + (i0 + r) * ci + (j0 + jj) * cj;                                                   \
				*cc = alpha * c[jj][r] + (beta == 0 ? (T)0 : beta * *cc);                                     \
			}                                                                                                 \
	}                                                                                                         \
	static cublasStatus_t NAME(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, T alpha,       \
	                           const T *A, int lda, const T *B, int ldb, T beta, T *C, int ldc) {              \
		enum { VL = 16 / sizeof(T), MR = 2 * VL };                                                            \
		size_t M = (size_t)m, N = (size_t)n, K = (size_t)k, LDA = (size_t)lda, LDB = (size_t)ldb;             \
		size_t ci = 1, cj = (size_t)ldc;                                                                      \
		if (ta != CUBLAS_OP_N && tb != CUBLAS_OP_N) { /* C^T = B * A */                                        \
			const T *t = A;                                                                                   \
			A = B, B = t;                                                                                     \
			size_t u = LDA;                                                                                   \
			LDA = LDB, LDB = u;                                                                               \
			u = M, M = N, N = u;                                                                              \
			ci = (size_t)ldc, cj = 1;                                                                         \
			ta = tb = CUBLAS_OP_N;                                                                            \
		}                                                                                                     \
		int compute = alpha != 0 && K > 0;                                                                    \
		T *apack = NULL, *bpack = NULL;                                                                       \
		if (compute && (ta != CUBLAS_OP_N || M % MR))                                                         \
			apack = malloc(MR * K * sizeof(T));                                                               \
		if (compute && tb != CUBLAS_OP_N)                                                                     \
			bpack = malloc(NR * K * sizeof(T));                                                               \
		if (compute && (((ta != CUBLAS_OP_N || M % MR) && !apack) || (tb != CUBLAS_OP_N && !bpack))) {        \
			free(apack);                                                                                      \
			free(bpack);                                                                                      \
			return CUBLAS_STATUS_ALLOC_FAILED;                                                                \
		}                                                                                                     \
		const T *b[NR];                                                                                       \
		if (ta == CUBLAS_OP_N) {                                                                              \
			size_t edge = M - M % MR; /* the packed partial panel, if any */                                  \
			if (compute && M % MR)                                                                            \
				for (size_t l = 0; l < K; l++)                                                                \
					for (size_t r = 0; r < MR; r++)                                                           \
						apack[l * MR + r] = edge + r < M ? A[edge + r + l * LDA] : (T)0;                      \
			for (size_t j0 = 0; j0 < N; j0 += NR) {                                                           \
				size_t cols = N - j0 < NR ? N - j0 : NR;                                                      \
				for (size_t jj = 0; jj < NR; jj++) {                                                          \
					size_t j = j0 + (jj < cols ? jj : cols - 1);                                              \
					if (!compute)                                                                             \
						b[jj] = B;                                                                            \
					else if (tb == CUBLAS_OP_N)                                                               \
						b[jj] = B + j * LDB;                                                                  \
					else {                                                                                    \
						for (size_t l = 0; l < K; l++)                                                        \
							bpack[jj * K + l] = B[j + l * LDB];                                               \
						b[jj] = bpack + jj * K;                                                               \
					}                                                                                         \
				}                                                                                             \
				for (size_t i0 = 0; i0 < M; i0 += MR) {                                                       \
					size_t rows = M - i0 < MR ? M - i0 : MR;                                                  \
					if (rows == MR)                                                                           \
						NAME##_block(K, A + i0, LDA, b, alpha, beta, C, ci, cj, i0, rows, j0, cols, compute); \
					else                                                                                      \
						NAME##_block(K, apack, MR, b, alpha, beta, C, ci, cj, i0, rows, j0, cols, compute);   \
				}                                                                                             \
			}                                                                                                 \
		} else { /* op(A) = A^T, op(B) = B */                                                                  \
			for (size_t i0 = 0; i0 < M; i0 += MR) {                                                           \
				size_t rows = M - i0 < MR ? M - i0 : MR;                                                      \
				if (compute)                                                                                  \
					for (size_t l = 0; l < K; l++)                                                            \
						for (size_t r = 0; r < MR; r++)                                                       \
							apack[l * MR + r] = r < rows ? A[l + (i0 + r) * LDA] : (T)0;                      \
				for (size_t j0 = 0; j0 < N; j0 += NR) {                                                       \
					size_t cols = N - j0 < NR ? N - j0 : NR;                                                  \
					for (size_t jj = 0; jj < NR; jj++)                                                        \
						b[jj] = B + (j0 + (jj < cols ? jj : cols - 1)) * LDB;                                 \
					NAME##_block(K, apack, MR, b, alpha, beta, C, ci, cj, i0, rows, j0, cols, compute);       \
				}                                                                                             \
			}                                                                                                 \
		}                                                                                                     \
		free(apack);                                                                                          \
		free(bpack);                                                                                          \
		return CUBLAS_STATUS_SUCCESS;                                                                         \
	}

DEFINE_GEMM(sgemm1, float, vf4)
DEFINE_GEMM(dgemm1, double, vd2)

#define DEFINE_API(T, PREFIX, ONE)                                                                             \
	cublasStatus_t PREFIX##gemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, \
	                                          int n, int k, const T *alpha, const T *A, int lda, long long sA,       \
	                                          const T *B, int ldb, long long sB, const T *beta, T *C, int ldc,       \
	                                          long long sC, int batch) {                                            \
		cublasStatus_t st = check(#PREFIX "gemmStridedBatched", h, ta, tb, m, n, k, alpha, A, lda, sA, B, ldb, sB, \
		                          beta, C, ldc, sC, batch, sizeof(T), alpha && *alpha != 0,         \
		                          beta && *beta != 0);                                                                               \
		if (st || m == 0 || n == 0 || batch == 0)                                                                 \
			return st;                                                                                            \
		for (int b = 0; b < batch; b++) {                                                                         \
			st = ONE(ta, tb, m, n, k, *alpha, A + b * sA, lda, B + b * sB, ldb, *beta, C + b * sC, ldc);         \
			if (st)                                                                                               \
				return st;                                                                                        \
		}                                                                                                         \
		return CUBLAS_STATUS_SUCCESS;                                                                             \
	}                                                                                                             \
	cublasStatus_t PREFIX##gemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,     \
	                               int k, const T *alpha, const T *A, int lda, const T *B, int ldb, const T *beta,  \
	                               T *C, int ldc) {                                                                \
		cublasStatus_t st = check(#PREFIX "gemm_v2", h, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C,    \
		                          ldc, 0, 1, sizeof(T), alpha && *alpha != 0, beta && *beta != 0);                \
		if (st || m == 0 || n == 0)                                                                               \
			return st;                                                                                            \
		return ONE(ta, tb, m, n, k, *alpha, A, lda, B, ldb, *beta, C, ldc);                                       \
	}

DEFINE_API(float, cublasS, sgemm1)
DEFINE_API(double, cublasD, dgemm1)
