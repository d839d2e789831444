package wasm

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"strata/core/ir"
)

// render prints one op compactly: kind[:name][:init|reducer][(alpha|heads)] args shape.
func render(op ir.Op) string {
	var b strings.Builder
	b.WriteString(string(op.Kind))
	for _, s := range []string{op.Name, op.Init, op.Reducer} {
		if s != "" {
			b.WriteString(":" + s)
		}
	}
	switch {
	case op.Heads != 0:
		fmt.Fprintf(&b, "(h%d)", op.Heads)
	case op.Alpha != 0:
		fmt.Fprintf(&b, "(%g)", op.Alpha)
	}
	for _, a := range op.Args {
		fmt.Fprintf(&b, " %%%d", a)
	}
	b.WriteString(" " + ir.ShapeString(op.Shape))
	return b.String()
}

func cfg(kv ...any) Config {
	var c Config
	for i := 0; i < len(kv); i += 2 {
		switch v := kv[i+1].(type) {
		case int:
			c.SetInt(kv[i].(string), int64(v))
		case float64:
			c.SetFloat(kv[i].(string), v)
		default:
			panic(fmt.Sprintf("bad value %T", v))
		}
	}
	return c
}

// TestLayerSpecs checks, op by op, what each shipped layer records: the
// semantics of the PyTorch peer (shared/peers/models.py) in IR form.
func TestLayerSpecs(t *testing.T) {
	cases := []struct {
		layer  string
		name   string
		cfg    Config
		ops    []string
		params int64
		keys   []string // must be among KeysRead
	}{
		{"gcn", "narrowing, hidden", cfg("in_dim", 1433, "out_dim", 16, "dropout", 0.5, "layer", 0, "layers", 2, "last", 0), []string{
			"input:x [N,1433]",
			"dropout(0.5) %0 [N,1433]",
			"param:weight:glorot [1433,16]",
			"graph:adj_self [N,N]",
			"matmul %1 %2 [N,16]",
			"aggregate:gcn %3 %4 [N,16]",
			"param:bias:zeros [16]",
			"bias %5 %6 [N,16]",
			"relu %7 [N,16]",
		}, 1433*16 + 16, []string{"in_dim", "out_dim", "dropout", "last", "batchnorm"}},
		{"gcn", "narrowing, last", cfg("in_dim", 16, "out_dim", 7, "dropout", 0.5, "last", 1), []string{
			"input:x [N,16]",
			"dropout(0.5) %0 [N,16]",
			"param:weight:glorot [16,7]",
			"graph:adj_self [N,N]",
			"matmul %1 %2 [N,7]",
			"aggregate:gcn %3 %4 [N,7]",
			"param:bias:zeros [7]",
			"bias %5 %6 [N,7]",
		}, 16*7 + 7, nil},
		{"gcn", "widening, no dropout, batchnorm", cfg("in_dim", 8, "out_dim", 32, "batchnorm", 1), []string{
			"input:x [N,8]",
			"param:weight:glorot [8,32]",
			"graph:adj_self [N,N]",
			"aggregate:gcn %2 %0 [N,8]",
			"matmul %3 %1 [N,32]",
			"param:bias:zeros [32]",
			"bias %4 %5 [N,32]",
			"param:bn.weight:ones [32]",
			"param:bn.bias:zeros [32]",
			"batchnorm(1e-05) %6 %7 %8 [N,32]",
			"relu %9 [N,32]",
		}, 8*32 + 32 + 64, nil},
		{"sage", "narrowing, hidden", cfg("in_dim", 1433, "out_dim", 16, "dropout", 0.5), []string{
			"input:x [N,1433]",
			"dropout(0.5) %0 [N,1433]",
			"param:root.weight:glorot [1433,16]",
			"matmul %1 %2 [N,16]",
			"param:root.bias:zeros [16]",
			"bias %3 %4 [N,16]",
			"param:nbr.weight:glorot [1433,16]",
			"graph:adj [N,N]",
			"matmul %1 %6 [N,16]",
			"aggregate:mean %7 %8 [N,16]",
			"add %5 %9 [N,16]",
			"relu %10 [N,16]",
		}, 2*1433*16 + 16, []string{"in_dim", "out_dim", "dropout", "last"}},
		{"sage", "widening, last", cfg("in_dim", 4, "out_dim", 8, "last", 1), []string{
			"input:x [N,4]",
			"param:root.weight:glorot [4,8]",
			"matmul %0 %1 [N,8]",
			"param:root.bias:zeros [8]",
			"bias %2 %3 [N,8]",
			"param:nbr.weight:glorot [4,8]",
			"graph:adj [N,N]",
			"aggregate:mean %6 %0 [N,4]",
			"matmul %7 %5 [N,8]",
			"add %4 %8 [N,8]",
		}, 2*4*8 + 8, nil},
		{"sage-lstm", "hidden, LSTM as wide as the input", cfg("in_dim", 8, "out_dim", 4, "dropout", 0.5), []string{
			"input:x [N,8]",
			"dropout(0.5) %0 [N,8]",
			"param:root.weight:glorot [8,4]",
			"matmul %1 %2 [N,4]",
			"param:root.bias:zeros [4]",
			"bias %3 %4 [N,4]",
			"graph:adj [N,N]",
			"param:lstm.weight_ih:uniform [8,32]",
			"param:lstm.weight_hh:uniform [8,32]",
			"param:lstm.bias:zeros [32]",
			"lstm_aggregate %6 %1 %7 %8 %9 [N,8]",
			"param:nbr.weight:glorot [8,4]",
			"matmul %10 %11 [N,4]",
			"add %5 %12 [N,4]",
			"relu %13 [N,4]",
		}, 8*4 + 4 + 2*8*32 + 32 + 8*4, []string{"in_dim", "out_dim", "dropout", "last", "batchnorm", "lstm_hidden"}},
		{"sage-lstm", "last, lstm_hidden 3", cfg("in_dim", 8, "out_dim", 4, "lstm_hidden", 3, "last", 1), []string{
			"input:x [N,8]",
			"param:root.weight:glorot [8,4]",
			"matmul %0 %1 [N,4]",
			"param:root.bias:zeros [4]",
			"bias %2 %3 [N,4]",
			"graph:adj [N,N]",
			"param:lstm.weight_ih:uniform [8,12]",
			"param:lstm.weight_hh:uniform [3,12]",
			"param:lstm.bias:zeros [12]",
			"lstm_aggregate %5 %0 %6 %7 %8 [N,3]",
			"param:nbr.weight:glorot [3,4]",
			"matmul %9 %10 [N,4]",
			"add %4 %11 [N,4]",
		}, 8*4 + 4 + 8*12 + 3*12 + 12 + 3*4, nil},
		{"gat", "hidden, 8 heads", cfg("in_dim", 1433, "out_dim", 64, "heads", 8, "dropout", 0.6, "attn_dropout", 0.6), []string{
			"input:x [N,1433]",
			"dropout(0.6) %0 [N,1433]",
			"graph:adj_self [N,N]",
			"param:lin.weight:glorot [1433,64]",
			"matmul %1 %3 [N,64]",
			"param:att_src:glorot [8,8]",
			"head_dot %4 %5 [N,8]",
			"param:att_dst:glorot [8,8]",
			"head_dot %4 %7 [N,8]",
			"u_add_v %2 %6 %8 [E_adj_self,8]",
			"leaky_relu(0.2) %9 [E_adj_self,8]",
			"edge_softmax %2 %10 [E_adj_self,8]",
			"dropout(0.6) %11 [E_adj_self,8]",
			"spmm_edge %2 %12 %4 [N,64]",
			"param:bias:zeros [64]",
			"bias %13 %14 [N,64]",
			"elu(1) %15 [N,64]",
		}, 1433*64 + 2*64 + 64, []string{"heads", "out_heads", "attn_dropout", "negative_slope", "dropout"}},
		{"gat", "last, 2 averaged heads", cfg("in_dim", 64, "out_dim", 7, "heads", 8, "out_heads", 2, "last", 1, "negative_slope", 0.1), []string{
			"input:x [N,64]",
			"graph:adj_self [N,N]",
			"param:lin.weight:glorot [64,14]",
			"matmul %0 %2 [N,14]",
			"param:att_src:glorot [2,7]",
			"head_dot %3 %4 [N,2]",
			"param:att_dst:glorot [2,7]",
			"head_dot %3 %6 [N,2]",
			"u_add_v %1 %5 %7 [E_adj_self,2]",
			"leaky_relu(0.1) %8 [E_adj_self,2]",
			"edge_softmax %1 %9 [E_adj_self,2]",
			"spmm_edge %1 %10 %3 [N,14]",
			"head_mean(h2) %11 [N,7]",
			"param:bias:zeros [7]",
			"bias %12 %13 [N,7]",
		}, 64*14 + 2*14 + 7, nil},
		{"gin", "narrowing, eps 0", cfg("in_dim", 32, "out_dim", 16, "dropout", 0.5), []string{
			"input:x [N,32]",
			"dropout(0.5) %0 [N,32]",
			"param:mlp.0.weight:glorot [32,16]",
			"matmul %1 %2 [N,16]",
			"graph:adj [N,N]",
			"aggregate:sum %4 %3 [N,16]",
			"add %3 %5 [N,16]",
			"param:mlp.0.bias:zeros [16]",
			"bias %6 %7 [N,16]",
			"relu %8 [N,16]",
			"param:mlp.2.weight:glorot [16,16]",
			"matmul %9 %10 [N,16]",
			"param:mlp.2.bias:zeros [16]",
			"bias %11 %12 [N,16]",
			"relu %13 [N,16]",
		}, 32*16 + 16 + 16*16 + 16, []string{"eps", "train_eps"}},
		{"gin", "widening, eps 0.5 learnable, last", cfg("in_dim", 4, "out_dim", 8, "eps", 0.5, "train_eps", 1, "last", 1), []string{
			"input:x [N,4]",
			"param:mlp.0.weight:glorot [4,8]",
			"scale(1.5) %0 [N,4]",
			"graph:adj [N,N]",
			"aggregate:sum %3 %0 [N,4]",
			"add %2 %4 [N,4]",
			"param:eps:zeros [1]",
			"mul %0 %6 [N,4]",
			"add %5 %7 [N,4]",
			"matmul %8 %1 [N,8]",
			"param:mlp.0.bias:zeros [8]",
			"bias %9 %10 [N,8]",
			"relu %11 [N,8]",
			"param:mlp.2.weight:glorot [8,8]",
			"matmul %12 %13 [N,8]",
			"param:mlp.2.bias:zeros [8]",
			"bias %14 %15 [N,8]",
		}, 4*8 + 8 + 8*8 + 8 + 1, nil},
	}
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.layer+"/"+c.name, func(t *testing.T) {
			m := loadGuest(t, "models/layers/"+c.layer)
			spec, err := m.LayerSpec(ctx, c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, op := range spec.Graph.Ops {
				got = append(got, render(op))
			}
			if !slices.Equal(got, c.ops) {
				t.Errorf("ops:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.ops, "\n"))
			}
			if out := spec.Graph.Outputs; len(out) != 1 || out[0] != int32(len(spec.Graph.Ops)-1) {
				t.Errorf("outputs %v, want the last op", out)
			}
			if n := spec.Graph.NumParams(); n != c.params {
				t.Errorf("%d params, want %d", n, c.params)
			}
			for _, k := range c.keys {
				if !slices.Contains(spec.KeysRead, k) {
					t.Errorf("key %q not in KeysRead %v", k, spec.KeysRead)
				}
			}
			if un := spec.Unread(c.cfg); len(un) > 0 && c.layer != "gcn" && c.layer != "sage" && c.layer != "gin" {
				t.Errorf("unread keys %v", un)
			}
		})
	}
}

// TestModels links whole models the way the trainer does and checks their
// parameter counts against the PyTorch peer's.
func TestModels(t *testing.T) {
	const F, H, C = 1433, 16, 7 // Cora
	cases := []struct {
		layer  string
		dims   []int64
		extra  Config
		params int64
	}{
		{"gcn", []int64{F, H, C}, Config{}, 23063}, // 1433*16+16+16*7+7
		{"gcn", []int64{F, 64, 64, C}, Config{}, F*64 + 64 + 64*64 + 64 + 64*C + C},
		{"sage", []int64{F, H, C}, Config{}, 2*F*H + H + 2*H*C + C},
		{"sage-lstm", []int64{F, H, C}, Config{}, 2*F*H + H + 8*F*F + 4*F + 2*H*C + C + 8*H*H + 4*H}, // DGL: LSTM hidden = in
		{"gat", []int64{F, 64, C}, cfg("heads", 8), F*64 + 2*64 + 64 + 64*C + 2*C + C},
		{"gin", []int64{F, H, C}, cfg("train_eps", 1), F*H + H + H*H + H + 1 + H*C + C + C*C + C + 1},
	}
	ctx := context.Background()
	for _, c := range cases {
		t.Run(fmt.Sprint(c.layer, c.dims), func(t *testing.T) {
			m := loadGuest(t, "models/layers/"+c.layer)
			var layers []*ir.Graph
			for i := range len(c.dims) - 1 {
				lc := c.extra.Clone()
				lc.SetInt("in_dim", c.dims[i]).SetInt("out_dim", c.dims[i+1]).
					SetInt("layer", int64(i)).SetInt("layers", int64(len(c.dims)-1)).
					SetFloat("dropout", 0.5)
				if i == len(c.dims)-2 {
					lc.SetInt("last", 1)
				}
				s, err := m.LayerSpec(ctx, lc)
				if err != nil {
					t.Fatal(err)
				}
				layers = append(layers, s.Graph)
			}
			g, err := ir.Link(layers)
			if err != nil {
				t.Fatal(err)
			}
			if n := g.NumParams(); n != c.params {
				t.Errorf("%d params, want %d", n, c.params)
			}
			out := g.Ops[g.Outputs[0]].Shape
			if !slices.Equal(out, []int64{ir.N, C}) {
				t.Errorf("output shape %s", ir.ShapeString(out))
			}
		})
	}
}

func TestLayerOptionErrors(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		layer string
		cfg   Config
		want  string
	}{
		{"gat", cfg("in_dim", 8, "out_dim", 10, "heads", 3), `model "gat" layer spec: gat: hidden size out_dim=10 must be divisible by heads=3`},
		{"sage-lstm", cfg("in_dim", 4, "out_dim", 2, "lstm_hidden", -1), `model "sage-lstm" layer spec: sage-lstm: lstm_hidden must be positive (0: in_dim)`},
		{"gcn", cfg("out_dim", 4), `model "gcn" layer spec: op #0 input: input "x" needs a positive width, got 0`},
		{"gcn", cfg("in_dim", 4, "out_dim", 4, "dropout", 1.0), `op #1 dropout: drop probability 1 outside [0,1)`},
		{"gcn", cfg("in_dim", 4.5, "out_dim", 4), `op #0 cfg_i64: option "in_dim" = 4.5 must be an integer`},
		{"gatv2", cfg("in_dim", 8, "out_dim", 8, "heads", 0), `model "gatv2" layer spec: gatv2: option heads = 0 must be in [1, 1024]`},
		{"gatv2", cfg("in_dim", 8, "out_dim", 10, "heads", 3), `gatv2: hidden size out_dim=10 must be divisible by option heads=3`},
		{"gatv2", cfg("in_dim", 8, "out_dim", 8, "negative_slope", -0.5), `gatv2: option negative_slope = -0.5 must be in [0, 1]`},
		{"transformer", cfg("in_dim", 8, "out_dim", 8, "out_heads", 0, "last", 1), `transformer: option out_heads = 0 must be in [1, 1024]`},
		{"graphconv", withString(cfg("in_dim", 8, "out_dim", 4), "aggr", "lstm"), `graphconv: option aggr = "lstm" is not one of "sum", "mean", "max"`},
		{"sgc", cfg("in_dim", 8, "out_dim", 4, "k", 0), `model "sgc" layer spec: sgc: option k = 0 must be in [1, 64]`},
		{"cheb", cfg("in_dim", 8, "out_dim", 4, "k", 33), `model "cheb" layer spec: cheb: option k = 33 must be in [1, 32]`},
		{"appnp", cfg("in_dim", 8, "out_dim", 4, "last", 1, "k", -1), `appnp: option k = -1 must be in [0, 1000]`},
		{"appnp", cfg("in_dim", 8, "out_dim", 4, "last", 1, "alpha", 1.5), `appnp: option alpha = 1.5 must be in [0, 1]`},
		{"gcnii", cfg("in_dim", 8, "out_dim", 4, "layers", 2, "alpha", -0.1), `gcnii: option alpha = -0.1 must be in [0, 1]`},
		{"gcnii", cfg("in_dim", 8, "out_dim", 4, "layers", 2, "lambda", 0.0), `gcnii: option lambda = 0 must be in [1e-06, 1e+06]`},
		{"gcnii", cfg("in_dim", 8, "out_dim", 4, "layers", 1, "last", 1), `gcnii: model.layers = 1 must be >= 2`},
	}
	for _, c := range cases {
		_, err := loadGuest(t, "models/layers/"+c.layer).LayerSpec(ctx, c.cfg)
		mustContain(t, err, c.want)
	}
}

// withString returns c with the string option key set to v.
func withString(c Config, key, v string) Config { return *c.SetString(key, v) }

func TestConfigKeysRead(t *testing.T) {
	m := loadGuest(t, "models/layers/gcn")
	c := cfg("in_dim", 4, "out_dim", 2, "last", 1, "heads", 4, "dropout", 0.1)
	s, err := m.LayerSpec(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Unread(c); !slices.Equal(got, []string{"heads"}) {
		t.Errorf("Unread = %v, want [heads]", got)
	}
	if !slices.IsSorted(s.KeysRead) {
		t.Errorf("KeysRead not sorted: %v", s.KeysRead)
	}
}

// TestConfigDefaults checks that a spec records the default the guest
// gave for each option it read (as in models/layers/gat/main.go and
// sage/main.go), not the value the config set, formatted as TOML.
func TestConfigDefaults(t *testing.T) {
	for _, tc := range []struct {
		layer string
		cfg   Config
		want  map[string]string
	}{
		{"gat", cfg("in_dim", 4, "out_dim", 4, "heads", 2), map[string]string{"heads": "1", "out_heads": "1", "negative_slope": "0.2", "attn_dropout": "0.0", "in_dim": "0"}},
		{"sage", cfg("in_dim", 4, "out_dim", 4), map[string]string{"aggr": `""`, "project": "0"}},
	} {
		s, err := loadGuest(t, "models/layers/"+tc.layer).LayerSpec(context.Background(), tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		for k, want := range tc.want { // heads: the guest's 1, not the config's 2
			if got := s.Defaults[k]; got != want {
				t.Errorf("%s: default of %q = %q, want %q", tc.layer, k, got, want)
			}
		}
		if len(s.Defaults) != len(s.KeysRead) {
			t.Errorf("%s: %d defaults for %d keys read", tc.layer, len(s.Defaults), len(s.KeysRead))
		}
	}
}

func TestLayerSpecConcurrent(t *testing.T) {
	m := loadGuest(t, "models/layers/gat")
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			_, err := m.LayerSpec(context.Background(), cfg("in_dim", 16+i, "out_dim", 8, "heads", 2))
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
