package negative

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"

	"strata/core/graph"
	"strata/core/negative"
	"strata/core/registry"
)

// Corrupt is local corruption of one endpoint, as knowledge-graph
// training corrupts the head or the tail of a triple (TransE, DGL-KE):
// a negative keeps one endpoint of its positive and replaces the other
// by a node drawn uniformly. Side says which is replaced: "dst" (the
// default), "src", or "both" (each negative replaces the source or the
// destination with probability 1/2; never both).
type Corrupt struct {
	negative.Base
	Side string `toml:"side" enum:"dst,src,both" doc:"the endpoint replaced by a uniform node: dst (keep the source), src (keep the destination), both (either, with probability 1/2 each)"`

	side corruptSide
}

type corruptSide int

const (
	corruptDst corruptSide = iota
	corruptSrc
	corruptBoth
)

func init() { registry.Register(new(Corrupt)) }

// StrataModule registers negative.corrupt.
func (*Corrupt) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{
		ID:  "negative.corrupt",
		New: func() registry.Module { return &Corrupt{Side: "dst"} },
		Doc: "keep one endpoint, replace the other (side = dst, src or both) by a uniform node (knowledge-graph corruption)",
	}
}

// parseSide returns the side named s.
func parseSide(s string) (corruptSide, error) {
	switch s {
	case "dst":
		return corruptDst, nil
	case "src":
		return corruptSrc, nil
	case "both":
		return corruptBoth, nil
	}
	return 0, fmt.Errorf("side = %q: must be dst, src or both", s)
}

// Validate checks side.
func (c *Corrupt) Validate() error {
	_, err := parseSide(c.Side)
	return err
}

// Bind implements negative.Sampler (the base).
func (c *Corrupt) Bind(ctx context.Context, g *graph.CSR) error { return c.BindWith(ctx, c, g) }

// Draw implements negative.Sampler (the base).
func (c *Corrupt) Draw(ctx context.Context, src, dst []int32, k int, seed uint64) ([]int32, []int32, error) {
	return c.DrawWith(ctx, c, src, dst, k, seed)
}

// Prepare implements negative.Drawer: it resolves side.
func (c *Corrupt) Prepare(context.Context, *graph.CSR) (err error) {
	c.side, err = parseSide(c.Side)
	return err
}

// DrawPair implements negative.Drawer.
func (c *Corrupt) DrawPair(r *rand.Rand, n, s, d int32) (int32, int32) {
	side := c.side
	if side == corruptBoth {
		side = corruptSide(r.Uint64() & 1) // corruptDst or corruptSrc
	}
	if side == corruptSrc {
		return r.Int32N(n), d
	}
	return s, r.Int32N(n)
}

// Marginals implements negative.Describer: the replaced endpoint is
// uniform, the other kept (each with probability 1/2 for both).
func (c *Corrupt) Marginals() (src, dst negative.Law) {
	u := uniformP(c.NumNodes())
	switch c.side {
	case corruptSrc:
		return negative.Law{P: u}, negative.Law{Keep: 1}
	case corruptBoth:
		return negative.Law{Keep: 0.5, P: u}, negative.Law{Keep: 0.5, P: slices.Clone(u)}
	}
	return negative.Law{Keep: 1}, negative.Law{P: u}
}
