package formats

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/graph/graphtest"
)

// TestWithFeatureRows: a load that keeps some feature rows holds exactly
// those rows of the whole load, in the order asked, for the OGB layout
// (read while parsing) and an embedded dataset (kept after the load);
// none keeps the width only; a node out of range is an error.
func TestWithFeatureRows(t *testing.T) {
	const n, dim = 3000, 7 // several parse chunks
	var f, l strings.Builder
	for v := 0; v < n; v++ {
		for c := 0; c < dim; c++ {
			if c > 0 {
				f.WriteByte(',')
			}
			if (v+c)%3 == 0 {
				f.WriteByte('0')
			} else {
				fmt.Fprintf(&f, "%d.5", v*dim+c)
			}
		}
		f.WriteByte('\n')
		fmt.Fprintf(&l, "%d\n", v%2)
	}
	files := graphtest.TinyOGB()
	files["raw/node-feat.csv"] = f.String()
	files["raw/node-label.csv"] = l.String()
	files["raw/num-node-list.csv"] = fmt.Sprint(n)
	dir := graphtest.WriteOGB(t, files)
	ctx := context.Background()
	for _, spec := range []string{dir, "embedded:cora"} {
		whole, err := graph.OpenContext(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			rows []int32
		}{
			{"none", nil},
			{"some", []int32{2, 0, 1999, 5, 2500}},
			{"every other, descending", func() []int32 {
				var r []int32
				for v := whole.NumNodes - 1; v >= 0; v -= 2 {
					r = append(r, int32(v))
				}
				return r
			}()},
		} {
			d, err := graph.OpenContext(graph.WithFeatureRows(ctx, tc.rows), spec)
			if err != nil {
				t.Fatalf("%s, %s: %v", spec, tc.name, err)
			}
			if d.FeatDim != whole.FeatDim || len(d.FeatureNodes) != len(tc.rows) || d.FeatureNodes == nil {
				t.Fatalf("%s, %s: width %d (want %d), %d rows kept (want %d)", spec, tc.name, d.FeatDim, whole.FeatDim, len(d.FeatureNodes), len(tc.rows))
			}
			w := d.FeatDim
			for i, v := range tc.rows {
				if got, want := d.Features[i*w:(i+1)*w], whole.Features[int(v)*w:(int(v)+1)*w]; !slices.Equal(got, want) {
					t.Fatalf("%s, %s: row %d (node %d) = %v, want %v", spec, tc.name, i, v, got, want)
				}
			}
			if len(d.Features) != len(tc.rows)*w {
				t.Fatalf("%s, %s: %d feature values for %d rows of %d", spec, tc.name, len(d.Features), len(tc.rows), w)
			}
			if err := d.Validate(); err != nil {
				t.Fatalf("%s, %s: %v", spec, tc.name, err)
			}
		}
		_, err = graph.OpenContext(graph.WithFeatureRows(ctx, []int32{int32(whole.NumNodes)}), spec)
		if !errors.Is(err, graph.ErrRange) {
			t.Fatalf("%s: node %d of %d kept: %v, want ErrRange", spec, whole.NumNodes, whole.NumNodes, err)
		}
	}
}
