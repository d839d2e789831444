package graph

import (
	"runtime"
	"testing"
	"time"
)

func TestQuickPhysicsTwice(t *testing.T) {
	for i := 0; i < 3; i++ {
		t0 := time.Now()
		d, err := LoadOGB("/work/shared/data/coauthor-physics", "")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%v %d", time.Since(t0), d.FeatDim)
		d = nil
		runtime.GC()
	}
}
