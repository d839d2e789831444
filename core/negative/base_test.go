package negative_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"strata/core/graph"
	"strata/core/negative"
)

// pairs is a Drawer of uniform pairs on the base.
type pairs struct{ negative.Base }

func (p *pairs) Bind(ctx context.Context, g *graph.CSR) error { return p.BindWith(ctx, p, g) }
func (p *pairs) Draw(ctx context.Context, src, dst []int32, k int, seed uint64) ([]int32, []int32, error) {
	return p.DrawWith(ctx, p, src, dst, k, seed)
}
func (*pairs) Prepare(context.Context, *graph.CSR) error { return nil }
func (*pairs) DrawPair(r *rand.Rand, n, _, _ int32) (int32, int32) {
	return r.Int32N(n), r.Int32N(n)
}

// TestExclusionDirected: on the directed graph 0→1 (0 listed in row 1)
// exclusion leaves only the reverse pair (1, 0); with the edge in both
// directions nothing is left, and Draw says why.
func TestExclusionDirected(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		edges [][2]int64
		want  string // an error fragment; "" = every negative is (1, 0)
	}{
		{"directed", [][2]int64{{0, 1}}, ""},
		{"symmetric", [][2]int64{{0, 1}, {1, 0}}, "exclude_positives"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := new(pairs)
			s.SetExclude(true)
			if err := s.Bind(ctx, graph.FromEdges(2, c.edges)); err != nil {
				t.Fatal(err)
			}
			a, b, err := s.Draw(ctx, []int32{0}, []int32{1}, 50, 9)
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "positive 0 (0→1)") {
					t.Fatalf("Draw: %v; want an error naming the positive and %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for j := range a {
				if a[j] != 1 || b[j] != 0 {
					t.Fatalf("negative %d is (%d, %d), want (1, 0)", j, a[j], b[j])
				}
			}
		})
	}
}

// TestOffset: Offset(seed, 0) is seed, and offsets add up.
func TestOffset(t *testing.T) {
	for _, seed := range []uint64{0, 1, 1 << 63, ^uint64(0)} {
		if negative.Offset(seed, 0) != seed {
			t.Errorf("Offset(%d, 0) = %d", seed, negative.Offset(seed, 0))
		}
		if negative.Offset(negative.Offset(seed, 3), 4) != negative.Offset(seed, 7) {
			t.Errorf("Offset(Offset(%d, 3), 4) != Offset(%d, 7)", seed, seed)
		}
	}
}

// TestErrorMessages: the errors name the sampler, the key and the fix.
func TestErrorMessages(t *testing.T) {
	ctx := context.Background()
	s := new(pairs)
	if _, _, err := s.Draw(ctx, []int32{0}, []int32{1}, 1, 0); err == nil || !strings.Contains(err.Error(), "before Bind") {
		t.Errorf("Draw before Bind: %v", err)
	}
	if err := s.Bind(ctx, graph.FromEdges(3, [][2]int64{{0, 1}})); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		src, dst []int32
		k        int
		want     []string
	}{
		{[]int32{0}, []int32{1}, 0, []string{"k = 0", ">= 1"}},
		{[]int32{0, 1}, []int32{1}, 1, []string{"2 sources but 1 destinations"}},
		{[]int32{0}, []int32{3}, 1, []string{"positive 0", "destination 3", "[0, 3)"}},
		{[]int32{0, 1}, []int32{1, 1}, 1 << 30, []string{"draw the batch in parts"}},
	} {
		_, _, err := s.Draw(ctx, c.src, c.dst, c.k, 0)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("Draw(%v, %v, k=%d): %v; want %q", c.src, c.dst, c.k, err, w)
			}
		}
		if err != nil && !strings.HasPrefix(err.Error(), "negative sampler *negative_test.pairs") {
			t.Errorf("the error %q does not name the sampler", err)
		}
	}
}
