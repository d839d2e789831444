package numpy

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"strata/core/graph"
)

// edgeSplitLayout says what a shipped edge split holds, for messages.
const edgeSplitLayout = "a shipped edge split is a directory (or a .npz file) of (E, 2) integer pair arrays: train.npy (required), " +
	"valid.npy, test.npy, valid_neg.npy, test_neg.npy, and train_eval.npy with train_eval_neg.npy together (docs/datasets.md, \"Edge splits\")"

// ogbPTHint is added when a split directory holds OGB's torch files.
const ogbPTHint = "; OGB's link layout stores its split as torch .pt files, which strata does not read: convert them with " +
	"python -c \"import numpy as np; from ogb.linkproppred import LinkPropPredDataset as D; s = D('ogbl-collab').get_edge_split(); " +
	"[np.save(f'{k}.npy', s[k]['edge']) for k in ('train', 'valid', 'test')]; [np.save(f'{k}_neg.npy', s[k]['edge_neg']) for k in ('valid', 'test')]\""

// splitError marks an error of an edge split's files as graph.ErrSplit
// too, whatever its own kind.
type splitError struct{ error }

func (e splitError) Unwrap() []error { return []error{e.error, graph.ErrSplit} }

// asSplitError wraps err (nil stays nil) as a splitError.
func asSplitError(err error) error {
	if err == nil || errors.Is(err, graph.ErrSplit) {
		return err
	}
	return splitError{err}
}

// ReadEdgeSplit reads the edge split at path, a directory of .npy files
// or a .npz file with the arrays of graph.EdgeSplitParts ((E, 2), any
// integer dtype; train required), within budget bytes (0: the default).
// Errors name the file and wrap graph.ErrSplit; ids are checked against
// the graph by graph.SplitShipped.
func ReadEdgeSplit(path string, budget int64) (*graph.ShippedEdges, error) {
	sh, err := readEdgeSplit(path, &graph.Spend{Budget: budget})
	return sh, asSplitError(err)
}

// readEdgeSplit is ReadEdgeSplit charging the arrays to spend.
func readEdgeSplit(path string, spend *graph.Spend) (*graph.ShippedEdges, error) {
	sh := &graph.ShippedEdges{Source: path}
	if !graph.IsDir(path) {
		return sh, readEdgeSplitNPZ(sh, spend)
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, graph.FileErrorf(graph.ErrMissing, path, 0, 0, "cannot list the edge split directory: %v", err)
	}
	hint := ""
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, ".pt") {
			hint = ogbPTHint
		}
		if part, ok := strings.CutSuffix(name, ".npy"); ok && !slices.Contains(graph.EdgeSplitParts[:], part) {
			return nil, graph.FileErrorf(graph.ErrFormat, filepath.Join(path, name), 0, 0, "%q is no part of an edge split; rename or remove it (%s)", part, edgeSplitLayout)
		}
	}
	for i, part := range graph.EdgeSplitParts {
		p := filepath.Join(path, part+".npy")
		if !graph.FileExists(p) {
			if i == graph.PartTrain {
				return nil, graph.FileErrorf(graph.ErrMissing, p, 0, 0, "file does not exist; %s%s", edgeSplitLayout, hint)
			}
			continue
		}
		shape, data, err := readNPYFile(p, spend)
		if err != nil {
			return nil, err
		}
		if sh.Pairs[i], err = splitPairs(p, "", shape, data, spend); err != nil {
			return nil, err
		}
		sh.Files[i] = p
	}
	return sh, nil
}

// readEdgeSplitNPZ reads the arrays of the .npz file sh.Source into sh.
func readEdgeSplitNPZ(sh *graph.ShippedEdges, spend *graph.Spend) error {
	z, err := openNPZ(sh.Source)
	if err != nil {
		return err
	}
	defer z.Close()
	z.spend = spend
	for _, k := range z.keys {
		if !slices.Contains(graph.EdgeSplitParts[:], k) {
			return graph.FileErrorf(graph.ErrFormat, z.path, 0, 0, "array %q is no part of an edge split; %s", k, edgeSplitLayout)
		}
	}
	for i, part := range graph.EdgeSplitParts {
		if !z.has(part) {
			if i == graph.PartTrain {
				return graph.FileErrorf(graph.ErrMissing, z.path, 0, 0, "array \"train\" is missing (the archive holds %s); %s", strings.Join(z.keys, ", "), edgeSplitLayout)
			}
			continue
		}
		shape, data, err := z.read(part)
		if err != nil {
			return err
		}
		what := fmt.Sprintf("array %q: ", part)
		if sh.Pairs[i], err = splitPairs(z.path, what, shape, data, spend); err != nil {
			return err
		}
		sh.Files[i] = fmt.Sprintf("%s (array %q)", z.path, part)
	}
	return nil
}

// splitPairs returns the (E, 2) integer array data of shape, read from
// file (what names the array in a .npz), as pairs.
func splitPairs(file, what string, shape []int, data any, spend *graph.Spend) (graph.Pairs, error) {
	if len(shape) != 2 || shape[1] != 2 {
		return graph.Pairs{}, graph.FileErrorf(graph.ErrFormat, file, 0, 0, "%sheader field 'shape': %v, want (E, 2) pairs, one (source, target) per row (save a (2, E) edge_index as arr.T)", what, shape)
	}
	m := shape[0]
	if err := spend.Charge(file, fmt.Sprintf("%s%d pairs", what, m), intsCost(data)+int64(m)*8); err != nil {
		return graph.Pairs{}, err
	}
	ids, bad, ok := npyInt64s(data)
	switch {
	case !ok:
		return graph.Pairs{}, graph.FileErrorf(graph.ErrFormat, file, 0, 0, "%sheader field 'descr': %s data, want integer node ids (int32 or int64)", what, npyKind(data))
	case bad >= 0:
		return graph.Pairs{}, graph.FileErrorf(graph.ErrRange, file, 0, 0, "%spair %d: node id %d is larger than any node id", what, bad/2, data.([]uint64)[bad])
	}
	p := graph.Pairs{Src: make([]int32, m), Dst: make([]int32, m)}
	for e := range m {
		u, v := ids[2*e], ids[2*e+1]
		if u < 0 || v < 0 || u > math.MaxInt32 || v > math.MaxInt32 {
			return graph.Pairs{}, graph.FileErrorf(graph.ErrRange, file, 0, 0, "%spair %d (%d, %d): node id outside [0,%d]; ids are 0-based node numbers", what, e, u, v, math.MaxInt32)
		}
		p.Src[e], p.Dst[e] = int32(u), int32(v)
	}
	return p, nil
}

// WriteEdgeSplitDir writes s into dir as the arrays of
// graph.EdgeSplitParts, each an int64 (E, 2) .npy file (every part,
// empty ones too, so no file of an earlier split stays), which
// ReadEdgeSplit reads back: a run on it scores the same pairs. It refuses
// to write over any of inputs, and replaces the files only when all are
// complete (WriteNPYDirContext). It returns the paths written.
func WriteEdgeSplitDir(ctx context.Context, dir string, s *graph.EdgeSplit, inputs ...string) ([]string, error) {
	parts := s.Parts()
	return writeNPYSet(ctx, dir, inputs, func(write npyWriter) error {
		for i, name := range graph.EdgeSplitParts {
			p := parts[i]
			body := func(w io.Writer) error {
				buf := make([]byte, 0, 16*min(p.Len(), 1<<16))
				for j := range p.Src {
					buf = binary.LittleEndian.AppendUint64(buf, uint64(p.Src[j]))
					buf = binary.LittleEndian.AppendUint64(buf, uint64(p.Dst[j]))
					if len(buf) == cap(buf) {
						if _, err := w.Write(buf); err != nil {
							return err
						}
						buf = buf[:0]
					}
				}
				_, err := w.Write(buf)
				return err
			}
			if err := write(name+".npy", []int{p.Len(), 2}, "<i8", body); err != nil {
				return err
			}
		}
		return nil
	})
}
