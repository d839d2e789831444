// Package models holds the layer and cost-model modules that ship with
// strata: their Go sources (layers/, aggregators/, costmodels/, built for wasip1 with the
// guest SDK in sdk/) and, on the host side, the compiled .wasm files that
// `make models` writes to wasm/ and this package embeds.
package models

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

//go:embed wasm
var files embed.FS

// The modules this tree ships (directories of models/layers and
// models/costmodels; a test keeps the lists in sync).
var (
	shippedLayers      = []string{"gat", "gcn", "gin", "pna", "sage", "sage-lstm"}
	shippedCostModels  = []string{"betty-memory", "hongtu", "hyscale", "roofline"}
	shippedAggregators = []string{"attentional", "deepsets", "degree-scaler", "gru", "lcm", "lstm", "max", "mean", "median", "min",
		"mlp", "mul", "multi", "powermean", "quantile", "softmax", "std", "sum", "var", "variance-preserving"}
)

const (
	costPrefix = "costmodel-"
	aggrPrefix = "aggregator-"
)

// AggregatorNames returns the names of the shipped aggregator modules,
// sorted.
func AggregatorNames() []string { return slices.Clone(shippedAggregators) }

// Aggregator returns the embedded module of a shipped aggregator.
func Aggregator(name string) ([]byte, error) {
	return embedded("aggregator", name, aggrPrefix+name+".wasm", shippedAggregators)
}

// MaxModuleBytes bounds a module read from a file.
const MaxModuleBytes = 64 << 20

// LayerNames returns the names of the shipped layer modules, sorted.
func LayerNames() []string { return slices.Clone(shippedLayers) }

// CostModelNames returns the names of the shipped cost models, sorted.
func CostModelNames() []string { return slices.Clone(shippedCostModels) }

// Layer returns the embedded module of a shipped layer.
func Layer(name string) ([]byte, error) {
	return embedded("layer", name, name+".wasm", shippedLayers)
}

// CostModel returns the embedded module of a shipped cost model.
func CostModel(name string) ([]byte, error) {
	return embedded("cost model", name, costPrefix+name+".wasm", shippedCostModels)
}

func embedded(kind, name, file string, shipped []string) ([]byte, error) {
	b, err := files.ReadFile("wasm/" + file)
	if err == nil {
		return b, nil
	}
	if !slices.Contains(shipped, name) {
		return nil, fmt.Errorf("unknown %s module %q (shipped: %s; a module of your own is loaded from a path ending in .wasm)",
			kind, name, strings.Join(shipped, ", "))
	}
	return nil, fmt.Errorf("%s module %q is not built into this binary: run `make models` (scripts/build-models.sh), then rebuild strata", kind, name)
}

// Missing reports which shipped modules are missing from this binary (nil
// when all are embedded).
func Missing() []string {
	var out []string
	for _, n := range shippedLayers {
		if _, err := fs.Stat(files, "wasm/"+n+".wasm"); err != nil {
			out = append(out, n)
		}
	}
	for _, n := range shippedCostModels {
		if _, err := fs.Stat(files, "wasm/"+costPrefix+n+".wasm"); err != nil {
			out = append(out, costPrefix+n)
		}
	}
	for _, n := range shippedAggregators {
		if _, err := fs.Stat(files, "wasm/"+aggrPrefix+n+".wasm"); err != nil {
			out = append(out, aggrPrefix+n)
		}
	}
	return out
}

// LoadFile reads a user's module (model.module = "path/to/x.wasm") and
// checks that it is a WebAssembly binary.
func LoadFile(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("model module %s: no such file", path)
		}
		return nil, fmt.Errorf("model module: %w", err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("model module %s is a directory; build the guest into a .wasm file (see docs/models.md)", path)
	}
	if st.Size() > MaxModuleBytes {
		return nil, fmt.Errorf("model module %s is %d MiB, over the %d MiB limit", path, st.Size()>>20, MaxModuleBytes>>20)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("model module: %w", err)
	}
	if len(b) < 8 || !bytes.Equal(b[:4], []byte("\x00asm")) {
		return nil, fmt.Errorf("model module %s is not a WebAssembly binary (build it with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared, see docs/models.md)", path)
	}
	return b, nil
}

// Resolve maps a config's module setting to a name and bytes: a value
// ending in .wasm or containing a path separator is a file (named after its
// base name), anything else a shipped layer.
func Resolve(module string) (name string, wasm []byte, err error) {
	if strings.HasSuffix(module, ".wasm") || strings.ContainsRune(module, '/') || strings.ContainsRune(module, filepath.Separator) {
		b, err := LoadFile(module)
		return strings.TrimSuffix(filepath.Base(module), ".wasm"), b, err
	}
	b, err := Layer(module)
	return module, b, err
}
