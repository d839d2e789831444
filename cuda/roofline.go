package cuda

import (
	"fmt"

	"strata/core/topology"
)

// deviceAttrs are the attributes of a GPU (cuDeviceGetAttribute) its
// roofline is computed from.
type deviceAttrs struct {
	CCMajor, CCMinor int // compute capability
	SMs              int // multiprocessors
	ClockKHz         int // peak SM clock
	MemClockKHz      int // peak memory clock
	BusBits          int // global memory bus width
}

// fp32Lanes is the float32 lanes (CUDA cores) of one multiprocessor by
// compute capability, from NVIDIA's CUDA C Programming Guide ("Arithmetic
// Instructions", 32-bit floating-point add, multiply, multiply-add).
var fp32Lanes = map[[2]int]int{
	{6, 0}: 64, {6, 1}: 128, {6, 2}: 128,
	{7, 0}: 64, {7, 2}: 64, {7, 5}: 64,
	{8, 0}: 64, {8, 6}: 128, {8, 7}: 128, {8, 9}: 128,
	{9, 0}:  128,
	{10, 0}: 128, {10, 3}: 128, {11, 0}: 128, {12, 0}: 128, {12, 1}: 128,
}

// launchUS is the per-kernel overhead the roofline charges: the presets'
// (topology.V100), a launch's usual 3-7 µs on current GPUs.
const launchUS = 5

// rooflineOf returns the roofline of a GPU with attributes a: peak float32
// throughput = multiprocessors × lanes × 2 (a fused multiply-add) × SM
// clock, and memory bandwidth = 2 (double data rate) × memory clock × bus
// width. Both are the datasheet's peaks (V100 SXM2: 15.7 TFLOP/s and 898
// GB/s; H100 SXM5: 66.9 TFLOP/s and 3.35 TB/s).
func rooflineOf(a deviceAttrs) (topology.DeviceSpec, error) {
	lanes, ok := fp32Lanes[[2]int{a.CCMajor, a.CCMinor}]
	if !ok {
		return topology.DeviceSpec{}, fmt.Errorf("compute capability %d.%d: float32 lanes per multiprocessor not known", a.CCMajor, a.CCMinor)
	}
	if a.SMs <= 0 || a.ClockKHz <= 0 || a.MemClockKHz <= 0 || a.BusBits <= 0 {
		return topology.DeviceSpec{}, fmt.Errorf("the device reports %d multiprocessors, a %d kHz clock, a %d kHz memory clock and a %d-bit bus", a.SMs, a.ClockKHz, a.MemClockKHz, a.BusBits)
	}
	gflops := float64(a.SMs) * float64(lanes) * 2 * float64(a.ClockKHz) / 1e6
	gbps := 2 * float64(a.MemClockKHz) * 1e3 * float64(a.BusBits) / 8 / 1e9
	return topology.DeviceSpec{PeakGFLOPS: gflops, MemGBps: gbps, LaunchUS: launchUS}, nil
}
