package numpy

import (
	"bytes"
	"fmt"
	"strings"

	"strata/core/graph"
	"strata/core/graph/numpy/pickle"
)

// pickledArrays decodes the arrays and scalars of a pickle (package
// pickle) with the .npy readers: the dtypes npyDtypes names, row-major
// whatever the pickled order, within budget bytes in all.
type pickledArrays struct {
	budget int64 // bytes the decoded arrays may still take
}

// unpickle interprets the pickle b, its arrays decoded within budget
// bytes.
func unpickle(b []byte, budget int64) (any, error) {
	return pickle.Load(b, &pickledArrays{budget: budget})
}

// Array decodes the raw data of an ndarray.
func (d *pickledArrays) Array(descr string, shape []int, fortran bool, raw []byte) (any, error) {
	count, err := npyCount("pickle", "", shape)
	if err != nil {
		return nil, err
	}
	typ, ok := npyDtypes[descr]
	if !ok {
		return nil, fmt.Errorf("ndarray dtype %q is not supported; want %s: %w", descr, npyDtypeNames, graph.ErrFormat)
	}
	if int64(len(raw)) != count*typ.size {
		return nil, fmt.Errorf("ndarray of shape %v and dtype %s needs %d bytes of data, the pickle holds %d: %w", shape, descr, count*typ.size, len(raw), graph.ErrFormat)
	}
	if d.budget -= count * typ.size; d.budget < 0 {
		return nil, fmt.Errorf("ndarray of shape %v and dtype %s: the arrays would need more than the memory budget: %w", shape, descr, graph.ErrRange)
	}
	data, buf := typ.alloc(count)
	if err := readData(bytes.NewReader(raw), buf, shape, typ.size, fortran); err != nil {
		return nil, fmt.Errorf("ndarray of shape %v: %v: %w", shape, err, graph.ErrFormat)
	}
	if i, b := finishNPY(descr, buf, typ.size); i >= 0 {
		return nil, fmt.Errorf("bool element %d has byte value %d (want 0 or 1): %w", i, b, graph.ErrFormat)
	}
	return data, nil
}

// Scalar decodes a numpy integer or float scalar (a sparse matrix's shape
// may hold them).
func (d *pickledArrays) Scalar(descr string, raw []byte) (any, error) {
	typ, ok := npyDtypes[descr]
	if !ok || int64(len(raw)) != typ.size {
		return nil, fmt.Errorf("numpy scalar of dtype %s and %d bytes is not supported: %w", descr, len(raw), graph.ErrFormat)
	}
	data, buf := typ.alloc(1)
	copy(buf, raw)
	finishNPY(descr, buf, typ.size)
	if f, ok := npyNumeric[float64](data); ok && strings.Contains(descr, "f") {
		return f[0], nil
	}
	v, err := npyInts(data, "pickle")
	if err != nil {
		return nil, err
	}
	return v[0], nil
}
