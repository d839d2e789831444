package graph

import (
	"testing"
	"time"
)

func TestQuickCora(t *testing.T) {
	d, err := LoadEmbedded("cora")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s n=%d nnz=%d dim=%d classes=%d splits=%d/%d/%d", d.Name, d.NumNodes, d.Graph.NNZ(), d.FeatDim, d.NumClasses, len(d.Train), len(d.Valid), len(d.Test))
	s := Symmetrize(d.Graph)
	t.Logf("sym %d self %d", s.NNZ(), AddSelfLoops(s).NNZ())
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestQuickPhysics(t *testing.T) {
	t0 := time.Now()
	d, err := LoadOGB("/work/shared/data/coauthor-physics", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v %s n=%d nnz=%d dim=%d classes=%d splits=%d/%d/%d", time.Since(t0), d.Name, d.NumNodes, d.Graph.NNZ(), d.FeatDim, d.NumClasses, len(d.Train), len(d.Valid), len(d.Test))
	var nz int
	for _, v := range d.Features {
		if v != 0 {
			nz++
		}
	}
	t.Log("nnz feats", nz)
}

func TestQuickSNAP(t *testing.T) {
	for _, p := range []string{"/work/shared/data/ego-twitter/ego-twitter-undirected.txt.gz", "/work/shared/data/soc-slashdot0902/soc-Slashdot0902.txt.gz", "/work/shared/data/cnr-2000/cnr-2000.txt.gz"} {
		t0 := time.Now()
		d, err := LoadSNAP(p)
		if err != nil {
			t.Fatal(err)
		}
		t1 := time.Now()
		s := Symmetrize(d.Graph)
		st := d.DegreeStats()
		t.Logf("%s load %v sym %v n=%d nnz=%d symnnz=%d stats=%+v", d.Name, t1.Sub(t0), time.Since(t1), d.NumNodes, d.Graph.NNZ(), s.NNZ(), st)
	}
}
