package sim

import (
	"fmt"

	"strata/core/backend"
	"strata/core/tensor"
)

var (
	_ backend.TierGatherer = (*Backend)(nil)
	_ hostReader           = (*Backend)(nil)
)

// hostReader is core/store's HostReader.
type hostReader interface{ ReadsHostInPlace() bool }

// ReadsHostInPlace reports whether device kernels read pinned host memory
// in place: the topology's ZeroCopy ([devices] zero_copy).
func (b *Backend) ReadsHostInPlace() bool { return b.topo.ZeroCopy }

// GathersFrom implements backend.TierGatherer: a device kernel reads its
// own memory, a peer device's (over the peer link, or through the host
// where the pair has none, as copies are routed) and, with ZeroCopy, the
// host's; a host kernel reads host memory only.
func (b *Backend) GathersFrom(src, dst tensor.Tier) bool {
	_, okSrc := b.inner[src]
	_, okDst := b.inner[dst]
	switch {
	case !okSrc || !okDst:
		return false
	case src == dst:
		return true
	case b.device(dst) < 0:
		return false
	case b.device(src) >= 0:
		return true
	default:
		return b.topo.ZeroCopy
	}
}

// GatherTiers implements backend.TierGatherer as one kernel on out's
// tier: each source tier other than out's sends exactly the bytes of the
// rows it serves over its link to out's tier (counted and timed like a
// transfer of them, on the link's own timeline), and the kernel is priced
// by the cost model for what it moves in out's memory: the rows read
// there, the rows written and the indices.
func (b *Backend) GatherTiers(srcs []*tensor.Tensor, idx, out *tensor.Tensor) error {
	in, tier, err := b.on("GatherTiers", "idx out", idx, out)
	if err != nil {
		return err
	}
	tg, ok := in.(backend.TierGatherer)
	if !ok {
		return fmt.Errorf("sim: GatherTiers: the %s backend of tier %q has no multi-tier gather", in.Name(), tier)
	}
	inner := make([]*tensor.Tensor, len(srcs))
	ends := make([]int64, len(srcs))
	var total int64
	for s, x := range srcs {
		if x == nil || x.Buffer() == nil {
			return fmt.Errorf("sim: GatherTiers: source %d is nil", s)
		}
		if !b.GathersFrom(x.Tier(), tier) {
			return fmt.Errorf("sim: GatherTiers: a kernel on %q cannot read source %d in %q in place (zero-copy host reads need [devices] zero_copy = true)", tier, s, x.Tier())
		}
		inner[s] = unwrap(x)
		total += int64(x.Rows())
		ends[s] = total
	}
	ids := make([]int32, idx.Numel())
	if err := in.Download(unwrap(idx), ids); err != nil {
		return err
	}
	served := make([]int64, len(srcs)) // rows each source serves
	for i, r := range ids {
		s := 0
		for s < len(ends) && int64(r) >= ends[s] {
			s++
		}
		if r < 0 || s == len(ends) {
			return fmt.Errorf("sim: GatherTiers: idx[%d] = %d is outside [0,%d)", i, r, total)
		}
		served[s]++
	}
	rowBytes := int64(out.Cols() * out.DType().Size())
	var localBytes float64
	for s, x := range srcs {
		if x.Tier() == tier {
			localBytes += float64(served[s] * rowBytes)
		}
	}
	if err := b.price(k(out, costGeneric, 0, localBytes+bytesOf(out)+bytesOf(idx))); err != nil {
		return err
	}
	if err := relabel(tg.GatherTiers(inner, unwrap(idx), unwrap(out)), tier); err != nil {
		return err
	}
	for s, x := range srcs {
		b.count(x.Tier(), tier, served[s]*rowBytes)
	}
	return nil
}
