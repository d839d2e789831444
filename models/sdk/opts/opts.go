//go:build wasip1

// Package opts reads a layer module's options with their ranges checked:
// a value outside its range fails the layer with a message that names the
// option and the range, prefixed with the module's name. It is a package
// of its own so that the modules that do not use it stay byte for byte
// what they were (their sha256 is recorded in checkpoints and models).
package opts

import (
	"strconv"

	"strata/models/sdk"
)

// Int returns the integer option key (def when it is not set), and fails
// the layer when it is outside [lo, hi]; it then returns lo, so that the
// rest of the layer can still be recorded.
func Int(layer, key string, def, lo, hi int64) int64 {
	v := sdk.Cfg(key, def)
	if v < lo || v > hi {
		sdk.Fail(layer + ": option " + key + " = " + itoa(v) + " must be in [" + itoa(lo) + ", " + itoa(hi) + "]")
		return lo
	}
	return v
}

// Float returns the float option key (def when it is not set), and fails
// the layer when it is outside [lo, hi] or NaN.
func Float(layer, key string, def, lo, hi float64) float64 {
	v := sdk.CfgFloat(key, def)
	if !(v >= lo && v <= hi) {
		sdk.Fail(layer + ": option " + key + " = " + ftoa(v) + " must be in [" + ftoa(lo) + ", " + ftoa(hi) + "]")
	}
	return v
}

// Heads reads the options heads and out_heads (default 1) of a multi-head
// attention layer and returns its head count k and per-head width d: on a
// hidden layer k = heads and d = out_dim/heads (the heads concatenated),
// on the last layer k = out_heads and d = out_dim (the heads averaged).
func Heads(layer string) (k, d int64) {
	_, out := sdk.Dims()
	heads, outHeads := Int(layer, "heads", 1, 1, 1<<10), Int(layer, "out_heads", 1, 1, 1<<10)
	switch {
	case sdk.Last():
		return outHeads, out
	case out%heads != 0:
		sdk.Fail(layer + ": hidden size out_dim=" + itoa(out) + " must be divisible by option heads=" + itoa(heads))
		return 1, out
	}
	return heads, out / heads
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
