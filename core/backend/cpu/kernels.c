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
#include "kern_lstm.h"
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
#include "kern_lstm.h"
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

void k_spmmt(int dt, int it, int64_t rows, const int64_t *indptr, const void *idx, const void *w,
	     int64_t H, int64_t C, const void *x, int64_t j0, int64_t j1, void *y) {
	PICK4(k_spmmt, dt, it, rows, indptr, idx, w, H, C, x, j0, j1, y);
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

void k_lstm_gather(int dt, int64_t r0, int64_t r1, int64_t t, int it, const int64_t *indptr,
		   const void *idx, const int64_t *order, const void *xw, const void *bias,
		   int64_t G4, void *g) {
	PICK2(k_lstm_gather, dt, r0, r1, t, it, indptr, idx, order, xw, bias, G4, g);
}

void k_lstm_cell(int dt, int64_t r0, int64_t r1, int64_t H, int64_t nnext, void *g,
		 const void *cprev, void *cout, void *hnext, void *out, const int64_t *order) {
	PICK2(k_lstm_cell, dt, r0, r1, H, nnext, g, cprev, cout, hnext, out, order);
}

void k_lstm_cell_bwd(int dt, int64_t r0, int64_t r1, int64_t H, int64_t nnext, void *g,
		     const void *c, const void *cprev, const void *dhp, const void *dout,
		     const int64_t *order, void *dcs) {
	PICK2(k_lstm_cell_bwd, dt, r0, r1, H, nnext, g, c, cprev, dhp, dout, order, dcs);
}

void k_lstm_scatter(int dt, int64_t s0, int64_t s1, int it, const int64_t *bindptr,
		    const void *bidx, const int64_t *perm, const int64_t *indptr,
		    const int64_t *rank, const int64_t *off, int64_t G4, const void *dg,
		    void *dxw) {
	PICK2(k_lstm_scatter, dt, s0, s1, it, bindptr, bidx, perm, indptr, rank, off, G4, dg, dxw);
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

// Dropout. Element i is kept when uniform(base, i) >= p, where uniform is
// (splitmix64(base + (i+1)·G) >> 11)·2^-53 (see Uniform in nn.go). The 53
// bits k compare exactly: k·2^-53 >= p ⇔ k >= thr = ceil(p·2^53), so the
// mask is bit-for-bit the Go one. AVX2 has no 64-bit multiply; mul64c
// builds the low 64 bits of z·c from three 32×32→64 products.
static inline __attribute__((always_inline)) __m256i mul64c(__m256i z, uint64_t c) {
	const __m256i cl = _mm256_set1_epi64x((int64_t)(c & 0xffffffffu));
	const __m256i ch = _mm256_set1_epi64x((int64_t)(c >> 32));
	__m256i lo = _mm256_mul_epu32(z, cl);
	__m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(z, 32), cl),
					 _mm256_mul_epu32(z, ch));
	return _mm256_add_epi64(lo, _mm256_slli_epi64(cross, 32));
}

static inline __attribute__((always_inline)) __m256i mix64v(__m256i z) {
	z = _mm256_xor_si256(z, _mm256_srli_epi64(z, 30));
	z = mul64c(z, 0xBF58476D1CE4E5B9ull);
	z = _mm256_xor_si256(z, _mm256_srli_epi64(z, 27));
	z = mul64c(z, 0x94D049BB133111EBull);
	return _mm256_xor_si256(z, _mm256_srli_epi64(z, 31));
}

static inline uint64_t mix64s(uint64_t z) {
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

// draw8 is the mask of eight elements whose stream counters are the lanes
// of za (the first four) and zb: scale where the draw keeps an element, 0
// where it drops it (*drop: all ones in a dropped element's lane).
static inline __attribute__((always_inline)) __m256 draw8(__m256i za, __m256i zb, __m256i vthr, __m256 vs,
							  __m256i *drop) {
	const __m256i lowdw = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
	const __m256i da = _mm256_cmpgt_epi64(vthr, _mm256_srli_epi64(mix64v(za), 11));
	const __m256i db = _mm256_cmpgt_epi64(vthr, _mm256_srli_epi64(mix64v(zb), 11));
	*drop = _mm256_blend_epi32(_mm256_permutevar8x32_epi32(da, lowdw), _mm256_permutevar8x32_epi32(db, lowdw), 0xF0);
	return _mm256_andnot_ps(_mm256_castsi256_ps(*drop), vs);
}

// dropout_tail finishes a span one element at a time from element j on,
// word holding the bits of the current 32-element word so far.
static inline void dropout_tail(uint64_t base, uint64_t thr, float scale, uint64_t idx, int64_t j, int64_t n,
				float *mask, const float *x, float *y, uint32_t *bits, uint32_t word) {
	const uint64_t G = 0x9E3779B97F4A7C15ull;
	for (; j < n; j++) {
		const int keep = (mix64s(base + (idx + (uint64_t)j + 1) * G) >> 11) >= thr;
		const float m = keep ? scale : 0.0f;
		if (mask)
			mask[j] = m;
		if (y)
			y[j] = x[j] * m;
		if (bits) {
			word |= (uint32_t)keep << (j % 32);
			if (j % 32 == 31) {
				bits[j / 32] = word;
				word = 0;
			}
		}
	}
	if (bits && n % 32)
		bits[(n - 1) / 32] = word;
}

// dropout_span handles n elements whose dropout stream indices start at
// idx (unsigned: a keyed row's index K·C wraps modulo 2^64): mask[j] = keep(idx+j) ? scale : 0 (when mask is set),
// y[j] = x[j]·mask[j] (when y is set) and bit j % 32 of bits[j / 32] =
// keep(idx+j) (when bits is set; whole words are written).
static inline __attribute__((always_inline)) void dropout_span(uint64_t base, uint64_t thr, float scale,
							       uint64_t idx, int64_t n, float *mask,
							       const float *x, float *y, uint32_t *bits) {
	const uint64_t G = 0x9E3779B97F4A7C15ull;
	int64_t j = 0;
	uint32_t word = 0;
	if (n >= 8) {
		const uint64_t z0 = base + (idx + 1) * G;
		__m256i za = _mm256_setr_epi64x((int64_t)z0, (int64_t)(z0 + G), (int64_t)(z0 + 2 * G),
						(int64_t)(z0 + 3 * G));
		__m256i zb = _mm256_add_epi64(za, _mm256_set1_epi64x((int64_t)(4 * G)));
		const __m256i step = _mm256_set1_epi64x((int64_t)(8 * G));
		const __m256i vthr = _mm256_set1_epi64x((int64_t)thr);
		const __m256 vs = _mm256_set1_ps(scale);
		for (; j + 8 <= n; j += 8) {
			__m256i d;
			const __m256 m = draw8(za, zb, vthr, vs, &d);
			if (mask)
				_mm256_storeu_ps(mask + j, m);
			if (y)
				_mm256_storeu_ps(y + j, _mm256_mul_ps(_mm256_loadu_ps(x + j), m));
			if (bits) {
				word |= (uint32_t)(~_mm256_movemask_ps(_mm256_castsi256_ps(d)) & 0xFF) << (j % 32);
				if (j % 32 == 24) {
					bits[j / 32] = word;
					word = 0;
				}
			}
			za = _mm256_add_epi64(za, step);
			zb = _mm256_add_epi64(zb, step);
		}
	}
	dropout_tail(base, thr, scale, idx, j, n, mask, x, y, bits, word);
}

// The dropout kernels with AVX-512 (F, DQ, BW, VL), used where the CPU
// has it (k_has_avx512) and the backend chose it (the `wide` argument of
// k_dropout_f32 and k_dropout_block_f32): VPMULLQ makes the 64-bit
// products of the mix in one instruction, eight lanes at a time, instead
// of three 32×32 products on four lanes, and a mask register selects the
// kept elements. Integer arithmetic and the same float products, so the
// results are those of dropout_span bit for bit (tests run both).
#pragma GCC push_options
#pragma GCC target("avx2,fma,avx512f,avx512dq,avx512bw,avx512vl")

static inline __attribute__((always_inline)) __m512i mix64z(__m512i z) {
	z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 30));
	z = _mm512_mullo_epi64(z, _mm512_set1_epi64((int64_t)0xBF58476D1CE4E5B9ull));
	z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 27));
	z = _mm512_mullo_epi64(z, _mm512_set1_epi64((int64_t)0x94D049BB133111EBull));
	return _mm512_xor_si512(z, _mm512_srli_epi64(z, 31));
}

// dropout_span_z is dropout_span sixteen elements at a time.
static void dropout_span_z(uint64_t base, uint64_t thr, float scale, uint64_t idx, int64_t n, float *mask,
			   const float *x, float *y, uint32_t *bits) {
	const uint64_t G = 0x9E3779B97F4A7C15ull;
	int64_t j = 0;
	uint32_t word = 0;
	if (n >= 16) {
		const uint64_t z0 = base + (idx + 1) * G;
		__m512i za = _mm512_add_epi64(_mm512_set1_epi64((int64_t)z0),
					      _mm512_mullo_epi64(_mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7),
								 _mm512_set1_epi64((int64_t)G)));
		__m512i zb = _mm512_add_epi64(za, _mm512_set1_epi64((int64_t)(8 * G)));
		const __m512i step = _mm512_set1_epi64((int64_t)(16 * G));
		const __m512i vthr = _mm512_set1_epi64((int64_t)thr);
		const __m512 vs = _mm512_set1_ps(scale);
		for (; j + 16 <= n; j += 16) {
			const __mmask8 ka = _mm512_cmpge_epu64_mask(_mm512_srli_epi64(mix64z(za), 11), vthr);
			const __mmask8 kb = _mm512_cmpge_epu64_mask(_mm512_srli_epi64(mix64z(zb), 11), vthr);
			const __mmask16 k = (__mmask16)((unsigned)ka | ((unsigned)kb << 8));
			const __m512 m = _mm512_maskz_mov_ps(k, vs);
			if (mask)
				_mm512_storeu_ps(mask + j, m);
			if (y)
				_mm512_storeu_ps(y + j, _mm512_mul_ps(_mm512_loadu_ps(x + j), m));
			if (bits) {
				word |= (uint32_t)k << (j % 32);
				if (j % 32 == 16) {
					bits[j / 32] = word;
					word = 0;
				}
			}
			za = _mm512_add_epi64(za, step);
			zb = _mm512_add_epi64(zb, step);
		}
	}
	dropout_tail(base, thr, scale, idx, j, n, mask, x, y, bits, word);
}

// keep_row_z writes y[j] = x[j]·(bit j of bits ? scale : 0) for j < w.
static void keep_row_z(const float *x, const uint32_t *bits, float scale, int64_t w, float *y) {
	const __m512 vs = _mm512_set1_ps(scale);
	int64_t j = 0;
	for (; j + 16 <= w; j += 16) {
		const __mmask16 k = (__mmask16)(bits[j / 32] >> (j % 32));
		_mm512_storeu_ps(y + j, _mm512_mul_ps(_mm512_loadu_ps(x + j), _mm512_maskz_mov_ps(k, vs)));
	}
	for (; j < w; j++)
		y[j] = x[j] * (((bits[j / 32] >> (j % 32)) & 1) ? scale : 0.0f);
}

#pragma GCC pop_options

// k_has_avx512 reports whether the CPU (and the OS) runs the AVX-512
// dropout kernels.
int k_has_avx512(void) {
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
	       __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
}

// span picks the dropout_span of the chosen instruction set.
static inline void span(int wide, uint64_t base, uint64_t thr, float scale, uint64_t idx, int64_t n, float *mask,
			const float *x, float *y, uint32_t *bits) {
	if (wide)
		dropout_span_z(base, thr, scale, idx, n, mask, x, y, bits);
	else
		dropout_span(base, thr, scale, idx, n, mask, x, y, bits);
}

// k_dropout_f32 handles elements [lo, hi): mask[i] = keep ? scale : 0 (when
// mask is set) and y[i] = x[i]·mask[i] (when y is set); wide picks the
// AVX-512 kernel (same results).
void k_dropout_f32(int wide, uint64_t base, uint64_t thr, float scale, int64_t lo, int64_t hi, float *mask,
		   const float *x, float *y) {
	if (hi <= lo)
		return;
	span(wide, base, thr, scale, (uint64_t)lo, hi - lo, mask ? mask + lo : 0, y ? x + lo : 0, y ? y + lo : 0, 0);
}

// k_dropout_rows_f32 is k_dropout_f32 over rows [r0, r1) of cols columns
// whose row r is keyed keys[r]: element (r, c) is stream index
// keys[r]·cols + c (backend.DropoutIndex).
// dropout_pow2_rows is k_dropout_rows_f32 for rows of 1, 2, 4 or 8
// columns (2^shift; an attention dropout's heads): a vector of eight
// elements holds 8 >> shift whole rows, its lanes' stream indices
// keys[r]·cols + c made in the vector from the rows' keys, so narrow rows
// cost what a flat span does instead of a span per row. The same bits as
// dropout_span.
static void dropout_pow2_rows(uint64_t base, uint64_t thr, float scale, const int64_t *keys, int shift, int64_t r0,
			      int64_t r1, float *mask, const float *x, float *y) {
	const uint64_t G = 0x9E3779B97F4A7C15ull;
	const int64_t cols = (int64_t)1 << shift, per = 8 >> shift;
	const __m256i vthr = _mm256_set1_epi64x((int64_t)thr);
	const __m256i zbase = _mm256_set1_epi64x((int64_t)(base + G));
	const __m256 vs = _mm256_set1_ps(scale);
	// lane l of a vector: row l >> shift of its rows, column l & (cols-1)
	const __m256i ca = _mm256_setr_epi64x(0 & (cols - 1), 1 & (cols - 1), 2 & (cols - 1), 3 & (cols - 1));
	const __m256i cb = _mm256_setr_epi64x(4 & (cols - 1), 5 & (cols - 1), 6 & (cols - 1), 7 & (cols - 1));
	const __m128i sh = _mm_cvtsi32_si128(shift);
	int64_t r = r0;
	for (; r + per <= r1; r += per) {
		const int64_t *k = keys + r;
		__m256i ka, kb;
		switch (shift) {
		case 0:
			ka = _mm256_loadu_si256((const __m256i *)k);
			kb = _mm256_loadu_si256((const __m256i *)(k + 4));
			break;
		case 1:
			ka = _mm256_setr_epi64x(k[0], k[0], k[1], k[1]);
			kb = _mm256_setr_epi64x(k[2], k[2], k[3], k[3]);
			break;
		case 2:
			ka = _mm256_set1_epi64x(k[0]);
			kb = _mm256_set1_epi64x(k[1]);
			break;
		default:
			ka = kb = _mm256_set1_epi64x(k[0]);
		}
		// z = base + (keys·cols + c + 1)·G
		const __m256i za = _mm256_add_epi64(zbase, mul64c(_mm256_add_epi64(_mm256_sll_epi64(ka, sh), ca), G));
		const __m256i zb = _mm256_add_epi64(zbase, mul64c(_mm256_add_epi64(_mm256_sll_epi64(kb, sh), cb), G));
		__m256i d;
		const __m256 m = draw8(za, zb, vthr, vs, &d);
		const int64_t o = r << shift;
		if (mask)
			_mm256_storeu_ps(mask + o, m);
		if (y)
			_mm256_storeu_ps(y + o, _mm256_mul_ps(_mm256_loadu_ps(x + o), m));
	}
	for (; r < r1; r++) {
		const int64_t o = r << shift;
		dropout_span(base, thr, scale, (uint64_t)keys[r] << shift, cols, mask ? mask + o : 0, y ? x + o : 0,
			     y ? y + o : 0, 0);
	}
}

// dropout_short_rows is k_dropout_rows_f32 for rows of fewer than 16
// columns other than a power of two: eight consecutive elements of any
// rows per vector, each lane's stream index keys[r]·cols + c counted in
// turn, mixed in the vector. The same bits as dropout_span.
static void dropout_short_rows(uint64_t base, uint64_t thr, float scale, const int64_t *keys, int64_t cols,
			       int64_t r0, int64_t r1, float *mask, const float *x, float *y) {
	const uint64_t G = 0x9E3779B97F4A7C15ull;
	const __m256i vthr = _mm256_set1_epi64x((int64_t)thr);
	const __m256i zbase = _mm256_set1_epi64x((int64_t)(base + G));
	const __m256 vs = _mm256_set1_ps(scale);
	const int64_t n = (r1 - r0) * cols, o0 = r0 * cols;
	int64_t r = r0, c = 0, j = 0;
	uint64_t rk = (uint64_t)keys[r0] * (uint64_t)cols; // keys[r]·cols
	int64_t i[8];
	for (; j + 8 <= n; j += 8) {
		for (int l = 0; l < 8; l++) {
			i[l] = (int64_t)(rk + (uint64_t)c);
			if (++c == cols) {
				c = 0;
				if (++r < r1)
					rk = (uint64_t)keys[r] * (uint64_t)cols;
			}
		}
		const __m256i za = _mm256_add_epi64(zbase, mul64c(_mm256_setr_epi64x(i[0], i[1], i[2], i[3]), G));
		const __m256i zb = _mm256_add_epi64(zbase, mul64c(_mm256_setr_epi64x(i[4], i[5], i[6], i[7]), G));
		__m256i d;
		const __m256 m = draw8(za, zb, vthr, vs, &d);
		if (mask)
			_mm256_storeu_ps(mask + o0 + j, m);
		if (y)
			_mm256_storeu_ps(y + o0 + j, _mm256_mul_ps(_mm256_loadu_ps(x + o0 + j), m));
	}
	// The last elements: what is left of row r, then whole rows.
	if (j < n) {
		const int64_t o = o0 + j, w = cols - c;
		dropout_span(base, thr, scale, rk + (uint64_t)c, w, mask ? mask + o : 0, y ? x + o : 0, y ? y + o : 0, 0);
		for (r++; r < r1; r++) {
			const int64_t ro = r * cols;
			dropout_span(base, thr, scale, (uint64_t)keys[r] * (uint64_t)cols, cols, mask ? mask + ro : 0,
				     y ? x + ro : 0, y ? y + ro : 0, 0);
		}
	}
}

void k_dropout_rows_f32(int wide, uint64_t base, uint64_t thr, float scale, const int64_t *keys, int64_t cols,
			int64_t r0, int64_t r1, float *mask, const float *x, float *y) {
	if (cols == 1 || cols == 2 || cols == 4 || cols == 8) {
		dropout_pow2_rows(base, thr, scale, keys, __builtin_ctzll((uint64_t)cols), r0, r1, mask, x, y);
		return;
	}
	if (cols < 16) {
		dropout_short_rows(base, thr, scale, keys, cols, r0, r1, mask, x, y);
		return;
	}
	for (int64_t r = r0; r < r1; r++) {
		const int64_t o = r * cols;
		span(wide, base, thr, scale, (uint64_t)keys[r] * (uint64_t)cols, cols, mask ? mask + o : 0,
		     y ? x + o : 0, y ? y + o : 0, 0);
	}
}

// k_dropout_block_f32 writes the dropout of x's rows [r0, r1) and columns
// [c0, c1) (x has ldx columns; element (r, c) is stream index K·ldx + c,
// K = keys[r], or r when keys is null)
// into y, row by row with c1 - c0 columns: the elements DropoutApply
// writes there, bit for bit. bits (ldb 32-bit words per row of x, bit
// c % 32 of word c / 32 for column c; c0 a multiple of 32) keeps the mask:
// mode 1 draws it and records the kept elements, mode 2 reads it instead
// of drawing it (the same products), mode 0 only draws it. wide picks the
// AVX-512 kernels (same results).
void k_dropout_block_f32(int wide, uint64_t base, uint64_t thr, float scale, const float *x, int64_t ldx,
			 const int64_t *keys, int64_t r0, int64_t r1, int64_t c0, int64_t c1, float *y, uint32_t *bits,
			 int64_t ldb, int mode) {
	const int64_t w = c1 - c0;
	const __m256 vs = _mm256_set1_ps(scale);
	const __m256i sel = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
	for (int64_t r = r0; r < r1; r++) {
		const float *xr = x + r * ldx + c0;
		float *yr = y + (r - r0) * w;
		uint32_t *br = bits ? bits + r * ldb + c0 / 32 : 0;
		if (mode != 2 || !bits) {
			const uint64_t k = keys ? (uint64_t)keys[r] : (uint64_t)r;
			span(wide, base, thr, scale, k * (uint64_t)ldx + (uint64_t)c0, w, 0, xr, yr, mode == 1 ? br : 0);
			continue;
		}
		if (wide) {
			keep_row_z(xr, br, scale, w, yr);
			continue;
		}
		int64_t j = 0;
		for (; j + 8 <= w; j += 8) {
			const __m256i b = _mm256_set1_epi32((int)((br[j / 32] >> (j % 32)) & 0xFF));
			const __m256 keep = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(b, sel), sel));
			_mm256_storeu_ps(yr + j, _mm256_mul_ps(_mm256_loadu_ps(xr + j), _mm256_and_ps(keep, vs)));
		}
		for (; j < w; j++)
			yr[j] = xr[j] * (((br[j / 32] >> (j % 32)) & 1) ? scale : 0.0f);
	}
}

// k_relu_f32: y = x > 0 ? x : 0 (NaN and -0 give 0), as apply in Go.
void k_relu_f32(int64_t n, const float *x, float *y) {
	const __m256 z = _mm256_setzero_ps();
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 v = _mm256_loadu_ps(x + i);
		_mm256_storeu_ps(y + i, _mm256_and_ps(_mm256_cmp_ps(v, z, _CMP_GT_OQ), v));
	}
	for (; i < n; i++)
		y[i] = x[i] > 0 ? x[i] : 0.0f;
}

// k_relu_bwd_f32: dx = x > 0 ? dy : 0, as applyBackward in Go.
void k_relu_bwd_f32(int64_t n, const float *x, const float *dy, float *dx) {
	const __m256 z = _mm256_setzero_ps();
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 m = _mm256_cmp_ps(_mm256_loadu_ps(x + i), z, _CMP_GT_OQ);
		_mm256_storeu_ps(dx + i, _mm256_and_ps(m, _mm256_loadu_ps(dy + i)));
	}
	for (; i < n; i++)
		dx[i] = x[i] > 0 ? dy[i] : 0.0f;
}

// k_mul_f32: y = a·b elementwise (one rounding, as binary in Go).
void k_mul_f32(int64_t n, const float *a, const float *b, float *y) {
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
	for (; i < n; i++)
		y[i] = a[i] * b[i];
}

// k_rows_f32: y[r,:] = a[r,:] + b (mul = 0) or a[r,:]·b (mul = 1) for the
// rows of an n×c matrix (one rounding per element, as binary in Go).
void k_rows_f32(int mul, int64_t rows, int64_t c, const float *a, const float *b, float *y) {
	for (int64_t r = 0; r < rows; r++) {
		const float *ar = a + r * c;
		float *yr = y + r * c;
		int64_t j = 0;
		if (mul) {
			for (; j + 8 <= c; j += 8)
				_mm256_storeu_ps(yr + j, _mm256_mul_ps(_mm256_loadu_ps(ar + j), _mm256_loadu_ps(b + j)));
			for (; j < c; j++)
				yr[j] = ar[j] * b[j];
		} else {
			for (; j + 8 <= c; j += 8)
				_mm256_storeu_ps(yr + j, _mm256_add_ps(_mm256_loadu_ps(ar + j), _mm256_loadu_ps(b + j)));
			for (; j < c; j++)
				yr[j] = ar[j] + b[j];
		}
	}
}

// k_bias_relu_f32: y[r,:] = y[r,:] + b, then (relu set) y = y > 0 ? y : 0,
// for the rows of an n×c matrix: the roundings of k_rows_f32 followed by
// k_relu_f32, in one pass.
void k_bias_relu_f32(int relu, int64_t rows, int64_t c, const float *b, float *y) {
	const __m256 z = _mm256_setzero_ps();
	for (int64_t r = 0; r < rows; r++) {
		float *yr = y + r * c;
		int64_t j = 0;
		for (; j + 8 <= c; j += 8) {
			__m256 v = _mm256_add_ps(_mm256_loadu_ps(yr + j), _mm256_loadu_ps(b + j));
			if (relu)
				v = _mm256_and_ps(_mm256_cmp_ps(v, z, _CMP_GT_OQ), v);
			_mm256_storeu_ps(yr + j, v);
		}
		for (; j < c; j++) {
			float v = yr[j] + b[j];
			yr[j] = relu ? (v > 0 ? v : 0.0f) : v;
		}
	}
}

// k_leaky_f32: y = x > 0 ? x : alpha·x, as apply in Go.
void k_leaky_f32(float alpha, int64_t n, const float *x, float *y) {
	const __m256 z = _mm256_setzero_ps(), va = _mm256_set1_ps(alpha);
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 v = _mm256_loadu_ps(x + i);
		_mm256_storeu_ps(y + i, _mm256_blendv_ps(_mm256_mul_ps(va, v), v, _mm256_cmp_ps(v, z, _CMP_GT_OQ)));
	}
	for (; i < n; i++)
		y[i] = x[i] > 0 ? x[i] : alpha * x[i];
}

// k_act_bwd_f32: dx from dy for LeakyReLU (elu = 0: x > 0 ? dy : alpha·dy)
// or ELU (elu = 1: x > 0 ? dy : dy·(y + alpha)), as applyBackward in Go.
void k_act_bwd_f32(int elu, float alpha, int64_t n, const float *x, const float *y,
		   const float *dy, float *dx) {
	const __m256 z = _mm256_setzero_ps(), va = _mm256_set1_ps(alpha);
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 g = _mm256_loadu_ps(dy + i);
		__m256 m = _mm256_cmp_ps(_mm256_loadu_ps(x + i), z, _CMP_GT_OQ);
		__m256 neg = elu ? _mm256_mul_ps(g, _mm256_add_ps(_mm256_loadu_ps(y + i), va))
				 : _mm256_mul_ps(va, g);
		_mm256_storeu_ps(dx + i, _mm256_blendv_ps(neg, g, m));
	}
	for (; i < n; i++)
		dx[i] = x[i] > 0 ? dy[i] : (elu ? dy[i] * (y[i] + alpha) : alpha * dy[i]);
}

// Half-precision feature storage (data.feature_dtype): 16-bit rows widened
// to float32 where a kernel reads them. F16C's VCVTPH2PS widens binary16
// exactly (subnormals, Inf and NaN included); bfloat16 is the top half of
// a float32.
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

// widen_row converts n 16-bit floats (bf 0: binary16, 1: bfloat16) of x
// into y, exactly.
static inline __attribute__((always_inline)) void widen_row(int bf, const uint16_t *x, int64_t n, float *y) {
	int64_t j = 0;
	if (bf) {
		for (; j + 8 <= n; j += 8) {
			__m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(x + j)));
			_mm256_storeu_ps(y + j, _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)));
		}
		for (; j < n; j++) {
			uint32_t u = (uint32_t)x[j] << 16;
			memcpy(y + j, &u, 4);
		}
		return;
	}
	for (; j + 8 <= n; j += 8)
		_mm256_storeu_ps(y + j, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + j))));
	for (; j < n; j++)
		y[j] = _cvtsh_ss(x[j]);
}

// k_widen_block writes x's rows [r0, r1) and columns [c0, c1) (x has ldx
// columns) as float32 into y, row by row with c1 - c0 columns.
void k_widen_block(int bf, const uint16_t *x, int64_t ldx, int64_t r0, int64_t r1, int64_t c0,
		   int64_t c1, float *y) {
	for (int64_t r = r0; r < r1; r++)
		widen_row(bf, x + r * ldx + c0, c1 - c0, y + (r - r0) * (c1 - c0));
}

// k_dropout_block_h16 is k_dropout_block_f32 on 16-bit rows: each row is
// widened into y and masked there, so y holds exactly what
// k_dropout_block_f32 writes for the widened x.
void k_dropout_block_h16(int bf, uint64_t base, uint64_t thr, float scale, const uint16_t *x,
			 int64_t ldx, const int64_t *keys, int64_t r0, int64_t r1, int64_t c0, int64_t c1, float *y,
			 uint32_t *bits, int64_t ldb, int mode) {
	const int64_t w = c1 - c0;
	const __m256 vs = _mm256_set1_ps(scale);
	const __m256i sel = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
	for (int64_t r = r0; r < r1; r++) {
		float *yr = y + (r - r0) * w;
		uint32_t *br = bits ? bits + r * ldb + c0 / 32 : 0;
		widen_row(bf, x + r * ldx + c0, w, yr);
		if (mode != 2 || !bits) {
			const uint64_t k = keys ? (uint64_t)keys[r] : (uint64_t)r;
			dropout_span(base, thr, scale, k * (uint64_t)ldx + (uint64_t)c0, w, 0, yr, yr, mode == 1 ? br : 0);
			continue;
		}
		int64_t j = 0;
		for (; j + 8 <= w; j += 8) {
			const __m256i b = _mm256_set1_epi32((int)((br[j / 32] >> (j % 32)) & 0xFF));
			const __m256 keep = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(b, sel), sel));
			_mm256_storeu_ps(yr + j, _mm256_mul_ps(_mm256_loadu_ps(yr + j), _mm256_and_ps(keep, vs)));
		}
		for (; j < w; j++)
			yr[j] = yr[j] * (((br[j / 32] >> (j % 32)) & 1) ? scale : 0.0f);
	}
}

#pragma GCC pop_options
