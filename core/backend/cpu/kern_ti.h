// kern_ti.h: kernels templated on the float type T and an integer type I
// (column ids, gather/scatter indices or argmax ids). Define IBITS first.
#if IBITS == 32
#define I int32_t
#define IS i32
#else
#define I int64_t
#define IS i64
#endif

#ifndef SPMM_PF
#define SPMM_PF 4 // prefetch distance in edges; 0 disables
#endif

// spmm_blk accumulates NV vectors of columns over the entries [k0, k1) in
// registers and stores them to yo. mode 0: unit weights, 1: w[k·ws],
// 2: w[perm[k]·ws]. x and yo are already offset to the first column.
INLINE void FTI(spmm_blk)(const int NV, const int mode, int64_t k0, int64_t k1, const I *idx,
			  const int64_t *perm, const T *w, int64_t ws, int64_t F, const T *x,
			  T beta, T *yo) {
	VT acc[8];
	for (int v = 0; v < NV; v++)
		acc[v] = VZERO();
	for (int64_t k = k0; k < k1; k++) {
		VT wv = mode == 0 ? VSET1((T)1) : VSET1(mode == 1 ? w[k * ws] : w[perm[k] * ws]);
		const T *xr = x + (int64_t)idx[k] * F;
		if (SPMM_PF && k + SPMM_PF < k1) {
			const char *p = (const char *)(x + (int64_t)idx[k + SPMM_PF] * F);
			for (int l = 0; l < (NV + 1) / 2; l++)
				_mm_prefetch(p + 64 * l, _MM_HINT_T0);
		}
		for (int v = 0; v < NV; v++)
			acc[v] = VFMA(wv, VLOAD(xr + v * VW), acc[v]);
	}
	if (beta == 0) {
		for (int v = 0; v < NV; v++)
			VSTORE(yo + v * VW, acc[v]);
	} else {
		VT bv = VSET1(beta);
		for (int v = 0; v < NV; v++)
			VSTORE(yo + v * VW, VFMA(bv, VLOAD(yo + v * VW), acc[v]));
	}
}

// spmm_tail is spmm_blk for the last n < VW columns, through masked loads.
INLINE void FTI(spmm_tail)(int64_t n, const int mode, int64_t k0, int64_t k1, const I *idx,
			   const int64_t *perm, const T *w, int64_t ws, int64_t F, const T *x,
			   T beta, T *yo) {
	const __m256i m = VTAIL(n);
	VT acc = VZERO();
	for (int64_t k = k0; k < k1; k++) {
		VT wv = mode == 0 ? VSET1((T)1) : VSET1(mode == 1 ? w[k * ws] : w[perm[k] * ws]);
		acc = VFMA(wv, VMLOAD(x + (int64_t)idx[k] * F, m), acc);
	}
	if (beta != 0)
		acc = VFMA(VSET1(beta), VMLOAD(yo, m), acc);
	VMSTORE(yo, m, acc);
}

// spmm_seg computes len columns starting at x and yo for one row.
INLINE void FTI(spmm_seg)(const int mode, int64_t k0, int64_t k1, const I *idx,
			  const int64_t *perm, const T *w, int64_t ws, int64_t F, const T *x,
			  int64_t len, T beta, T *yo) {
	int64_t c = 0;
	for (; c + 8 * VW <= len; c += 8 * VW)
		FTI(spmm_blk)(8, mode, k0, k1, idx, perm, w, ws, F, x + c, beta, yo + c);
	if (c + 4 * VW <= len) {
		FTI(spmm_blk)(4, mode, k0, k1, idx, perm, w, ws, F, x + c, beta, yo + c);
		c += 4 * VW;
	}
	if (c + 2 * VW <= len) {
		FTI(spmm_blk)(2, mode, k0, k1, idx, perm, w, ws, F, x + c, beta, yo + c);
		c += 2 * VW;
	}
	if (c + VW <= len) {
		FTI(spmm_blk)(1, mode, k0, k1, idx, perm, w, ws, F, x + c, beta, yo + c);
		c += VW;
	}
	if (c < len)
		FTI(spmm_tail)(len - c, mode, k0, k1, idx, perm, w, ws, F, x + c, beta, yo + c);
}

// k_spmm: y[i, h*C:(h+1)*C] = sum over entries k of row i of
// w[perm(k), h]·x[idx[k], h*C:(h+1)*C] (+ beta·y). w NULL means unit weights.
void FTI(k_spmm)(int64_t r0, int64_t r1, const int64_t *indptr, const I *idx, const int64_t *perm,
		 const T *w, int64_t H, int64_t C, const T *x, T beta, T *y) {
	const int64_t F = H * C;
	for (int64_t i = r0; i < r1; i++) {
		const int64_t k0 = indptr[i], k1 = indptr[i + 1];
		for (int64_t h = 0; h < H; h++) {
			T *yo = y + i * F + h * C;
			const T *xo = x + h * C;
			if (!w)
				FTI(spmm_seg)(0, k0, k1, idx, perm, w, H, F, xo, C, beta, yo);
			else if (!perm)
				FTI(spmm_seg)(1, k0, k1, idx, perm, w + h, H, F, xo, C, beta, yo);
			else
				FTI(spmm_seg)(2, k0, k1, idx, perm, w + h, H, F, xo, C, beta, yo);
		}
	}
}

// k_spmmt: Aᵀ·x by scattering A's entries, for the output rows j in
// [j0, j1) (those of one goroutine): y[j, h*C:(h+1)*C] = the sum over the
// entries k with idx[k] = j, rows ascending and entries in order, of
// w[k, h]·x[i, h*C:(h+1)*C] (w NULL: unit weights), each term one fused
// multiply-add from zero. That is the order and the arithmetic of k_spmm
// over the transposed CSR (a stable transpose lists a column's entries
// by row), so the bits are the same, without building the transpose.
#if TBITS == 32
#define SFMA fmaf
#else
#define SFMA fma
#endif
void FTI(k_spmmt)(int64_t rows, const int64_t *indptr, const I *idx, const T *w, int64_t H,
		  int64_t C, const T *restrict x, int64_t j0, int64_t j1, T *restrict y) {
	const int64_t F = H * C;
	memset(y + j0 * F, 0, (size_t)((j1 - j0) * F) * sizeof(T));
	for (int64_t i = 0; i < rows; i++) {
		const T *xr = x + i * F;
		for (int64_t k = indptr[i]; k < indptr[i + 1]; k++) {
			const int64_t j = (int64_t)idx[k];
			if (j < j0 || j >= j1)
				continue;
			T *yr = y + j * F;
			for (int64_t h = 0; h < H; h++) {
				const T wv = w ? w[k * H + h] : (T)1;
				for (int64_t c = h * C; c < (h + 1) * C; c++)
					yr[c] = SFMA(wv, xr[c], yr[c]);
			}
		}
	}
}
#undef SFMA

// k_sddmm: out[k,h] = <x[i] head h, y[idx[k]] head h> for the entries of row i.
void FTI(k_sddmm)(int64_t r0, int64_t r1, const int64_t *indptr, const I *idx, const T *x,
		  const T *y, int64_t H, int64_t C, T *out) {
	const int64_t F = H * C;
	for (int64_t i = r0; i < r1; i++) {
		const T *xr = x + i * F;
		const int64_t k1 = indptr[i + 1];
		for (int64_t k = indptr[i]; k < k1; k++) {
			const T *yr = y + (int64_t)idx[k] * F;
			if (SPMM_PF && k + SPMM_PF < k1) {
				const char *p = (const char *)(y + (int64_t)idx[k + SPMM_PF] * F);
				for (int64_t l = 0; l < 8 && 64 * l < F * (int64_t)sizeof(T); l++)
					_mm_prefetch(p + 64 * l, _MM_HINT_T0);
			}
			for (int64_t h = 0; h < H; h++)
				out[k * H + h] = FT(dot)(xr + h * C, yr + h * C, C);
		}
	}
}

// k_uaddv: out[k,h] = u[idx[k],h] + v[i,h] for the entries of row i.
void FTI(k_uaddv)(int64_t r0, int64_t r1, const int64_t *indptr, const I *idx, const T *restrict u,
		  const T *restrict v, int64_t H, T *restrict out) {
	for (int64_t i = r0; i < r1; i++) {
		const T *vr = v + i * H;
		for (int64_t k = indptr[i]; k < indptr[i + 1]; k++) {
			const T *ur = u + (int64_t)idx[k] * H;
			for (int64_t h = 0; h < H; h++)
				out[k * H + h] = ur[h] + vr[h];
		}
	}
}

// k_scatter_add: y[idx[i], c] += x[i, c] for all i in order, c in [c0, c1).
void FTI(k_scatter_add)(int64_t n, const I *idx, const T *restrict x, int64_t F, int64_t c0,
			int64_t c1, T *restrict y) {
	for (int64_t i = 0; i < n; i++) {
		T *restrict yr = y + (int64_t)idx[i] * F;
		const T *restrict xr = x + i * F;
		for (int64_t c = c0; c < c1; c++)
			yr[c] += xr[c];
	}
}

// k_scatter_argmax: dx[am[i,f], f] += dy[i,f] for all i in order, f in [c0, c1).
void FTI(k_scatter_argmax)(int64_t n, const I *am, const T *restrict dy, int64_t F, int64_t c0,
			   int64_t c1, T *restrict dx) {
	for (int64_t i = 0; i < n; i++)
		for (int64_t f = c0; f < c1; f++) {
			const int64_t a = am[i * F + f];
			if (a >= 0)
				dx[a * F + f] += dy[i * F + f];
		}
}

#define ABITS 32
#include "kern_max.h"
#undef ABITS
#define ABITS 64
#include "kern_max.h"
#undef ABITS

#undef I
#undef IS
