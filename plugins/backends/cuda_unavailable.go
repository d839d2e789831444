//go:build !cuda

package backends

import "strata/core/registry"

// Without the cuda tag the GPU backend is not linked; naming it says how
// to get it.
func init() {
	registry.RegisterUnavailable("backend.cuda", `this strata binary was built without CUDA support: rebuild with "go build -tags cuda" (make gpu-bundle; see docs/cuda.md) or set train.backend = "cpu" or "sim"`, "gpu") // the alias cuda.go declares
}
