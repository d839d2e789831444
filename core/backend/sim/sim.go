package sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"strata/core/backend"
	"strata/core/backend/cpu"
	"strata/core/tensor"
	"strata/core/topology"
)

//go:generate go run ./internal/wrapgen/cmd/wrapgen

// DeviceTier returns the tier name of device i ("device0", ...).
func DeviceTier(i int) tensor.Tier { return tensor.Tier("device" + strconv.Itoa(i)) }

// Backend simulates a machine with several devices on the host. It owns
// labelled tiers (the host and device0..N-1), each backed by an inner
// backend that has only a host tier and the tier's capacity, so every
// tier's memory, peak and out-of-memory errors are its own. It checks that
// the tensor operands of a kernel share a tier, counts every byte that
// crosses between tiers (Upload, UploadGraph, Download, Copy) with its
// purpose, prices every kernel on a device with the cost model, and runs
// it on the inner backend of that tier with the operands unwrapped to the
// inner backend's handles. The kernel methods are generated (wrap_gen.go,
// go generate) from the backend.Backend interface; their costs are the
// table in cost.go. Views made by ForPurpose share its memory, tensors
// and counters.
type Backend struct {
	*machine
	purpose string // of this view's transfers and kernels
}

// machine is the state a backend's views share.
type machine struct {
	topo    topology.Topology
	tiers   []tensor.Tier                   // host, device0, ...
	inner   map[tensor.Tier]backend.Backend // one per tier
	traffic *counters
}

// counters are the bytes moved and the time predicted, shared by a
// backend's views.
type counters struct {
	mu      sync.Mutex
	bytes   map[Link]int64
	byUse   map[string]int64
	lines   map[string]*timeline // by purpose
	cost    KernelCost
	kernelS map[tensor.Tier]map[string]float64
}

func newCounters() *counters {
	return &counters{bytes: map[Link]int64{}, byUse: map[string]int64{}, lines: map[string]*timeline{}, kernelS: map[tensor.Tier]map[string]float64{}}
}

// ForPurpose returns a view of the backend whose transfers count under
// purpose p (e.g. PurposeFeatures for a batch's input rows). Transfers
// through the backend itself count as PurposeOther. Views carry their
// label with them, so a transfer stage and the training loop can run at
// once without mislabelling each other's bytes.
func (b *Backend) ForPurpose(p string) backend.Backend { return b.view(p) }

// view is ForPurpose with the concrete type.
func (b *Backend) view(p string) *Backend { return &Backend{machine: b.machine, purpose: p} }

// Purpose returns the purpose the view's transfers and kernels count under.
func (b *Backend) Purpose() string {
	if b.purpose != "" {
		return b.purpose
	}
	return backend.PurposeOther
}

// TrafficByPurpose returns the bytes moved under each purpose, over all
// links (a transfer routed through the host counts once).
func (b *Backend) TrafficByPurpose() map[string]int64 {
	t := b.traffic
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int64, len(t.byUse))
	for k, v := range t.byUse {
		out[k] = v
	}
	return out
}

// Link is one direction of a physical link: host→device, device→host or
// device→device.
type Link struct{ From, To tensor.Tier }

func (l Link) String() string { return string(l.From) + "->" + string(l.To) }

// New returns a simulated backend for the topology, computing on CPU
// backends with threads goroutines each (see cpu.Options).
func New(topo topology.Topology, threads int) (*Backend, error) {
	return newMachine(topo, func(capacity int64) backend.Backend {
		return cpu.New(cpu.Options{Threads: threads, Capacity: capacity})
	})
}

// newMachine returns a simulated backend whose tiers are backed by the
// backends newInner makes: each must have only the host tier, hold at
// most capacity bytes (0: unlimited) and accept the others' tensors in
// Copy.
func newMachine(topo topology.Topology, newInner func(capacity int64) backend.Backend) (*Backend, error) {
	if err := topo.Validate(); err != nil {
		return nil, err
	}
	m := &machine{topo: topo, tiers: []tensor.Tier{tensor.Host}, inner: map[tensor.Tier]backend.Backend{tensor.Host: newInner(0)}, traffic: newCounters()}
	for i := range topo.Devices {
		t := DeviceTier(i)
		m.tiers = append(m.tiers, t)
		m.inner[t] = newInner(topo.Capacity)
	}
	return &Backend{machine: m}, nil
}

// Name returns "sim".
func (b *Backend) Name() string { return "sim" }

// Topology returns the simulated machine.
func (b *Backend) Topology() topology.Topology { return b.topo }

// count records a transfer under the view's purpose, routing
// device↔device copies without a direct link through the host.
func (b *Backend) count(from, to tensor.Tier, n int64) {
	if from == to || n <= 0 {
		return
	}
	purpose := b.Purpose()
	links := []Link{{from, to}}
	if fi, ti := b.device(from), b.device(to); fi >= 0 && ti >= 0 && b.topo.PeerGBps[fi][ti] == 0 {
		links = []Link{{from, tensor.Host}, {tensor.Host, to}}
	}
	t := b.traffic
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byUse[purpose] += n
	tl := t.lines[purpose]
	if tl == nil {
		tl = newTimeline()
		t.lines[purpose] = tl
	}
	ready := 0.0 // a routed copy's second hop starts when its first ends
	for _, l := range links {
		t.bytes[l] += n
		ready = tl.schedule(b.resources(l), ready, b.linkSeconds(l, n))
	}
}

// CountRead implements backend.InPlaceReads: bytes that a kernel on
// reader read in place from holder count as a transfer holder -> reader
// (through the host when the devices have no direct link).
func (b *Backend) CountRead(holder, reader tensor.Tier, bytes int64) error {
	for _, t := range []tensor.Tier{holder, reader} {
		if _, ok := b.inner[t]; !ok {
			return fmt.Errorf("sim: in-place read: tier %q is not available (tiers: %v)", t, b.tiers)
		}
	}
	if bytes < 0 {
		return fmt.Errorf("sim: in-place read of %d bytes", bytes)
	}
	b.count(holder, reader, bytes)
	return nil
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

// LinkTraffic is a link's traffic (see backend.TrafficCounter).
type LinkTraffic = backend.LinkTraffic

// Traffic returns the traffic of every link used so far, sorted by link.
func (b *Backend) Traffic() []LinkTraffic {
	t := b.traffic
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]LinkTraffic, 0, len(t.bytes))
	for l, n := range t.bytes {
		bw := b.bandwidth(l)
		out = append(out, LinkTraffic{Link: l.String(), Bytes: n, GBps: bw, Seconds: float64(n) / (bw * 1e9)})
	}
	slices.SortFunc(out, func(a, c LinkTraffic) int { return strings.Compare(a.Link, c.Link) })
	return out
}

// ResetTraffic clears the traffic and compute counters (e.g. between epochs).
func (b *Backend) ResetTraffic() {
	t := b.traffic
	t.mu.Lock()
	fresh := newCounters()
	t.bytes, t.byUse, t.lines, t.kernelS = fresh.bytes, fresh.byUse, fresh.lines, fresh.kernelS
	t.mu.Unlock()
}

// ComputeTier is the first simulated device, where the engine trains.
func (b *Backend) ComputeTier() tensor.Tier { return DeviceTier(0) }

// DeviceTiers lists the tiers of every simulated device.
func (b *Backend) DeviceTiers() []tensor.Tier {
	out := make([]tensor.Tier, b.topo.Devices)
	for i := range out {
		out[i] = DeviceTier(i)
	}
	return out
}

// Capabilities beyond backend.Backend (see core/backend/capabilities.go).
var (
	_ backend.Backend        = (*Backend)(nil)
	_ backend.Purposes       = (*Backend)(nil)
	_ backend.Device         = (*Backend)(nil)
	_ backend.MultiDevice    = (*Backend)(nil)
	_ backend.Machine        = (*Backend)(nil)
	_ backend.TrafficCounter = (*Backend)(nil)
	_ backend.TimePredictor  = (*Backend)(nil)
	_ backend.PeakResetter   = (*Backend)(nil)
	_ backend.InPlaceReads   = (*Backend)(nil)
	_ extensions             = (*Backend)(nil)
)
