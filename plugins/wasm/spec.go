package wasm

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/tetratelabs/wazero/api"

	"strata/core/ir"
)

// Spec is what one strata_layer_spec call recorded.
type Spec struct {
	Graph *ir.Graph
	// KeysRead lists, sorted, every option the guest asked for with cfg_i64
	// or cfg_f64, whether or not the Config had it.
	KeysRead []string
	// Defaults holds the default the guest gave for each key of
	// KeysRead, as TOML ("1", "0.2", "\"mean\"").
	Defaults map[string]string
	// Log holds the guest's log(msg) lines.
	Log []string
	// Modules holds the SHA-256 of each aggregator module the call
	// loaded (nested ones included), by the name the layer gave it.
	Modules map[string]string
}

// Unread returns the keys of cfg the guest never read, sorted. A caller uses
// it to reject user options a module does not understand (after removing
// the keys the host always sets).
func (s *Spec) Unread(cfg Config) []string {
	var out []string
	for _, k := range cfg.Keys() {
		if !slices.Contains(s.KeysRead, k) {
			out = append(out, k)
		}
	}
	return out
}

// LayerSpec records one layer: it instantiates a fresh instance (closed
// afterwards) in the deadline runtime, calls strata_layer_spec with cfg, and
// returns the checked graph and the options the guest read.
//
// Errors: a *CallError for traps, exits and the deadline; otherwise
//
//	model "gcn" layer spec: op #5 matmul: inner dims mismatch: a=[N,4] b=[5,3]
func (m *Module) LayerSpec(ctx context.Context, cfg Config) (*Spec, error) {
	if !m.layer {
		return nil, fmt.Errorf("model %q is not a layer module (it does not export strata_layer_spec)", m.name)
	}
	st := newLayerState(cfg, &outBuf{})
	var used map[string]string
	st.resolve, used = m.trackedResolver(ctx, cfg)
	status, err := m.callI32(ctx, "model", st, "strata_layer_spec")
	if err != nil {
		return nil, err
	}
	if err := st.firstErr(); err != nil {
		return nil, fmt.Errorf("model %q layer spec: %w", m.name, err)
	}
	if status != 0 {
		msg := fmt.Sprintf("model %q: strata_layer_spec returned status %d", m.name, status)
		if s := stderrSummary(st.out.String()); s != "" {
			msg += "; guest output: " + s
		}
		return nil, fmt.Errorf("%s", msg)
	}
	g, err := st.b.Finish()
	if err != nil {
		return nil, fmt.Errorf("model %q layer spec: %w", m.name, err)
	}
	keys := slices.Sorted(maps.Keys(st.read))
	return &Spec{Graph: g, KeysRead: keys, Defaults: st.read, Log: st.logs, Modules: used}, nil
}

// callI32 runs export(args) on a fresh instance in the deadline runtime
// (definitionCall) and returns its i32 result.
func (m *Module) callI32(ctx context.Context, kind string, st *callState, export string, args ...uint64) (int32, error) {
	var out int32
	err := m.definitionCall(ctx, kind, st, func(ctx context.Context, inst api.Module) (string, error) {
		res, err := inst.ExportedFunction(export).Call(ctx, args...)
		if err != nil {
			return export, err
		}
		out = int32(uint32(res[0]))
		return "", nil
	})
	return out, err
}
