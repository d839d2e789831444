package formats

import (
	"errors"
	"strings"
	"testing"

	"strata/core/graph"
)

// TestStandInsScale: every stand-in's published counts are consistent
// (the split fits the nodes) and stay so under every divisor, and its
// degree shape is one the model fits.
func TestStandInsScale(t *testing.T) {
	for _, s := range standIns() {
		if _, err := graph.FitDegreeShape(s.Shape); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
		for div := int64(1); div <= 1024; div++ {
			c := s.Scaled(div)
			if c.Train+c.Valid+c.Test > c.Nodes || c.Train < 0 {
				t.Errorf("%s / %d: split %d/%d/%d does not fit %d nodes", s.Name, div, c.Train, c.Valid, c.Test, c.Nodes)
			}
		}
	}
}

// TestSynthSpecs checks the spec grammar: names match case-insensitively,
// and every malformed spec is an error naming the form.
func TestSynthSpecs(t *testing.T) {
	for _, c := range []struct {
		spec string
		div  int64
		seed uint64
		want error
	}{
		{"synth:ogbn-products", 1, 0, nil},
		{"synth:OGBN-Products:16", 16, 0, nil},
		{"synth:reddit:4:9", 4, 9, nil},
		{"synth:reddit:0", 0, 0, graph.ErrFormat},
		{"synth:reddit:x", 0, 0, graph.ErrFormat},
		{"synth:reddit:2:-1", 0, 0, graph.ErrFormat},
		{"synth:reddit:2:1:3", 0, 0, graph.ErrFormat},
		{"synth:", 0, 0, graph.ErrMissing},
		{"synth:cora", 0, 0, graph.ErrMissing},
	} {
		s, o, err := parseSynth(c.spec)
		switch {
		case c.want != nil:
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.spec) {
				t.Errorf("%s: %v, want %v naming the spec", c.spec, err, c.want)
			}
		case err != nil || o.Divisor != c.div || o.Seed != c.seed || s.Name == "":
			t.Errorf("%s: %+v %+v %v", c.spec, s.Name, o, err)
		}
	}
}
