package negative

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"strata/core/graph"
	"strata/core/negative"
	"strata/core/registry"
)

// Degree keeps the positive's source and draws the destination with
// probability proportional to degree^power (word2vec's unigram^0.75, DGL
// and PyTorch-BigGraph's degree-based negatives). A node's degree is its
// in-degree plus its out-degree (the edges it is an endpoint of; twice
// the undirected degree on a symmetric graph, which changes nothing).
// Nodes of degree 0 are never drawn, for any power (power = 0 is uniform
// over the nodes with edges); on a graph without edges Bind fails. The
// draw is O(1): Vose's alias table over the nodes with edges, built at
// Bind.
type Degree struct {
	negative.Base
	Power float64 `toml:"power" range:"[0,4]" doc:"destinations drawn with probability proportional to degree^power (in- plus out-degree; nodes without edges never); 0.75 as word2vec, 1 proportional, 0 uniform over nodes with edges"`

	p     []float64 // the law over all nodes
	ids   []int32   // the nodes with edges
	prob  []float64 // alias table over ids: keep ids[j] with prob[j]
	alias []int32   // else take ids[alias[j]]
}

func init() { registry.Register(new(Degree)) }

// StrataModule registers negative.degree.
func (*Degree) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{
		ID:  "negative.degree",
		New: func() registry.Module { return &Degree{Power: 0.75} },
		Doc: "keep the source, destination drawn proportional to degree^power (power 0.75, word2vec/DGL)",
	}
}

// Validate checks power.
func (d *Degree) Validate() error {
	if !(d.Power >= 0 && d.Power <= 4) {
		return fmt.Errorf("power = %v: must be in [0, 4]", d.Power)
	}
	return nil
}

// Bind implements negative.Sampler (the base).
func (d *Degree) Bind(ctx context.Context, g *graph.CSR) error { return d.BindWith(ctx, d, g) }

// Draw implements negative.Sampler (the base).
func (d *Degree) Draw(ctx context.Context, src, dst []int32, k int, seed uint64) ([]int32, []int32, error) {
	return d.DrawWith(ctx, d, src, dst, k, seed)
}

// Prepare implements negative.Drawer: the weights degree^power and
// their alias table.
func (d *Degree) Prepare(_ context.Context, g *graph.CSR) error {
	if err := d.Validate(); err != nil {
		return err
	}
	in, out := graph.Degrees(g)
	d.p = make([]float64, g.NumRows)
	d.ids = d.ids[:0]
	sum := 0.0
	for v := range d.p {
		if deg := int64(in[v]) + int64(out[v]); deg > 0 {
			d.p[v] = math.Pow(float64(deg), d.Power)
			d.ids = append(d.ids, int32(v))
			sum += d.p[v]
		}
	}
	if len(d.ids) == 0 {
		return errors.New("the graph has no edges: degree-proportional negatives need degrees (use negative.uniform)")
	}
	for v := range d.p {
		d.p[v] /= sum
	}
	d.prob, d.alias = aliasTable(d.p, d.ids)
	return nil
}

// aliasTable is Vose's alias method over the nodes ids with
// probabilities p[ids[j]] (summing to 1): slot j keeps ids[j] with
// probability prob[j], else gives ids[alias[j]].
func aliasTable(p []float64, ids []int32) (prob []float64, alias []int32) {
	m := len(ids)
	prob = make([]float64, m)
	alias = make([]int32, m)
	scaled := make([]float64, m)
	var small, large []int32
	for j, v := range ids {
		scaled[j] = p[v] * float64(m)
		if scaled[j] < 1 {
			small = append(small, int32(j))
		} else {
			large = append(large, int32(j))
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		prob[s], alias[s] = scaled[s], l
		scaled[l] -= 1 - scaled[s]
		if scaled[l] < 1 {
			large, small = large[:len(large)-1], append(small, l)
		}
	}
	// What is left is 1 up to rounding.
	for _, j := range append(small, large...) {
		prob[j], alias[j] = 1, j
	}
	return prob, alias
}

// DrawPair implements negative.Drawer.
func (d *Degree) DrawPair(r *rand.Rand, _, s, _ int32) (int32, int32) {
	j := r.Int32N(int32(len(d.ids)))
	if r.Float64() >= d.prob[j] {
		j = d.alias[j]
	}
	return s, d.ids[j]
}

// Marginals implements negative.Describer: the source kept, the
// destination ∝ degree^power.
func (d *Degree) Marginals() (src, dst negative.Law) {
	return negative.Law{Keep: 1}, negative.Law{P: d.p}
}
