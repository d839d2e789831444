package placement

import (
	"testing"

	"strata/core/placing"
	"strata/core/placing/placementtest"
)

// TestConformance runs the placement conformance suite on configurations
// beyond the registered defaults (plugins/all runs those): XGNN with a
// storage limit, so that some partitions are read from the host, and with
// a small search budget, and both solvers with another local bandwidth.
func TestConformance(t *testing.T) {
	for _, tt := range []struct {
		name string
		s    func() placing.Solver
	}{
		{"xgnn max_stored=1", func() placing.Solver {
			return &XGNN{LocalGBps: DefaultLocalGBps, MaxStored: 1, MaxSteps: DefaultMaxSteps}
		}},
		{"xgnn max_stored=2", func() placing.Solver {
			return &XGNN{LocalGBps: DefaultLocalGBps, MaxStored: 2, MaxSteps: DefaultMaxSteps}
		}},
		{"xgnn max_steps=10", func() placing.Solver { return &XGNN{LocalGBps: 300, MaxSteps: 10} }},
		{"clique local_gbps=10", func() placing.Solver { return &Clique{LocalGBps: 10} }},
		{"cliqueopt replicate=0.5", func() placing.Solver { return &CliqueOpt{LocalGBps: DefaultLocalGBps, Replicate: 0.5} }},
	} {
		t.Run(tt.name, func(t *testing.T) { placementtest.Test(t, tt.s) })
	}
}
