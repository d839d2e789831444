package chunked

import (
	"fmt"

	"strata/core/graph"
	"strata/plugins/strategy/internal/hosttier"
)

// The host file's traffic (chunked.host_file). An epoch must move, at
// the least, every matrix that one pass leaves on the host tier for a
// later pass: written once, and read once by every pass that reads it
// (docs/hongtu.md, "Disk traffic of an epoch"). With N nodes, layer
// widths w_0 (the features) … w_L (the classes), s bytes a value,
// R_l = 1 when layer l's backward reads its input rows (recomputed
// intermediates, or a backward that reads its input) and N_T the
// destinations of the chunks with training nodes:
//
//	written = Σ_{l=1}^{L-1} 2·N·w_l·s + N_T·w_L·s + K + Σ_{l∈P} 2·N·c_l·s
//	read    = Σ_{l=1}^{L-1} (2 + R_l)·N·w_l·s + N_T·w_L·s + K + Σ_{l∈P} (2 + R'_l)·N·c_l·s
//
// where K = Σ N·a·s over the aggregation outputs of width a that layers
// with split intermediates keep in the file (written by the forward,
// read by the backward; R_l is then whether the split reloads inputs).
// The hidden activations h_l are written by forward l−1, read by
// forward l and again by backward l when R_l; their gradients dh_l are
// written by backward l and read by backward l−1; the loss gradient
// dh_L is written by the last forward and read by the last backward.
// A layer whose row-wise prefix runs once per node (chunked.premultiply,
// premul.go) adds its cut z_l of width c_l and z_l's gradient: written
// 2·N·c_l·s (z by the forward node pass, dz by the chunks' backward) and
// read (2 + R'_l)·N·c_l·s (z by the chunks' forward, dz by the backward
// node pass, z again by the chunks' backward when it reloads its input,
// R'_l as R_l); its R_l is 1: the backward node pass reruns the prefix
// from h_l (dW = h_lᵀ·dz, through the prefix's dropout).
// A first layer whose aggregation of the features is computed once
// (chunked.precompute, precompute.go) adds that matrix a_0 of width c_0:
// read (1 + R''_0)·N·c_0·s by the layer's forward node pass and, when the
// rest's backward reads its input (dW = a_0ᵀ·dh'), by its backward node
// pass; it is written before the first epoch, not by an epoch. When
// that pass and layer 1's prefix run as one (fuse.go), h_1 and dh_1
// leave the sums and a_0 is read twice (R''_0 = 1). The node passes' z_l
// and dz_l are kept in RAM when they fit an eighth of the memory budget
// (preRAMShare): their terms then leave the sums too.
// The features are not in the host file: they are read from the dataset,
// at least once (N·w_0·4 bytes of float32 rows), and with a precomputed
// first aggregation only before the first epoch.

// HostFileFigures are an epoch's bytes through chunked.host_file: the
// least the schedule needs and what the last epoch read and wrote.
type HostFileFigures struct {
	MinReadBytes    int64 `json:"min_read_bytes" doc:"the least bytes an epoch reads from the host file: each hidden activation once per pass that reads it, each gradient once (docs/hongtu.md)"`
	MinWrittenBytes int64 `json:"min_written_bytes" doc:"the least bytes an epoch writes to the host file: each hidden activation and each gradient once"`
	ReadBytes       int64 `json:"read_bytes" doc:"bytes the last epoch read from the host file and its log of gradient additions (every pread)"`
	WrittenBytes    int64 `json:"written_bytes" doc:"bytes the last epoch wrote to the host file and its log of gradient additions (every pwrite)"`
	FeatureBytes    int64 `json:"feature_bytes" doc:"the features' bytes (float32 rows), read from the dataset rather than the host file: at least once an epoch from disk when the dataset is a file not in the page cache (with chunked.precompute, once before the first epoch)"`
	AddCacheBytes   int64 `json:"add_cache_bytes" doc:"the most bytes of vertex-gradient rows the run held in RAM at once while adding into them (at most an eighth of the --max-memory budget; the rest go through the log of additions)"`
	RAMBytes        int64 `json:"ram_bytes,omitempty" doc:"bytes of the host tier kept in RAM beside the file: the node passes' z and dz, which the chunks gather row by row, when they fit an eighth of the --max-memory budget"`
}

// minDiskBytes returns the least bytes an epoch reads from and writes to
// the host file (see HostFileFigures).
func (r *chunkedRun) minDiskBytes() (read, written int64) {
	n := int64(r.e.DS.NumNodes)
	s := int64(r.e.DT.Size())
	last := len(r.layers)
	for l := 1; l < last; l++ {
		if r.inFused(l) {
			continue // h_l and dh_l stay inside the fused node pass
		}
		m := n * int64(r.widths[l]) * s
		written += 2 * m // h_l and dh_l
		read += 2 * m    // h_l by forward l, dh_l by backward l-1
		if r.rereadsInput(l) {
			read += m // h_l again by backward l (its destinations' rows: all rows once)
		}
	}
	for l := range r.layers {
		if !r.isPre(l) || r.preInRAM {
			continue
		}
		z := n * int64(r.pre[l].width) * s
		written += 2 * z // z_l and dz_l
		read += 2 * z    // z_l by forward l, dz_l by the backward node pass
		if r.reloadsChunkRows(l) {
			read += z
		}
	}
	if r.fixed != nil {
		a := n * int64(r.fixed.width) * s
		read += a // by layer 0's forward node pass
		if r.fused != nil || backwardReadsInput(r.fixed.rest) {
			read += a // and by its backward node pass (fused: it reruns layer 0's rest)
		}
	}
	var nt int64 // destinations of the chunks with training nodes
	for _, c := range r.plan.Chunks {
		if len(c.Train) > 0 {
			nt += int64(len(c.Dst))
		}
	}
	loss := nt * int64(r.widths[last]) * s
	var kept int64 // the split layers' aggregations, written by forward, read by backward
	for _, w := range r.keptFileWidths() {
		kept += n * int64(w) * s
	}
	return read + loss + kept, written + loss + kept
}

// readsInputBack reports whether layer l's backward pass over the
// chunks loads their input rows again.
func (r *chunkedRun) readsInputBack(l int) bool {
	if r.isSplit(l) {
		return r.split[l].NeedsInput
	}
	return !r.cache[l] || r.needIn[l]
}

// reloadsChunkRows reports whether layer l's backward pass over the
// chunks reads rows of their input (all, or the destinations').
func (r *chunkedRun) reloadsChunkRows(l int) bool {
	return r.readsInputBack(l) || r.isSplit(l) && r.split[l].DstRows
}

// rereadsInput reports whether layer l's backward reads h_l: its node
// pass always does (it reruns the prefix from h_l, whose product's
// weight gradient h_lᵀ·dz reads the input through the dropout before
// it), else its chunks when they reload their rows.
func (r *chunkedRun) rereadsInput(l int) bool {
	return r.isPre(l) || r.reloadsChunkRows(l)
}

// hostFileFigures returns the host file's figures (nil without one).
func (r *chunkedRun) hostFileFigures() *HostFileFigures {
	if r.io == nil {
		return nil
	}
	minRead, minWritten := r.minDiskBytes()
	return &HostFileFigures{MinReadBytes: minRead, MinWrittenBytes: minWritten, ReadBytes: r.disk[0], WrittenBytes: r.disk[1],
		FeatureBytes: int64(r.e.DS.NumNodes) * int64(r.e.Dim) * 4, AddCacheBytes: r.addLog.CacheBytes(), RAMBytes: r.ramBytes()}
}

// ramBytes is the bytes of the host tier kept in RAM beside the host
// file (preInRAM).
func (r *chunkedRun) ramBytes() int64 {
	if !r.preInRAM {
		return 0
	}
	return hosttier.Bytes(r.e.DT, r.e.DS.NumNodes, r.preWidths())
}

// announceDisk is the announcement's line on the host file's traffic
// ("" without one).
func (r *chunkedRun) announceDisk() string {
	if r.io == nil {
		return ""
	}
	read, written := r.minDiskBytes()
	when := "come from the dataset"
	if r.fixed != nil {
		when = "are read from the dataset once, before the first epoch"
	}
	ram := ""
	if r.preInRAM {
		ram = fmt.Sprintf("; the node passes' z and dz (%s) are kept in RAM", graph.FormatBytes(r.ramBytes()))
	}
	return fmt.Sprintf("\nchunked: host file: an epoch reads at least %s and writes at least %s of it (the features, %s, %s); vertex gradients are added in RAM up to %s (1/%d of --max-memory), beyond it through a log%s",
		graph.FormatBytes(read), graph.FormatBytes(written), graph.FormatBytes(int64(r.e.DS.NumNodes)*int64(r.e.Dim)*4), when, graph.FormatBytes(r.cacheMax), addCacheShare, ram)
}
