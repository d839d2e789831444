package wasm

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// Config holds the options a layer spec call can read with cfg_i64 and
// cfg_f64. The host sets in_dim, out_dim, layer, layers, last and dropout
// for every layer; the rest come from the user's model options. A key may be
// given in either map: cfg_f64 reads an int as a float, and cfg_i64 reads an
// integral float as an int (a fractional one is an error).
type Config struct {
	Ints   map[string]int64
	Floats map[string]float64
}

// SetInt sets an integer option and returns c for chaining.
func (c *Config) SetInt(key string, v int64) *Config {
	if c.Ints == nil {
		c.Ints = map[string]int64{}
	}
	c.Ints[key] = v
	return c
}

// SetFloat sets a float option and returns c for chaining.
func (c *Config) SetFloat(key string, v float64) *Config {
	if c.Floats == nil {
		c.Floats = map[string]float64{}
	}
	c.Floats[key] = v
	return c
}

// Keys returns every key of c, sorted.
func (c Config) Keys() []string {
	keys := slices.Collect(maps.Keys(c.Ints))
	for k := range c.Floats {
		if _, dup := c.Ints[k]; !dup {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// Clone returns a deep copy of c.
func (c Config) Clone() Config {
	return Config{Ints: maps.Clone(c.Ints), Floats: maps.Clone(c.Floats)}
}

func (c Config) int(key string, def int64) (int64, error) {
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

func (c Config) float(key string, def float64) float64 {
	if v, ok := c.Floats[key]; ok {
		return v
	}
	if v, ok := c.Ints[key]; ok {
		return float64(v)
	}
	return def
}
