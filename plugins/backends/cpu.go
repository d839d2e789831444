// Package backends registers strata's compute backends as modules of the
// registry namespace "backend", so that train.backend picks one by name.
// Each backend is one file: cpu, sim (simulated devices, configured by
// [devices]) and, in a build with -tags cuda, cuda.
package backends

import (
	"context"

	"strata/core/backend"
	"strata/core/backend/cpu"
	"strata/core/config"
	"strata/core/registry"
	"strata/core/train"
)

// CPU is backend.cpu: OpenBLAS GEMM and AVX2 C kernels on the host.
type CPU struct{}

var _ train.BackendModule = (*CPU)(nil)

// StrataModule implements registry.Module.
func (*CPU) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "backend.cpu", New: func() registry.Module { return new(CPU) },
		Doc: "the host: OpenBLAS GEMM, AVX2 C sparse kernels, parallel and deterministic"}
}

// CheckConfig implements train.BackendModule: [devices] is an error, and
// so is a bad STRATA_CPU_ISA.
func (*CPU) CheckConfig(cfg *config.Config) error {
	if err := cpu.CheckEnv(); err != nil {
		return err
	}
	return train.RejectDevices(cfg)
}

// NewBackend implements train.BackendModule.
func (*CPU) NewBackend(_ context.Context, _ *config.Config, threads int) (backend.Backend, error) {
	if err := cpu.CheckEnv(); err != nil {
		return nil, err
	}
	return cpu.New(cpu.Options{Threads: threads}), nil
}

func init() { registry.Register(new(CPU)) }
