//go:build cuda

package cuda

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"gorgonia.org/cu"

	"strata/core/backend"
	"strata/core/backend/argcheck"
	"strata/core/tensor"
	_ "strata/cuda/internal/preflight" // a clear message when there is no GPU
)

// Backend runs every op on one GPU. Kernels, copies and GEMMs go in order
// on one stream; the host waits for it only where it reads results
// (Download, the loss, index checks) or writes pinned memory the GPU may
// still be reading. Its memory accounting and staging buffer are safe for
// concurrent use.
type Backend struct {
	dev    cu.Device
	ctx    cu.CUContext
	stream cu.Stream
	blas   *blasHandle
	mod    cu.Module
	name   string

	devPool, hostPool *pool
	hostPtrs          sync.Map // device address → host pointer of pinned blocks

	fnMu sync.Mutex
	fns  map[string]cu.Function

	stageMu sync.Mutex
	stage   unsafe.Pointer // pinned staging buffer for Upload and Download
	stageD  uintptr

	errMu  sync.Mutex
	errBuf uintptr // one int32 on the device: the index-check flag
	ownDev int64   // device bytes the backend holds for itself (errBuf's block)

	memMu sync.Mutex
	inUse map[tensor.Tier]int64
	peak  map[tensor.Tier]int64
	live  map[tensor.Tier]int64 // allocations behind inUse

	heavy int64 // Options.HeavyRow

	linkOnce sync.Once // HostLinkGBps, measured on first use
	linkGBps float64
	linkErr  error

	chk argcheck.Checker[*Graph] // the operands of every op
}

var _ backend.Backend = (*Backend)(nil)

// stageBytes is the size of the pinned staging buffer; larger transfers
// go through it in pieces.
const stageBytes = 32 << 20

// buffer is the storage of a cuda tensor: device memory, or pinned host
// memory that kernels address through ptr.
type buffer struct {
	tier     tensor.Tier
	ptr      uintptr        // device-visible address; 0 for an empty tensor
	host     unsafe.Pointer // host address (host tier)
	class    int64          // pool size class
	bytes    int64
	released bool
}

func (b *buffer) Tier() tensor.Tier { return b.tier }

// New opens the device: a context, a stream, a cuBLAS handle bound to it
// and the kernel module.
func New(opts Options) (backend.Backend, error) { return Open(opts) }

// Open is New with the concrete type.
func Open(opts Options) (*Backend, error) {
	unlock := lockThread()
	defer unlock()
	n, err := cu.NumDevices()
	if err != nil {
		return nil, fmt.Errorf("cuda: counting devices: %w", err)
	}
	if opts.Device < 0 || opts.Device >= n {
		return nil, fmt.Errorf("cuda: device %d does not exist (%d found)", opts.Device, n)
	}
	if opts.HeavyRow < 0 {
		return nil, fmt.Errorf("cuda: HeavyRow = %d, want 0 (the default) or more", opts.HeavyRow)
	}
	b := &Backend{dev: cu.Device(opts.Device), fns: map[string]cu.Function{},
		inUse: map[tensor.Tier]int64{}, peak: map[tensor.Tier]int64{}, live: map[tensor.Tier]int64{},
		heavy: int64(opts.HeavyRow)}
	if b.heavy == 0 {
		b.heavy = 256
	}
	b.chk = argcheck.Checker[*Graph]{Name: "cuda", Live: liveErr, Graph: b.graphArg}
	if b.name, err = b.dev.Name(); err != nil {
		return nil, fmt.Errorf("cuda: device name: %w", err)
	}
	if b.ctx, err = b.dev.RetainPrimaryCtx(); err != nil {
		return nil, fmt.Errorf("cuda: primary context of device %d: %w", opts.Device, err)
	}
	if err := cu.SetCurrentContext(b.ctx); err != nil {
		return nil, fmt.Errorf("cuda: making the context current: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			b.Close()
		}
	}()
	if b.stream, err = cu.MakeStream(cu.NonBlocking); err != nil {
		return nil, fmt.Errorf("cuda: creating a stream: %w", err)
	}
	if b.blas, err = newBLAS(&b.stream); err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	if b.mod, err = cu.LoadData(ptx); err != nil {
		return nil, fmt.Errorf("cuda: loading the kernels (PTX for compute_80): %w", err)
	}
	limit := opts.MemoryBytes
	if limit == 0 {
		free, _, err := cu.MemInfo()
		if err != nil {
			return nil, fmt.Errorf("cuda: free memory: %w", err)
		}
		limit = free
	}
	b.devPool = newPool(limit, func(n int64) (uintptr, error) {
		p, err := cu.MemAlloc(n)
		return uintptr(p), err
	}, func(p uintptr) error { return cu.MemFree(cu.DevicePtr(p)) })
	b.hostPool = newPool(0, func(n int64) (uintptr, error) {
		h, d, err := hostAlloc(n)
		if err != nil {
			return 0, err
		}
		b.hostPtrs.Store(d, h)
		return d, nil
	}, func(d uintptr) error {
		h, _ := b.hostPtrs.LoadAndDelete(d)
		return hostFree(h.(unsafe.Pointer))
	})
	if b.stage, b.stageD, err = hostAlloc(stageBytes); err != nil {
		return nil, fmt.Errorf("cuda: pinned staging buffer: %w", err)
	}
	if b.errBuf, b.ownDev, err = b.devPool.get(4); err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	ok = true
	return b, nil
}

// lockThread pins the goroutine to its OS thread, where the context is
// made current.
func lockThread() func() {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}

// enter makes the backend's context current on this goroutine's thread
// until the returned function runs.
func (b *Backend) enter() func() {
	runtime.LockOSThread()
	if err := cu.SetCurrentContext(b.ctx); err != nil {
		panic(fmt.Sprintf("cuda: cuCtxSetCurrent: %v", err)) // the context outlives the backend's calls
	}
	return runtime.UnlockOSThread
}

// Close waits for the stream and frees every cached block, the staging
// buffer and the handles. Tensors still alive must not be used afterwards.
func (b *Backend) Close() error {
	defer b.enter()()
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	keep(b.stream.Synchronize())
	if b.stage != nil {
		keep(hostFree(b.stage))
		b.stage = nil
	}
	if b.devPool != nil {
		keep(b.devPool.trim())
	}
	if b.hostPool != nil {
		keep(b.hostPool.trim())
	}
	if b.blas != nil {
		keep(b.blas.close())
		b.blas = nil
	}
	keep(b.stream.Destroy())
	keep(b.dev.ReleasePrimaryCtx())
	return first
}

// Name returns "cuda".
func (b *Backend) Name() string { return "cuda" }

// DeviceName returns the GPU's name, e.g. "NVIDIA H100 80GB HBM3".
func (b *Backend) DeviceName() string { return b.name }

// Tiers lists the host (pinned) and the device.
func (b *Backend) Tiers() []tensor.Tier { return []tensor.Tier{tensor.Host, DeviceTier} }

// ComputeTier is where the engine keeps a model's tensors.
func (b *Backend) ComputeTier() tensor.Tier { return DeviceTier }

// PoolStats reports the device and host caching allocators.
func (b *Backend) PoolStats() (device, host PoolStats) { return b.devPool.Stats(), b.hostPool.Stats() }

func (b *Backend) poolOf(tier tensor.Tier) (*pool, error) {
	switch tier {
	case DeviceTier:
		return b.devPool, nil
	case tensor.Host:
		return b.hostPool, nil
	}
	return nil, fmt.Errorf("cuda: tier %q is not available (tiers: %v)", tier, b.Tiers())
}

// account adds delta bytes in use to tier, in blocks allocations
// (negative when released).
func (b *Backend) account(tier tensor.Tier, delta, blocks int64) {
	b.memMu.Lock()
	defer b.memMu.Unlock()
	b.inUse[tier] += delta
	b.live[tier] += blocks
	b.peak[tier] = max(b.peak[tier], b.inUse[tier])
}

// Stats reports the bytes of live tensors and graphs per tier and their
// peak (cached blocks are not in use: see PoolStats).
func (b *Backend) Stats() backend.Stats {
	b.memMu.Lock()
	defer b.memMu.Unlock()
	s := backend.Stats{InUse: map[tensor.Tier]int64{}, Peak: map[tensor.Tier]int64{}}
	for _, t := range b.Tiers() {
		s.InUse[t], s.Peak[t] = b.inUse[t], b.peak[t]
	}
	return s
}

// ResetPeak sets every tier's peak to its current use.
func (b *Backend) ResetPeak() {
	b.memMu.Lock()
	defer b.memMu.Unlock()
	for t, v := range b.inUse {
		b.peak[t] = v
	}
}

// allocRaw returns a zero-filled block of n bytes in tier.
func (b *Backend) allocRaw(tier tensor.Tier, n int64) (*buffer, error) {
	bf := &buffer{tier: tier, bytes: n}
	if n == 0 {
		return bf, nil
	}
	p, err := b.poolOf(tier)
	if err != nil {
		return nil, err
	}
	if bf.ptr, bf.class, err = p.get(n); err != nil {
		return nil, fmt.Errorf("cuda: allocating %d bytes in %s: %w", n, tier, err)
	}
	if tier == tensor.Host {
		h, _ := b.hostPtrs.Load(bf.ptr)
		bf.host = h.(unsafe.Pointer)
		if err := b.stream.Synchronize(); err != nil { // the block may have been in flight
			p.put(bf.ptr, bf.class)
			return nil, fmt.Errorf("cuda: %w", err)
		}
		clear(unsafe.Slice((*byte)(bf.host), n))
	} else if err := cu.MemsetD8Async(cu.DevicePtr(bf.ptr), 0, n, b.stream); err != nil {
		p.put(bf.ptr, bf.class)
		return nil, fmt.Errorf("cuda: zeroing %d bytes: %w", n, err)
	}
	b.account(tier, n, 1)
	return bf, nil
}

var _ backend.PinnedHost = (*Backend)(nil)

// AllocPinned implements backend.PinnedHost: n zeroed bytes of pinned,
// mapped host memory from the host pool, counted in the host tier.
func (b *Backend) AllocPinned(n int64) ([]byte, func(), error) {
	defer b.enter()()
	bf, err := b.allocRaw(tensor.Host, n)
	if err != nil {
		return nil, nil, err
	}
	release := func() { b.releaseRaw(bf) }
	if n == 0 {
		return nil, release, nil
	}
	return unsafe.Slice((*byte)(bf.host), n), release, nil
}

func (b *Backend) releaseRaw(bf *buffer) {
	if bf == nil || bf.released {
		return
	}
	bf.released = true
	if bf.ptr != 0 {
		p, _ := b.poolOf(bf.tier)
		p.put(bf.ptr, bf.class)
		b.account(bf.tier, -bf.bytes, -1)
	}
}

// Alloc returns a zero-filled tensor in the device or pinned host memory.
func (b *Backend) Alloc(dt tensor.DType, shape []int, tier tensor.Tier) (*tensor.Tensor, error) {
	if dt.Size() == 0 {
		return nil, errf("Alloc", "unknown dtype %v", dt)
	}
	n := int64(dt.Size())
	for _, d := range shape {
		if d < 0 {
			return nil, errf("Alloc", "negative dimension in shape %v", shape)
		}
		n *= int64(d)
	}
	defer b.enter()()
	bf, err := b.allocRaw(tier, n)
	if err != nil {
		return nil, err
	}
	return tensor.New(dt, shape, bf), nil
}

// Release returns the tensor's block to the cache. Work already queued on
// the stream that reads it still sees its contents: the next user of the
// block is queued after it.
func (b *Backend) Release(t *tensor.Tensor) {
	if t == nil {
		return
	}
	if bf, ok := t.Buffer().(*buffer); ok {
		b.releaseRaw(bf)
	}
}

// hostBytes views a host slice ([]float32, []float64, []int32, []int64)
// as bytes and returns its dtype.
func hostBytes(s any) ([]byte, tensor.DType, bool) {
	switch v := s.(type) {
	case []float32:
		return bytesOf(v), tensor.Float32, true
	case []float64:
		return bytesOf(v), tensor.Float64, true
	case []int32:
		return bytesOf(v), tensor.Int32, true
	case []int64:
		return bytesOf(v), tensor.Int64, true
	}
	return nil, 0, false
}

func bytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(z)))
}

// Upload copies host data into t through the pinned staging buffer (or
// straight into t's pinned memory in the host tier).
func (b *Backend) Upload(t *tensor.Tensor, src any) error {
	const op = "Upload"
	bf, err := live(op, "t", t)
	if err != nil {
		return err
	}
	data, dt, ok := hostBytes(src)
	if !ok {
		return errf(op, "source is %T, want []float32, []float64, []int32 or []int64", src)
	}
	if dt != t.DType() || int64(len(data)) != t.Bytes() {
		return errf(op, "source is %v of %d elements, tensor %v", dt, len(data)/max(dt.Size(), 1), t)
	}
	defer b.enter()()
	return b.toDevice(bf, 0, data)
}

// toDevice writes data at byte offset off of bf.
func (b *Backend) toDevice(bf *buffer, off int64, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	if err := b.stream.Synchronize(); err != nil { // pinned memory may still be read by the GPU
		return fmt.Errorf("cuda: %w", err)
	}
	if bf.tier == tensor.Host {
		copy(unsafe.Slice((*byte)(unsafe.Add(bf.host, off)), len(data)), data)
		return nil
	}
	b.stageMu.Lock()
	defer b.stageMu.Unlock()
	stage := unsafe.Slice((*byte)(b.stage), stageBytes)
	for len(data) > 0 {
		n := copy(stage, data)
		if err := cu.MemcpyHtoDAsync(cu.DevicePtr(bf.ptr+uintptr(off)), b.stage, int64(n), b.stream); err != nil {
			return fmt.Errorf("cuda: host to device: %w", err)
		}
		if err := b.stream.Synchronize(); err != nil {
			return fmt.Errorf("cuda: host to device: %w", err)
		}
		data, off = data[n:], off+int64(n)
	}
	return nil
}

// fromDevice reads len(dst) bytes at byte offset off of bf, after the
// stream has finished.
func (b *Backend) fromDevice(bf *buffer, off int64, dst []byte) error {
	if err := b.stream.Synchronize(); err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	if len(dst) == 0 {
		return nil
	}
	if bf.tier == tensor.Host {
		copy(dst, unsafe.Slice((*byte)(unsafe.Add(bf.host, off)), len(dst)))
		return nil
	}
	b.stageMu.Lock()
	defer b.stageMu.Unlock()
	stage := unsafe.Slice((*byte)(b.stage), stageBytes)
	for len(dst) > 0 {
		n := min(len(dst), stageBytes)
		if err := cu.MemcpyDtoHAsync(b.stage, cu.DevicePtr(bf.ptr+uintptr(off)), int64(n), b.stream); err != nil {
			return fmt.Errorf("cuda: device to host: %w", err)
		}
		if err := b.stream.Synchronize(); err != nil {
			return fmt.Errorf("cuda: device to host: %w", err)
		}
		copy(dst, stage[:n])
		dst, off = dst[n:], off+int64(n)
	}
	return nil
}

// Download copies t into dst after the stream has finished.
func (b *Backend) Download(t *tensor.Tensor, dst any) error {
	const op = "Download"
	bf, err := live(op, "t", t)
	if err != nil {
		return err
	}
	data, dt, ok := hostBytes(dst)
	if !ok {
		return errf(op, "destination is %T, want []float32, []float64, []int32 or []int64", dst)
	}
	if dt != t.DType() || int64(len(data)) != t.Bytes() {
		return errf(op, "destination is %v of %d elements, tensor %v", dt, len(data)/max(dt.Size(), 1), t)
	}
	defer b.enter()()
	return b.fromDevice(bf, 0, data)
}

// Copy queues a copy between any two tiers: device to device, or a DMA
// between the device and pinned host memory.
func (b *Backend) Copy(dst, src *tensor.Tensor) error {
	if err := b.chk.Copy(dst, src); err != nil {
		return err
	}
	db, sb := dst.Buffer().(*buffer), src.Buffer().(*buffer)
	if db == sb || src.Bytes() == 0 {
		return nil
	}
	defer b.enter()()
	if err := cu.MemcpyAsync(cu.DevicePtr(db.ptr), cu.DevicePtr(sb.ptr), src.Bytes(), b.stream); err != nil {
		return fmt.Errorf("cuda: copy %s to %s: %w", src.Tier(), dst.Tier(), err)
	}
	return nil
}

// Synchronize waits until every queued operation has finished.
func (b *Backend) Synchronize() error {
	defer b.enter()()
	return b.stream.Synchronize()
}

// ReadsHostInPlace reports that kernels read host-tier (pinned, mapped)
// tensors in place, so the feature store gathers cold rows without a
// staging copy (store.HostReader).
func (b *Backend) ReadsHostInPlace() bool { return true }
