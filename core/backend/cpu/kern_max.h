// kern_max.h: SpMMMax for float type T, column type I and argmax type A.
#if ABITS == 32
#define A int32_t
#define AS a32
#else
#define A int64_t
#define AS a64
#endif
#define FTIA_(n, t, i, a) n##_##t##_##i##_##a
#define FTIA(n, t, i, a) FTIA_(n, t, i, a)

// k_spmm_max: y[i,f] = max over entries k of row i of x[idx[k],f], and
// am[i,f] the first source reaching it; 0 and -1 for an empty row.
void FTIA(k_spmm_max, TS, IS, AS)(int64_t r0, int64_t r1, const int64_t *indptr, const I *idx,
				  const T *x, int64_t F, T *y, A *am) {
	for (int64_t i = r0; i < r1; i++) {
		T *restrict yr = y + i * F;
		A *restrict ar = am + i * F;
		const int64_t k0 = indptr[i], k1 = indptr[i + 1];
		if (k0 == k1) {
			for (int64_t f = 0; f < F; f++) {
				yr[f] = 0;
				ar[f] = -1;
			}
			continue;
		}
		const T *restrict xr = x + (int64_t)idx[k0] * F;
		const A c0 = (A)idx[k0];
		for (int64_t f = 0; f < F; f++) {
			yr[f] = xr[f];
			ar[f] = c0;
		}
		for (int64_t k = k0 + 1; k < k1; k++) {
			const T *restrict xk = x + (int64_t)idx[k] * F;
			const A c = (A)idx[k];
			for (int64_t f = 0; f < F; f++) {
				const T v = xk[f];
				const int gt = v > yr[f];
				yr[f] = gt ? v : yr[f];
				ar[f] = gt ? c : ar[f];
			}
		}
	}
}

#undef A
#undef AS
