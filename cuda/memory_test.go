//go:build cuda

package cuda

import (
	"testing"

	"strata/core/backend"
	"strata/core/tensor"
)

// DeviceMemory reports the pool's limit and the bytes and allocations of
// the live tensors, as they come and go; the host tier has no limit.
func TestDeviceMemory(t *testing.T) {
	const limit = 8 << 20
	b := open(t, Options{MemoryBytes: limit})
	var mc backend.MemoryCapacity = b
	before, err := mc.DeviceMemory(DeviceTier)
	if err != nil {
		t.Fatal(err)
	}
	if before.Limit != limit-sizeClass(4) || before.InUse != 0 || before.Live != 0 || before.GraphAllocations < 1 || before.CallAllocations < 1 {
		t.Fatalf("device memory %+v, want the limit of %d less the index-check flag's block, nothing in use", before, limit)
	}
	x, err := b.Alloc(tensor.Float32, []int{1000, 3}, DeviceTier)
	must(t, err)
	y, err := b.Alloc(tensor.Float64, []int{0}, DeviceTier) // empty: no allocation
	must(t, err)
	during, err := mc.DeviceMemory(DeviceTier)
	must(t, err)
	if during.InUse-before.InUse != 12000 || during.Live-before.Live != 1 {
		t.Errorf("with a 12000-byte tensor: %+v, before %+v", during, before)
	}
	b.Release(x)
	b.Release(y)
	after, err := mc.DeviceMemory(DeviceTier)
	must(t, err)
	if after != before {
		t.Errorf("after the release %+v, before %+v", after, before)
	}
	if _, err := mc.DeviceMemory(tensor.Host); err == nil {
		t.Error("the host tier reports a memory limit")
	}
}
