package numpy

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"strata/core/graph"
)

// pairsForm is how a pair file is written, for messages.
const pairsForm = "a .csv file of src,dst node-id lines (an optional header line first) or a .npy (P, 2) integer array"

// ReadPairs reads a file of node pairs to score: a .csv file of "src,dst"
// lines, after an optional header line (one whose first field starts with
// a letter), or a .npy array of shape (P, 2) and an integer dtype. What it
// allocates is charged against budget (bytes; <= 0: the default) before
// it is: for a .csv file, the most pairs its size allows. Errors name the
// file and the line (.csv) or row (.npy); node ids are checked against a
// graph later (graph.PairFile.CheckNodes).
func ReadPairs(path string, budget int64) (*graph.PairFile, error) {
	spend := &graph.Spend{Budget: budget}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".npy":
		return readNPYPairs(path, spend)
	case ".csv":
		return readCSVPairs(path, spend)
	}
	return nil, graph.FileErrorf(graph.ErrFormat, path, 0, 0, "a pair file must be %s; this one's name ends in neither", pairsForm)
}

// readNPYPairs reads a (P, 2) integer .npy array of pairs.
func readNPYPairs(path string, spend *graph.Spend) (*graph.PairFile, error) {
	shape, data, err := readNPYFile(path, spend)
	if err != nil {
		return nil, err
	}
	if len(shape) != 2 || shape[1] != 2 {
		return nil, graph.FileErrorf(graph.ErrFormat, path, 0, 0, "header field 'shape': %v, want (P, 2): one src,dst pair per row", shape)
	}
	p := shape[0]
	if err := spend.Charge(path, fmt.Sprintf("%d pairs", p), intsCost(data)+int64(p)*8); err != nil {
		return nil, err
	}
	ids, err := npyInts(data, path)
	if err != nil {
		return nil, err
	}
	out := &graph.PairFile{Path: path, Pairs: graph.Pairs{Src: make([]int32, p), Dst: make([]int32, p)}}
	for i := range p {
		for k, v := range ids[2*i : 2*i+2] {
			if v < 0 || v > math.MaxInt32 {
				return nil, graph.FileErrorf(graph.ErrRange, path, 0, 0, "row %d: %s node id %d is not a node id (0 to %d)", i, [2]string{"source", "target"}[k], v, math.MaxInt32)
			}
		}
		out.Pairs.Src[i], out.Pairs.Dst[i] = int32(ids[2*i]), int32(ids[2*i+1])
	}
	return out, nil
}

// readCSVPairs reads "src,dst" lines after an optional header line.
func readCSVPairs(path string, spend *graph.Spend) (*graph.PairFile, error) {
	f, size, err := graph.OpenFile(path, "")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// A pair takes at least 4 bytes ("0,0\n") and 8 in memory.
	most := size/4 + 1
	if err := spend.Charge(path, fmt.Sprintf("up to %d pairs (a %d-byte file)", most, size), most*8); err != nil {
		return nil, err
	}
	out := &graph.PairFile{Path: path, FirstLine: 1}
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if line == 1 && text != "" && isLetter(text[0]) {
			out.FirstLine = 2
			continue
		}
		src, dst, err := parsePair(text)
		if err != nil {
			return nil, graph.FileErrorf(graph.ErrFormat, path, line, 0, "%v; want %s", err, pairsForm)
		}
		out.Pairs.Src, out.Pairs.Dst = append(out.Pairs.Src, src), append(out.Pairs.Dst, dst)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, graph.FileErrorf(graph.ErrFormat, path, line+1, 0, "line longer than %d bytes; want %s", bufio.MaxScanTokenSize, pairsForm)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// parsePair parses one "src,dst" line.
func parsePair(text string) (src, dst int32, err error) {
	fields := strings.Split(text, ",")
	if len(fields) != 2 {
		return 0, 0, fmt.Errorf("%q has %d comma-separated fields, not 2", text, len(fields))
	}
	var ids [2]int32
	for k, s := range fields {
		s = strings.TrimSpace(s)
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s %q is not an integer node id", [2]string{"source", "target"}[k], s)
		}
		if v < 0 || v > math.MaxInt32 {
			return 0, 0, fmt.Errorf("%s node id %d is not a node id (0 to %d)", [2]string{"source", "target"}[k], v, math.MaxInt32)
		}
		ids[k] = int32(v)
	}
	return ids[0], ids[1], nil
}

// isLetter reports whether c is an ASCII letter.
func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
