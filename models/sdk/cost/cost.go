//go:build wasip1

// Package cost is the Go guest SDK for strata cost-model modules. A cost
// model is a pure function from an op code and up to 16 float inputs to 4
// float outputs; the host calls it through a shared I/O block, about 0.1 µs
// per prediction. A module registers its function in init:
//
//	func init() { cost.Register(predict) }
//
//	func predict(op int32, in []float64, out *[4]float64) int32 {
//		...
//		return cost.OK
//	}
//
// Importing this package exports strata_abi_version, strata_cost_io and
// strata_cost. The function must not keep state between calls that changes
// its answers, and must not allocate per call (guest memory never shrinks).
package cost

import (
	"structs"
	"unsafe"

	"strata/models/sdk/abi"
)

// Status codes returned by a cost function.
const (
	OK         int32 = 0
	UnknownOp  int32 = 1
	BadInputs  int32 = 2
	NumInputs        = 16
	NumOutputs       = 4
)

// IO is the block the host reads and writes (168 bytes, little-endian).
type IO struct {
	_       structs.HostLayout
	Version uint32
	NIn     uint32
	In      [NumInputs]float64
	Out     [NumOutputs]float64
}

var block = IO{Version: 1}

// Func predicts op from in (the NIn inputs the host wrote) into out.
type Func func(op int32, in []float64, out *[NumOutputs]float64) int32

var fn Func

// Register sets the cost function. Call it from init.
func Register(f Func) { fn = f }

//go:wasmexport strata_cost_io
func costIO() int32 {
	block.Version = 1
	return int32(uintptr(unsafe.Pointer(&block)))
}

//go:wasmexport strata_cost
func strataCost(op int32) int32 {
	if fn == nil {
		abi.Log("the module registered no cost function: call cost.Register in func init")
		return UnknownOp
	}
	n := min(int(block.NIn), NumInputs)
	return fn(op, block.In[:n], &block.Out)
}

// Arg returns in[i], or def when the host passed fewer inputs.
func Arg(in []float64, i int, def float64) float64 {
	if i < len(in) {
		return in[i]
	}
	return def
}

// Log sends a line to the host (shown with trap reports).
func Log(msg string) { abi.Log(msg) }
