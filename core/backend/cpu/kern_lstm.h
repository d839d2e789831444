// kern_lstm.h: the row kernels of the LSTM aggregation (lstm.go), templated
// on the float type T (see kern.h). Rows are in the schedule's order (by
// degree, descending), so the rows still running at step t are a prefix;
// G4 = 4H, the gate blocks of a row are i, f, g, o (PyTorch's order). Index
// arrays of the CSR are int32 (it = 0) or int64 (it = 1).

#if TBITS == 32
#define LTANH tanhf
#else
#define LTANH tanh
#endif

INLINE int64_t FT(lstm_id)(int it, const void *idx, int64_t k) {
	return it == 0 ? ((const int32_t *)idx)[k] : ((const int64_t *)idx)[k];
}

INLINE T FT(lstm_sigmoid)(T x) {
	if (x >= 0)
		return 1 / (1 + EXP(-x));
	const T e = EXP(x);
	return e / (1 + e);
}

#if TBITS == 32
// AVX2 exp, sigmoid and tanh for the float32 cell: exp by range reduction
// to r in [-ln2/2, ln2/2] and Cephes' degree-5 polynomial (about 1 ulp);
// tanh by Cephes' odd polynomial below 0.625, else (1-e^-2|x|)/(1+e^-2|x|).
// The sigmoid and the tanh are exact to a few float ulps and the same bits
// on every call, so the kernels stay deterministic.
INLINE __m256 lstm_vexp(__m256 x) {
	// Clamped so that 2^n stays a normal float; x last, so a NaN passes.
	x = _mm256_min_ps(_mm256_set1_ps(88.0f), _mm256_max_ps(_mm256_set1_ps(-87.0f), x));
	const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
					 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
	r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
	__m256 p = _mm256_set1_ps(1.9875691500e-4f);
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
	p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
	const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
	return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

INLINE __m256 lstm_vsigmoid(__m256 x) {
	const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
	const __m256 e = lstm_vexp(_mm256_or_ps(x, sign)); // exp(-|x|)
	const __m256 s = _mm256_div_ps(one, _mm256_add_ps(one, e));
	return _mm256_blendv_ps(s, _mm256_mul_ps(e, s), _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ));
}

INLINE __m256 lstm_vtanh(__m256 x) {
	const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
	const __m256 ax = _mm256_andnot_ps(sign, x);
	const __m256 t = lstm_vexp(_mm256_mul_ps(ax, _mm256_set1_ps(-2.0f)));
	const __m256 big = _mm256_div_ps(_mm256_sub_ps(one, t), _mm256_add_ps(one, t));
	const __m256 z = _mm256_mul_ps(ax, ax);
	__m256 p = _mm256_set1_ps(-5.70498872745e-3f);
	p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(2.06390887954e-2f));
	p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-5.37397155531e-2f));
	p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.33314422036e-1f));
	p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-3.33332819422e-1f));
	const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), ax, ax);
	const __m256 r = _mm256_blendv_ps(big, small, _mm256_cmp_ps(ax, _mm256_set1_ps(0.625f), _CMP_LT_OQ));
	return _mm256_or_ps(r, _mm256_and_ps(x, sign));
}
#endif

// k_lstm_gather: g[r] = xw[source t of row order[r]] + bias for r in [r0, r1).
void FT(k_lstm_gather)(int64_t r0, int64_t r1, int64_t t, int it, const int64_t *indptr,
		       const void *idx, const int64_t *order, const T *restrict xw,
		       const T *restrict bias, int64_t G4, T *restrict g) {
	for (int64_t r = r0; r < r1; r++) {
		const T *x = xw + FT(lstm_id)(it, idx, indptr[order[r]] + t) * G4;
		T *gr = g + r * G4;
		for (int64_t j = 0; j < G4; j++)
			gr[j] = x[j] + bias[j];
	}
}

// k_lstm_cell: one step for rows [r0, r1). g holds the gate pre-activations
// and receives the activations; c = f·cprev + i·g (cprev NULL: zero state)
// goes to cout, h = o·tanh(c) to hnext[r] when the row runs on (r < nnext),
// else to out[order[r]]. cprev may equal cout and hnext the GEMM input of
// this step (scratch state in inference): every element is read first.
void FT(k_lstm_cell)(int64_t r0, int64_t r1, int64_t H, int64_t nnext, T *restrict g,
		     const T *cprev, T *cout, T *hnext, T *restrict out,
		     const int64_t *order) {
	for (int64_t r = r0; r < r1; r++) {
		T *gi = g + r * 4 * H, *gf = gi + H, *gg = gi + 2 * H, *go = gi + 3 * H;
		const T *cp = cprev ? cprev + r * H : NULL;
		T *c = cout + r * H;
		T *h = r < nnext ? hnext + r * H : out + order[r] * H;
#if TBITS == 32
		for (int64_t j = 0; j < H; j += VW) {
			const __m256i m = VTAIL(H - j);
			const VT i = lstm_vsigmoid(VMLOAD(gi + j, m)), f = lstm_vsigmoid(VMLOAD(gf + j, m));
			const VT u = lstm_vtanh(VMLOAD(gg + j, m)), o = lstm_vsigmoid(VMLOAD(go + j, m));
			VMSTORE(gi + j, m, i);
			VMSTORE(gf + j, m, f);
			VMSTORE(gg + j, m, u);
			VMSTORE(go + j, m, o);
			const VT cv = VFMA(f, cp ? VMLOAD(cp + j, m) : VZERO(), VMUL(i, u));
			VMSTORE(c + j, m, cv);
			VMSTORE(h + j, m, VMUL(o, lstm_vtanh(cv)));
		}
#else
		for (int64_t j = 0; j < H; j++) {
			const T i = FT(lstm_sigmoid)(gi[j]), f = FT(lstm_sigmoid)(gf[j]);
			const T u = LTANH(gg[j]), o = FT(lstm_sigmoid)(go[j]);
			gi[j] = i, gf[j] = f, gg[j] = u, go[j] = o;
			const T cv = (cp ? f * cp[j] : 0) + i * u;
			c[j] = cv;
			h[j] = o * LTANH(cv);
		}
#endif
	}
}

// k_lstm_cell_bwd: one step backwards for rows [r0, r1). g holds the
// activations and receives the gradients of the pre-activations. The
// hidden gradient is dhp[r] (from step t+1) for r < nnext, else
// dout[order[r]]; dcs[r] carries dc·f of step t+1 in and of step t out.
void FT(k_lstm_cell_bwd)(int64_t r0, int64_t r1, int64_t H, int64_t nnext, T *restrict g,
			 const T *restrict c, const T *restrict cprev, const T *restrict dhp,
			 const T *restrict dout, const int64_t *order, T *restrict dcs) {
	for (int64_t r = r0; r < r1; r++) {
		T *gi = g + r * 4 * H, *gf = gi + H, *gg = gi + 2 * H, *go = gi + 3 * H;
		const int on = r < nnext;
		const T *dh = on ? dhp + r * H : dout + order[r] * H;
		const T *cr = c + r * H, *cp = cprev ? cprev + r * H : NULL;
		T *dc = dcs + r * H;
#if TBITS == 32
		const VT one = VSET1(1.0f);
		for (int64_t j = 0; j < H; j += VW) {
			const __m256i m = VTAIL(H - j);
			const VT i = VMLOAD(gi + j, m), f = VMLOAD(gf + j, m), u = VMLOAD(gg + j, m), o = VMLOAD(go + j, m);
			const VT tc = lstm_vtanh(VMLOAD(cr + j, m)), dhv = VMLOAD(dh + j, m);
			const VT dcin = on ? VMLOAD(dc + j, m) : VZERO();
			const VT d = VFMA(VMUL(dhv, o), _mm256_fnmadd_ps(tc, tc, one), dcin);
			VMSTORE(gi + j, m, VMUL(VMUL(d, u), VMUL(i, _mm256_sub_ps(one, i))));
			VMSTORE(gf + j, m, cp ? VMUL(VMUL(d, VMLOAD(cp + j, m)), VMUL(f, _mm256_sub_ps(one, f))) : VZERO());
			VMSTORE(gg + j, m, VMUL(VMUL(d, i), _mm256_fnmadd_ps(u, u, one)));
			VMSTORE(go + j, m, VMUL(VMUL(dhv, tc), VMUL(o, _mm256_sub_ps(one, o))));
			VMSTORE(dc + j, m, VMUL(d, f));
		}
#else
		for (int64_t j = 0; j < H; j++) {
			const T i = gi[j], f = gf[j], u = gg[j], o = go[j];
			const T tc = LTANH(cr[j]);
			const T d = dh[j] * o * (1 - tc * tc) + (on ? dc[j] : 0);
			gi[j] = d * u * i * (1 - i);
			gf[j] = cp ? d * cp[j] * f * (1 - f) : 0;
			gg[j] = d * i * (1 - u * u);
			go[j] = dh[j] * tc * o * (1 - o);
			dc[j] = d * f;
		}
#endif
	}
}

// k_lstm_scatter: dxw[s] = sum of the gate gradients of the edges leaving
// source s, for s in [s0, s1) of the transposed CSR (bidx: destinations,
// perm: edge ids), in edge order. Edge e of row i is step e - indptr[i], at
// position off[step] + rank[i] of dg.
void FT(k_lstm_scatter)(int64_t s0, int64_t s1, int it, const int64_t *bindptr,
			const void *bidx, const int64_t *perm, const int64_t *indptr,
			const int64_t *rank, const int64_t *off, int64_t G4,
			const T *restrict dg, T *restrict dxw) {
	for (int64_t s = s0; s < s1; s++) {
		T *d = dxw + s * G4;
		for (int64_t j = 0; j < G4; j++)
			d[j] = 0;
		for (int64_t k = bindptr[s]; k < bindptr[s + 1]; k++) {
			const int64_t i = FT(lstm_id)(it, bidx, k);
			const T *gr = dg + (off[perm[k] - indptr[i]] + rank[i]) * G4;
			for (int64_t j = 0; j < G4; j++)
				d[j] += gr[j];
		}
	}
}

#undef LTANH
