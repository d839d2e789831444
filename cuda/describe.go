//go:build cuda

package cuda

import (
	"fmt"
	"time"

	"gorgonia.org/cu"

	"strata/core/backend"
	"strata/core/topology"
)

var _ backend.DeviceDescriber = (*Backend)(nil)

// DeviceRoofline implements backend.DeviceDescriber: the GPU's peak
// float32 throughput and memory bandwidth from its attributes (see
// rooflineOf).
func (b *Backend) DeviceRoofline() (topology.DeviceSpec, error) {
	defer b.enter()()
	attrs, err := b.dev.Attributes(cu.ComputeCapabilityMajor, cu.ComputeCapabilityMinor, cu.MultiprocessorCount,
		cu.ClockRate, cu.MemoryClockRate, cu.GlobalMemoryBusWidth)
	if err != nil {
		return topology.DeviceSpec{}, fmt.Errorf("cuda: device attributes: %w", err)
	}
	s, err := rooflineOf(deviceAttrs{CCMajor: attrs[0], CCMinor: attrs[1], SMs: attrs[2], ClockKHz: attrs[3], MemClockKHz: attrs[4], BusBits: attrs[5]})
	if err != nil {
		return s, fmt.Errorf("cuda: %s: %w", b.name, err)
	}
	return s, nil
}

// linkProbes is how many copies of the staging buffer HostLinkGBps times;
// it keeps the fastest (the others met a busy bus or a cold page).
const linkProbes = 5

// HostLinkGBps implements backend.DeviceDescriber: the host→device
// bandwidth of a pinned copy of the staging buffer (32 MiB), the best of
// linkProbes, measured once and remembered.
func (b *Backend) HostLinkGBps() (float64, error) {
	b.linkOnce.Do(func() { b.linkGBps, b.linkErr = b.measureLink() })
	return b.linkGBps, b.linkErr
}

func (b *Backend) measureLink() (float64, error) {
	bf, err := b.allocRaw(DeviceTier, stageBytes)
	if err != nil {
		return 0, fmt.Errorf("cuda: measuring the host link: %w", err)
	}
	defer b.releaseRaw(bf)
	defer b.enter()()
	b.stageMu.Lock()
	defer b.stageMu.Unlock()
	if err := b.stream.Synchronize(); err != nil {
		return 0, fmt.Errorf("cuda: measuring the host link: %w", err)
	}
	best := time.Duration(0)
	for range linkProbes {
		start := time.Now()
		if err := cu.MemcpyHtoDAsync(cu.DevicePtr(bf.ptr), b.stage, stageBytes, b.stream); err != nil {
			return 0, fmt.Errorf("cuda: measuring the host link: %w", err)
		}
		if err := b.stream.Synchronize(); err != nil {
			return 0, fmt.Errorf("cuda: measuring the host link: %w", err)
		}
		if d := time.Since(start); best == 0 || d < best {
			best = d
		}
	}
	return stageBytes / best.Seconds() / 1e9, nil
}
