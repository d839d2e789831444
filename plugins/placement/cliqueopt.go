package placement

import (
	"context"
	"fmt"

	"strata/core/registry"
	"strata/core/topology"
)

// CliqueOpt is the optimised clique policy XGNN compares with in §6.6
// (its reference [38]): QUIVER's clique placement (Clique), plus the
// hottest data duplicated on every GPU, trading NVLink reads inside a
// clique for local ones. The plan is Clique's with Replicate set: that
// share of every GPU's cache holds the hottest rows on all GPUs, and the
// rest holds the clique partitions of the next rows (the store's Planned
// placement reads Plan.Replicate). XGNN ports only the placement policy
// and gives no formula for the duplicated share, so it is an option.
type CliqueOpt struct {
	LocalGBps float64 `toml:"local_gbps" range:"(0,)" doc:"local GPU memory bandwidth, GB/s: rates a worker's own partitions in MinBandwidth"`
	Replicate float64 `toml:"replicate" range:"[0,1]" doc:"share of every GPU's cache that holds the hottest rows on every GPU; the rest holds the clique partitions"`
}

// DefaultCliqueOptReplicate is CliqueOpt's duplicated share when not set.
const DefaultCliqueOptReplicate = 0.2

// StrataModule implements registry.Module.
func (*CliqueOpt) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{
		ID: "placement.cliqueopt",
		New: func() registry.Module {
			return &CliqueOpt{LocalGBps: DefaultLocalGBps, Replicate: DefaultCliqueOptReplicate}
		},
		Doc: "CliqueOpt: the clique placement with the hottest rows duplicated on every GPU",
	}
}

// Validate checks the options.
func (c *CliqueOpt) Validate() error {
	if !(c.Replicate >= 0 && c.Replicate <= 1) {
		return fmt.Errorf("replicate = %v: must be in [0, 1]", c.Replicate)
	}
	return checkLocal(c.LocalGBps)
}

// Place implements Solver.
func (c *CliqueOpt) Place(ctx context.Context, topo topology.Topology, devices []int) (*Plan, error) {
	p, err := (&Clique{LocalGBps: c.LocalGBps}).Place(ctx, topo, devices)
	if err != nil {
		return nil, fmt.Errorf("placement.cliqueopt: %w", err)
	}
	p.Solver, p.Replicate = "placement.cliqueopt", c.Replicate
	return p, nil
}

var (
	_ Solver          = (*CliqueOpt)(nil)
	_ registry.Module = (*CliqueOpt)(nil)
)

func init() { registry.Register(new(CliqueOpt)) }
