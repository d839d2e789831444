package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"strata/core/backend"
	"strata/core/graph"
	"strata/core/tensor"
)

// The tiers: every tensor and adjacency of the simulated backend wraps the
// handle of the inner backend of its tier and carries the tier's label.

// buffer is a simulated tensor's storage: the inner backend's tensor, and
// that backend.
type buffer struct {
	inner *tensor.Tensor
	tier  tensor.Tier
	on    backend.Backend // the tier's inner backend
}

// Tier returns the tier's label ("host", "device0", ...).
func (bf *buffer) Tier() tensor.Tier { return bf.tier }

// adj is an adjacency on a simulated tier: the inner backend's.
type adj struct {
	backend.Adj
	tier tensor.Tier
}

// Tier returns the tier's label.
func (a *adj) Tier() tensor.Tier { return a.tier }

// unwrap returns the inner backend's handle of t; nil and tensors of other
// backends pass unchanged (the inner backend rejects the latter).
func unwrap(t *tensor.Tensor) *tensor.Tensor {
	if t == nil {
		return nil
	}
	if bf, ok := t.Buffer().(*buffer); ok {
		if in := bf.inner; !slices.Equal(in.Shape(), t.Shape()) {
			// a view of the leading rows (tensor.Prefix) or a reshape
			return tensor.New(in.DType(), t.Shape(), in.Buffer())
		}
		return bf.inner
	}
	return t
}

// unwrapAdj returns the inner backend's adjacency of a.
func unwrapAdj(a backend.Adj) backend.Adj {
	if w, ok := a.(*adj); ok && w != nil {
		return w.Adj
	}
	return a
}

// wrap labels a tensor of the tier's inner backend with the tier.
func (b *Backend) wrap(t *tensor.Tensor, tier tensor.Tier) *tensor.Tensor {
	return tensor.New(t.DType(), t.Shape(), &buffer{inner: t, tier: tier, on: b.inner[tier]})
}

// at returns the inner backend of a tier.
func (b *Backend) at(op string, tier tensor.Tier) (backend.Backend, error) {
	if in, ok := b.inner[tier]; ok {
		return in, nil
	}
	return nil, fmt.Errorf("sim: %s: tier %q is not available (tiers: %v)", op, tier, b.tiers)
}

// of returns the inner backend of t's tier, or the host's for nil and
// foreign tensors (which the inner backend then rejects).
func (b *Backend) of(t *tensor.Tensor) backend.Backend {
	if t != nil {
		if bf, ok := t.Buffer().(*buffer); ok {
			return bf.on
		}
	}
	return b.inner[tensor.Host]
}

// on checks that the tensor operands of a kernel share a tier and returns
// that tier and its inner backend. names lists the operands' names,
// space-separated; nil operands are left to the inner backend.
func (b *Backend) on(op, names string, ts ...*tensor.Tensor) (backend.Backend, tensor.Tier, error) {
	first := -1
	for i, t := range ts {
		if t == nil || t.Buffer() == nil {
			continue
		}
		if first < 0 {
			first = i
			continue
		}
		if t.Tier() != ts[first].Tier() {
			ns := strings.Fields(names)
			return nil, "", fmt.Errorf("sim: %s: %s is in tier %q but %s is in %q; operands must share a tier (Copy moves data)", op, ns[i], t.Tier(), ns[first], ts[first].Tier())
		}
	}
	if first < 0 {
		return b.inner[tensor.Host], tensor.Host, nil
	}
	return b.of(ts[first]), ts[first].Tier(), nil
}

// relabel names the tier of an inner backend's out-of-memory error.
func relabel(err error, tier tensor.Tier) error {
	if err == nil {
		return nil
	}
	var oom *backend.OutOfMemoryError
	if errors.As(err, &oom) && oom.Tier == tensor.Host {
		oom.Backend, oom.Tier = "sim", tier
	}
	return err
}

// Tiers returns the host and the devices' tiers.
func (b *Backend) Tiers() []tensor.Tier { return append([]tensor.Tier(nil), b.tiers...) }

// Alloc returns a zero-filled tensor in a tier; a device's capacity
// limits it (*backend.OutOfMemoryError).
func (b *Backend) Alloc(dt tensor.DType, shape []int, tier tensor.Tier) (*tensor.Tensor, error) {
	in, err := b.at("Alloc", tier)
	if err != nil {
		return nil, err
	}
	t, err := in.Alloc(dt, shape, tensor.Host)
	if err != nil {
		return nil, relabel(err, tier)
	}
	return b.wrap(t, tier), nil
}

// Release frees t's memory in its tier.
func (b *Backend) Release(t *tensor.Tensor) {
	if t == nil {
		return
	}
	if _, ok := t.Buffer().(*buffer); ok {
		b.of(t).Release(unwrap(t))
	}
}

// hostWrapper is the inner backend's WrapHost (the cpu backend's).
type hostWrapper interface {
	WrapHost(v []float32, shape []int) (*tensor.Tensor, error)
}

// WrapHost returns a host-tier tensor that uses v in place, uncounted
// (see cpu.Backend.WrapHost).
func (b *Backend) WrapHost(v []float32, shape []int) (*tensor.Tensor, error) {
	w, ok := b.inner[tensor.Host].(hostWrapper)
	if !ok {
		return nil, fmt.Errorf("sim: WrapHost: the %s backend cannot wrap host memory", b.inner[tensor.Host].Name())
	}
	t, err := w.WrapHost(v, shape)
	if err != nil {
		return nil, err
	}
	return b.wrap(t, tensor.Host), nil
}

// Upload copies host data into t, counting its bytes on the link from
// the host to t's tier.
func (b *Backend) Upload(t *tensor.Tensor, src any) error {
	if err := b.of(t).Upload(unwrap(t), src); err != nil {
		return err
	}
	b.count(tensor.Host, t.Tier(), t.Bytes())
	return nil
}

// Download copies t into host memory, counting its bytes on the link from
// t's tier to the host.
func (b *Backend) Download(t *tensor.Tensor, dst any) error {
	if err := b.of(t).Download(unwrap(t), dst); err != nil {
		return err
	}
	b.count(t.Tier(), tensor.Host, t.Bytes())
	return nil
}

// Peek implements backend.Peeker: Download without counting the bytes.
func (b *Backend) Peek(t *tensor.Tensor, dst any) error {
	return b.of(t).Download(unwrap(t), dst)
}

// Copy copies src into dst: within a tier it is a kernel, priced; across
// tiers a transfer, counted on the links between them.
func (b *Backend) Copy(dst, src *tensor.Tensor) error {
	same := dst != nil && src != nil && dst.Buffer() != nil && src.Buffer() != nil && dst.Tier() == src.Tier()
	if same {
		if err := b.price(prices.Copy(dst, src)); err != nil {
			return err
		}
	}
	if err := b.of(dst).Copy(unwrap(dst), unwrap(src)); err != nil {
		return relabel(err, dst.Tier())
	}
	if !same {
		b.count(src.Tier(), dst.Tier(), src.Bytes())
	}
	return nil
}

// UploadGraph places an adjacency in a tier. What crosses the link is the
// CSR and its values; the transpose is built on the device.
func (b *Backend) UploadGraph(g *graph.CSR, tier tensor.Tier) (backend.Adj, error) {
	in, err := b.at("UploadGraph", tier)
	if err != nil {
		return nil, err
	}
	a, err := in.UploadGraph(g, tensor.Host)
	if err != nil {
		return nil, relabel(err, tier)
	}
	ids := 4 * int64(len(g.Idx32))
	if g.Idx64 != nil {
		ids = 8 * int64(len(g.Idx64))
	}
	b.count(tensor.Host, tier, 8*int64(len(g.Indptr))+ids+4*int64(len(g.Values)))
	return &adj{Adj: a, tier: tier}, nil
}

// ReleaseGraph frees an adjacency from UploadGraph.
func (b *Backend) ReleaseGraph(a backend.Adj) {
	if w, ok := a.(*adj); ok && w != nil {
		if in, ok := b.inner[w.tier]; ok {
			in.ReleaseGraph(w.Adj)
		}
	}
}

// Stats reports the memory in use and its peak per tier: tensors, graphs
// and the scratch of kernels.
func (b *Backend) Stats() backend.Stats {
	st := backend.Stats{InUse: make(map[tensor.Tier]int64, len(b.tiers)), Peak: make(map[tensor.Tier]int64, len(b.tiers))}
	for _, t := range b.tiers {
		s := b.inner[t].Stats()
		st.InUse[t], st.Peak[t] = s.InUse[tensor.Host], s.Peak[tensor.Host]
	}
	return st
}

// ResetPeak starts a new peak measurement: every tier's peak becomes its
// current use.
func (b *Backend) ResetPeak() {
	for _, t := range b.tiers {
		if r, ok := b.inner[t].(backend.PeakResetter); ok {
			r.ResetPeak()
		}
	}
}

var _ backend.PoolTrimmer = (*Backend)(nil)

// TrimPool implements backend.PoolTrimmer on every tier's backend.
func (b *Backend) TrimPool() {
	for _, t := range b.tiers {
		if p, ok := b.inner[t].(backend.PoolTrimmer); ok {
			p.TrimPool()
		}
	}
}
