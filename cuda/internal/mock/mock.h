/* mock.h: what the CPU mock's libcuda.so.1 exports besides the CUDA driver
 * API. Kernels compiled with compat.cuh (-DSTRATA_MOCK) register themselves
 * through strata_mock_register_kernel; the mock cuBLAS and tests find the
 * rest with dlsym(RTLD_DEFAULT, ...), so nothing here is needed to load a
 * binary against the real driver. */
#ifndef STRATA_MOCK_H
#define STRATA_MOCK_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Runs every block and thread of one launch (see compat.cuh). */
typedef int (*strata_mock_entry)(void **args, const unsigned int grid[3], const unsigned int block[3]);

/* Called at static-initialisation time by KERNEL(...) in mock builds.
 * Returns 0, or -1 (and reports) for a duplicate name or a full table. */
int strata_mock_register_kernel(const char *name, strata_mock_entry entry, int nparams);

/* 1 when [p, p+bytes) lies inside one live allocation a kernel could read
 * (cuMemAlloc, cuMemAllocManaged, cuMemHostAlloc, cuMemHostRegister), else 0. */
int strata_mock_device_range(const void *p, size_t bytes);

/* Prints "mockcuda: ..." on stderr unless MOCKCUDA_QUIET=1. */
void strata_mock_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Counters since load: "launches", "allocs", "frees", "alloc_bytes" (live
 * device bytes), "htod_bytes", "dtoh_bytes", "dtod_bytes", "gemms".
 * Unknown names give 0. */
unsigned long long strata_mock_stat(const char *name);

#ifdef __cplusplus
}
#endif
#endif
