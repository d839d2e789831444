package graph

import "fmt"

// PairFile is a file of node pairs to score (numpy.ReadPairs): the pairs
// in the file's order and where each came from, for errors.
type PairFile struct {
	Path  string
	Pairs Pairs
	// FirstLine is the line of the first pair in a .csv file (2 after a
	// header line), one pair a line after it; 0 for a .npy file, whose
	// pairs are rows.
	FirstLine int
}

// CheckNodes refuses a pair with a node id outside [0, n), naming the
// file and the line (.csv) or the row (.npy) of the first one; graph
// names the graph of n nodes in the message.
func (f *PairFile) CheckNodes(n int, graph string) error {
	for i := range f.Pairs.Len() {
		for k, v := range [2]int32{f.Pairs.Src[i], f.Pairs.Dst[i]} {
			if v >= 0 && int(v) < n {
				continue
			}
			where, line, col := fmt.Sprintf("row %d: ", i), 0, 0
			if f.FirstLine > 0 {
				where, line, col = "", f.FirstLine+i, k+1
			}
			return FileErrorf(ErrRange, f.Path, line, col, "%s%s node id %d outside [0,%d): the graph %q has %d nodes; give pairs of its node ids",
				where, [2]string{"source", "target"}[k], v, n, graph, n)
		}
	}
	return nil
}
