// Package modhost is the contract between strata's core and the host that
// runs its modules (plugins/wasm runs them with wazero): a layer module
// describes each layer of a model as an ir.Graph, a cost model predicts a
// kernel's time or a batch's memory. Core loads modules only through a
// Host, so it never depends on the runtime that executes them.
package modhost

import (
	"context"
	"maps"
	"slices"

	"strata/core/ir"
	"strata/core/registry"
)

// Host loads modules. Each load starts what it needs (a runtime, an
// instance); the returned release function frees it.
type Host interface {
	// LoadLayer loads a layer module from its WebAssembly bytes.
	LoadLayer(ctx context.Context, name string, code []byte) (Layer, func(), error)
	// LoadCostModel loads a cost model and checks that it answers.
	LoadCostModel(ctx context.Context, name string, code []byte) (CostModel, func(), error)
	// LoadDecoder loads a link-prediction decoder module (one that
	// exports strata_decode; any other is an error saying so).
	LoadDecoder(ctx context.Context, name string, code []byte) (Decoder, func(), error)
}

// Decoder is a loaded link-prediction decoder module.
type Decoder interface {
	// DecoderSpec records the decoder with the options of cfg, whose
	// in_dim is the embedding width: a graph whose input "x" is the node
	// embeddings [N,in_dim], whose only graph is "adj", the pairs (row i
	// lists the sources of the pairs whose destination is node i, one
	// edge per pair, repeats and self pairs allowed), and whose output is
	// the pairs' scores (logits) [E_adj,1] in CSR order. Its parameters
	// are named "decoder.<name>". Modules and Defaults are as a layer's.
	DecoderSpec(ctx context.Context, cfg LayerConfig) (*LayerSpec, error)
	// SHA256 is the hex digest of the module's bytes.
	SHA256() string
}

// Layer is a loaded layer module.
type Layer interface {
	// LayerSpec records one layer with the given options.
	LayerSpec(ctx context.Context, cfg LayerConfig) (*LayerSpec, error)
	// SHA256 is the hex digest of the module's bytes.
	SHA256() string
}

// LayerSpec is what one layer description recorded.
type LayerSpec struct {
	Graph *ir.Graph
	// KeysRead lists, sorted, every option the module asked for, whether
	// or not the LayerConfig had it.
	KeysRead []string
	// Defaults holds the default the module gave for each key of
	// KeysRead, as TOML ("1", "0.2", "\"mean\""); nil when the host
	// does not know them.
	Defaults map[string]string
	// Log holds the module's log lines.
	Log []string
	// Modules holds the SHA-256 of each aggregator module the layer
	// loaded, by the name it gave (a registered name, or the value of the
	// string option that named a module file); nil when the host does
	// not know them.
	Modules map[string]string
}

// CostModel predicts with a cost module: op selects the prediction, in
// holds its inputs (see models/sdk/cost), out[0] is the main result.
// It is not safe for concurrent use.
type CostModel interface {
	Predict(op int32, in []float64) ([4]float64, error)
}

// Source is implemented by the registered model.*, aggregator.*,
// costmodel.* and decoder.* modules: it returns the module's WebAssembly
// bytes.
type Source interface {
	registry.Module
	Wasm() ([]byte, error)
}

// Lookup returns the bytes of a registered module by full ID
// ("model.gcn", "costmodel.roofline", "decoder.dot").
func Lookup(id string) ([]byte, error) {
	src, err := registry.New[Source](id)
	if err != nil {
		return nil, err
	}
	return src.Wasm()
}

// LayerConfig holds the options a layer description reads. The host sets
// in_dim, out_dim, layer, layers, last and dropout for every layer; the
// rest come from the user's model options. A numeric key may be given in
// either map: an int reads as a float, and an integral float as an int.
// A string option reads only as a string.
type LayerConfig struct {
	Ints    map[string]int64
	Floats  map[string]float64
	Strings map[string]string
	// Modules holds the bytes of the module files that string options
	// name (a value ending in .wasm: a user's aggregator), by that value.
	Modules map[string][]byte
}

// SetString sets a string option and returns c for chaining.
func (c *LayerConfig) SetString(key, v string) *LayerConfig {
	if c.Strings == nil {
		c.Strings = map[string]string{}
	}
	c.Strings[key] = v
	return c
}

// SetInt sets an integer option and returns c for chaining.
func (c *LayerConfig) SetInt(key string, v int64) *LayerConfig {
	if c.Ints == nil {
		c.Ints = map[string]int64{}
	}
	c.Ints[key] = v
	return c
}

// SetFloat sets a float option and returns c for chaining.
func (c *LayerConfig) SetFloat(key string, v float64) *LayerConfig {
	if c.Floats == nil {
		c.Floats = map[string]float64{}
	}
	c.Floats[key] = v
	return c
}

// Keys returns every key of c, sorted.
func (c LayerConfig) Keys() []string {
	keys := slices.Collect(maps.Keys(c.Ints))
	for k := range c.Floats {
		if _, dup := c.Ints[k]; !dup {
			keys = append(keys, k)
		}
	}
	for k := range c.Strings {
		if _, dup := c.Ints[k]; !dup {
			if _, dup := c.Floats[k]; !dup {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// Clone returns a deep copy of c.
func (c LayerConfig) Clone() LayerConfig {
	return LayerConfig{Ints: maps.Clone(c.Ints), Floats: maps.Clone(c.Floats), Strings: maps.Clone(c.Strings), Modules: c.Modules}
}
