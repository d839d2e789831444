package wasm

import (
	"context"
	"fmt"

	"strata/core/modhost"
)

// Host implements modhost.Host with wazero: every load starts a runtime
// of its own with the Options, closed by the release function, unless the
// host has a Pool.
type Host struct {
	Options Options
	// Pool, when set, shares runtimes and compiled modules between loads
	// (see Pool); its modules are released by the pool's Close, not by
	// the release functions the loads return.
	Pool *Pool
}

var _ modhost.Host = Host{}

// LoadLayer implements modhost.Host.
func (h Host) LoadLayer(ctx context.Context, name string, code []byte) (modhost.Layer, func(), error) {
	mod, release, err := h.load(ctx, name, code)
	if err != nil {
		return nil, nil, err
	}
	return layer{mod}, release, nil
}

// load loads a module in a runtime of its own, which release closes, or
// takes it from the host's pool (release does nothing).
func (h Host) load(ctx context.Context, name string, code []byte) (*Module, func(), error) {
	if h.Pool != nil {
		mod, err := h.Pool.load(ctx, h.Options, name, code)
		return mod, func() {}, err
	}
	rt, err := NewRuntime(ctx, h.Options)
	if err != nil {
		return nil, nil, err
	}
	release := func() { rt.Close(context.WithoutCancel(ctx)) }
	mod, err := rt.Load(ctx, name, code)
	if err != nil {
		release()
		return nil, nil, err
	}
	return mod, release, nil
}

// LoadCostModel implements modhost.Host.
func (h Host) LoadCostModel(ctx context.Context, name string, code []byte) (modhost.CostModel, func(), error) {
	if h.Pool != nil {
		mod, err := h.Pool.load(ctx, h.Options, name, code)
		if err != nil {
			return nil, nil, err
		}
		cm, err := mod.CostModel(ctx)
		if err != nil {
			return nil, nil, err
		}
		return cm, func() { cm.Close() }, nil
	}
	rt, err := NewRuntime(ctx, h.Options)
	if err != nil {
		return nil, nil, err
	}
	closeRT := func() { rt.Close(context.WithoutCancel(ctx)) }
	mod, err := rt.Load(ctx, name, code)
	var cm *CostModel
	if err == nil {
		cm, err = mod.CostModel(ctx)
	}
	if err != nil {
		closeRT()
		return nil, nil, err
	}
	return cm, func() { cm.Close(); closeRT() }, nil
}

// LoadDecoder implements modhost.Host: a module that does not export
// strata_decode is an error saying how to build one.
func (h Host) LoadDecoder(ctx context.Context, name string, code []byte) (modhost.Decoder, func(), error) {
	mod, release, err := h.load(ctx, name, code)
	if err != nil {
		return nil, nil, err
	}
	if !mod.dec {
		release()
		return nil, nil, fmt.Errorf("decoder module %q does not export strata_decode (build it with decoder.Register, see docs/decoders.md)", name)
	}
	return decoder{mod}, release, nil
}

// decoder adapts a Module to modhost.Decoder.
type decoder struct{ m *Module }

func (d decoder) SHA256() string { return d.m.SHA256() }

func (d decoder) DecoderSpec(ctx context.Context, cfg modhost.LayerConfig) (*modhost.LayerSpec, error) {
	return hostSpec(d.m.DecoderSpec(ctx, cfg))
}

// hostSpec converts a Spec to modhost's.
func hostSpec(s *Spec, err error) (*modhost.LayerSpec, error) {
	if err != nil {
		return nil, err
	}
	return &modhost.LayerSpec{Graph: s.Graph, KeysRead: s.KeysRead, Defaults: s.Defaults, Log: s.Log, Modules: s.Modules}, nil
}

// layer adapts a Module to modhost.Layer.
type layer struct{ m *Module }

func (l layer) SHA256() string { return l.m.SHA256() }

func (l layer) LayerSpec(ctx context.Context, cfg modhost.LayerConfig) (*modhost.LayerSpec, error) {
	return hostSpec(l.m.LayerSpec(ctx, cfg))
}
