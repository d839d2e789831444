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

// max_cols is the scalar k_spmm_max of columns [c0, F) of one non-empty row.
INLINE void FTIA(max_cols, TS, IS, AS)(int64_t k0, int64_t k1, const I *idx, const T *x, int64_t F,
				       int64_t c0, T *restrict yr, A *restrict ar) {
	const T *restrict xr = x + (int64_t)idx[k0] * F;
	const A a0 = (A)idx[k0];
	for (int64_t f = c0; f < F; f++) {
		yr[f] = xr[f];
		ar[f] = a0;
	}
	for (int64_t k = k0 + 1; k < k1; k++) {
		const T *restrict xk = x + (int64_t)idx[k] * F;
		const A c = (A)idx[k];
		for (int64_t f = c0; f < F; f++) {
			const T v = xk[f];
			const int gt = v > yr[f];
			yr[f] = gt ? v : yr[f];
			ar[f] = gt ? c : ar[f];
		}
	}
}

#if TBITS == 32 && ABITS == 32
// max_blk keeps the max and argmax of NV·8 float32 columns in registers.
INLINE void FTIA(max_blk, TS, IS, AS)(const int NV, int64_t k0, int64_t k1, const I *idx,
				      const float *x, int64_t F, float *yo, int32_t *ao) {
	__m256 m[4];
	__m256 a[4]; // int32 ids carried as float bit patterns for blendv_ps
	const float *xr = x + (int64_t)idx[k0] * F;
	__m256 c = _mm256_castsi256_ps(_mm256_set1_epi32((int32_t)idx[k0]));
	for (int v = 0; v < NV; v++) {
		m[v] = _mm256_loadu_ps(xr + 8 * v);
		a[v] = c;
	}
	for (int64_t k = k0 + 1; k < k1; k++) {
		xr = x + (int64_t)idx[k] * F;
		c = _mm256_castsi256_ps(_mm256_set1_epi32((int32_t)idx[k]));
		for (int v = 0; v < NV; v++) {
			const __m256 val = _mm256_loadu_ps(xr + 8 * v);
			const __m256 gt = _mm256_cmp_ps(val, m[v], _CMP_GT_OQ);
			m[v] = _mm256_blendv_ps(m[v], val, gt);
			a[v] = _mm256_blendv_ps(a[v], c, gt);
		}
	}
	for (int v = 0; v < NV; v++) {
		_mm256_storeu_ps(yo + 8 * v, m[v]);
		_mm256_storeu_si256((__m256i *)(ao + 8 * v), _mm256_castps_si256(a[v]));
	}
}
#endif

// k_spmm_max: y[i,f] = max over entries k of row i of x[idx[k],f], and
// am[i,f] the first source reaching it; 0 and -1 for an empty row.
void FTIA(k_spmm_max, TS, IS, AS)(int64_t r0, int64_t r1, const int64_t *indptr, const I *idx,
				  const T *x, int64_t F, T *y, A *am) {
	for (int64_t i = r0; i < r1; i++) {
		T *yr = y + i * F;
		A *ar = am + i * F;
		const int64_t k0 = indptr[i], k1 = indptr[i + 1];
		if (k0 == k1) {
			for (int64_t f = 0; f < F; f++) {
				yr[f] = 0;
				ar[f] = -1;
			}
			continue;
		}
		int64_t c = 0;
#if TBITS == 32 && ABITS == 32
		for (; c + 32 <= F; c += 32)
			FTIA(max_blk, TS, IS, AS)(4, k0, k1, idx, x + c, F, yr + c, ar + c);
		for (; c + 8 <= F; c += 8)
			FTIA(max_blk, TS, IS, AS)(1, k0, k1, idx, x + c, F, yr + c, ar + c);
#endif
		if (c < F)
			FTIA(max_cols, TS, IS, AS)(k0, k1, idx, x, F, c, yr, ar);
	}
}

#undef A
#undef AS
