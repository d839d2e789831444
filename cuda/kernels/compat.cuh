// compat.cuh: lets one kernel source compile both as CUDA (nvcc -ptx) and as
// host C++17 for the CPU mock (g++ -std=c++17 -DSTRATA_MOCK). See docs/cuda.md.
//
// The contract kernels are written against:
//   i64, u64                      long long / unsigned long long
//   KERNEL(name, (params...)) { body }
//                                 an extern "C" kernel. Every parameter is
//                                 8 bytes: a pointer, i64, u64 or double
//                                 (the Go side passes 8 bytes per argument).
//   DEVICE                        helper functions: DEVICE float f(float),
//                                 template <typename T> DEVICE T g(T)
//   threadIdx blockIdx blockDim gridDim   with .x .y .z (unsigned int)
//   atomicAdd(float*|double*|int*|unsigned*|u64*, v), atomicMax(int*, int)
//                                 return the old value
//   exp log sqrt tanh pow cos sin fabs fmax fmin isnan (float and double), INFINITY
// Not available: shared memory, __syncthreads, warp intrinsics. The mock runs
// the threads of a launch one after another, so those could not work there.
//
// Mock mode: KERNEL defines a host function and, at static-initialisation
// time, registers it by name with the mock driver (cuda/internal/mock) along
// with a trampoline generated from the function's type. cuLaunchKernel looks
// the trampoline up by name and runs every block and thread of the grid in
// order (blockIdx z, y, x outer; threadIdx z, y, x inner), unpacking
// kernelParams (args[i] points at the i-th argument's 8 bytes).
#ifndef STRATA_COMPAT_CUH
#define STRATA_COMPAT_CUH

typedef long long i64;
typedef unsigned long long u64;

#if defined(__CUDACC__) && !defined(STRATA_MOCK)
// ---------------------------------------------------------------- CUDA ----

#define KERNEL(name, params) extern "C" __global__ void name params
#define DEVICE __device__ __forceinline__

#else
// ---------------------------------------------------------------- mock ----
#ifndef STRATA_MOCK
#error "compat.cuh: compile with nvcc, or with a host C++17 compiler and -DSTRATA_MOCK"
#endif
#if __cplusplus < 201703L
#error "compat.cuh: the mock needs C++17 (g++ -std=c++17)"
#endif

#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define DEVICE static inline

using std::exp;
using std::fabs;
using std::fmax;
using std::fmin;
using std::isnan;
using std::cos;
using std::log;
using std::pow;
using std::sin;
using std::sqrt;
using std::tanh;

extern "C" {
// A launch entry: runs the whole grid. Returns 0.
typedef int (*strata_mock_entry)(void **args, const unsigned int grid[3], const unsigned int block[3]);
// Implemented by the mock libcuda.so.1 (cuda/internal/mock/mockcuda.c).
int strata_mock_register_kernel(const char *name, strata_mock_entry entry, int nparams);
}

namespace strata_mock {

struct uint3 {
	unsigned int x, y, z;
};

// The launch state of the calling thread; kernels see it read-only through
// the threadIdx/blockIdx/blockDim/gridDim macros below.
#define STRATA_MOCK_TLS __attribute__((tls_model("initial-exec")))
inline thread_local uint3 t_threadIdx STRATA_MOCK_TLS;
inline thread_local uint3 t_blockIdx STRATA_MOCK_TLS;
inline thread_local uint3 t_blockDim STRATA_MOCK_TLS;
inline thread_local uint3 t_gridDim STRATA_MOCK_TLS;

template <typename T>
constexpr bool param_ok = std::is_pointer_v<T> || std::is_same_v<T, long long> ||
                          std::is_same_v<T, unsigned long long> || std::is_same_v<T, double>;

template <auto F>
struct kernel;

template <typename... A, void (*F)(A...)>
struct kernel<F> {
	static_assert((param_ok<A> && ...),
	              "KERNEL parameters must be 8 bytes wide: pointers, i64, u64 or double only");
	static constexpr int nparams = sizeof...(A);

	template <std::size_t... I>
	static inline void call(void **args, std::index_sequence<I...>) {
		(void)args;
		F(*static_cast<A *>(args[I])...);
	}

	// run executes every thread of the grid in turn: blocks z, y, x, then
	// threads z, y, x, or all of it backwards when MOCKCUDA_ORDER=reverse,
	// so that a kernel whose result depends on the order its threads run
	// in (a race on a GPU) gives different results under the two orders.
	static int run(void **args, const unsigned int grid[3], const unsigned int block[3]) {
		static const bool reverse = [] {
			const char *o = std::getenv("MOCKCUDA_ORDER");
			return o != nullptr && std::strcmp(o, "reverse") == 0;
		}();
		t_gridDim = {grid[0], grid[1], grid[2]};
		t_blockDim = {block[0], block[1], block[2]};
		const unsigned long long nb = (unsigned long long)grid[0] * grid[1] * grid[2];
		const unsigned long long nt = (unsigned long long)block[0] * block[1] * block[2];
		for (unsigned long long i = 0; i < nb * nt; i++) {
			const unsigned long long j = reverse ? nb * nt - 1 - i : i;
			const unsigned long long b = j / nt, t = j % nt;
			t_blockIdx = {(unsigned)(b % grid[0]), (unsigned)(b / grid[0] % grid[1]), (unsigned)(b / grid[0] / grid[1])};
			t_threadIdx = {(unsigned)(t % block[0]), (unsigned)(t / block[0] % block[1]), (unsigned)(t / block[0] / block[1])};
			call(args, std::index_sequence_for<A...>{});
		}
		return 0;
	}
};

template <auto F>
inline int reg(const char *name) {
	return strata_mock_register_kernel(name, &kernel<F>::run, kernel<F>::nparams);
}

} // namespace strata_mock

#define threadIdx (static_cast<const ::strata_mock::uint3 &>(::strata_mock::t_threadIdx))
#define blockIdx (static_cast<const ::strata_mock::uint3 &>(::strata_mock::t_blockIdx))
#define blockDim (static_cast<const ::strata_mock::uint3 &>(::strata_mock::t_blockDim))
#define gridDim (static_cast<const ::strata_mock::uint3 &>(::strata_mock::t_gridDim))

#define KERNEL(name, params)                                                          \
	extern "C" void name params;                                                      \
	[[maybe_unused]] static const int strata_mock_reg_##name = ::strata_mock::reg<&name>(#name); \
	extern "C" void name params

// The mock runs one thread at a time, so plain read-modify-write is atomic.
static inline float atomicAdd(float *p, float v) { float o = *p; *p = o + v; return o; }
static inline double atomicAdd(double *p, double v) { double o = *p; *p = o + v; return o; }
static inline int atomicAdd(int *p, int v) { int o = *p; *p = o + v; return o; }
static inline unsigned int atomicAdd(unsigned int *p, unsigned int v) { unsigned int o = *p; *p = o + v; return o; }
static inline u64 atomicAdd(u64 *p, u64 v) { u64 o = *p; *p = o + v; return o; }
static inline int atomicMax(int *p, int v) { int o = *p; if (v > o) *p = v; return o; }

#endif // mock
#endif // STRATA_COMPAT_CUH
