package sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"strata/core/backend/cpu"
	"strata/core/tensor"
)

// DeviceTier returns the tier name of device i ("device0", ...).
func DeviceTier(i int) tensor.Tier { return tensor.Tier("device" + strconv.Itoa(i)) }

// Backend is a CPU backend with one capacity-limited tier per simulated
// device, which counts the bytes crossing every link.
type Backend struct {
	*cpu.Backend
	topo Topology

	mu      sync.Mutex
	bytes   map[Link]int64
	purpose string
	byUse   map[string]int64
}

// Purposes under which transfers are counted (SetPurpose).
const (
	PurposeFeatures    = "features"
	PurposeTopology    = "topology"
	PurposeActivations = "activations"
	PurposeGradients   = "gradients"
	PurposeParameters  = "parameters"
	PurposeLabels      = "labels"
	PurposeOther       = "other"
)

// SetPurpose labels the transfers that follow (until the next call) for
// the per-purpose counters, e.g. PurposeFeatures before uploading a
// batch's input rows. It returns the previous purpose.
func (b *Backend) SetPurpose(p string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.purpose
	b.purpose = p
	return old
}

// TrafficByPurpose returns the bytes moved under each purpose, over all
// links (a transfer routed through the host counts once).
func (b *Backend) TrafficByPurpose() map[string]int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]int64, len(b.byUse))
	for k, v := range b.byUse {
		out[k] = v
	}
	return out
}

// Link is one direction of a physical link: host→device, device→host or
// device→device.
type Link struct{ From, To tensor.Tier }

func (l Link) String() string { return string(l.From) + "->" + string(l.To) }

// New returns a simulated backend for the topology; threads as cpu.Options.
func New(topo Topology, threads int) (*Backend, error) {
	if err := topo.Validate(); err != nil {
		return nil, err
	}
	b := &Backend{topo: topo, bytes: map[Link]int64{}, byUse: map[string]int64{}, purpose: PurposeOther}
	tiers := make([]cpu.Tier, topo.Devices)
	for i := range tiers {
		tiers[i] = cpu.Tier{Name: DeviceTier(i), Capacity: topo.Capacity}
	}
	b.Backend = cpu.New(cpu.Options{Threads: threads, Tiers: tiers, Transfer: b.count})
	return b, nil
}

// Name returns "sim".
func (b *Backend) Name() string { return "sim" }

// Topology returns the simulated machine.
func (b *Backend) Topology() Topology { return b.topo }

// count records a transfer, routing device↔device copies without a direct
// link through the host.
func (b *Backend) count(from, to tensor.Tier, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.byUse[b.purpose] += n
	fi, ti := b.device(from), b.device(to)
	if fi >= 0 && ti >= 0 && b.topo.PeerGBps[fi][ti] == 0 {
		b.bytes[Link{from, tensor.Host}] += n
		b.bytes[Link{tensor.Host, to}] += n
		return
	}
	b.bytes[Link{from, to}] += n
}

// device returns the index of a device tier, or -1 for the host.
func (b *Backend) device(t tensor.Tier) int {
	s, ok := strings.CutPrefix(string(t), "device")
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(s)
	if err != nil || i < 0 || i >= b.topo.Devices {
		return -1
	}
	return i
}

// bandwidth returns a link's bandwidth in GB/s.
func (b *Backend) bandwidth(l Link) float64 {
	fi, ti := b.device(l.From), b.device(l.To)
	switch {
	case fi >= 0 && ti >= 0:
		return b.topo.PeerGBps[fi][ti]
	case fi >= 0:
		return b.topo.HostGBps[fi]
	case ti >= 0:
		return b.topo.HostGBps[ti]
	}
	return 0
}

// LinkTraffic is the bytes that crossed one link and the time the link's
// bandwidth predicts for them.
type LinkTraffic struct {
	Link    string  `json:"link"`
	Bytes   int64   `json:"bytes"`
	GBps    float64 `json:"gbps"`
	Seconds float64 `json:"seconds"`
}

// Traffic returns the traffic of every link used so far, sorted by link.
func (b *Backend) Traffic() []LinkTraffic {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]LinkTraffic, 0, len(b.bytes))
	for l, n := range b.bytes {
		bw := b.bandwidth(l)
		out = append(out, LinkTraffic{Link: l.String(), Bytes: n, GBps: bw, Seconds: float64(n) / (bw * 1e9)})
	}
	slices.SortFunc(out, func(a, c LinkTraffic) int { return strings.Compare(a.Link, c.Link) })
	return out
}

// ResetTraffic clears the counters (e.g. between epochs).
func (b *Backend) ResetTraffic() {
	b.mu.Lock()
	b.bytes, b.byUse = map[Link]int64{}, map[string]int64{}
	b.mu.Unlock()
}

// String describes the machine.
func (t Topology) String() string {
	return fmt.Sprintf("%s: %d devices of %d bytes", t.Name, t.Devices, t.Capacity)
}
