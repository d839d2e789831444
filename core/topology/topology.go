// Package topology describes a machine: a host and devices, the links
// between them (PCIe to the host, NVLink between devices), each device's
// capacity and roofline, and the named presets of the papers strata
// reproduces. Backends, placement solvers and cost models share it.
package topology

import (
	"fmt"
	"slices"
	"strings"
)

// Topology is a host with devices and the links between them.
type Topology struct {
	Name     string
	Devices  int
	Capacity int64 // bytes per device (0 = unlimited)
	// HostGBps[i] is the bandwidth of the host↔device i link (PCIe), GB/s.
	HostGBps []float64
	// PeerGBps[i][j] is the bandwidth of the direct device i → device j
	// link (NVLink), GB/s; 0 means no direct link, and such transfers go
	// through the host.
	PeerGBps [][]float64
	// Switch[i] is the PCIe switch device i's host link goes through, or
	// -1 for its own link to the host (nil: every device its own). Devices
	// behind one switch share its uplink to the host, SwitchGBps per
	// direction, so their host transfers take turns on it.
	Switch     []int
	SwitchGBps float64
	// ZeroCopy lets device kernels read pinned host memory in place
	// (zero-copy over the device's host link, as UVA-mapped memory is
	// read on a GPU): a simulated backend's multi-tier gather then reads
	// cold rows straight from the host tier, each row's bytes counted and
	// timed on the host link, instead of gathering them on the host and
	// copying them.
	ZeroCopy bool
	// HostGatherGBps is the rate at which the host CPU gathers rows for
	// a device (GB/s written): a simulated backend prices a host-tier
	// Gather at it, as host kernel time before the devices' (data
	// tiering's CPU-gather baseline). 0: host kernels are not timed.
	HostGatherGBps float64
	// Compute is what every device's kernels run at, for the cost model
	// that predicts their time (see backend.TimePredictor).
	Compute DeviceSpec
}

// DeviceSpec is a device's roofline: peak float throughput, memory
// bandwidth and the fixed cost of launching a kernel.
type DeviceSpec struct {
	PeakGFLOPS float64 // float32 GFLOP/s
	MemGBps    float64 // device memory bandwidth, GB/s
	LaunchUS   float64 // per-kernel overhead, µs
}

// V100 is the device of every preset: an NVIDIA V100 SXM2 (15.7 TFLOP/s
// float32, 900 GB/s HBM2), the GPU of XGNN's and the tiering paper's
// DGX-1, with a 5 µs launch overhead.
var V100 = DeviceSpec{PeakGFLOPS: 15700, MemGBps: 900, LaunchUS: 5}

// Bandwidths used by the presets: PCIe 3.0 x16 and one NVLink 2.0 link,
// per direction.
const (
	PCIeGBps   = 16.0
	NVLinkGBps = 25.0
)

// PresetNames lists the named topologies.
func PresetNames() []string {
	return []string{"pcie-only", "nvlink-clique-4", "nvlink-ring-4", "dgx1-v100-8"}
}

// Preset returns a named topology. devices is used by pcie-only (0 means
// 1) and by dgx1-v100-8, whose first devices GPUs (1 to 8; 0 means 8) are
// the sub-machine XGNN's scaling runs use (Figs. 11, 12: one GPU, a pair
// behind one PCIe switch, a quad, all eight); the others have a fixed
// device count, and a different non-zero devices is an error.
func Preset(name string, devices int, capacity int64) (Topology, error) {
	fixed := map[string]int{"nvlink-clique-4": 4, "nvlink-ring-4": 4, "dgx1-v100-8": 8}
	n := devices
	if want, ok := fixed[name]; ok {
		sub := name == "dgx1-v100-8" && devices > 0 && devices < want
		if devices != 0 && devices != want && !sub {
			return Topology{}, fmt.Errorf("preset %q has %d devices, but %d were asked for", name, want, devices)
		}
		if sub {
			t, err := Preset(name, 0, capacity)
			return t.firstDevices(devices), err
		}
		n = want
	} else if name != "pcie-only" {
		return Topology{}, fmt.Errorf("unknown device preset %q (known: %s)", name, strings.Join(PresetNames(), ", "))
	}
	if n == 0 {
		n = 1
	}
	if n < 0 {
		return Topology{}, fmt.Errorf("%d devices: want at least 1", n)
	}
	t := Topology{Name: name, Devices: n, Capacity: capacity, HostGBps: make([]float64, n), PeerGBps: make([][]float64, n), Compute: V100}
	for i := range t.HostGBps {
		t.HostGBps[i] = PCIeGBps
		t.PeerGBps[i] = make([]float64, n)
	}
	link := func(i, j int, links float64) {
		t.PeerGBps[i][j], t.PeerGBps[j][i] = links*NVLinkGBps, links*NVLinkGBps
	}
	switch name {
	case "nvlink-clique-4":
		for i := 0; i < 4; i++ {
			for j := i + 1; j < 4; j++ {
				link(i, j, 2)
			}
		}
	case "nvlink-ring-4":
		for i := 0; i < 4; i++ {
			link(i, (i+1)%4, 2)
		}
	case "dgx1-v100-8":
		// The hybrid cube-mesh of XGNN Fig. 7: two fully connected quads
		// {0,1,2,3} and {4,5,6,7} joined by 0-6, 1-7, 2-4 and 3-5 (so GPU 0
		// reaches neither 4, 5 nor 7). Every GPU has six NVLinks: its
		// cross link and one quad link are doubled.
		for _, q := range [][4]int{{0, 1, 2, 3}, {4, 5, 6, 7}} {
			for a := 0; a < 4; a++ {
				for b := a + 1; b < 4; b++ {
					link(q[a], q[b], 1)
				}
			}
		}
		for _, d := range [][2]int{{0, 3}, {1, 2}, {4, 7}, {5, 6}, {0, 6}, {1, 7}, {2, 4}, {3, 5}} {
			link(d[0], d[1], 2)
		}
		// GPUs 2k and 2k+1 share a PCIe switch with one x16 uplink.
		t.Switch, t.SwitchGBps = []int{0, 0, 1, 1, 2, 2, 3, 3}, PCIeGBps
	}
	return t, nil
}

// firstDevices is the machine of t's first n devices: their host links,
// the links among them and their PCIe switches.
func (t Topology) firstDevices(n int) Topology {
	t.Devices = n
	t.HostGBps = append([]float64(nil), t.HostGBps[:n]...)
	peer := make([][]float64, n)
	for i := range peer {
		peer[i] = append([]float64(nil), t.PeerGBps[i][:n]...)
	}
	t.PeerGBps = peer
	if t.Switch != nil {
		t.Switch = append([]int(nil), t.Switch[:n]...)
	}
	return t
}

// Validate checks the topology's shape.
func (t Topology) Validate() error {
	if t.Devices < 1 {
		return fmt.Errorf("topology %q has %d devices, want at least 1", t.Name, t.Devices)
	}
	if t.Capacity < 0 {
		return fmt.Errorf("topology %q: negative capacity %d", t.Name, t.Capacity)
	}
	if c := t.Compute; c != (DeviceSpec{}) && !(c.PeakGFLOPS > 0 && c.MemGBps > 0 && c.LaunchUS >= 0) {
		return fmt.Errorf("topology %q: device compute %v GFLOP/s, %v GB/s, %v µs launch: want positive throughput and bandwidth", t.Name, c.PeakGFLOPS, c.MemGBps, c.LaunchUS)
	}
	if len(t.HostGBps) != t.Devices || len(t.PeerGBps) != t.Devices {
		return fmt.Errorf("topology %q: %d host links and %d peer rows for %d devices", t.Name, len(t.HostGBps), len(t.PeerGBps), t.Devices)
	}
	if t.Switch != nil {
		if len(t.Switch) != t.Devices {
			return fmt.Errorf("topology %q: %d switch entries for %d devices", t.Name, len(t.Switch), t.Devices)
		}
		for i, s := range t.Switch {
			if s < -1 {
				return fmt.Errorf("topology %q: device %d on switch %d: want a switch index >= 0, or -1 for none", t.Name, i, s)
			}
		}
		if slices.Max(t.Switch) >= 0 && !(t.SwitchGBps > 0) {
			return fmt.Errorf("topology %q: switch uplink bandwidth %v GB/s, want > 0", t.Name, t.SwitchGBps)
		}
	}
	for i, bw := range t.HostGBps {
		if !(bw > 0) {
			return fmt.Errorf("topology %q: host link of device %d has bandwidth %v GB/s, want > 0", t.Name, i, bw)
		}
		if len(t.PeerGBps[i]) != t.Devices {
			return fmt.Errorf("topology %q: peer row %d has %d entries, want %d", t.Name, i, len(t.PeerGBps[i]), t.Devices)
		}
		for j, p := range t.PeerGBps[i] {
			if p < 0 || i == j && p != 0 {
				return fmt.Errorf("topology %q: peer bandwidth [%d][%d] = %v", t.Name, i, j, p)
			}
		}
	}
	return nil
}

// Neighbours returns the devices device i reaches over a direct link.
func (t Topology) Neighbours(i int) []int {
	var out []int
	for j, bw := range t.PeerGBps[i] {
		if bw > 0 {
			out = append(out, j)
		}
	}
	return slices.Clip(out)
}

// SwitchOf returns the PCIe switch of device i, or -1 when its host link
// is its own.
func (t Topology) SwitchOf(i int) int {
	if i < 0 || i >= len(t.Switch) {
		return -1
	}
	return t.Switch[i]
}

// String describes the machine.
func (t Topology) String() string {
	return fmt.Sprintf("%s: %d devices of %d bytes", t.Name, t.Devices, t.Capacity)
}
