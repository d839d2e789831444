//go:build wasip1

// Package abi is the raw strata_v1 ABI for Go guests: one wrapper per host
// import, taking Go strings and slices and passing them to the host as
// (pointer, length) pairs. It also exports strata_abi_version, so every
// module built on it (through strata/models/sdk or strata/models/sdk/cost)
// declares ABI v1.
//
// Handles are op indices; a negative handle is poison: the host recorded an
// error and every op given poison returns poison. Layer authors normally use
// the typed wrappers in strata/models/sdk instead.
package abi

import "unsafe"

// Version is the ABI this package speaks.
const Version = 1

//go:wasmexport strata_abi_version
func abiVersion() int32 { return Version }

// str returns the (ptr, len) pair of s.
func str(s string) (unsafe.Pointer, int32) {
	return unsafe.Pointer(unsafe.StringData(s)), int32(len(s))
}

//go:wasmimport strata_v1 cfg_i64
func cfgI64(key unsafe.Pointer, keyLen int32, def int64) int64

//go:wasmimport strata_v1 cfg_f64
func cfgF64(key unsafe.Pointer, keyLen int32, def float64) float64

//go:wasmimport strata_v1 input
func input(name unsafe.Pointer, nameLen int32, cols int64) int32

//go:wasmimport strata_v1 graph
func graph(name unsafe.Pointer, nameLen int32) int32

//go:wasmimport strata_v1 param
func param(name unsafe.Pointer, nameLen int32, shape unsafe.Pointer, rank int32, init unsafe.Pointer, initLen int32) int32

//go:wasmimport strata_v1 buffer
func buffer(name unsafe.Pointer, nameLen int32, shape unsafe.Pointer, rank int32, init unsafe.Pointer, initLen int32) int32

//go:wasmimport strata_v1 binary
func binary(kind unsafe.Pointer, kindLen int32, a, b int32) int32

//go:wasmimport strata_v1 unary
func unary(kind unsafe.Pointer, kindLen int32, x int32, alpha float64) int32

//go:wasmimport strata_v1 table
func table(kind unsafe.Pointer, kindLen int32, g, v int32, alpha float64) int32

//go:wasmimport strata_v1 cfg_str
func cfgStr(key unsafe.Pointer, keyLen int32, def unsafe.Pointer, defLen int32, buf unsafe.Pointer, capacity int32) int32

//go:wasmimport strata_v1 aggregate_with
func aggregateWith(name unsafe.Pointer, nameLen int32, g, x int32) int32

//go:wasmimport strata_v1 output
func output(h int32) int32

//go:wasmimport strata_v1 shape
func shape(h int32, dst unsafe.Pointer, cap int32) int32

//go:wasmimport strata_v1 fail
func fail(msg unsafe.Pointer, msgLen int32)

//go:wasmimport strata_v1 log
func log(msg unsafe.Pointer, msgLen int32)

// CfgI64 returns the integer option key, or def when the host has none.
func CfgI64(key string, def int64) int64 { p, n := str(key); return cfgI64(p, n, def) }

// CfgF64 returns the float option key, or def when the host has none.
func CfgF64(key string, def float64) float64 { p, n := str(key); return cfgF64(p, n, def) }

// Input declares the layer input (name "x") with cols columns: [N, cols].
func Input(name string, cols int64) int32 { p, n := str(name); return input(p, n, cols) }

// Graph requests an adjacency: "adj" or "adj_self" (with self loops).
func Graph(name string) int32 { p, n := str(name); return graph(p, n) }

// Param declares a learnable weight; init is zeros, ones, glorot, normal or uniform.
func Param(name string, dims []int64, init string) int32 { return declare(param, name, dims, init) }

// Buffer declares a non-learnable parameter (no gradient, never updated
// by the optimizer, checkpointed with the model); init as for Param.
func Buffer(name string, dims []int64, init string) int32 { return declare(buffer, name, dims, init) }

// declare passes (name, dims, init) to the host function param or buffer.
func declare(fn func(name unsafe.Pointer, nameLen int32, shape unsafe.Pointer, rank int32, init unsafe.Pointer, initLen int32) int32, name string, dims []int64, init string) int32 {
	p, n := str(name)
	ip, in := str(init)
	var sp unsafe.Pointer
	if len(dims) > 0 {
		sp = unsafe.Pointer(&dims[0])
	}
	return fn(p, n, sp, int32(len(dims)), ip, in)
}

// Binary records add, sub or mul; b matches a, is a row [C] or a scalar [1].
func Binary(kind string, a, b int32) int32 { p, n := str(kind); return binary(p, n, a, b) }

// Unary records scale, relu, leaky_relu, elu, sigmoid, tanh or dropout;
// alpha is the scale, slope, ELU alpha or drop probability.
func Unary(kind string, x int32, alpha float64) int32 {
	p, n := str(kind)
	return unary(p, n, x, alpha)
}

// Output marks h as the layer's result.
func Output(h int32) int32 { return output(h) }

// Shape returns the inferred shape of h (nil for poison or a bad handle).
// Symbolic dims are negative: -1 nodes, -2 and -3 the edges of adj and adj_self.
func Shape(h int32) []int64 {
	var buf [8]int64
	r := shape(h, unsafe.Pointer(&buf[0]), int32(len(buf)))
	if r < 0 {
		return nil
	}
	return append([]int64(nil), buf[:min(int(r), len(buf))]...)
}

// Fail reports a guest-side error (a bad option, say). The layer spec then
// fails with msg unless an earlier error was recorded.
func Fail(msg string) { p, n := str(msg); fail(p, n) }

// Log sends a line to the host; it is returned with the spec and shown with
// trap reports.
func Log(msg string) { p, n := str(msg); log(p, n) }

// Table records a gather, segment or degree op of the op table.
func Table(kind string, g, v int32, alpha float64) int32 {
	p, n := str(kind)
	return table(p, n, g, v, alpha)
}

// CfgStr returns the string option key, or def.
func CfgStr(key, def string) string {
	kp, kn := str(key)
	dp, dn := str(def)
	buf := make([]byte, 256)
	for {
		n := cfgStr(kp, kn, dp, dn, unsafe.Pointer(&buf[0]), int32(len(buf)))
		if n < 0 {
			return def
		}
		if int(n) <= len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, n)
	}
}

// AggregateWith runs the registered aggregator module name on (g, x).
func AggregateWith(name string, g, x int32) int32 {
	p, n := str(name)
	return aggregateWith(p, n, g, x)
}
