// Package cuda implements backend.Backend on an NVIDIA GPU through
// gorgonia.org/cu: device memory from a caching allocator, pinned host
// memory that kernels read in place (zero-copy), GEMM through cuBLAS and the
// graph kernels of kernels/kernels.cu, compiled to PTX and embedded.
//
// The implementation is behind the build tag "cuda" (see docs/cuda.md): a
// binary that imports gorgonia.org/cu exits at start on a machine without
// the NVIDIA driver. The tag also registers the backend as backend.cuda
// (plugins/backends).
package cuda

import "strata/core/tensor"

// DeviceTier is the memory tier of the GPU the backend drives. Host memory
// is tensor.Host: pinned, and mapped into the device's address space.
const DeviceTier tensor.Tier = "device0"

// Options configures a Backend.
type Options struct {
	// Device is the CUDA device ordinal.
	Device int
	// MemoryBytes caps the device memory the backend holds, cached blocks
	// included (0 = what the device has free at start).
	MemoryBytes int64
	// HeavyRow is the number of entries above which a row of an adjacency
	// is split into chunks of that many entries, reduced in a second pass,
	// so that the few huge rows of a power-law graph do not hold up a
	// kernel (0 = 256).
	HeavyRow int
}
