package synth

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
		if _, err := FitDegreeShape(s.Shape); err != nil {
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
		com  int
		mu   float64
		want error
		says string // what the error must name beside the spec
	}{
		{spec: "synth:ogbn-products", div: 1},
		{spec: "synth:OGBN-Products:16", div: 16},
		{spec: "synth:reddit:4:9", div: 4, seed: 9},
		{spec: "synth:reddit:4:9:communities=64:mu=0.25", div: 4, seed: 9, com: 64, mu: 0.25},
		{spec: "synth:reddit:mu=0:communities=41", div: 1, com: 41},
		{spec: "synth:reddit:0", want: graph.ErrFormat, says: "divisor"},
		{spec: "synth:reddit:x", want: graph.ErrFormat, says: "divisor"},
		{spec: "synth:reddit:2:-1", want: graph.ErrFormat, says: "seed"},
		{spec: "synth:reddit:2:1:3", want: graph.ErrFormat, says: "at most 2"},
		{spec: "synth:", want: graph.ErrMissing, says: "known ones"},
		{spec: "synth:cora", want: graph.ErrMissing, says: "known ones"},
		{spec: "synth:reddit:2:communities=64", want: graph.ErrFormat, says: "give both"},
		{spec: "synth:reddit:2:communities=1:mu=0.2", want: graph.ErrFormat, says: "communities=\"1\""},
		{spec: "synth:reddit:2:communities=x:mu=0.2", want: graph.ErrFormat, says: "communities=\"x\""},
		{spec: "synth:reddit:2:communities=64:mu=-0.1", want: graph.ErrFormat, says: "mu=\"-0.1\""},
		{spec: "synth:reddit:2:communities=64:mu=NaN", want: graph.ErrFormat, says: "mu=\"NaN\""},
		{spec: "synth:reddit:2:communities=64:mu=0.2:mu=0.3", want: graph.ErrFormat, says: "mu given twice"},
		{spec: "synth:reddit:2:communities=64:mu=0.2:size=9", want: graph.ErrFormat, says: "unknown option \"size\""},
		{spec: "synth:reddit:communities=64:mu=0.2:3", want: graph.ErrFormat, says: "divisor and seed come first"},
	} {
		s, o, err := parseSynth(c.spec)
		switch {
		case c.want != nil:
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.spec) || !strings.Contains(err.Error(), c.says) {
				t.Errorf("%s: %v, want %v naming the spec and %q", c.spec, err, c.want, c.says)
			}
		case err != nil || o.Divisor != c.div || o.Seed != c.seed || o.Communities != c.com || o.Mu != c.mu || s.Name == "":
			t.Errorf("%s: %+v %+v %v", c.spec, s.Name, o, err)
		}
	}
}
