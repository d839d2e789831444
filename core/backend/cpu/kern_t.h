// kern_t.h: kernels templated on the float type T only (see kern.h).
// Each function handles rows [r0, r1) and is called once per chunk.

// dot returns <a, b> over n elements with a fixed summation order.
INLINE T FT(dot)(const T *a, const T *b, int64_t n) {
	VT s0 = VZERO(), s1 = VZERO(), s2 = VZERO(), s3 = VZERO();
	int64_t j = 0;
	for (; j + 4 * VW <= n; j += 4 * VW) {
		s0 = VFMA(VLOAD(a + j), VLOAD(b + j), s0);
		s1 = VFMA(VLOAD(a + j + VW), VLOAD(b + j + VW), s1);
		s2 = VFMA(VLOAD(a + j + 2 * VW), VLOAD(b + j + 2 * VW), s2);
		s3 = VFMA(VLOAD(a + j + 3 * VW), VLOAD(b + j + 3 * VW), s3);
	}
	for (; j + VW <= n; j += VW)
		s0 = VFMA(VLOAD(a + j), VLOAD(b + j), s0);
	if (j < n) {
		__m256i m = VTAIL(n - j);
		s0 = VFMA(VMLOAD(a + j, m), VMLOAD(b + j, m), s0);
	}
	return VHSUM(VADD(VADD(s0, s1), VADD(s2, s3)));
}

// k_edge_reduce: out[i,h] = sum over entries k of row i of e[perm(k),h].
void FT(k_edge_reduce)(int64_t r0, int64_t r1, const int64_t *indptr, const int64_t *perm,
		       const T *restrict e, int64_t H, T *restrict out) {
	for (int64_t i = r0; i < r1; i++) {
		T *o = out + i * H;
		for (int64_t h = 0; h < H; h++)
			o[h] = 0;
		for (int64_t k = indptr[i]; k < indptr[i + 1]; k++) {
			const T *ek = e + (perm ? perm[k] : k) * H;
			for (int64_t h = 0; h < H; h++)
				o[h] += ek[h];
		}
	}
}

// k_edge_softmax: max-shifted softmax of s[k,h] over the entries of each row.
void FT(k_edge_softmax)(int64_t r0, int64_t r1, const int64_t *indptr, const T *restrict s,
			int64_t H, T *restrict out) {
	for (int64_t i = r0; i < r1; i++) {
		const int64_t k0 = indptr[i], k1 = indptr[i + 1];
		for (int64_t h = 0; h < H; h++) {
			T m = s[k0 * H + h];
			for (int64_t k = k0 + 1; k < k1; k++)
				m = s[k * H + h] > m ? s[k * H + h] : m;
			T sum = 0;
			for (int64_t k = k0; k < k1; k++) {
				T v = EXP(s[k * H + h] - m);
				out[k * H + h] = v;
				sum += v;
			}
			for (int64_t k = k0; k < k1; k++)
				out[k * H + h] /= sum;
		}
	}
}

// k_edge_softmax_bwd: ds = out·(dout - sum over the row of out·dout).
void FT(k_edge_softmax_bwd)(int64_t r0, int64_t r1, const int64_t *indptr, const T *restrict out,
			    const T *restrict dout, int64_t H, T *restrict ds) {
	for (int64_t i = r0; i < r1; i++) {
		const int64_t k0 = indptr[i], k1 = indptr[i + 1];
		for (int64_t h = 0; h < H; h++) {
			T d = 0;
			for (int64_t k = k0; k < k1; k++)
				d += out[k * H + h] * dout[k * H + h];
			for (int64_t k = k0; k < k1; k++)
				ds[k * H + h] = out[k * H + h] * (dout[k * H + h] - d);
		}
	}
}

// k_headdot: y[n,h] = <x[n, h*C:(h+1)*C], a[h,:]>.
void FT(k_headdot)(int64_t r0, int64_t r1, const T *x, const T *a, int64_t H, int64_t C, T *y) {
	for (int64_t n = r0; n < r1; n++)
		for (int64_t h = 0; h < H; h++)
			y[n * H + h] = FT(dot)(x + (n * H + h) * C, a + h * C, C);
}

// k_headdot_dx: dx[n, h*C+c] += dy[n,h]·a[h,c].
void FT(k_headdot_dx)(int64_t r0, int64_t r1, const T *restrict a, const T *restrict dy, int64_t H,
		      int64_t C, T *restrict dx) {
	for (int64_t n = r0; n < r1; n++)
		for (int64_t h = 0; h < H; h++) {
			const T g = dy[n * H + h];
			T *d = dx + (n * H + h) * C;
			const T *ah = a + h * C;
			for (int64_t c = 0; c < C; c++)
				d[c] += g * ah[c];
		}
}

// k_headdot_da: part[h,c] += sum over rows of dy[n,h]·x[n,h*C+c], in double.
void FT(k_headdot_da)(int64_t r0, int64_t r1, const T *restrict x, const T *restrict dy, int64_t H,
		      int64_t C, double *restrict part) {
	for (int64_t n = r0; n < r1; n++)
		for (int64_t h = 0; h < H; h++) {
			const double g = dy[n * H + h];
			const T *xr = x + (n * H + h) * C;
			double *p = part + h * C;
			for (int64_t c = 0; c < C; c++)
				p[c] += g * (double)xr[c];
		}
}
