// Kernels for the mock's selftest (selftest.c). They use every part of the
// compat.cuh contract, so compiling this file with nvcc (scripts/cuda/ptx.sh
// writes testdata/selftest.ptx from it) and with g++ -DSTRATA_MOCK checks
// the header on both sides.
#include "compat.cuh"

template <typename T>
DEVICE T sq(T x) {
	return x * x;
}

DEVICE i64 global_id() { return (i64)blockIdx.x * blockDim.x + threadIdx.x; }

DEVICE i64 global_stride() { return (i64)gridDim.x * blockDim.x; }

// y[i] = a*x[i] + y[i], grid-stride loop.
KERNEL(strata_selftest_axpy, (i64 n, double a, const float *x, float *y)) {
	for (i64 i = global_id(); i < n; i += global_stride())
		y[i] = (float)a * x[i] + y[i];
}

// One record per thread of a 3-D launch, at its linear position:
// bx | by<<8 | bz<<16 | tx<<24 | ty<<32 | tz<<40 (every index < 256).
KERNEL(strata_selftest_index, (u64 *out)) {
	u64 block = ((u64)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
	u64 thread = ((u64)threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
	u64 per_block = (u64)blockDim.x * blockDim.y * blockDim.z;
	out[block * per_block + thread] = (u64)blockIdx.x | (u64)blockIdx.y << 8 | (u64)blockIdx.z << 16 |
	                                  (u64)threadIdx.x << 24 | (u64)threadIdx.y << 32 |
	                                  (u64)threadIdx.z << 40;
}

// Float and double overloads of the math functions.
KERNEL(strata_selftest_math, (i64 n, const float *x, float *yf, double *yd, i64 *flags)) {
	i64 i = global_id();
	if (i >= n)
		return;
	float v = x[i];
	if (isnan(v)) {
		flags[i] = 1;
		yf[i] = 0.0f;
		yd[i] = 0.0;
		return;
	}
	flags[i] = v == INFINITY ? 2 : (v == -INFINITY ? 3 : 0);
	if (flags[i]) {
		yf[i] = 0.0f;
		yd[i] = 0.0;
		return;
	}
	float a = fabs(v);
	yf[i] = tanh(v) + exp(v * 0.125f) + sqrt(a) + log(1.0f + a) + fmax(v, 0.0f) + fmin(v, 0.0f) + sq(v);
	double d = (double)v;
	double b = fabs(d);
	yd[i] = tanh(d) + exp(d * 0.125) + sqrt(b) + log(1.0 + b) + fmax(d, 0.0) + fmin(d, 0.0) + sq(d);
}

// Every thread adds into a few accumulators.
KERNEL(strata_selftest_atomics,
       (i64 n, const float *x, float *fsum, double *dsum, int *count, int *imax, unsigned int *ucount, u64 *usum)) {
	i64 i = global_id();
	if (i >= n)
		return;
	atomicAdd(fsum, x[i]);
	atomicAdd(dsum, (double)x[i]);
	atomicAdd(count, 1);
	atomicMax(imax, (int)(x[i] * 100.0f));
	atomicAdd(ucount, 1u);
	atomicAdd(usum, (u64)i);
}
