// Package models holds the layer, aggregator, cost-model and decoder modules that ship with
// strata: their Go sources (layers/, aggregators/, costmodels/, decoders/, built for wasip1 with the
// guest SDK in sdk/) and, on the host side, the compiled .wasm files that
// `make models` writes to wasm/ and this package embeds.
//
// The shipped modules are the files of wasm/: no list names them. A
// module's one-line doc and its other declarations travel inside its
// .wasm as custom sections (Meta), written by scripts/build-models.sh from
// the `//strata:<key> <value>` directives of its sources.
package models

import (
	"bytes"
	"embed"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

//go:embed wasm
var files embed.FS

// Kind is a kind of shipped module: the source directory under models/
// and the prefix of its built file in wasm/.
type Kind struct {
	Noun   string // "layer"
	Dir    string // source directory under models/: "layers"
	Prefix string // of the built file: "" for layers
}

// Kinds are the kinds of shipped modules.
var (
	Layers      = Kind{Noun: "layer", Dir: "layers"}
	Aggregators = Kind{Noun: "aggregator", Dir: "aggregators", Prefix: "aggregator-"}
	CostModels  = Kind{Noun: "cost model", Dir: "costmodels", Prefix: "costmodel-"}
	Decoders    = Kind{Noun: "decoder", Dir: "decoders", Prefix: "decoder-"}
	// AllKinds lists every kind.
	AllKinds = []Kind{Layers, Aggregators, CostModels, Decoders}
)

// kindOf returns the kind a built file's base name (without .wasm)
// belongs to, and the module's name.
func kindOf(base string) (Kind, string) {
	for _, k := range AllKinds[1:] { // the layers' prefix is empty
		if name, ok := strings.CutPrefix(base, k.Prefix); ok {
			return k, name
		}
	}
	return Layers, base
}

// File is the name of a module's built file in wasm/.
func (k Kind) File(name string) string { return k.Prefix + name + ".wasm" }

// Names returns the names of the embedded modules of kind k, sorted.
func (k Kind) Names() []string {
	ents, err := files.ReadDir("wasm")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		base, ok := strings.CutSuffix(e.Name(), ".wasm")
		if !ok || e.IsDir() {
			continue
		}
		if kk, name := kindOf(base); kk == k {
			out = append(out, name)
		}
	}
	slices.Sort(out) // "sage-lstm.wasm" sorts before "sage.wasm"
	return out
}

// Module returns the embedded module name of kind k.
func (k Kind) Module(name string) ([]byte, error) {
	b, err := files.ReadFile("wasm/" + k.File(name))
	if err == nil {
		return b, nil
	}
	names := k.Names()
	if len(names) == 0 {
		return nil, fmt.Errorf("%s module %q: no %s modules are built into this binary: run `make models` (scripts/build-models.sh), then rebuild strata", k.Noun, name, k.Noun)
	}
	return nil, fmt.Errorf("unknown %s module %q (shipped: %s; a module of your own is loaded from a path ending in .wasm)",
		k.Noun, name, strings.Join(names, ", "))
}

// AggregatorNames returns the names of the shipped aggregator modules,
// sorted.
func AggregatorNames() []string { return Aggregators.Names() }

// Aggregator returns the embedded module of a shipped aggregator.
func Aggregator(name string) ([]byte, error) { return Aggregators.Module(name) }

// MaxModuleBytes bounds a module read from a file.
const MaxModuleBytes = 64 << 20

// LayerNames returns the names of the shipped layer modules, sorted.
func LayerNames() []string { return Layers.Names() }

// CostModelNames returns the names of the shipped cost models, sorted.
func CostModelNames() []string { return CostModels.Names() }

// Layer returns the embedded module of a shipped layer.
func Layer(name string) ([]byte, error) { return Layers.Module(name) }

// CostModel returns the embedded module of a shipped cost model.
func CostModel(name string) ([]byte, error) { return CostModels.Module(name) }

// DecoderNames returns the names of the shipped decoder modules, sorted.
func DecoderNames() []string { return Decoders.Names() }

// IsFile reports whether a config's module setting names a file (a value
// ending in .wasm or containing a path separator) rather than a shipped
// layer.
func IsFile(module string) bool {
	return strings.HasSuffix(module, ".wasm") || strings.ContainsRune(module, '/') || strings.ContainsRune(module, filepath.Separator)
}

// CheckFile checks that b, read from the user's module file path
// (model.module = "path/to/x.wasm"), is a WebAssembly binary.
func CheckFile(path string, b []byte) error { return Layers.CheckFile(path, b) }

// CheckFile checks that b, read from the user's module file path, is a
// WebAssembly binary.
func (k Kind) CheckFile(path string, b []byte) error {
	if len(b) < 8 || !bytes.Equal(b[:4], []byte("\x00asm")) {
		noun := k.Noun
		if k == Layers {
			noun = "model"
		}
		return fmt.Errorf("%s module %s is not a WebAssembly binary (build it with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared, see docs/models.md)", noun, path)
	}
	return nil
}

// Resolve maps a config's module setting to a name and bytes: a file
// (IsFile) is read with read, at most MaxModuleBytes of a regular file
// (the host's read gate; this package imports nothing of strata), checked
// by CheckFile and named after its base name; anything else is a shipped
// layer.
func Resolve(module string, read func(path string) ([]byte, error)) (name string, wasm []byte, err error) {
	return Layers.Resolve(module, read)
}

// Resolve is the package's Resolve for modules of kind k: a file, or a
// shipped module of kind k (link.decoder = "dot" or "my/decoder.wasm").
func (k Kind) Resolve(module string, read func(path string) ([]byte, error)) (name string, wasm []byte, err error) {
	if IsFile(module) {
		b, err := read(module)
		if err == nil {
			err = k.CheckFile(module, b)
		}
		return strings.TrimSuffix(filepath.Base(module), ".wasm"), b, err
	}
	b, err := k.Module(module)
	return module, b, err
}
