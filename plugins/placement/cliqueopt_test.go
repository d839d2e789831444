package placement

import (
	"context"
	"reflect"
	"testing"

	"strata/core/backend/sim"
	"strata/core/store"
	"strata/core/tensor"
)

// TestCliqueOpt checks CliqueOpt on the topologies of XGNN Fig. 13: its
// partition plan is the clique policy's (same cliques, stores and reads),
// with the duplicated share set, and a store built from it holds the
// hottest rows on every GPU, reads them locally, places the next rows by
// the clique partitions and gathers exactly.
func TestCliqueOpt(t *testing.T) {
	dgx := preset(t, "dgx1-v100-8")
	co := mustNew[*CliqueOpt]("placement.cliqueopt")
	if co.Replicate != DefaultCliqueOptReplicate {
		t.Fatalf("default replicate %v", co.Replicate)
	}
	const n, dim = 400, 3
	feats := make([]float32, n*dim)
	for i := range feats {
		feats[i] = float32(i) * 0.5
	}
	rank := make([]int32, n)
	for i := range rank {
		rank[i] = int32((i * 7) % n) // a permutation: 7 is prime to 400
	}
	for _, f := range fig13 {
		p, err := co.Place(context.Background(), dgx, f.devices)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckPlan(p, dgx); err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		c, err := newClique().Place(context.Background(), dgx, f.devices)
		if err != nil {
			t.Fatal(err)
		}
		if p.Solver != "placement.cliqueopt" || p.Replicate != co.Replicate {
			t.Errorf("%s: solver %q replicate %v", f.name, p.Solver, p.Replicate)
		}
		want := *c
		want.Solver, want.Replicate = p.Solver, p.Replicate
		if !reflect.DeepEqual(*p, want) {
			t.Errorf("%s: partitions differ from the clique policy's:\n%s\n%s", f.name, p, c)
		}
		// The store: every GPU's budget is 40 rows, 8 of them (0.2) the
		// hottest rows on every GPU.
		b, err := sim.New(dgx, 1)
		if err != nil {
			t.Fatal(err)
		}
		D := len(p.Devices)
		devs := make([]tensor.Tier, D)
		for i, g := range p.Devices {
			devs[i] = sim.DeviceTier(g)
		}
		s, err := store.New(b, feats, dim, rank, store.Options{Placement: store.Planned, Devices: devs, Capacity: []int64{40 * dim * 4}, Plan: p.StorePlan()})
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		for r, v := range rank[:8] {
			for _, d := range devs {
				if src := s.Source(v, d); src != d {
					t.Fatalf("%s: hot row %d (node %d) read by %s from %s", f.name, r, v, d, src)
				}
			}
		}
		if s.Source(rank[8], devs[0]) == tensor.Host {
			t.Errorf("%s: the first partitioned row is not on a GPU", f.name)
		}
		out, _, err := s.Gather(context.Background(), rank[:100], devs[D-1])
		if err != nil {
			t.Fatal(err)
		}
		got := make([]float32, 100*dim)
		if err := b.Download(out, got); err != nil {
			t.Fatal(err)
		}
		if want := store.HostGather(feats, dim, rank[:100]); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: gather differs from the host rows", f.name)
		}
		s.Close()
	}
}
