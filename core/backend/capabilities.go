package backend

import (
	"strata/core/graph"
	"strata/core/tensor"
	"strata/core/topology"
)

// What a backend offers beyond Backend is reached through the small
// capability interfaces below, never through a type assertion to a
// concrete backend. A strategy asks for what it needs (several devices,
// byte counts, predicted times) and works, with less to report, on a
// backend that lacks it.

// Purposes under which a backend that counts its transfers (Purposes)
// files them.
const (
	PurposeFeatures    = "features"
	PurposeTopology    = "topology"
	PurposeActivations = "activations"
	PurposeGradients   = "gradients"
	PurposeParameters  = "parameters"
	PurposeLabels      = "labels"
	PurposeOther       = "other"
)

// Purposes is implemented by backends that label what they move and
// compute by purpose. ForPurpose returns a view that shares the backend's
// memory, tensors and counters and files its work under p, so two
// goroutines never mislabel each other's bytes.
type Purposes interface {
	ForPurpose(p string) Backend
}

// ForPurpose returns be's view for purpose p, or be itself when it does
// not count by purpose.
func ForPurpose(be Backend, p string) Backend {
	if v, ok := be.(Purposes); ok {
		return v.ForPurpose(p)
	}
	return be
}

// Device is implemented by backends whose kernels run on a device rather
// than the host: the engine keeps a model's parameters and activations in
// ComputeTier.
type Device interface {
	ComputeTier() tensor.Tier
}

// MultiDevice is implemented by backends with several devices that can
// each train a replica: DeviceTiers lists their compute tiers in order
// (the first is ComputeTier).
type MultiDevice interface {
	DeviceTiers() []tensor.Tier
}

// Machine is implemented by backends that describe the machine they run
// on (links, capacities, rooflines): placement solvers and cost models
// read it.
type Machine interface {
	Topology() topology.Topology
}

// LinkTraffic is the bytes that crossed one link and the time the link's
// bandwidth predicts for them.
type LinkTraffic struct {
	Link    string  `json:"link"`
	Bytes   int64   `json:"bytes"`
	GBps    float64 `json:"gbps"`
	Seconds float64 `json:"seconds"`
}

// TrafficCounter is implemented by backends that count every byte that
// crosses a link.
type TrafficCounter interface {
	// Traffic returns the traffic of every link used so far, sorted by link.
	Traffic() []LinkTraffic
	// TrafficByPurpose returns the bytes moved under each purpose, over
	// all links (a transfer routed through the host counts once).
	TrafficByPurpose() map[string]int64
}

// Peeker is implemented by backends that count link traffic: Peek copies
// t into host memory, as Download does, for an observation of the run (a
// figure it reports, such as the validation loss in output.csv) that is
// not part of the modelled workload, so the copy is left uncounted and
// what a run reports never depends on what it records.
type Peeker interface {
	Peek(t *tensor.Tensor, dst any) error
}

// KernelCost predicts the device time of a kernel. Its op codes and inputs
// are those of the roofline cost model (models/costmodels/roofline): in[0..3]
// describe the device (GFLOP/s, GB/s, launch µs, bytes per element) and
// in[4..] the kernel's sizes; out[0] is seconds.
type KernelCost interface {
	Predict(op int32, in []float64) ([4]float64, error)
}

// Predicted is the time a simulated machine would have spent so far,
// split by purpose: the critical path of each purpose's transfers (links
// running in parallel; reading the prediction waits for the transfers
// issued so far), and kernel seconds per
// device and purpose (the purpose of the view that ran the kernel). A
// pipeline tells its stages apart this way.
type Predicted struct {
	TransferS map[string]float64
	KernelS   map[tensor.Tier]map[string]float64
}

// TimePredictor is implemented by backends that predict the time of the
// machine they simulate: transfers from link bandwidths, kernels from a
// cost model.
type TimePredictor interface {
	// SetKernelCost makes the backend price every device kernel with c.
	// Set it before the backend is used.
	SetKernelCost(c KernelCost)
	// Predicted returns the predictions so far.
	Predicted() Predicted
}

// BusyCounter is implemented by backends that predict time per device:
// DeviceBusy returns, for device i, the predicted seconds it has been busy
// so far: its kernels, and the transfers that reach it (from the host or
// a peer) or leave it for the host, each at its link's bandwidth. Reading
// it is no barrier (unlike TimePredictor.Predicted), so a strategy may
// read it at its own synchronisation points.
type BusyCounter interface {
	DeviceBusy() []float64
}

// InPlaceReads is implemented by backends that count the bytes a kernel on
// one tier reads in place from memory on another (unified virtual
// addressing: XGNN's samplers read remote topology this way), without a
// tensor copy: the bytes cross the link holder -> reader like a transfer.
type InPlaceReads interface {
	CountRead(holder, reader tensor.Tier, bytes int64) error
}

// DeviceDescriber is implemented by a backend on a real accelerator that
// describes it to the cost models, as a simulated machine's Topology
// does: the device's roofline from its attributes, and the host link's
// bandwidth, measured.
type DeviceDescriber interface {
	DeviceRoofline() (topology.DeviceSpec, error)
	HostLinkGBps() (float64, error)
}

// MemoryCapacity is implemented by device backends whose memory is
// bounded and that say how much of it they hold: a strategy sizes its
// batches to what is left (strategy.micro's micro_batches = "auto" on
// the cuda backend; a simulated machine describes its capacities by
// Machine's Topology instead).
type MemoryCapacity interface {
	// DeviceMemory returns the state of tier's memory now; an error for
	// a tier whose memory is not bounded (pinned host memory).
	DeviceMemory(tier tensor.Tier) (DeviceMemory, error)
	// RoundingSlack bounds the bytes the backend's allocator adds to
	// requests, rounding each up to its block size, when n requests of
	// bytes in all are live: the bytes they hold are at most
	// bytes + RoundingSlack(bytes, n).
	RoundingSlack(bytes, n int64) int64
}

// DeviceMemory is the state of a device tier's memory (MemoryCapacity).
type DeviceMemory struct {
	// Limit is the most bytes the backend holds in the tier: the
	// device's free memory when the backend opened it, or its cap.
	Limit int64
	// InUse is the bytes of the live tensors and graphs (Stats().InUse),
	// Live how many allocations hold them.
	InUse, Live int64
	// GraphAllocations is the most allocations an uploaded graph holds
	// (its CSR, transpose and auxiliary arrays); CallAllocations the most
	// temporaries one call of an op holds at once.
	GraphAllocations, CallAllocations int64
}

// PeakResetter is implemented by backends that can start a new peak
// memory measurement: every tier's peak becomes its current use.
type PeakResetter interface {
	ResetPeak()
}

// Recycler is implemented by backends that can keep the storage of
// released tensors for reuse, outside the garbage-collected heap.
// AllocRecycled is Alloc (zero-filled) with storage from that pool on a
// view returned by Recycling, and plain Alloc on the backend itself: the
// caller must Release the tensor, since the garbage collector does not
// reclaim pooled storage, and must not use it afterwards. Engine programs
// allocate their buffers this way; HyScale's CPU trainers bind theirs on
// a recycling view (a step's program reuses the memory of the step
// before, whatever the Go heap's state).
type Recycler interface {
	AllocRecycled(dt tensor.DType, shape []int, tier tensor.Tier) (*tensor.Tensor, error)
	Recycling() Backend
}

// Recycling returns be's recycling view (Recycler), or be.
func Recycling(be Backend) Backend {
	if r, ok := be.(Recycler); ok {
		return r.Recycling()
	}
	return be
}

// FitRecycler is implemented by recycling backends (Recycler) whose pool
// can serve an allocation from a larger free region: the view that
// RecyclingFit returns recycles as Recycling's does, and also takes free
// storage of up to twice an allocation's size. It is for a phase whose
// buffers vary in size from one step to the next within a bounded range
// (chunked training's chunks), where Recycling's few percent of slack
// would map new storage at almost every step.
type FitRecycler interface {
	RecyclingFit() Backend
}

// RecyclingFit returns be's RecyclingFit view (FitRecycler), or
// Recycling(be).
func RecyclingFit(be Backend) Backend {
	if r, ok := be.(FitRecycler); ok {
		return r.RecyclingFit()
	}
	return Recycling(be)
}

// ScratchAllocator is implemented by backends whose recycled storage
// (Recycler) can be handed out without clearing it: AllocScratch is
// AllocRecycled whose contents are undefined (what the storage's last
// tensor left), for a buffer that the caller overwrites entirely before
// reading it (a Gather, Upload or Copy destination). The same rules hold:
// the caller releases it and does not use it afterwards.
type ScratchAllocator interface {
	AllocScratch(dt tensor.DType, shape []int, tier tensor.Tier) (*tensor.Tensor, error)
}

// AllocScratch allocates a tensor whose contents the caller overwrites
// before reading: be's AllocScratch (ScratchAllocator), or Alloc.
func AllocScratch(be Backend, dt tensor.DType, shape []int, tier tensor.Tier) (*tensor.Tensor, error) {
	if s, ok := be.(ScratchAllocator); ok {
		return s.AllocScratch(dt, shape, tier)
	}
	return be.Alloc(dt, shape, tier)
}

// RowCopier is implemented by host backends, whose tensors are host
// memory: rows move between tensors, and between tensors and host
// buffers ([]float32 or []float64 of the tensor's dtype), by index lists
// held on the host, in one call, without uploading the indices (a device
// backend's Gather and ScatterAdd take them as tensors) and without
// clearing the destination. CopyRows sets y[to[i],:] = x[from[i],:],
// AddRows adds x[from[i],:] into y[to[i],:] (ScatterAdd's sums: the rows
// to are distinct), UploadRows sets y[to[i],:] to row i of src, and
// DownloadRows sets row i of dst to x[from[i],:]. A nil from or to is
// the identity, i. HostData returns a float tensor's storage itself (a
// []float32 or []float64, row-major), for a caller that fills or reads
// rows in place (a host tier reading rows from its file straight into
// a chunk's buffer) while the tensor is live.
type RowCopier interface {
	CopyRows(x *tensor.Tensor, from []int32, y *tensor.Tensor, to []int32) error
	AddRows(x *tensor.Tensor, from []int32, y *tensor.Tensor, to []int32) error
	UploadRows(src any, y *tensor.Tensor, to []int32) error
	DownloadRows(x *tensor.Tensor, from []int32, dst any) error
	HostData(x *tensor.Tensor) (any, error)
}

// RowViewer is implemented by backends that can view some rows of a
// tensor in place (the cpu backend): RowView returns rows [lo, hi) of t
// on t's storage, never to be released. The engine reads a block's
// destinations there when they are not its first sources
// (engine.Env.DstFirst).
type RowViewer interface {
	RowView(t *tensor.Tensor, lo, hi int) (*tensor.Tensor, error)
}

// PoolTrimmer is implemented by backends that keep released storage for
// reuse (Recycler): TrimPool gives it back to the operating system, so
// that a phase with other shapes (an evaluation after training steps)
// does not hold both sets at once.
type PoolTrimmer interface {
	TrimPool()
}

// Named is implemented by backends that run on a named device (a GPU).
type Named interface {
	DeviceName() string
}

// Threaded is implemented by host backends whose calls can run on a
// chosen number of threads: WithThreads returns a view that shares the
// backend's memory and tensors and runs each call on n threads (HyScale's
// balance thread gives CPU training more or fewer threads between steps).
type Threaded interface {
	WithThreads(n int) Backend
}

// PinnedHost is implemented by device backends that allocate page-locked
// host memory, which the device reads and writes by DMA (cuda:
// cuMemHostAlloc). Chunked training keeps its host tier there, as HongTu
// does. AllocPinned returns n zeroed bytes, counted in the backend's host
// tier, and the function that frees them.
type PinnedHost interface {
	AllocPinned(n int64) ([]byte, func(), error)
}

// SparseInputs is implemented by backends that multiply a sparse constant
// operand (a program's input features: bag-of-words rows, ~1% non-zero)
// through their SpMM kernels rather than GEMM. The engine asks for it at
// Bind (engine's sparse.go): where the input takes no gradient and is
// sparse enough, the first layer's x·W runs as SpMM over x's non-zeros,
// and its weight gradient xᵀ·dy as the transposed SpMM. A backend
// without it, or one whose SparseInputDensity is 0, multiplies densely.
type SparseInputs interface {
	// SparseInputDensity is the largest share of non-zero elements of a
	// rows×k input at which the product with a k×n weight (x·W, and
	// xᵀ·dy for its gradient) runs faster over the non-zeros than as
	// GEMM on this backend; 0 means never.
	SparseInputDensity(rows, k, n int) float64
	// SparseInput returns the non-zero entries of the matrix x (Float32,
	// Float64, or 16-bit rows, whose entries are their float32 values),
	// held in tier, x's own, when there are at most maxNNZ of them, and
	// ok false (nothing held) otherwise.
	SparseInput(x *tensor.Tensor, maxNNZ int64, tier tensor.Tier) (m SparseMatrix, ok bool, err error)
}

// SparseMatrix is a matrix held by its non-zero entries: Adj has one
// edge c → r per entry (r, c) (rows × cols of the matrix), Host is its
// structure on the host (no values) and Values [E,1] the entries in the
// matrix's float dtype, in Adj's edge order, to pass as SpMM's edge weights:
// SpMM(Adj, false, Values, w) is x·w and SpMM(Adj, true, Values, dy) is
// xᵀ·dy. Release frees both.
type SparseMatrix struct {
	Adj    Adj
	Host   *graph.CSR
	Values *tensor.Tensor
}

// TierGatherer is implemented by backends that gather rows from several
// tiers in one kernel (data tiering's Listing 1): every thread reads its
// row from whichever tier holds it, its own device memory, a peer
// device's over the peer link, or pinned host memory in place
// (zero-copy), and writes it to the output. The rows are copies, so the
// result is bitwise the rows.
type TierGatherer interface {
	// GathersFrom reports whether GatherTiers writing into tier dst can
	// read a source held in tier src in place.
	GathersFrom(src, dst tensor.Tier) bool
	// GatherTiers writes out[i,:] = row idx[i] of the concatenation of
	// srcs (the rows of srcs[0], then those of srcs[1], ...; Listing 1's
	// combined tensor). out and idx (Int32, one entry per row of out)
	// are in one tier, every source in a tier GathersFrom accepts for
	// it; the sources have out's dtype and columns.
	GatherTiers(srcs []*tensor.Tensor, idx, out *tensor.Tensor) error
}
