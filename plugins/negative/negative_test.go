package negative

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/negative"
	"strata/core/negative/negativetest"
)

// skewedStar is an undirected star of centre 0 and leaves 1..leaves,
// followed by iso isolated nodes: the centre's degree (in + out) is
// 2·leaves, each leaf's 2.
func skewedStar(leaves, iso int) *graph.CSR {
	var e [][2]int64
	for v := 1; v <= leaves; v++ {
		e = append(e, [2]int64{0, int64(v)}, [2]int64{int64(v), 0})
	}
	return graph.FromEdges(1+leaves+iso, e)
}

// TestDegreeDistribution draws destinations with negative.degree on a
// skewed star (centre of degree 2L, L leaves of degree 2, isolated
// nodes) and compares them with the law computed by hand:
// P(centre) = (2L)^p / ((2L)^p + L·2^p), P(leaf) = 2^p / (same), 0 for the
// isolated nodes. The bound: a chi-square goodness-of-fit test over the
// nodes (bins of expected count >= 5) rejects at p < 1e-6
// (negativetest.ChiSquare), and no isolated node is drawn.
func TestDegreeDistribution(t *testing.T) {
	const leaves, iso = 40, 9
	g := skewedStar(leaves, iso)
	for _, power := range []float64{0.75, 1, 0, 2} {
		want := make([]float64, g.NumRows)
		z := math.Pow(2*leaves, power) + leaves*math.Pow(2, power)
		want[0] = math.Pow(2*leaves, power) / z
		for v := 1; v <= leaves; v++ {
			want[v] = math.Pow(2, power) / z
		}
		d := &Degree{Power: power}
		if err := d.Bind(context.Background(), g); err != nil {
			t.Fatal(err)
		}
		if _, law := d.Marginals(); !near(law.P, want, 1e-12) {
			t.Fatalf("power %v: declared law %v, want %v", power, law.P, want)
		}
		const m, k = 5000, 8 // 40000 draws: >= 5 expected per leaf at power 2
		src := slices.Repeat([]int32{3}, m)
		dst := slices.Repeat([]int32{0}, m)
		nsrc, ndst, err := d.Draw(context.Background(), src, dst, k, 42)
		if err != nil {
			t.Fatal(err)
		}
		obs := make([]int, g.NumRows)
		for j, v := range ndst {
			if nsrc[j] != 3 {
				t.Fatalf("power %v: the source %d was not kept", power, nsrc[j])
			}
			obs[v]++
		}
		stat, crit, df, err := negativetest.ChiSquare(obs, want)
		if err != nil {
			t.Errorf("power %v: %v", power, err)
		}
		t.Logf("power %v: centre drawn %d of %d (expected %.0f), chi-square %.1f, df %d, critical %.1f", power, obs[0], m*k, want[0]*m*k, stat, df, crit)
	}
}

func near(a, b []float64, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > tol {
			return false
		}
	}
	return true
}

// TestAliasTable checks Vose's table against the probabilities it
// encodes: slot j gives ids[j] with prob[j] and ids[alias[j]] otherwise,
// each slot with probability 1/m, so P(ids[i]) = (prob[i] + sum over j
// with alias[j] = i of (1 - prob[j])) / m.
func TestAliasTable(t *testing.T) {
	for _, p := range [][]float64{
		{1},
		{0.5, 0.5},
		{0.1, 0.2, 0.3, 0.4},
		{0, 0.9, 0, 0.1}, // zeros are not among ids
		{0.97, 0.01, 0.01, 0.01},
	} {
		var ids []int32
		for v, x := range p {
			if x > 0 {
				ids = append(ids, int32(v))
			}
		}
		prob, alias := aliasTable(p, ids)
		got := make([]float64, len(p))
		for j := range ids {
			got[ids[j]] += prob[j] / float64(len(ids))
			got[ids[alias[j]]] += (1 - prob[j]) / float64(len(ids))
		}
		// A few subtractions of numbers <= m: rounding of order m·eps.
		if !near(got, p, 1e-14*float64(len(p))) {
			t.Errorf("alias table of %v encodes %v", p, got)
		}
	}
}

func TestOptions(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		s    interface {
			negative.Sampler
			Validate() error
		}
		want string // "" = valid
	}{
		{"degree power=0.75", &Degree{Power: 0.75}, ""},
		{"degree power<0", &Degree{Power: -1}, "power = -1"},
		{"degree power NaN", &Degree{Power: math.NaN()}, "power = NaN"},
		{"degree power>4", &Degree{Power: 5}, "power = 5"},
		{"corrupt side=src", &Corrupt{Side: "src"}, ""},
		{"corrupt side=head", &Corrupt{Side: "head"}, `side = "head"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.s.Validate()
			if c.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate: %v; want an error holding %q", err, c.want)
			}
			// Bind refuses what Validate refuses, when code skipped it.
			if err := c.s.Bind(ctx, skewedStar(3, 0)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Bind: %v; want an error holding %q", err, c.want)
			}
		})
	}
}

// TestDegreeNoEdges: a graph without edges has no degrees to draw by.
func TestDegreeNoEdges(t *testing.T) {
	err := (&Degree{Power: 0.75}).Bind(context.Background(), graph.FromEdges(5, nil))
	if err == nil || !strings.Contains(err.Error(), "negative.degree") || !strings.Contains(err.Error(), "no edges") {
		t.Fatalf("Bind on an edgeless graph: %v; want an error naming negative.degree and the missing edges", err)
	}
}
