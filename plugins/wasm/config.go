package wasm

import (
	"fmt"
	"math"
	"strata/core/modhost"
)

// Config holds the options a layer spec call can read with cfg_i64 and
// cfg_f64 (modhost.LayerConfig): cfg_f64 reads an int as a float, and
// cfg_i64 reads an integral float as an int (a fractional one is an error).
type Config = modhost.LayerConfig

// cfgInt reads an integer option of c (def when absent).
func cfgInt(c Config, key string, def int64) (int64, error) {
	if v, ok := c.Ints[key]; ok {
		return v, nil
	}
	if f, ok := c.Floats[key]; ok {
		if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return def, fmt.Errorf("option %q = %g must be an integer", key, f)
		}
		return int64(f), nil
	}
	return def, nil
}

// cfgFloat reads a float option of c (def when absent).
func cfgFloat(c Config, key string, def float64) float64 {
	if v, ok := c.Floats[key]; ok {
		return v
	}
	if v, ok := c.Ints[key]; ok {
		return float64(v)
	}
	return def
}
