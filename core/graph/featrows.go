package graph

import (
	"context"
	"fmt"
)

type featureRowsKey struct{}

// WithFeatureRows returns ctx asking OpenContext to keep only the feature
// rows of the nodes rows, in that order (rows may be empty: no feature
// rows at all, FeatDim still set): a process that trains on one partition
// of the graph (a rank of an MPI job) then holds its own rows, not the
// whole matrix. The OGB raw layout reads them while it parses (the other
// lines are counted, not parsed or stored); other formats load the whole
// matrix first and then keep the rows. The dataset's FeatureNodes are
// rows.
func WithFeatureRows(ctx context.Context, rows []int32) context.Context {
	if rows == nil {
		rows = []int32{}
	}
	return context.WithValue(ctx, featureRowsKey{}, rows)
}

// featureRowsFrom returns the rows WithFeatureRows asked for.
func featureRowsFrom(ctx context.Context) ([]int32, bool) {
	rows, ok := ctx.Value(featureRowsKey{}).([]int32)
	return rows, ok
}

// CheckFeatureRows checks that every node of rows is one of n.
func CheckFeatureRows(rows []int32, n int) error {
	for _, v := range rows {
		if v < 0 || int(v) >= n {
			return fmt.Errorf("graph: feature row of node %d asked for, but the dataset has %d nodes: %w", v, n, ErrRange)
		}
	}
	return nil
}

// keepFeatureRows replaces the whole feature matrix by the rows of rows,
// unless the loader already read only those.
func (d *Dataset) keepFeatureRows(rows []int32) error {
	if d.FeatureNodes != nil {
		return nil
	}
	if err := CheckFeatureRows(rows, d.NumNodes); err != nil {
		return err
	}
	dim := d.FeatDim
	out := make([]float32, len(rows)*dim)
	if dim > 0 && len(d.Features) == d.NumNodes*dim {
		for i, v := range rows {
			copy(out[i*dim:(i+1)*dim], d.Features[int(v)*dim:(int(v)+1)*dim])
		}
	}
	d.Features, d.FeatureNodes = out, rows
	return nil
}
