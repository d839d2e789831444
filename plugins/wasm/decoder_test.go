package wasm

import (
	"context"
	"slices"
	"testing"

	"strata/core/ir"
)

func decCfg(mode int) Config { return cfg("mode", mode, "in_dim", 4) }

// TestDecoderSpec records the test decoder: input x [N,in_dim], the pair
// graph "adj", one score per pair [E_adj,1], its parameters under
// "decoder.".
func TestDecoderSpec(t *testing.T) {
	m := loadGuest(t, "plugins/wasm/testdata/guests/decoder")
	if !m.IsDecoder() {
		t.Fatal("the decoder guest does not export strata_decode")
	}
	cases := []struct {
		mode   int
		last   ir.Kind
		params []string
	}{{0, ir.OpUDotV, nil}, {4, ir.OpMatMul, []string{"decoder.w"}}}
	for _, c := range cases {
		s, err := m.DecoderSpec(context.Background(), decCfg(c.mode))
		if err != nil {
			t.Fatal(err)
		}
		g := s.Graph
		out := g.Ops[g.Outputs[0]]
		if out.Kind != c.last || !slices.Equal(out.Shape, []int64{ir.EAdj, 1}) {
			t.Errorf("mode %d: output %s %s, want %s [E_adj,1]", c.mode, out.Kind, ir.ShapeString(out.Shape), c.last)
		}
		var params, graphs []string
		for _, op := range g.Ops {
			switch op.Kind {
			case ir.OpParam:
				params = append(params, op.Name)
			case ir.OpGraph:
				graphs = append(graphs, op.Name)
			case ir.OpInput:
				if !slices.Equal(op.Shape, []int64{ir.N, 4}) {
					t.Errorf("mode %d: input %s, want [N,4]", c.mode, ir.ShapeString(op.Shape))
				}
			}
		}
		if !slices.Equal(params, c.params) || !slices.Equal(graphs, []string{"adj"}) {
			t.Errorf("mode %d: params %v, graphs %v; want %v, [adj]", c.mode, params, graphs, c.params)
		}
		if !slices.Contains(s.KeysRead, "mode") || !slices.Contains(s.KeysRead, "in_dim") {
			t.Errorf("mode %d: keys read %v", c.mode, s.KeysRead)
		}
	}
}

// TestDecoderFailures: a result that is not one score per pair, a panic,
// a guest's failure, a missing embedding width and a module that is not
// a decoder are errors that say what is wrong.
func TestDecoderFailures(t *testing.T) {
	ctx := context.Background()
	m := loadGuest(t, "plugins/wasm/testdata/guests/decoder")
	noWidth := cfg("mode", 0)
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"two scores", decCfg(1), `decoder "decoder": strata_decode returned [E_adj,2], 2 scores per pair; a decoder returns one score per pair, [E,1]`},
		{"node rows", decCfg(2), `decoder "decoder": strata_decode returned [N,1], one row per node; a decoder returns one score per pair, [E,1] (E: the pairs, the edges of its graph g): take each pair's rows with sdk.GatherSrc(g, h) and sdk.GatherDst(g, h)`},
		{"panic", decCfg(3), `decoder "decoder": strata_decode trapped: wasm error: unreachable; guest stderr: panic: decoder boom`},
		{"fail", decCfg(5), `decoder "decoder": option mode = 5 is refused`},
		{"no width", noWidth, `decoder "decoder": option in_dim, the embedding width, is 0`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := m.DecoderSpec(ctx, c.cfg)
			mustContain(t, err, c.want)
		})
	}
	t.Run("a layer", func(t *testing.T) {
		_, _, err := Host{}.LoadDecoder(ctx, "misc", guest(t, "plugins/wasm/testdata/guests/misc"))
		mustContain(t, err, `decoder module "misc" does not export strata_decode (build it with decoder.Register`)
	})
	t.Run("a cost model", func(t *testing.T) {
		_, _, err := Host{}.LoadDecoder(ctx, "roofline", guest(t, "models/costmodels/roofline"))
		mustContain(t, err, `decoder module "roofline" does not export strata_decode (build it with decoder.Register`)
	})
}

// TestHadamardMLPOptions records the shipped hadamard-mlp decoder with
// its defaults (hidden = in_dim, two layers), one layer, and bad options.
func TestHadamardMLPOptions(t *testing.T) {
	m := loadGuest(t, "models/decoders/hadamard-mlp")
	cases := []struct {
		cfg  Config
		want []string // its parameters, name and shape
		err  string
	}{
		{cfg("in_dim", 4), []string{"decoder.mlp.0.weight[4,4]", "decoder.mlp.0.bias[4]", "decoder.mlp.1.weight[4,1]", "decoder.mlp.1.bias[1]"}, ""},
		{cfg("in_dim", 4, "layers", 1), []string{"decoder.mlp.0.weight[4,1]", "decoder.mlp.0.bias[1]"}, ""},
		{cfg("in_dim", 4, "hidden", 0), nil, `decoder "hadamard-mlp": option hidden = 0 must be at least 1`},
		{cfg("in_dim", 4, "layers", 0), nil, `decoder "hadamard-mlp": option layers = 0 must be in 1..16`},
	}
	for _, c := range cases {
		s, err := m.DecoderSpec(context.Background(), c.cfg)
		if c.err != "" {
			mustContain(t, err, c.err)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, op := range s.Graph.Ops {
			if op.Kind == ir.OpParam {
				got = append(got, op.Name+ir.ShapeString(op.Shape))
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%v: params %v, want %v", c.cfg.Keys(), got, c.want)
		}
	}
}
