package layers

import (
	"bytes"
	"slices"
	"testing"

	"strata/core/modhost"
	"strata/core/registry"
	"strata/models"
)

// TestRegistered checks that every embedded module of each kind is
// registered in its namespace with the doc line its .wasm carries.
func TestRegistered(t *testing.T) {
	for _, c := range namespaces {
		var got []string
		for _, m := range registry.Namespace(c.ns) {
			got = append(got, m.Name())
			b, err := modhost.Lookup(m.ID)
			if err != nil {
				t.Fatalf("%s: %v", m.ID, err)
			}
			if !bytes.HasPrefix(b, []byte("\x00asm")) {
				t.Errorf("%s: embedded bytes are not a WebAssembly module", m.ID)
			}
			if m.Doc == "" || m.Doc != models.Doc(b) {
				t.Errorf("%s: doc line %q, its module carries %q", m.ID, m.Doc, models.Doc(b))
			}
		}
		if want := c.kind.Names(); len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("namespace %s lists %v, want %v", c.ns, got, want)
		}
	}
}

func TestLookupUnknown(t *testing.T) {
	if _, err := modhost.Lookup("model.nope"); err == nil {
		t.Fatal("modhost.Lookup(model.nope) succeeded")
	}
	if _, err := modhost.Lookup("sampler.full"); err == nil {
		t.Fatal("Lookup of a module that is not a WASM source succeeded")
	}
}
