//go:build cuda

package cuda

// The driver and cuBLAS calls gorgonia.org/cu does not wrap: mapped pinned
// host memory, and a cuBLAS handle bound to the backend's stream (cu/blas
// keeps its handle private, so its GEMMs could only run on the legacy
// default stream).

/*
#cgo LDFLAGS: -lcuda -lcublas
#include <cuda.h>
#include <cublas_v2.h>

static CUresult strata_host_alloc(void **p, size_t n) {
	return cuMemHostAlloc(p, n, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
}
static CUresult strata_host_device_ptr(CUdeviceptr *d, void *p) {
	return cuMemHostGetDevicePointer(d, p, 0);
}
// Device addresses travel as CUdeviceptr and become pointers here only.
static cublasStatus_t strata_sgemm(cublasHandle_t h, int ta, int tb, int m, int n, int k, float alpha,
		CUdeviceptr a, int lda, CUdeviceptr b, int ldb, float beta, CUdeviceptr c, int ldc) {
	return cublasSgemm(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k,
		&alpha, (const float *)a, lda, (const float *)b, ldb, &beta, (float *)c, ldc);
}
static cublasStatus_t strata_dgemm(cublasHandle_t h, int ta, int tb, int m, int n, int k, double alpha,
		CUdeviceptr a, int lda, CUdeviceptr b, int ldb, double beta, CUdeviceptr c, int ldc) {
	return cublasDgemm(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k,
		&alpha, (const double *)a, lda, (const double *)b, ldb, &beta, (double *)c, ldc);
}
static cublasStatus_t strata_blas_set_stream(cublasHandle_t h, CUstream s) {
	return cublasSetStream(h, (cudaStream_t)s);
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"gorgonia.org/cu"
)

// driverError is a CUresult other than CUDA_SUCCESS.
type driverError struct {
	call string
	code int
}

func (e *driverError) Error() string { return fmt.Sprintf("%s: CUDA error %d", e.call, e.code) }

func check(call string, r C.CUresult) error {
	if r != C.CUDA_SUCCESS {
		return &driverError{call, int(r)}
	}
	return nil
}

// hostAlloc returns n bytes of pinned host memory mapped into the device's
// address space, and the device address of the same bytes.
func hostAlloc(n int64) (unsafe.Pointer, uintptr, error) {
	var p unsafe.Pointer
	if err := check("cuMemHostAlloc", C.strata_host_alloc(&p, C.size_t(n))); err != nil {
		return nil, 0, err
	}
	var d C.CUdeviceptr
	if err := check("cuMemHostGetDevicePointer", C.strata_host_device_ptr(&d, p)); err != nil {
		C.cuMemFreeHost(p)
		return nil, 0, err
	}
	return p, uintptr(d), nil
}

func hostFree(p unsafe.Pointer) error { return check("cuMemFreeHost", C.cuMemFreeHost(p)) }

// streamHandle returns the CUstream inside a cu.Stream (a struct holding
// only that handle).
func streamHandle(s *cu.Stream) C.CUstream {
	return *(*C.CUstream)(unsafe.Pointer(s))
}

// blasHandle is a cuBLAS handle.
type blasHandle struct{ h C.cublasHandle_t }

func blasStatus(call string, s C.cublasStatus_t) error {
	if s != C.CUBLAS_STATUS_SUCCESS {
		return fmt.Errorf("%s: cuBLAS status %d", call, int(s))
	}
	return nil
}

func newBLAS(stream *cu.Stream) (*blasHandle, error) {
	var h C.cublasHandle_t
	if err := blasStatus("cublasCreate", C.cublasCreate(&h)); err != nil {
		return nil, err
	}
	if err := blasStatus("cublasSetStream", C.strata_blas_set_stream(h, streamHandle(stream))); err != nil {
		C.cublasDestroy(h)
		return nil, err
	}
	return &blasHandle{h}, nil
}

func (b *blasHandle) close() error { return blasStatus("cublasDestroy", C.cublasDestroy(b.h)) }

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// gemm runs the column-major C = alpha·op(A)·op(B) + beta·C on device
// addresses: an m×n result with inner dimension k.
func (b *blasHandle) gemm(f64 bool, tA, tB bool, m, n, k int, alpha float64, a uintptr, lda int, bp uintptr, ldb int, beta float64, c uintptr, ldc int) error {
	if f64 {
		return blasStatus("cublasDgemm", C.strata_dgemm(b.h, cbool(tA), cbool(tB), C.int(m), C.int(n), C.int(k),
			C.double(alpha), C.CUdeviceptr(a), C.int(lda), C.CUdeviceptr(bp), C.int(ldb), C.double(beta), C.CUdeviceptr(c), C.int(ldc)))
	}
	return blasStatus("cublasSgemm", C.strata_sgemm(b.h, cbool(tA), cbool(tB), C.int(m), C.int(n), C.int(k),
		C.float(alpha), C.CUdeviceptr(a), C.int(lda), C.CUdeviceptr(bp), C.int(ldb), C.float(beta), C.CUdeviceptr(c), C.int(ldc)))
}
