package formats

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unsafe"

	"strata/core/graph"
	"strata/core/registry"
	"strata/core/safefile"
)

// Binary graph format ("STRATAG1"), all integers little-endian:
//
//	offset 0   magic "STRATAG1"
//	offset 8   uint32 format version (binVersion)
//	offset 12  uint32 header length H
//	offset 16  uint32 CRC-32 (IEEE) of the header bytes
//	offset 20  uint32 reserved (0)
//	offset 24  header: H bytes of JSON (binHeader)
//	then the sections, each at a 64-byte aligned offset listed in the header
//
// Sections hold raw little-endian arrays: indptr (int64), idx32 (int32) or
// idx64 (int64), values (float32, optional), features (float32, row-major),
// labels (int32), train, valid, test (int32). From version 2 each section
// carries the CRC-32C (Castagnoli) of its bytes, and the bytes between
// sections must be zero; OpenBinary verifies both (see verifySections).
const (
	binMagic    = "STRATAG1"
	binVersion  = 2 // 2: a CRC-32C per section; version 1 files (no section checksums) are still read
	binMinVer   = 1
	binPrelude  = 24
	binAlign    = 64
	binMaxHead  = 16 << 20
	convertHint = "re-run `strata convert` to regenerate it"
)

// binHeader is the JSON header of a binary graph file.
type binHeader struct {
	Name       string       `json:"name"`
	Source     string       `json:"source"`
	Citation   string       `json:"citation"`
	NumNodes   int64        `json:"num_nodes"`
	Rows       int64        `json:"rows"`
	Cols       int64        `json:"cols"`
	NNZ        int64        `json:"nnz"`
	FeatDim    int64        `json:"feat_dim"`
	NumClasses int64        `json:"num_classes"`
	HasLabels  bool         `json:"has_labels"`
	FileSize   int64        `json:"file_size"`
	Sections   []binSection `json:"sections"`

	version uint32 // from the preamble
}

// binSection locates one array in the file.
type binSection struct {
	Name   string `json:"name"`
	DType  string `json:"dtype"` // "i4", "i8" or "f4"
	Offset int64  `json:"offset"`
	Count  int64  `json:"count"`
	CRC32C uint32 `json:"crc32c"` // of the section's bytes (version 2)
}

// castagnoli is the CRC-32C table (hardware-accelerated on amd64/arm64).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// dtypeSize returns the element size of a section dtype.
func dtypeSize(dt string) int64 {
	switch dt {
	case "i4", "f4":
		return 4
	case "i8":
		return 8
	}
	return 0
}

// binPayload is one section to write.
type binPayload struct {
	sec  binSection
	data []byte
}

// WriteBinary writes d to path in the STRATAG1 binary format, which
// OpenBinary maps back in milliseconds. The dataset is validated first. The
// file is written to a temporary name and renamed, so a failed write never
// leaves a truncated file behind.
func WriteBinary(path string, d *graph.Dataset) error { return writeBinary(path, d, nil) }

// writeBinary is WriteBinary with an optional wrapper of the file writer
// (tests inject a failing one: a full disk).
func writeBinary(path string, d *graph.Dataset, wrap func(io.Writer) io.Writer) error {
	if !graph.LittleEndianHost() {
		return fmt.Errorf("%s: the binary graph format needs a little-endian host: %w", path, graph.ErrFormat)
	}
	if err := d.Validate(); err != nil {
		return fmt.Errorf("%s: not writing an invalid dataset: %w", path, err)
	}
	if d.HasTargets() {
		return fmt.Errorf("%s: the binary graph format stores class labels, not the %s targets of %s; keep the dataset as a .npy directory (convert --to npy): %w", path, d.Kind, d.Name, graph.ErrFormat)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory; give the output file's name, e.g. %s: %w",
			path, filepath.Join(path, d.Name+".strata"), graph.ErrFormat)
	}
	if err := safefile.CheckOutput(path, d.Source); err != nil {
		return err
	}
	g := d.Graph
	h := binHeader{
		Name: d.Name, Source: originalSource(d.Source), Citation: d.Citation,
		NumNodes: int64(d.NumNodes), Rows: int64(g.NumRows), Cols: int64(g.NumCols), NNZ: g.NNZ(),
		FeatDim: int64(d.FeatDim), NumClasses: int64(d.NumClasses), HasLabels: d.Labels != nil,
	}
	var parts []binPayload
	add := func(name, dt string, count int, data []byte) {
		parts = append(parts, binPayload{binSection{Name: name, DType: dt, Count: int64(count), CRC32C: crc32.Checksum(data, castagnoli)}, data})
	}
	add("indptr", "i8", len(g.Indptr), graph.ByteView(g.Indptr))
	if g.Idx64 != nil {
		add("idx64", "i8", len(g.Idx64), graph.ByteView(g.Idx64))
	} else {
		add("idx32", "i4", len(g.Idx32), graph.ByteView(g.Idx32))
	}
	if g.Values != nil {
		add("values", "f4", len(g.Values), graph.ByteView(g.Values))
	}
	add("features", "f4", len(d.Features), graph.ByteView(d.Features))
	add("labels", "i4", len(d.Labels), graph.ByteView(d.Labels))
	add("train", "i4", len(d.Train), graph.ByteView(d.Train))
	add("valid", "i4", len(d.Valid), graph.ByteView(d.Valid))
	add("test", "i4", len(d.Test), graph.ByteView(d.Test))

	head, err := layoutSections(path, &h, parts)
	if err != nil {
		return err
	}
	tmp, err := safefile.Create(path, d.Source)
	if err != nil {
		return err
	}
	defer tmp.Abort() // no-op after the commit
	var sink io.Writer = tmp
	if wrap != nil {
		sink = wrap(tmp)
	}
	w := bufio.NewWriterSize(sink, 1<<20)
	var pre [binPrelude]byte
	copy(pre[:], binMagic)
	binary.LittleEndian.PutUint32(pre[8:], binVersion)
	binary.LittleEndian.PutUint32(pre[12:], uint32(len(head)))
	binary.LittleEndian.PutUint32(pre[16:], crc32.ChecksumIEEE(head))
	w.Write(pre[:])
	w.Write(head)
	pos := int64(binPrelude + len(head))
	zeros := make([]byte, binAlign)
	for _, p := range parts {
		for gap := p.sec.Offset - pos; gap > 0; { // the first section starts up to 4 KiB after the header
			k := min(gap, int64(len(zeros)))
			w.Write(zeros[:k])
			gap -= k
		}
		w.Write(p.data)
		pos = p.sec.Offset + int64(len(p.data))
		if pad := alignUp(pos, binAlign) - pos; pad > 0 {
			w.Write(zeros[:pad])
			pos += pad
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("%s: write: %w", path, err)
	}
	return tmp.Commit()
}

// layoutSections sets the sections' offsets in h and its file size and
// returns the encoded header; the header's size depends on the offsets
// it lists, so it iterates to a fixed point.
func layoutSections(path string, h *binHeader, parts []binPayload) ([]byte, error) {
	dataStart := int64(4096)
	for {
		off := dataStart
		h.Sections = h.Sections[:0]
		for i := range parts {
			parts[i].sec.Offset = off
			h.Sections = append(h.Sections, parts[i].sec)
			off = alignUp(off+int64(len(parts[i].data)), binAlign)
		}
		h.FileSize = off
		head, err := json.Marshal(h)
		if err != nil {
			return nil, fmt.Errorf("%s: encode header: %w", path, err)
		}
		if need := alignUp(binPrelude+int64(len(head)), binAlign); need > dataStart {
			dataStart = need
			continue
		}
		return head, nil
	}
}

// convertedFrom joins a binary file's path to the source it was made from.
const convertedFrom = " (converted from "

// originalSource returns the source a dataset was first loaded from, so a
// re-converted file does not stack "(converted from ...)" notes.
func originalSource(src string) string {
	if i := strings.Index(src, convertedFrom); i >= 0 && strings.HasSuffix(src, ")") {
		return src[i+len(convertedFrom) : len(src)-1]
	}
	return src
}

// alignUp rounds x up to a multiple of a (a power of two).
func alignUp(x, a int64) int64 { return (x + a - 1) &^ (a - 1) }

// OpenBinary maps a file written by WriteBinary and returns a dataset whose
// arrays alias the read-only mapping (they must not be written to; the
// transforms and ReorderByDegree make copies). Close the returned closer
// when the dataset is no longer used; the arrays are invalid afterwards.
// Opening checks the magic, the version, the header checksum, the section
// table, indptr, column ids, labels and splits, but not feature values.
func OpenBinary(path string) (*graph.Dataset, io.Closer, error) { return openBinary(path, 0) }

// openBinary is OpenBinary with a memory budget (0: DefaultMaxMemory) for
// what training the dataset will allocate per node and class.
func openBinary(path string, budget int64) (*graph.Dataset, io.Closer, error) {
	f, size, err := graph.OpenFile(path, "create it with `strata convert`")
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	h, err := readBinHeader(f, size, path)
	if err != nil {
		return nil, nil, err
	}
	if !graph.LittleEndianHost() {
		return nil, nil, graph.FileErrorf(graph.ErrFormat, path, 0, 0, "the binary graph format needs a little-endian host")
	}
	if size > math.MaxInt {
		return nil, nil, graph.FileErrorf(graph.ErrRange, path, 0, 0, "file too large to map")
	}
	data, unmap, err := mapFile(f, size)
	if err != nil {
		return nil, nil, graph.FileErrorf(graph.ErrFormat, path, 0, 0, "cannot map the file: %v", err)
	}
	d, err := datasetFromMapping(h, data, path)
	if err == nil {
		err = verifySections(h, data, path, eagerVerifyBytes)
	}
	if err == nil {
		err = checkClassBudget(path, d, budget)
	}
	if err == nil && int64(len(d.Features))*4 <= eagerVerifyBytes {
		err = graph.CheckFeatures(path, d.Features, d.FeatDim)
	}
	if err != nil {
		unmap()
		return nil, nil, err
	}
	d.SetMapping(data)
	return d, closerFunc(unmap), nil
}

// eagerVerifyBytes is the largest section OpenBinary checksums (and the
// largest feature matrix it checks for finite values) when opening; larger
// ones, which would cost seconds of reading on every open of a file mapped
// for its speed, are verified by VerifyBinary (strata inspect --verify).
const eagerVerifyBytes = 1 << 30

// verifySections checks, for a version 2 file, the CRC-32C of every
// section of at most limit bytes and that the bytes between the header and
// the sections and between sections are zero, so a flipped bit anywhere
// after the header is found.
func verifySections(h *binHeader, data []byte, path string, limit int64) error {
	if h.version < 2 {
		return nil
	}
	secs := slices.Clone(h.Sections)
	slices.SortFunc(secs, func(a, b binSection) int { return cmp.Compare(a.Offset, b.Offset) })
	pos := int64(binPrelude) + int64(binary.LittleEndian.Uint32(data[12:]))
	for _, s := range secs {
		n := s.Count * dtypeSize(s.DType)
		if s.Offset < pos {
			return graph.FileErrorf(graph.ErrFormat, path, 0, 0, "section %q overlaps the header or another section; %s", s.Name, convertHint)
		}
		if i := slices.IndexFunc(data[pos:s.Offset], func(b byte) bool { return b != 0 }); i >= 0 {
			return graph.FileErrorf(graph.ErrChecksum, path, 0, 0, "nonzero byte at offset %d between sections (corrupt file); %s", pos+int64(i), convertHint)
		}
		if n <= limit {
			if c := crc32.Checksum(data[s.Offset:s.Offset+n], castagnoli); c != s.CRC32C {
				return graph.FileErrorf(graph.ErrChecksum, path, 0, 0, "section %q checksum %08x does not match %08x (corrupt file); %s", s.Name, c, s.CRC32C, convertHint)
			}
		}
		pos = s.Offset + n
	}
	if i := slices.IndexFunc(data[pos:], func(b byte) bool { return b != 0 }); i >= 0 {
		return graph.FileErrorf(graph.ErrChecksum, path, 0, 0, "nonzero byte at offset %d after the last section (corrupt file); %s", pos+int64(i), convertHint)
	}
	return nil
}

// VerifyBinary opens a binary graph file and verifies all of it: the
// checks of OpenBinary, the checksum of every section however large, and
// finite feature values. A version 1 file has no section checksums; its
// structure and features are still checked.
func VerifyBinary(path string) error {
	d, closer, err := OpenBinary(path)
	if err != nil {
		return err
	}
	defer closer.Close()
	f, size, err := graph.OpenFile(path, "")
	if err != nil {
		return err
	}
	defer f.Close()
	h, err := readBinHeader(f, size, path)
	if err != nil {
		return err
	}
	data, unmap, err := mapFile(f, size)
	if err != nil {
		return graph.FileErrorf(graph.ErrFormat, path, 0, 0, "cannot map the file: %v", err)
	}
	defer unmap()
	if err := verifySections(h, data, path, math.MaxInt64); err != nil {
		return err
	}
	return graph.CheckFeatures(path, d.Features, d.FeatDim)
}

// checkClassBudget checks that the per-node class scores training keeps
// (logits, their gradient, probabilities: float64 at worst) fit the budget.
func checkClassBudget(path string, d *graph.Dataset, budget int64) error {
	if budget <= 0 {
		budget = graph.DefaultMaxMemory()
	}
	need := int64(d.NumNodes) * int64(d.NumClasses)
	if d.NumClasses > 0 && need/int64(d.NumClasses) != int64(d.NumNodes) {
		need = -1
	} else {
		need *= 3 * 8
	}
	return graph.CheckBudget(path, fmt.Sprintf("%d nodes x %d classes of scores", d.NumNodes, d.NumClasses), need, budget)
}

// closerFunc adapts a function to io.Closer; closing twice is harmless.
type closerFunc func() error

// Close calls the function.
func (c closerFunc) Close() error { return c() }

// readBinHeader reads and checks the prelude and the JSON header.
func readBinHeader(f io.ReaderAt, size int64, path string) (*binHeader, error) {
	bad := func(kind error, format string, args ...any) error {
		return graph.FileErrorf(kind, path, 0, 0, "%s; %s", fmt.Sprintf(format, args...), convertHint)
	}
	if size == 0 {
		return nil, bad(graph.ErrTruncated, "empty file, not a strata binary graph")
	}
	var pre [binPrelude]byte
	k, _ := f.ReadAt(pre[:], 0)
	if k >= 8 && string(pre[:8]) != binMagic || k < 8 && string(pre[:k]) != binMagic[:k] {
		return nil, bad(graph.ErrFormat, "not a strata binary graph (magic %q, want %q)", pre[:min(k, 8)], binMagic)
	}
	if k < binPrelude {
		return nil, bad(graph.ErrTruncated, "file is %d bytes, shorter than the %d-byte preamble", size, binPrelude)
	}
	version := binary.LittleEndian.Uint32(pre[8:])
	if version < binMinVer || version > binVersion {
		return nil, bad(graph.ErrVersion, "format version %d, this build reads versions %d to %d", version, binMinVer, binVersion)
	}
	hlen := int64(binary.LittleEndian.Uint32(pre[12:]))
	if hlen > binMaxHead {
		return nil, bad(graph.ErrFormat, "header length %d is implausible (corrupt preamble)", hlen)
	}
	if binPrelude+hlen > size {
		return nil, bad(graph.ErrTruncated, "file is %d bytes but the header needs %d", size, binPrelude+hlen)
	}
	head := make([]byte, hlen)
	if _, err := f.ReadAt(head, binPrelude); err != nil {
		return nil, bad(graph.ErrTruncated, "cannot read the header: %v", err)
	}
	if crc := crc32.ChecksumIEEE(head); crc != binary.LittleEndian.Uint32(pre[16:]) {
		return nil, bad(graph.ErrChecksum, "header checksum %08x does not match %08x (corrupt file)", crc, binary.LittleEndian.Uint32(pre[16:]))
	}
	h := &binHeader{version: version}
	if err := json.Unmarshal(head, h); err != nil {
		return nil, bad(graph.ErrFormat, "header is not valid JSON: %v", err)
	}
	if h.FileSize != size {
		if size < h.FileSize {
			return nil, bad(graph.ErrTruncated, "file is %d bytes but the header says %d: the file is truncated", size, h.FileSize)
		}
		return nil, bad(graph.ErrFormat, "file is %d bytes but the header says %d", size, h.FileSize)
	}
	return h, nil
}

// datasetFromMapping builds the dataset over the mapped file and checks it.
func datasetFromMapping(h *binHeader, data []byte, path string) (*graph.Dataset, error) {
	bad := func(kind error, format string, args ...any) error {
		return graph.FileErrorf(kind, path, 0, 0, "%s; %s", fmt.Sprintf(format, args...), convertHint)
	}
	if h.NumNodes < 0 || h.NumNodes > graph.MaxNodes || h.Rows != h.NumNodes || h.Cols != h.NumNodes ||
		h.NNZ < 0 || h.FeatDim < 0 || h.NumClasses < 0 || h.NumClasses > graph.MaxClasses {
		return nil, bad(graph.ErrFormat, "inconsistent header (nodes %d, graph %d x %d, nnz %d, feat_dim %d, classes %d)",
			h.NumNodes, h.Rows, h.Cols, h.NNZ, h.FeatDim, h.NumClasses)
	}
	secs := map[string]binSection{}
	for _, s := range h.Sections {
		sz := dtypeSize(s.DType)
		if sz == 0 || s.Count < 0 || s.Offset < binPrelude || s.Offset%8 != 0 ||
			s.Count > (math.MaxInt64-s.Offset)/sz || s.Offset+s.Count*sz > int64(len(data)) {
			return nil, bad(graph.ErrFormat, "section %q (dtype %q, offset %d, count %d) does not fit the %d-byte file",
				s.Name, s.DType, s.Offset, s.Count, len(data))
		}
		if _, dup := secs[s.Name]; dup {
			return nil, bad(graph.ErrFormat, "section %q listed twice", s.Name)
		}
		secs[s.Name] = s
	}
	get := func(name, dt string, count int64, required bool) (binSection, bool, error) {
		s, ok := secs[name]
		if !ok {
			if required {
				return s, false, bad(graph.ErrFormat, "section %q is missing", name)
			}
			return s, false, nil
		}
		if s.DType != dt || count >= 0 && s.Count != count {
			return s, false, bad(graph.ErrFormat, "section %q has dtype %s and %d elements, want %s and %d", name, s.DType, s.Count, dt, count)
		}
		return s, true, nil
	}
	n := h.NumNodes
	d := &graph.Dataset{Name: h.Name, NumNodes: int(n), FeatDim: int(h.FeatDim), NumClasses: int(h.NumClasses),
		Source: path, Citation: h.Citation}
	if h.Source != "" && h.Source != path {
		d.Source = path + convertedFrom + h.Source + ")"
	}
	g := &graph.CSR{NumRows: int(n), NumCols: int(n)}
	s, _, err := get("indptr", "i8", n+1, true)
	if err != nil {
		return nil, err
	}
	g.Indptr = viewSlice[int64](data, s)
	if s, ok, err := get("idx32", "i4", h.NNZ, false); err != nil {
		return nil, err
	} else if ok {
		g.Idx32 = viewSlice[int32](data, s)
	}
	if s, ok, err := get("idx64", "i8", h.NNZ, false); err != nil {
		return nil, err
	} else if ok {
		g.Idx64 = viewSlice[int64](data, s)
	}
	if (g.Idx32 == nil) == (g.Idx64 == nil) {
		return nil, bad(graph.ErrFormat, "exactly one of the sections \"idx32\" and \"idx64\" must be present")
	}
	if s, ok, err := get("values", "f4", h.NNZ, false); err != nil {
		return nil, err
	} else if ok {
		g.Values = viewSlice[float32](data, s)
	}
	if h.FeatDim > 0 && n > 0 && h.FeatDim > math.MaxInt64/n {
		return nil, bad(graph.ErrFormat, "feature matrix %d x %d overflows", n, h.FeatDim)
	}
	if s, _, err = get("features", "f4", n*h.FeatDim, true); err != nil {
		return nil, err
	}
	d.Features = viewSlice[float32](data, s)
	nl := int64(0)
	if h.HasLabels {
		nl = n
	}
	if s, _, err = get("labels", "i4", nl, true); err != nil {
		return nil, err
	}
	if h.HasLabels {
		d.Labels = viewSlice[int32](data, s)
	}
	for i, dst := range []*[]int32{&d.Train, &d.Valid, &d.Test} {
		s, _, err := get(graph.SplitName(i), "i4", -1, true)
		if err != nil {
			return nil, err
		}
		*dst = viewSlice[int32](data, s)
	}
	d.Graph = g
	if g.Indptr[0] != 0 || g.Indptr[n] != h.NNZ {
		return nil, bad(graph.ErrFormat, "indptr runs from %d to %d, want 0 to %d", g.Indptr[0], g.Indptr[n], h.NNZ)
	}
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w; %s", path, err, convertHint)
	}
	return d, nil
}

// viewSlice returns the section's elements as a slice aliasing data.
func viewSlice[T int32 | int64 | float32](data []byte, s binSection) []T {
	if s.Count == 0 {
		return []T{}
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&data[s.Offset])), s.Count)
}

// IsBinary reports whether the file at path starts with the binary graph
// magic (a special file, opened through the read gate, is not).
func IsBinary(path string) bool {
	f, _, err := safefile.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [8]byte
	_, err = io.ReadFull(f, b[:])
	return err == nil && string(b[:]) == binMagic
}

// binaryFormat is format.binary: a file written by WriteBinary.
type binaryFormat struct{}

func init() { registry.Register(&binaryFormat{}) }

func (*binaryFormat) StrataModule() registry.ModuleInfo {
	return graph.FormatInfo("binary", "strata's binary graph file (`strata convert`), memory-mapped; recognised by its magic whatever its name",
		func() *binaryFormat { return &binaryFormat{} })
}

// Detect takes a file with the magic, and a .strata file to report a
// bad one.
func (*binaryFormat) Detect(spec string, st fs.FileInfo) int {
	switch {
	case graph.IsFile(st) && IsBinary(spec):
		return graph.DetectContent
	case graph.IsFile(st) && graph.HasExt(spec, ".strata"):
		return graph.DetectSuffix
	}
	return 0
}

func (*binaryFormat) Open(spec string, o graph.LoadOptions) (*graph.Dataset, error) {
	d, _, err := openBinary(spec, o.Budget)
	return d, err
}

func (*binaryFormat) Supports() graph.Support {
	return graph.Support{Spec: "a .strata binary written by `strata convert`", Budget: true}
}
