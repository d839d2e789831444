//go:build cuda

package cuda

import (
	"fmt"

	"strata/core/backend"
	"strata/core/tensor"
)

var _ backend.MemoryCapacity = (*Backend)(nil)

// Allocations the backend makes besides the tensors it is asked for,
// counted from the code: an uploaded graph holds its CSR's row pointers
// and columns, the destination of every edge, the transpose's row
// pointers, columns and edge permutation, its values in float32 and
// float64, and each orientation's four heavy-row arrays (UploadGraph,
// uploadHeavy, values); an op's call holds at most three temporaries at
// once (the LSTM aggregation's gates, cells and hidden states).
const (
	graphAllocations = 6 + 2 + 2*4
	callAllocations  = 3
)

// DeviceMemory implements backend.MemoryCapacity: the device pool's
// limit (the device's free memory when the backend opened it, or
// Options.MemoryBytes) less the block the backend keeps for itself (the
// index-check flag), and the bytes and allocations of the live tensors
// and graphs.
func (b *Backend) DeviceMemory(tier tensor.Tier) (backend.DeviceMemory, error) {
	if tier != DeviceTier {
		return backend.DeviceMemory{}, fmt.Errorf("cuda: tier %q has no memory limit (the device is %q)", tier, DeviceTier)
	}
	b.memMu.Lock()
	defer b.memMu.Unlock()
	return backend.DeviceMemory{Limit: b.devPool.limit - b.ownDev, InUse: b.inUse[tier], Live: b.live[tier],
		GraphAllocations: graphAllocations, CallAllocations: callAllocations}, nil
}

// RoundingSlack implements backend.MemoryCapacity: the most the device
// pool's size classes add to n requests of bytes in all (roundingSlack).
func (b *Backend) RoundingSlack(bytes, n int64) int64 { return roundingSlack(bytes, n) }
