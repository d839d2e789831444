// Package layers registers the WebAssembly modules that ship with strata as
// plugins: each layer module as model.<name>, each aggregator as
// aggregator.<name>, each cost model as costmodel.<name> and each
// link-prediction decoder as decoder.<name>. Importing it (blank) makes
// them selectable by name in a config's model.name (and link.decoder).
//
// The modules are those embedded in package models (the files of
// models/wasm); each one's doc line is the one its .wasm carries
// (models.Doc). A user's own module needs no registration: model.module
// names its .wasm file.
package layers

import (
	"strata/core/modhost"
	"strata/core/registry"
	"strata/models"
)

// Module is a shipped module of one kind: model.<name>,
// aggregator.<name>, costmodel.<name> or decoder.<name>.
type Module struct {
	ns      string
	kind    models.Kind
	name    string
	doc     string
	aliases []string
}

// StrataModule implements registry.Module.
func (m *Module) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: m.ns + "." + m.name, Doc: m.doc, Aliases: m.aliases, New: func() registry.Module { c := *m; return &c }}
}

// Wasm returns the embedded module.
func (m *Module) Wasm() ([]byte, error) { return m.kind.Module(m.name) }

// Interface guard.
var _ modhost.Source = (*Module)(nil)

// namespaces maps each kind of shipped module to its registry namespace.
var namespaces = []struct {
	ns   string
	kind models.Kind
}{{"model", models.Layers}, {"aggregator", models.Aggregators}, {"costmodel", models.CostModels}, {"decoder", models.Decoders}}

func init() {
	for _, n := range namespaces {
		for _, name := range n.kind.Names() {
			b, err := n.kind.Module(name)
			if err != nil {
				continue // listed from the same directory: cannot happen
			}
			registry.Register(&Module{ns: n.ns, kind: n.kind, name: name, doc: models.Doc(b), aliases: models.Aliases(b)})
		}
	}
}
