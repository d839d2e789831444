package formats

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/graph/graphtest"
	"strata/core/graph/synth"
)

// binDatasets returns datasets covering the binary format's variants.
func binDatasets(t *testing.T) map[string]*graph.Dataset {
	t.Helper()
	withValues := graphtest.ReorderDataset(graph.FromEdges(40, graphtest.RandEdges(3, 40, 5, 200)))
	withValues.Graph.Values = graphtest.RandValues(3, withValues.Graph.NNZ())
	withValues.Name, withValues.Source, withValues.Citation = "values", "/data/values", "Someone, \"A \u00e9 paper\", 2024"
	wide := graphtest.ReorderDataset(graphtest.Widen(graph.FromEdges(25, graphtest.RandEdges(4, 25, 0, 90))))
	wide.Name = "wide"
	rm, err := synth.RMAT(synth.RMATOptions{Scale: 7, EdgeFactor: 4, FeatDim: 5, NumClasses: 3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]*graph.Dataset{
		"values":    withValues,
		"wide":      wide,
		"structure": {Name: "s", NumNodes: 4, Graph: graph.FromEdges(4, [][2]int64{{0, 1}, {1, 0}, {3, 3}})},
		"labels only": {Name: "l", NumNodes: 3, Graph: graph.FromEdges(3, nil), Labels: []int32{1, -1, 0}, NumClasses: 2,
			Train: []int32{0}, Test: []int32{2}},
		"empty": {Name: "", NumNodes: 0, Graph: graph.FromEdges(0, nil)},
		"rmat":  rm,
		// A header longer than the 4 KiB the sections normally start at.
		"long header": {Name: strings.Repeat("n", 3000), NumNodes: 2, Graph: graph.FromEdges(2, [][2]int64{{0, 1}}),
			Citation: strings.Repeat("c\"\n\u00e9", 2000)},
	}
}

func TestBinaryRoundTrip(t *testing.T) {
	for name, d := range binDatasets(t) {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "g.strata")
			if err := WriteBinary(p, d); err != nil {
				t.Fatal(err)
			}
			if !IsBinary(p) {
				t.Error("IsBinary is false for a written file")
			}
			for i := 0; i < 2; i++ { // reopening gives the same again
				got, closer, err := OpenBinary(p)
				if err != nil {
					t.Fatal(err)
				}
				if diff := graphtest.SameDataset(got, d); diff != "" {
					t.Fatalf("reopened dataset differs in %s", diff)
				}
				wantSrc := p
				if d.Source != "" {
					wantSrc = p + " (converted from " + d.Source + ")"
				}
				if got.Source != wantSrc {
					t.Errorf("source %q, want %q", got.Source, wantSrc)
				}
				if err := got.Validate(); err != nil {
					t.Error(err)
				}
				if err := closer.Close(); err != nil {
					t.Error(err)
				}
				if err := closer.Close(); err != nil {
					t.Errorf("second Close: %v", err)
				}
			}
			// Open recognises the file by its magic, whatever its name.
			other := filepath.Join(t.TempDir(), "no-extension")
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			graphtest.WriteFile(t, filepath.Dir(other), filepath.Base(other), data)
			got, err := graph.Open(other)
			if err != nil {
				t.Fatal(err)
			}
			if diff := graphtest.SameDataset(got, d); diff != "" {
				t.Errorf("Open: dataset differs in %s", diff)
			}
			// Writing the reopened (mapped) dataset gives the same bytes.
			again := filepath.Join(t.TempDir(), "again.strata")
			got.Source = d.Source
			if err := WriteBinary(again, got); err != nil {
				t.Fatal(err)
			}
			data2, err := os.ReadFile(again)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(data, data2) {
				t.Error("rewriting the reopened dataset changed the file")
			}
		})
	}
}

func TestWriteBinaryInvalid(t *testing.T) {
	dir := t.TempDir()
	d := &graph.Dataset{Name: "bad", NumNodes: 3, Graph: graph.FromEdges(3, nil), Labels: []int32{0, 5, 0}, NumClasses: 2}
	err := WriteBinary(filepath.Join(dir, "bad.strata"), d)
	graphtest.WantErr(t, err, graph.ErrRange, "bad.strata", "not writing an invalid dataset", "label 5")
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left behind: %v", entries)
	}
	// An indptr that does not start at 0 would be written and then
	// refused by OpenBinary: WriteBinary must refuse it.
	d = &graph.Dataset{Name: "off", NumNodes: 2, Graph: &graph.CSR{NumRows: 2, NumCols: 2, Indptr: []int64{1, 1, 2}, Idx32: []int32{0, 1}}}
	err = WriteBinary(filepath.Join(dir, "off.strata"), d)
	graphtest.WantErr(t, err, graph.ErrFormat, "off.strata", "indptr starts at 1")
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left behind: %v", entries)
	}
	err = WriteBinary(filepath.Join(dir, "no", "such", "dir.strata"), graphtest.ReorderDataset(graph.FromEdges(2, nil)))
	if err == nil || !strings.Contains(err.Error(), "dir.strata") {
		t.Errorf("write into a missing directory: %v", err)
	}
}

// binFile writes a small dataset and returns its bytes and parsed header.
func binFile(t testing.TB) ([]byte, *binHeader) {
	t.Helper()
	d := graphtest.ReorderDataset(graph.FromEdges(10, graphtest.RandEdges(5, 10, 1, 30)))
	d.Graph.Values = graphtest.RandValues(5, d.Graph.NNZ())
	p := filepath.Join(t.TempDir(), "src.strata")
	if err := WriteBinary(p, d); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	hlen := binary.LittleEndian.Uint32(data[12:])
	h := &binHeader{}
	if err := json.Unmarshal(data[binPrelude:binPrelude+hlen], h); err != nil {
		t.Fatal(err)
	}
	return data, h
}

// withHeader returns data with its JSON header replaced by edit's result
// (the checksum fixed up), keeping the sections in place.
func withHeader(t *testing.T, data []byte, h *binHeader, edit func(h *binHeader) []byte) []byte {
	t.Helper()
	c := *h
	c.Sections = slices.Clone(h.Sections)
	head := edit(&c)
	if head == nil {
		var err error
		if head, err = json.Marshal(&c); err != nil {
			t.Fatal(err)
		}
	}
	out := slices.Clone(data)
	first := h.Sections[0].Offset
	if int64(binPrelude+len(head)) > first {
		t.Fatal("edited header does not fit")
	}
	clear(out[binPrelude:first])
	copy(out[binPrelude:], head)
	binary.LittleEndian.PutUint32(out[12:], uint32(len(head)))
	binary.LittleEndian.PutUint32(out[16:], crc32.ChecksumIEEE(head))
	return out
}

// section returns the section called name.
func section(t *testing.T, h *binHeader, name string) binSection {
	t.Helper()
	for _, s := range h.Sections {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no section %q", name)
	return binSection{}
}

func TestOpenBinaryCorrupt(t *testing.T) {
	data, h := binFile(t)
	flip := func(i int64) []byte {
		c := slices.Clone(data)
		c[i] ^= 0x40
		return c
	}
	put32 := func(off int64, v uint32) []byte {
		c := slices.Clone(data)
		binary.LittleEndian.PutUint32(c[off:], v)
		return c
	}
	put64 := func(off int64, v uint64) []byte {
		c := slices.Clone(data)
		binary.LittleEndian.PutUint64(c[off:], v)
		return c
	}
	idx, lab, ind, train := section(t, h, "idx32"), section(t, h, "labels"), section(t, h, "indptr"), section(t, h, "train")
	cases := []struct {
		name string
		data []byte
		kind error
		want []string
	}{
		{"empty file", nil, graph.ErrTruncated, []string{"empty file"}},
		{"4 bytes", data[:4], graph.ErrTruncated, []string{"shorter than the 24-byte preamble"}},
		{"cut in preamble", data[:12], graph.ErrTruncated, []string{"preamble"}},
		{"cut in header", data[:binPrelude+10], graph.ErrTruncated, []string{"the header needs"}},
		{"cut in sections", data[:len(data)-1], graph.ErrTruncated, []string{"the file is truncated"}},
		{"cut in half", data[:len(data)/2], graph.ErrTruncated, []string{"truncated"}},
		{"extra bytes", append(slices.Clone(data), 0), graph.ErrFormat, []string{"header says"}},
		{"flipped magic", flip(0), graph.ErrFormat, []string{"not a strata binary graph"}},
		{"text file", []byte("0 1\n1 2\n2 3\n3 4\n4 5\n5 6\n6 7\n"), graph.ErrFormat, []string{"not a strata binary graph"}},
		{"wrong version", put32(8, 3), graph.ErrVersion, []string{"format version 3", "reads versions 1 to 2"}},
		{"flipped header byte", flip(binPrelude + 5), graph.ErrChecksum, []string{"checksum"}},
		{"flipped last header byte", flip(binPrelude + int64(binary.LittleEndian.Uint32(data[12:])) - 1), graph.ErrChecksum, []string{"checksum"}},
		{"flipped checksum", flip(17), graph.ErrChecksum, []string{"checksum"}},
		{"implausible header length", put32(12, 0xffffffff), graph.ErrFormat, []string{"implausible"}},
		{"column id out of range", put32(idx.Offset+4, 1000), graph.ErrFormat, []string{"column 1000 outside [0,10)"}},
		{"negative column id", put32(idx.Offset, 0xffffffff), graph.ErrFormat, []string{"column -1"}},
		{"label out of range", put32(lab.Offset+8, 7), graph.ErrRange, []string{"label 7"}},
		{"indptr decreasing", put64(ind.Offset+8*3, 0), graph.ErrFormat, []string{"indptr"}},
		{"indptr start", put64(ind.Offset, 1), graph.ErrFormat, []string{"indptr runs from 1"}},
		{"split unsorted", put32(train.Offset, 9), graph.ErrSplit, []string{"train split"}},
		{"not json", withHeader(t, data, h, func(*binHeader) []byte { return []byte("{nope") }), graph.ErrFormat, []string{"not valid JSON"}},
		{"negative nodes", withHeader(t, data, h, func(h *binHeader) []byte { h.NumNodes = -1; return nil }), graph.ErrFormat, []string{"inconsistent header"}},
		{"rows differ", withHeader(t, data, h, func(h *binHeader) []byte { h.Rows = 9; return nil }), graph.ErrFormat, []string{"inconsistent header"}},
		{"section outside", withHeader(t, data, h, func(h *binHeader) []byte { h.Sections[1].Offset = 1 << 40; return nil }), graph.ErrFormat, []string{"does not fit"}},
		{"section misaligned", withHeader(t, data, h, func(h *binHeader) []byte { h.Sections[1].Offset += 4; return nil }), graph.ErrFormat, []string{"does not fit"}},
		{"section too long", withHeader(t, data, h, func(h *binHeader) []byte { h.Sections[0].Count = 1 << 60; return nil }), graph.ErrFormat, []string{"does not fit"}},
		{"unknown dtype", withHeader(t, data, h, func(h *binHeader) []byte { h.Sections[0].DType = "u2"; return nil }), graph.ErrFormat, []string{`dtype "u2"`}},
		{"wrong dtype", withHeader(t, data, h, func(h *binHeader) []byte { h.Sections[0].DType = "f4"; return nil }), graph.ErrFormat, []string{`section "indptr" has dtype f4`}},
		{"wrong count", withHeader(t, data, h, func(h *binHeader) []byte { h.Sections[0].Count--; return nil }), graph.ErrFormat, []string{`section "indptr"`, "want i8 and 11"}},
		{"duplicate section", withHeader(t, data, h, func(h *binHeader) []byte { h.Sections = append(h.Sections, h.Sections[0]); return nil }), graph.ErrFormat, []string{"listed twice"}},
		{"missing labels", withHeader(t, data, h, func(h *binHeader) []byte {
			h.Sections = slices.DeleteFunc(h.Sections, func(s binSection) bool { return s.Name == "labels" })
			return nil
		}), graph.ErrFormat, []string{`section "labels" is missing`}},
		{"no ids", withHeader(t, data, h, func(h *binHeader) []byte {
			h.Sections = slices.DeleteFunc(h.Sections, func(s binSection) bool { return s.Name == "idx32" })
			return nil
		}), graph.ErrFormat, []string{"exactly one of the sections"}},
		{"both ids", withHeader(t, data, h, func(h *binHeader) []byte {
			s := section(t, h, "indptr")
			s.Name, s.Count = "idx64", h.NNZ
			h.Sections = append(h.Sections, s)
			return nil
		}), graph.ErrFormat, []string{"exactly one of the sections"}},
		{"feature overflow", withHeader(t, data, h, func(h *binHeader) []byte { h.FeatDim = 1 << 62; return nil }), graph.ErrFormat, []string{"overflows"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := graphtest.WriteFile(t, t.TempDir(), "corrupt.strata", c.data)
			d, closer, err := OpenBinary(p)
			if d != nil || closer != nil {
				t.Error("dataset returned with an error")
			}
			graphtest.WantErr(t, err, c.kind, append([]string{p, "strata convert"}, c.want...)...)
			if c.kind != graph.ErrRange && !errors.Is(err, graph.ErrFormat) {
				t.Errorf("error %v is not an ErrFormat", err)
			}
			// Open reports the same problem for a .strata file.
			_, err2 := graph.Open(p)
			if err2 == nil || err2.Error() != err.Error() {
				t.Errorf("Open: %v, want %v", err2, err)
			}
		})
	}
	_, _, err := OpenBinary(filepath.Join(t.TempDir(), "none.strata"))
	graphtest.WantErr(t, err, graph.ErrMissing, "none.strata", "does not exist")
}
