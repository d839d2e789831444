package synth

import (
	"math"
	"math/bits"
	"testing"
)

func TestRNGHelpers(t *testing.T) {
	r := newRNG(1, 2, 3)
	for i := 0; i < 10000; i++ {
		a, b := r.next(), r.next()
		if i%3 == 0 {
			b >>= 40
		}
		hi, lo := mulHi(a, b)
		wantHi, wantLo := bits.Mul64(a, b)
		if hi != wantHi || lo != wantLo {
			t.Fatalf("mulHi(%d, %d) = %d, %d; want %d, %d", a, b, hi, lo, wantHi, wantLo)
		}
	}
	for _, n := range []uint64{1, 2, 7, 1000, 1 << 40} {
		seen := map[uint64]bool{}
		for i := 0; i < 2000; i++ {
			v := r.below(n)
			if v >= n {
				t.Fatalf("below(%d) = %d", n, v)
			}
			seen[v] = true
		}
		if n <= 7 && len(seen) != int(n) {
			t.Errorf("below(%d) hit only %d values", n, len(seen))
		}
	}
	// newRNG streams differ; the same triple repeats.
	a, b, c := newRNG(5, streamEdges, 0), newRNG(5, streamEdges, 1), newRNG(5, streamEdges, 0)
	if x, y, z := a.next(), b.next(), c.next(); x == y || x != z {
		t.Error("rng streams are not independent and repeatable")
	}
	// fastNormal: bounded, mean about 0, variance about 1.
	var sum, sq float64
	const k = 100000
	for i := 0; i < k; i++ {
		v := float64(r.fastNormal())
		if math.Abs(v) > 3.47 {
			t.Fatalf("fastNormal %g outside ±3.46", v)
		}
		sum += v
		sq += v * v
	}
	if mean, vr := sum/k, sq/k-(sum/k)*(sum/k); math.Abs(mean) > 0.02 || math.Abs(vr-1) > 0.03 {
		t.Errorf("fastNormal mean %g variance %g", mean, vr)
	}
	// idPerm is a bijection for every scale.
	for scale := 1; scale <= 12; scale++ {
		p := newIDPerm(uint64(scale), scale)
		hit := make([]bool, 1<<scale)
		for x := uint64(0); x < 1<<scale; x++ {
			y := p.apply(x)
			if y >= 1<<scale || hit[y] {
				t.Fatalf("scale %d: idPerm is not a bijection", scale)
			}
			hit[y] = true
		}
	}
}
