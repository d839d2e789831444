package formats

import (
	"path/filepath"
	"testing"

	"strata/core/graph/graphtest"
)

// TestDropMappedPages: a mapped dataset reads the same after its pages
// were dropped, and a dataset in ordinary memory is left alone.
func TestDropMappedPages(t *testing.T) {
	for name, d := range binDatasets(t) {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "g.strata")
			if err := WriteBinary(p, d); err != nil {
				t.Fatal(err)
			}
			got, closer, err := OpenBinary(p)
			if err != nil {
				t.Fatal(err)
			}
			defer closer.Close()
			got.DropMappedPages()
			if diff := graphtest.SameDataset(got, d); diff != "" {
				t.Errorf("after dropping the pages: %s", diff)
			}
			d.DropMappedPages() // not mapped: nothing happens
			if diff := graphtest.SameDataset(got, d); diff != "" {
				t.Errorf("after dropping an unmapped dataset's pages: %s", diff)
			}
		})
	}
}
