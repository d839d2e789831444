//go:build cuda

// Package preflight checks that the CUDA driver finds a GPU before any Go
// code runs. gorgonia.org/cu initialises the driver in its package init
// and exits with a terse message when that fails; this constructor runs
// first and says what is wrong and what to do instead (exit status 3).
package preflight

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

static const char *strata_cuda_reason(CUresult r) {
	switch (r) {
	case CUDA_ERROR_NO_DEVICE: return "no CUDA-capable device is detected";
	case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: return "the NVIDIA kernel module and libcuda.so.1 differ in version";
	case CUDA_ERROR_STUB_LIBRARY: return "libcuda.so.1 is a link stub, not the NVIDIA driver";
	case CUDA_ERROR_NOT_INITIALIZED: return "the driver could not be initialised";
	default: return "the NVIDIA driver reported an error";
	}
}

__attribute__((constructor)) static void strata_cuda_preflight(void) {
	CUresult r = cuInit(0);
	if (r == CUDA_SUCCESS)
		return;
	fprintf(stderr,
		"strata: this binary was built with -tags cuda and needs an NVIDIA GPU: "
		"cuInit failed with error %d (%s).\n"
		"Use a build without the tag (make build) for train.backend = \"cpu\" or \"sim\".\n",
		(int)r, strata_cuda_reason(r));
	exit(3);
}
*/
import "C"
