// kernels.c instantiates the kernel templates for float32 and float64 with
// 32- and 64-bit integers and dispatches on the type codes of kernels.h.
// cgo rejects -mfma and -fno-math-errno in #cgo CFLAGS, so they are set here.
// No fast-math: results must not depend on the compiler's reassociation.
#pragma GCC target("avx2,fma")
#pragma GCC optimize("no-math-errno")

#include "kernels.h"

#define TBITS 32
#include "kern.h"
#include "kern_t.h"
#define IBITS 32
#include "kern_ti.h"
#undef IBITS
#define IBITS 64
#include "kern_ti.h"
#undef IBITS
#include "kern_undef.h"
#undef TBITS

#define TBITS 64
#include "kern.h"
#include "kern_t.h"
#define IBITS 32
#include "kern_ti.h"
#undef IBITS
#define IBITS 64
#include "kern_ti.h"
#undef IBITS
#include "kern_undef.h"
#undef TBITS

// PICK4 calls name_<float>_<int>(args) for the type codes dt and it.
#define PICK4(name, dt, it, ...)                        \
	do {                                            \
		switch ((dt) * 2 + (it)) {              \
		case 0: name##_f32_i32(__VA_ARGS__); break; \
		case 1: name##_f32_i64(__VA_ARGS__); break; \
		case 2: name##_f64_i32(__VA_ARGS__); break; \
		default: name##_f64_i64(__VA_ARGS__); break; \
		}                                       \
	} while (0)
#define PICK2(name, dt, ...)                                  \
	do {                                                  \
		if (dt == 0) name##_f32(__VA_ARGS__); else name##_f64(__VA_ARGS__); \
	} while (0)

void k_spmm(int dt, int it, int64_t r0, int64_t r1, const int64_t *indptr, const void *idx,
	    const int64_t *perm, const void *w, int64_t H, int64_t C, const void *x, double beta,
	    void *y) {
	if (dt == 0)
		switch (it) {
		case 0: k_spmm_f32_i32(r0, r1, indptr, idx, perm, w, H, C, x, (float)beta, y); break;
		default: k_spmm_f32_i64(r0, r1, indptr, idx, perm, w, H, C, x, (float)beta, y); break;
		}
	else
		switch (it) {
		case 0: k_spmm_f64_i32(r0, r1, indptr, idx, perm, w, H, C, x, beta, y); break;
		default: k_spmm_f64_i64(r0, r1, indptr, idx, perm, w, H, C, x, beta, y); break;
		}
}

void k_spmm_max(int dt, int it, int at, int64_t r0, int64_t r1, const int64_t *indptr,
		const void *idx, const void *x, int64_t F, void *y, void *am) {
	switch (dt * 4 + it * 2 + at) {
	case 0: k_spmm_max_f32_i32_a32(r0, r1, indptr, idx, x, F, y, am); break;
	case 1: k_spmm_max_f32_i32_a64(r0, r1, indptr, idx, x, F, y, am); break;
	case 2: k_spmm_max_f32_i64_a32(r0, r1, indptr, idx, x, F, y, am); break;
	case 3: k_spmm_max_f32_i64_a64(r0, r1, indptr, idx, x, F, y, am); break;
	case 4: k_spmm_max_f64_i32_a32(r0, r1, indptr, idx, x, F, y, am); break;
	case 5: k_spmm_max_f64_i32_a64(r0, r1, indptr, idx, x, F, y, am); break;
	case 6: k_spmm_max_f64_i64_a32(r0, r1, indptr, idx, x, F, y, am); break;
	default: k_spmm_max_f64_i64_a64(r0, r1, indptr, idx, x, F, y, am); break;
	}
}

void k_sddmm(int dt, int it, int64_t r0, int64_t r1, const int64_t *indptr, const void *idx,
	     const void *x, const void *y, int64_t H, int64_t C, void *out) {
	PICK4(k_sddmm, dt, it, r0, r1, indptr, idx, x, y, H, C, out);
}

void k_uaddv(int dt, int it, int64_t r0, int64_t r1, const int64_t *indptr, const void *idx,
	     const void *u, const void *v, int64_t H, void *out) {
	PICK4(k_uaddv, dt, it, r0, r1, indptr, idx, u, v, H, out);
}

void k_scatter_add(int dt, int it, int64_t n, const void *idx, const void *x, int64_t F,
		   int64_t c0, int64_t c1, void *y) {
	PICK4(k_scatter_add, dt, it, n, idx, x, F, c0, c1, y);
}

void k_scatter_argmax(int dt, int it, int64_t n, const void *am, const void *dy, int64_t F,
		      int64_t c0, int64_t c1, void *dx) {
	PICK4(k_scatter_argmax, dt, it, n, am, dy, F, c0, c1, dx);
}

void k_edge_reduce(int dt, int64_t r0, int64_t r1, const int64_t *indptr, const int64_t *perm,
		   const void *e, int64_t H, void *out) {
	PICK2(k_edge_reduce, dt, r0, r1, indptr, perm, e, H, out);
}

void k_edge_softmax(int dt, int64_t r0, int64_t r1, const int64_t *indptr, const void *s,
		    int64_t H, void *out) {
	PICK2(k_edge_softmax, dt, r0, r1, indptr, s, H, out);
}

void k_edge_softmax_bwd(int dt, int64_t r0, int64_t r1, const int64_t *indptr, const void *out,
			const void *dout, int64_t H, void *ds) {
	PICK2(k_edge_softmax_bwd, dt, r0, r1, indptr, out, dout, H, ds);
}

void k_headdot(int dt, int64_t r0, int64_t r1, const void *x, const void *a, int64_t H,
	       int64_t C, void *y) {
	PICK2(k_headdot, dt, r0, r1, x, a, H, C, y);
}

void k_headdot_dx(int dt, int64_t r0, int64_t r1, const void *a, const void *dy, int64_t H,
		  int64_t C, void *dx) {
	PICK2(k_headdot_dx, dt, r0, r1, a, dy, H, C, dx);
}

void k_headdot_da(int dt, int64_t r0, int64_t r1, const void *x, const void *dy, int64_t H,
		  int64_t C, double *part) {
	PICK2(k_headdot_da, dt, r0, r1, x, dy, H, C, part);
}

// k_gather copies rows: y[i] = x[idx[i]] for i in [r0, r1), rowbytes each.
void k_gather(int it, int64_t r0, int64_t r1, const void *idx, const void *x, int64_t rowbytes,
	      void *y) {
	const char *xs = x;
	char *ys = y;
	for (int64_t i = r0; i < r1; i++) {
		const int64_t j = it == 0 ? ((const int32_t *)idx)[i] : ((const int64_t *)idx)[i];
		if (i + 4 < r1) {
			const int64_t jn = it == 0 ? ((const int32_t *)idx)[i + 4] : ((const int64_t *)idx)[i + 4];
			__builtin_prefetch(xs + jn * rowbytes);
		}
		memcpy(ys + i * rowbytes, xs + j * rowbytes, (size_t)rowbytes);
	}
}
