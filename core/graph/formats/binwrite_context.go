package formats

import (
	"context"
	"io"

	"strata/core/graph"
	"strata/core/safefile"
)

// WriteBinaryContext is WriteBinary that stops when ctx is done (an
// interrupt during `strata convert`): the write fails with ctx's error
// and its temporary file is removed, the target left as it was.
func WriteBinaryContext(ctx context.Context, path string, d *graph.Dataset) error {
	return writeBinary(path, d, func(w io.Writer) io.Writer { return safefile.ContextWriter(ctx, w) })
}
