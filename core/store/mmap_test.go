package store_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"strata/core/backend/sim"
	"strata/core/graph/formats"
	"strata/core/graph/synth"
	"strata/core/store"
	"strata/core/tensor"
	"strata/core/topology"
)

// TestMappedFeatures builds a store over features mapped from a .strata
// file: the host matrix is used in place (not copied into backend memory)
// and gathers still return the exact rows.
func TestMappedFeatures(t *testing.T) {
	ds, err := synth.RMAT(synth.RMATOptions{Scale: 10, EdgeFactor: 8, FeatDim: 32, NumClasses: 4, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "g.strata")
	if err := formats.WriteBinary(path, ds); err != nil {
		t.Fatal(err)
	}
	mapped, closer, err := formats.OpenBinary(path)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	topo, err := topology.Preset("pcie-only", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sim.New(topo, 1)
	if err != nil {
		t.Fatal(err)
	}
	rank := []int32{5, 9, 1, 700}
	s, err := store.New(b, mapped.Features, mapped.FeatDim, rank, store.Options{
		Placement: store.Interleaved, Devices: []tensor.Tier{sim.DeviceTier(0)}, Capacity: []int64{2 * 32 * 4},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if used := b.Stats().InUse[tensor.Host]; used >= int64(len(mapped.Features))*4 {
		t.Errorf("host tier holds %d bytes: the mapped matrix (%d bytes) was copied", used, len(mapped.Features)*4)
	}
	ids := []int32{700, 5, 9, 0, 1023, 1}
	out, _, err := s.Gather(context.Background(), ids, sim.DeviceTier(0))
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float32, out.Numel())
	if err := b.Download(out, got); err != nil {
		t.Fatal(err)
	}
	if want := store.HostGather(ds.Features, ds.FeatDim, ids); !slices.Equal(got, want) {
		t.Error("gather over mapped features differs from a host gather")
	}
}
