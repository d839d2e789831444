package wasm

import (
	"context"

	"strata/core/modhost"
)

// Host implements modhost.Host with wazero: every load starts a runtime
// of its own with the Options, closed by the release function.
type Host struct{ Options Options }

var _ modhost.Host = Host{}

// LoadLayer implements modhost.Host.
func (h Host) LoadLayer(ctx context.Context, name string, code []byte) (modhost.Layer, func(), error) {
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
	return layer{mod}, release, nil
}

// LoadCostModel implements modhost.Host.
func (h Host) LoadCostModel(ctx context.Context, name string, code []byte) (modhost.CostModel, func(), error) {
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

// layer adapts a Module to modhost.Layer.
type layer struct{ m *Module }

func (l layer) SHA256() string { return l.m.SHA256() }

func (l layer) LayerSpec(ctx context.Context, cfg modhost.LayerConfig) (*modhost.LayerSpec, error) {
	s, err := l.m.LayerSpec(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &modhost.LayerSpec{Graph: s.Graph, KeysRead: s.KeysRead, Defaults: s.Defaults, Log: s.Log, Modules: s.Modules}, nil
}
