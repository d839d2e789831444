// kern.h: SIMD vocabulary for the kernel templates. Define TBITS (32 or 64)
// before including; kern_undef.h clears everything again.
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define CAT2_(a, b) a##_##b
#define CAT2(a, b) CAT2_(a, b)
#define CAT3_(a, b, c) a##_##b##_##c
#define CAT3(a, b, c) CAT3_(a, b, c)
#define INLINE static inline __attribute__((always_inline))

#if TBITS == 32
#define T float
#define TS f32
#define VT __m256
#define VW 8
#define VZERO() _mm256_setzero_ps()
#define VSET1(a) _mm256_set1_ps(a)
#define VLOAD(p) _mm256_loadu_ps(p)
#define VSTORE(p, v) _mm256_storeu_ps(p, v)
#define VMLOAD(p, m) _mm256_maskload_ps(p, m)
#define VMSTORE(p, m, v) _mm256_maskstore_ps(p, m, v)
#define VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define VMUL(a, b) _mm256_mul_ps(a, b)
#define VADD(a, b) _mm256_add_ps(a, b)
#define EXP expf
INLINE __m256i tailmask_f32(int64_t n) {
	return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
INLINE float hsum_f32(__m256 v) {
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}
#define VTAIL tailmask_f32
#define VHSUM hsum_f32
#elif TBITS == 64
#define T double
#define TS f64
#define VT __m256d
#define VW 4
#define VZERO() _mm256_setzero_pd()
#define VSET1(a) _mm256_set1_pd(a)
#define VLOAD(p) _mm256_loadu_pd(p)
#define VSTORE(p, v) _mm256_storeu_pd(p, v)
#define VMLOAD(p, m) _mm256_maskload_pd(p, m)
#define VMSTORE(p, m, v) _mm256_maskstore_pd(p, m, v)
#define VFMA(a, b, c) _mm256_fmadd_pd(a, b, c)
#define VMUL(a, b) _mm256_mul_pd(a, b)
#define VADD(a, b) _mm256_add_pd(a, b)
#define EXP exp
INLINE __m256i tailmask_f64(int64_t n) {
	return _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3));
}
INLINE double hsum_f64(__m256d v) {
	__m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
	s = _mm_add_sd(s, _mm_unpackhi_pd(s, s));
	return _mm_cvtsd_f64(s);
}
#define VTAIL tailmask_f64
#define VHSUM hsum_f64
#else
#error "TBITS must be 32 or 64"
#endif

// FT names a kernel for the current float type, FTI for float and index type.
#define FT(name) CAT2(name, TS)
#define FTI(name) CAT3(name, TS, IS)
