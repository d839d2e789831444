//go:build cuda

package backends

import (
	"context"
	"fmt"

	"strata/core/backend"
	"strata/core/config"
	"strata/core/registry"
	"strata/core/train"
	"strata/cuda"
)

// CUDA is backend.cuda: the first NVIDIA GPU (built with -tags cuda).
type CUDA struct{}

var _ train.BackendModule = (*CUDA)(nil)

// StrataModule implements registry.Module.
func (*CUDA) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "backend.cuda", New: func() registry.Module { return new(CUDA) },
		Doc: "the first NVIDIA GPU: cuBLAS GEMM, PTX kernels, pinned zero-copy host tier (docs/cuda.md)", Aliases: []string{"gpu"}}
}

// CheckConfig implements train.BackendModule: [devices] is an error.
func (*CUDA) CheckConfig(cfg *config.Config) error { return train.RejectDevices(cfg) }

// NewBackend implements train.BackendModule.
func (*CUDA) NewBackend(_ context.Context, _ *config.Config, _ int) (backend.Backend, error) {
	be, err := cuda.New(cuda.Options{})
	if err != nil {
		return nil, fmt.Errorf("train.backend = \"cuda\": %w", err)
	}
	return be, nil
}

func init() { registry.Register(new(CUDA)) }
