package toyplugins

import (
	"context"

	"strata/core/backend"
	"strata/core/backend/cpu"
	"strata/core/config"
	"strata/core/registry"
	"strata/core/train"
)

// OneThread is backend.toy-one-thread: the CPU backend on one thread.
type OneThread struct{}

var _ train.BackendModule = (*OneThread)(nil)

// StrataModule implements registry.Module.
func (*OneThread) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "backend.toy-one-thread", New: func() registry.Module { return new(OneThread) },
		Doc: "toy: the CPU backend on one thread"}
}

// CheckConfig implements train.BackendModule.
func (*OneThread) CheckConfig(cfg *config.Config) error { return train.RejectDevices(cfg) }

// NewBackend implements train.BackendModule.
func (*OneThread) NewBackend(context.Context, *config.Config, int) (backend.Backend, error) {
	return cpu.New(cpu.Options{Threads: 1}), nil
}

func init() { registry.Register(new(OneThread)) }
