// Package placing is the contract of placement solvers (registry
// namespace "placement"): which devices store which logical partitions of
// the graph data, and where every worker reads each partition from (XGNN
// §4.2). Implementations live in plugins/placement.
package placing

import (
	"context"
	"fmt"
	"strings"

	"strata/core/store"
	"strata/core/topology"
)

// Solver computes a placement plan for a selection of a topology's GPUs.
//
// devices lists the topology's GPUs to use (e.g. {0, 1, 6, 7} of the
// dgx1-v100-8 preset for XGNN's 4G_c); nil means all of them. An empty
// non-nil selection, an index out of range or a repeated index is an
// error, and so is an invalid topology. Links to GPUs outside the selection
// are not used. Worker i reads from GPU j over the link j → i
// (topo.PeerGBps[j][i]), so asymmetric topologies are handled too.
type Solver interface {
	Place(ctx context.Context, topo topology.Topology, devices []int) (*Plan, error)
}

// Host is the source of a read served from host memory over the worker's
// PCIe link (UVA), for a partition that no GPU the worker reaches holds.
const Host = -1

// Plan is a placement plan. Slices indexed by i are indexed by the
// position of the GPU in Devices, and logical partition p is the one that
// starts on Devices[p].
//
// MinBandwidth is XGNN's "minimal bandwidth weight" (§4.2, bandwidth rule):
//
//	a_i = min { Bandwidth_ij / AccessCnt_ij | worker i reads from j }
//	MinBandwidth = min { a_1, ..., a_n }
//
// where AccessCnt_ij is the number of partitions worker i reads from
// source j and Bandwidth_ij the bandwidth of the link it reads them over:
// PeerGBps[j][i] for an NVLink neighbour, the local memory bandwidth (LocalGBps)
// when j is i itself, and HostGBps[i] for the host. Sources worker i reads
// nothing from do not count. So a_i is the per-partition bandwidth of the
// worker's most loaded link when it reads all its partitions at once, each
// link's bandwidth shared evenly by the partitions read over it; it is the
// bottleneck link load of worker i expressed in GB/s per partition, not the
// aggregate bandwidth of all its links. (Each directed NVLink j→i and each
// PCIe link is used by worker i alone, so a_i does not depend on the other
// workers' reads.) MinBandwidth is the worst worker's bottleneck, in GB/s.
// Among the sources holding a partition, Reads picks the assignment that
// maximises a_i (local copies are always read locally).
type Plan struct {
	// Solver is the ID of the module that made the plan.
	Solver string
	// Devices are the selected GPUs, topology indices, in selection order.
	Devices []int
	// Stores[i] lists the logical partitions stored on Devices[i],
	// ascending.
	Stores [][]int
	// Reads[i][p] is the GPU (a topology index) worker Devices[i] reads
	// partition p from: Devices[i] itself, an NVLink neighbour, or Host.
	Reads [][]int
	// Replicas[i] = len(Stores[i]) - 1: the partitions Devices[i] stores
	// beyond the one it starts with.
	Replicas []int
	// TotalReplicas is the sum of Replicas.
	TotalReplicas int
	// WorkerGBps[i] is a_i of worker Devices[i] (see MinBandwidth).
	WorkerGBps []float64
	// MinBandwidth is min_i a_i, GB/s (see the type's comment).
	MinBandwidth float64
	// LocalGBps is the local memory bandwidth the plan was rated with.
	LocalGBps float64
	// Links is the number of directed NVLinks between selected GPUs, and
	// LinksUsed the number of them some worker reads over (a measure of
	// NVLink utilisation).
	Links, LinksUsed int
	// Cliques are the groups of placement.clique (topology indices); nil
	// for other solvers.
	Cliques [][]int
	// Replicate is the share of every GPU's cache that holds the hottest
	// rows on every GPU, ahead of the partitions (placement.cliqueopt);
	// 0 for other solvers.
	Replicate float64
}

// MaxStored returns the most partitions a GPU of the plan stores.
func (p *Plan) MaxStored() int {
	m := 0
	for _, s := range p.Stores {
		m = max(m, len(s))
	}
	return m
}

// String formats the plan as a table, one worker a line.
func (p *Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: devices %v, %d replicas, MinBandwidth %.4g GB/s, %d/%d NVLinks used\n", p.Solver, p.Devices, p.TotalReplicas, p.MinBandwidth, p.LinksUsed, p.Links)
	for i, d := range p.Devices {
		fmt.Fprintf(&b, "  G%d stores %v reads", d, p.Stores[i])
		for q, src := range p.Reads[i] {
			if src == Host {
				fmt.Fprintf(&b, " P%d@host", q)
			} else {
				fmt.Fprintf(&b, " P%d@G%d", q, src)
			}
		}
		fmt.Fprintf(&b, " a=%.4g\n", p.WorkerGBps[i])
	}
	return b.String()
}

// StorePlan converts the plan for the tiered feature store, whose devices
// are the plan's Devices in order: device and read indices become
// positions in Devices (reads from the host stay -1).
func (p *Plan) StorePlan() *store.Plan {
	pos := make(map[int]int, len(p.Devices))
	for i, d := range p.Devices {
		pos[d] = i
	}
	sp := &store.Plan{Stores: make([][]int, len(p.Devices)), Reads: make([][]int, len(p.Devices)), Replicate: p.Replicate}
	for i := range p.Devices {
		sp.Stores[i] = append([]int(nil), p.Stores[i]...)
		sp.Reads[i] = make([]int, len(p.Reads[i]))
		for q, src := range p.Reads[i] {
			if src == Host {
				sp.Reads[i][q] = -1
			} else {
				sp.Reads[i][q] = pos[src]
			}
		}
	}
	return sp
}
