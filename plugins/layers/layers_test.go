package layers

import (
	"bytes"
	"slices"
	"testing"

	"strata/core/modhost"
	"strata/core/registry"
	"strata/models"
)

func TestRegistered(t *testing.T) {
	cases := []struct {
		ns    string
		names []string
	}{
		{"model", models.LayerNames()},
		{"costmodel", models.CostModelNames()},
		{"aggregator", models.AggregatorNames()},
	}
	for _, c := range cases {
		var got []string
		for _, m := range registry.Namespace(c.ns) {
			got = append(got, m.Name())
			if m.Doc == "" {
				t.Errorf("%s has no doc line", m.ID)
			}
			b, err := modhost.Lookup(m.ID)
			if err != nil {
				t.Fatalf("%s: %v", m.ID, err)
			}
			if !bytes.HasPrefix(b, []byte("\x00asm")) {
				t.Errorf("%s: embedded bytes are not a WebAssembly module", m.ID)
			}
		}
		if !slices.Equal(got, c.names) {
			t.Errorf("namespace %s lists %v, want %v", c.ns, got, c.names)
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
