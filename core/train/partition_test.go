package train

import (
	"context"
	"strings"
	"testing"
)

// TestPartitionProgress draws the stage bar of a METIS partition: load,
// the partitioner's stages, measure.
func TestPartitionProgress(t *testing.T) {
	var buf strings.Builder
	cfg := mustParse(t, coraBase, `partition.name="metis"`, "train.micro_batches=4")
	if _, err := Partition(context.Background(), cfg, 4, false, &buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"partition [", "0/4", "load", "4/4", "done"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress %q lacks %q", out, want)
		}
	}
	buf.Reset()
	if _, err := Partition(context.Background(), cfg, 4, false, nil); err != nil || buf.Len() != 0 {
		t.Errorf("no progress writer: %v, %q", err, buf.String())
	}
}
