package wasm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"strata/core/modhost"
	"strata/internal/testcache"
)

// modelBytes reads a built module of models/wasm (skips when not built).
func modelBytes(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "models", "wasm", file))
	if err != nil {
		t.Skip("models not built:", err)
	}
	return b
}

// TestPoolSharesModules: a host with a pool loads a module once per name
// and bytes, its layer specs and cost predictions equal a plain host's,
// and loads after Close fail.
func TestPoolSharesModules(t *testing.T) {
	ctx := context.Background()
	gcn, roofline := modelBytes(t, "gcn.wasm"), modelBytes(t, "costmodel-roofline.wasm")
	opts := Options{CacheDir: testcache.MustWasmDir()}
	pool := NewPool()
	pooled, plain := Host{Options: opts, Pool: pool}, Host{Options: opts}

	var lc modhost.LayerConfig
	lc.SetInt("in_dim", 8).SetInt("out_dim", 4).SetInt("layer", 0).SetInt("layers", 2).SetInt("last", 0).SetFloat("dropout", 0)
	spec := func(h Host) *modhost.LayerSpec {
		t.Helper()
		l, release, err := h.LoadLayer(ctx, "gcn", gcn)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		s, err := l.LayerSpec(ctx, lc)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	want := spec(plain)
	for i := range 2 {
		if got := spec(pooled); !reflect.DeepEqual(got, want) {
			t.Fatalf("load %d: pooled spec differs from a plain host's", i)
		}
	}
	predict := func(h Host, name string) [CostOutputs]float64 {
		t.Helper()
		cm, release, err := h.LoadCostModel(ctx, name, roofline)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		out, err := cm.(*CostModel).Predict(0, append(append([]float64(nil), machine...), 1e9, 1e9))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	wantCost := predict(plain, "roofline")
	for _, name := range []string{"roofline", "roofline", "roofline-2"} {
		if got := predict(pooled, name); got != wantCost {
			t.Fatalf("%s: pooled prediction %v, plain %v", name, got, wantCost)
		}
	}
	if n := len(pool.mods); n != 3 { // gcn, roofline, roofline-2
		t.Fatalf("pool holds %d modules, want 3 (one per name and bytes)", n)
	}
	if n := len(pool.rts); n != 1 {
		t.Fatalf("pool holds %d runtimes, want 1 (one per Options)", n)
	}
	if err := pool.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pool.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, _, err := pooled.LoadLayer(ctx, "gcn", gcn); !errors.Is(err, errPoolClosed) {
		t.Fatalf("load after Close: %v", err)
	}
}
