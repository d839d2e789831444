package wasm

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/tetratelabs/wazero/api"

	"strata/core/ir"
)

// DecoderPrefix is the prefix of a decoder's parameter names (their
// checkpoint keys).
const DecoderPrefix = "decoder."

// IsDecoder reports whether the module exports strata_decode.
func (m *Module) IsDecoder() bool { return m.dec }

// DecoderSpec records a link-prediction decoder (a module built with
// decoder.Register): a graph whose input "x" is the node embeddings
// [N,in] (in is cfg's in_dim), whose only graph is "adj", the pairs (row i
// lists the sources of the pairs whose destination is i, one edge per
// pair), and whose output is the pairs' scores [E_adj,1]. Its parameters
// are named DecoderPrefix+name. A result of another shape is an error
// naming it.
func (m *Module) DecoderSpec(ctx context.Context, cfg Config) (*Spec, error) {
	if !m.dec {
		return nil, fmt.Errorf("module %q does not export strata_decode: it is not a decoder (build it with decoder.Register, see docs/decoders.md)", m.name)
	}
	in, err := cfgInt(cfg, "in_dim", 0)
	if err == nil && in <= 0 {
		err = fmt.Errorf("option in_dim, the embedding width, is %d; the host sets it to the last layer's width", in)
	}
	if err != nil {
		return nil, fmt.Errorf("decoder %q: %w", m.name, err)
	}
	st := newLayerState(cfg, &outBuf{})
	st.prefix = DecoderPrefix
	var used map[string]string
	st.resolve, used = m.trackedResolver(ctx, cfg)
	x, g := st.b.Input("x", in), st.b.Graph("adj")
	res, err := m.callI32(ctx, "decoder", st, "strata_decode", api.EncodeI32(g), api.EncodeI32(x))
	if err != nil {
		return nil, err
	}
	if err := st.firstErr(); err != nil {
		return nil, fmt.Errorf("decoder %q: %w", m.name, err)
	}
	if err := checkScores(st.b.Shape(res)); err != nil {
		return nil, fmt.Errorf("decoder %q: strata_decode %w", m.name, err)
	}
	st.b.OutputScores(res)
	graph, err := st.b.Finish()
	if err != nil {
		return nil, fmt.Errorf("decoder %q: %w", m.name, err)
	}
	return &Spec{Graph: graph, KeysRead: slices.Sorted(maps.Keys(st.read)), Defaults: st.read, Log: st.logs, Modules: used}, nil
}

// checkScores explains why a decoder's result of shape s (nil: no value)
// is not one score per pair, [E_adj,1].
func checkScores(s []int64) error {
	const want = "a decoder returns one score per pair, [E,1] (E: the pairs, the edges of its graph g)"
	switch {
	case s == nil:
		return fmt.Errorf("returned no value; %s", want)
	case len(s) == 2 && s[0] == ir.EAdj && s[1] == 1:
		return nil
	case len(s) == 2 && s[0] == ir.EAdj:
		return fmt.Errorf("returned %s, %d scores per pair; %s: reduce the columns (sdk.UDotV, or a last sdk.Linear of width 1)", ir.ShapeString(s), s[1], want)
	case len(s) == 2 && s[0] == ir.N:
		return fmt.Errorf("returned %s, one row per node; %s: take each pair's rows with sdk.GatherSrc(g, h) and sdk.GatherDst(g, h)", ir.ShapeString(s), want)
	}
	return fmt.Errorf("returned a value of shape %s; %s", ir.ShapeString(s), want)
}

// trackedResolver is the runtime's aggregator resolver for m's calls
// with cfg, recording the SHA-256 of every module it resolves by name.
func (m *Module) trackedResolver(ctx context.Context, cfg Config) (func(string) (*Module, error), map[string]string) {
	resolve, used := m.rt.resolver(ctx, &m.aggrs, cfg), map[string]string{}
	return func(name string) (*Module, error) {
		mod, err := resolve(name)
		if err == nil {
			used[name] = mod.SHA256()
		}
		return mod, err
	}, used
}
