package placementtest

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"strata/core/internal/mutanttest"
	"strata/core/placing"
	"strata/core/topology"
)

// own is a solver: every GPU stores only its own partition, and a worker
// reads partition q from the GPU that owns it when linked to it, else from
// the host. Its flags break it.
type own struct {
	unsorted   bool // stores partition 0 last
	badMin     bool // MinBandwidth is the largest a_i
	noLink     bool // reads from owners it has no link to
	lazyHost   bool // reads every remote partition from the host
	noDupCheck bool // accepts repeated devices
	nilDesc    bool // nil selects the GPUs in descending order
	random     bool // Cliques in a random order
}

func (o *own) Place(ctx context.Context, topo topology.Topology, devices []int) (*placing.Plan, error) {
	if err := topo.Validate(); err != nil {
		return nil, err
	}
	if devices == nil {
		for i := range topo.Devices {
			devices = append(devices, i)
		}
		if o.nilDesc {
			slices.Reverse(devices)
		}
	}
	if len(devices) == 0 {
		return nil, errors.New("no devices")
	}
	seen := map[int]bool{}
	for _, d := range devices {
		if d < 0 || d >= topo.Devices || seen[d] && !o.noDupCheck {
			return nil, errors.New("bad device")
		}
		seen[d] = true
	}
	n := len(devices)
	local := 900.0
	p := &placing.Plan{Solver: "own", Devices: slices.Clone(devices), LocalGBps: local,
		Stores: make([][]int, n), Reads: make([][]int, n), Replicas: make([]int, n), WorkerGBps: make([]float64, n)}
	for i, di := range devices {
		p.Stores[i] = []int{i}
		if o.unsorted && i > 0 {
			p.Stores[i] = []int{i, 0}
			p.Replicas[i] = 1
			p.TotalReplicas++
		}
		p.Reads[i] = make([]int, n)
		count := map[int]int{}
		for q, dq := range devices {
			src := placing.Host
			switch {
			case slices.Contains(p.Stores[i], q):
				src = di
			case o.lazyHost:
			case topo.PeerGBps[dq][di] > 0 || o.noLink:
				src = dq
			}
			p.Reads[i][q] = src
			count[src]++
		}
		a := math.Inf(1)
		for src, c := range count {
			bw := local
			switch {
			case src == placing.Host:
				bw = topo.HostGBps[di]
			case src != di:
				bw = topo.PeerGBps[src][di]
				p.LinksUsed++
			}
			a = min(a, bw/float64(c))
		}
		p.WorkerGBps[i] = a
		for _, dj := range devices {
			if dj != di && topo.PeerGBps[dj][di] > 0 {
				p.Links++
			}
		}
	}
	p.MinBandwidth = slices.Min(p.WorkerGBps)
	if o.badMin {
		p.MinBandwidth = slices.Max(p.WorkerGBps)
	}
	if o.random {
		for _, d := range devices {
			p.Cliques = append(p.Cliques, []int{d})
		}
		rand.Shuffle(n, func(i, j int) { p.Cliques[i], p.Cliques[j] = p.Cliques[j], p.Cliques[i] })
	}
	return p, nil
}

var mutants = map[string]func() placing.Solver{
	"unsorted":  func() placing.Solver { return &own{unsorted: true} },
	"bad-min":   func() placing.Solver { return &own{badMin: true} },
	"no-link":   func() placing.Solver { return &own{noLink: true} },
	"lazy-host": func() placing.Solver { return &own{lazyHost: true} },
	"dup":       func() placing.Solver { return &own{noDupCheck: true} },
	"nil-desc":  func() placing.Solver { return &own{nilDesc: true} },
	"random":    func() placing.Solver { return &own{random: true} },
}

// TestCorrect checks that the suite passes a correct solver.
func TestCorrect(t *testing.T) {
	Test(t, func() placing.Solver { return &own{} })
}

func TestMutantHelper(t *testing.T) {
	name := mutanttest.Name()
	if name == "" {
		t.Skip("run by TestMutants")
	}
	Test(t, mutants[name])
}

// TestMutants checks that the suite fails each broken solver where it
// should.
func TestMutants(t *testing.T) {
	mutanttest.Check(t, "TestMutantHelper", []mutanttest.Mutant{
		{Name: "unsorted", Fail: []string{"Plans/nvlink-ring-4/all"}},
		{Name: "bad-min", Fail: []string{"Plans/asym-4/all"}},
		{Name: "no-link", Fail: []string{"Plans/nvlink-ring-4/all", "Plans/pcie-only-3/nil", "Plans/asym-4/desc"}},
		{Name: "lazy-host", Fail: []string{"Plans/nvlink-clique-4/all", "Plans/dgx1-v100-8/4G_c"}},
		{Name: "dup", Fail: []string{"Errors/repeated"}},
		{Name: "nil-desc", Fail: []string{"Plans/nvlink-ring-4/nil"}},
		{Name: "random", Fail: []string{"Plans/dgx1-v100-8/all"}},
	})
}
