package partitioners

import (
	"testing"

	"strata/core/partition"
	"strata/core/partition/partitionertest"
)

// TestConformance runs the partitioner conformance suite on
// configurations beyond the registered defaults (plugins/all runs those).
// hongtu-2level with m > 1 is not among them: it needs k to be a multiple
// of m, which the suite's k values are not.
func TestConformance(t *testing.T) {
	metis := func(o MetisOptions) MetisOptions {
		d := defaultMetisOptions()
		if o.Method != "" {
			d.Method = o.Method
		}
		d.Seed, d.Ufactor, d.Ncuts, d.MinConn = o.Seed, o.Ufactor, o.Ncuts, o.MinConn
		if o.Objective != "" {
			d.Objective = o.Objective
		}
		return d
	}
	for _, tt := range []struct {
		name string
		p    func() partition.Partitioner
	}{
		{"range edges", func() partition.Partitioner { return &Range{Balance: "edges"} }},
		{"random seed=7", func() partition.Partitioner { return &Random{Seed: 7} }},
		{"metis recursive", func() partition.Partitioner { return &Metis{metis(MetisOptions{Method: "recursive", Seed: 3})} }},
		{"metis vol minconn", func() partition.Partitioner {
			return &Metis{metis(MetisOptions{Objective: "vol", MinConn: true, Ncuts: 2})}
		}},
		{"hongtu nodes", func() partition.Partitioner {
			return &HongTu2Level{M: 1, Balance: "nodes", MetisOptions: defaultMetisOptions()}
		}},
		{"betty max_hub_degree=4", func() partition.Partitioner {
			return &BettyREG{MaxHubDegree: 4, MetisOptions: metis(MetisOptions{Ufactor: 100})}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) { partitionertest.Test(t, tt.p) })
	}
}
