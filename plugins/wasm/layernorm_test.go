package wasm

import (
	"context"
	"testing"

	"strata/core/ir"
)

// TestGuestLayerNormAndBuffers: sdk.LayerNorm1d records the layernorm op
// over learnable params with affine and over buffers (ir.Op.Buffer)
// without, through the host functions "layernorm", "param" and "buffer".
func TestGuestLayerNormAndBuffers(t *testing.T) {
	m := loadGuest(t, "plugins/wasm/testdata/guests/misc")
	for _, affine := range []int{0, 1} {
		s, err := m.LayerSpec(context.Background(), cfg("mode", 8, "affine", affine))
		if err != nil {
			t.Fatal(err)
		}
		g := s.Graph
		out := g.Ops[g.Outputs[0]]
		if out.Kind != ir.OpLayerNorm || out.Alpha != 1e-5 {
			t.Fatalf("affine=%d: output op %s eps %g, want layernorm eps 1e-05", affine, out.Kind, out.Alpha)
		}
		for k, want := range []string{"ln.weight", "ln.bias"} {
			p := g.Ops[out.Args[k+1]]
			if p.Kind != ir.OpParam || p.Name != want || p.Buffer != (affine == 0) {
				t.Errorf("affine=%d: argument %d is %s %q buffer=%v, want param %q buffer=%v", affine, k+1, p.Kind, p.Name, p.Buffer, want, affine == 0)
			}
		}
		if n, want := g.NumParams(), int64(8*affine); n != want {
			t.Errorf("affine=%d: %d learnable scalars, want %d", affine, n, want)
		}
	}
}
