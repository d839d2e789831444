package synth

import (
	"fmt"
	"io/fs"
	"strings"

	"strata/core/graph"
	"strata/core/registry"
)

// rmatFormat is format.rmat: a generated R-MAT graph.
type rmatFormat struct{}

func init() { registry.Register(&rmatFormat{}) }

func (*rmatFormat) StrataModule() registry.ModuleInfo {
	return graph.FormatInfo("rmat", "a generated R-MAT graph (Graph500 quadrants, Gaussian features around class centroids): rmat-<scale>[-<edgefactor>-<feat>-<classes>-<seed>]",
		func() *rmatFormat { return &rmatFormat{} })
}

// Detect takes "rmat-..." when no file of that name exists.
func (*rmatFormat) Detect(spec string, st fs.FileInfo) int {
	if st == nil && strings.HasPrefix(spec, "rmat-") && !strings.ContainsAny(spec, `/\@`) {
		return graph.DetectLayout
	}
	return 0
}

func (*rmatFormat) Open(spec string, o graph.LoadOptions) (*graph.Dataset, error) {
	opts, err := ParseRMATName(spec)
	if err != nil {
		return nil, err
	}
	n, ef := int64(1)<<opts.Scale, int64(max(opts.EdgeFactor, 16))
	if opts.EdgeFactor > 0 {
		ef = int64(opts.EdgeFactor)
	}
	// Features, per-node arrays, and the edges (generated pairs and CSR).
	need := n*(int64(opts.FeatDim)*4+graph.BytesPerNode) + n*ef*24
	if err := graph.CheckBudget(spec, "generating the graph", need, graph.BudgetOr(o.Budget)); err != nil {
		return nil, err
	}
	return RMAT(opts)
}

// Generator describes the graph with every parameter, for provenance.
// It keeps the generator's name from before it left core/graph
// ("graph.RMAT"), so that published provenance stays the same.
func (*rmatFormat) Generator(spec string) (string, error) {
	o, err := ParseRMATName(spec)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("graph.RMAT(%s): scale %d, edge factor %d, %d features, %d classes, seed %d, Graph500 quadrants a=.57 b=.19 c=.19, split .1/.1/.8",
		spec, o.Scale, o.EdgeFactor, o.FeatDim, o.NumClasses, o.Seed), nil
}

func (*rmatFormat) Supports() graph.Support {
	return graph.Support{Spec: "rmat-<scale>[-<edgefactor>-<feat>-<classes>-<seed>]", Budget: true}
}

func (*rmatFormat) Examples(string) ([]graph.Example, error) {
	return []graph.Example{{Name: "small", Spec: "rmat-5-2-3-2-7"},
		{Name: "bad scale", Spec: "rmat-0", Kind: graph.ErrRange, Err: []string{"rmat-0", "scale 0"}},
		{Name: "huge", Spec: "rmat-20-16-64-8-0", Kind: graph.ErrRange, Err: []string{"rmat-20", "memory budget"}, Huge: true}}, nil
}
