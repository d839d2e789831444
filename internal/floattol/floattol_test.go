package floattol

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestGamma(t *testing.T) {
	for _, c := range []struct {
		n    int
		u    float64
		want float64
	}{
		{0, UFloat32, 0},
		{-3, UFloat32, 0},
		{1, UFloat32, UFloat32 / (1 - UFloat32)},
		{1100, UFloat32, 1100 * UFloat32 / (1 - 1100*UFloat32)},
		{1 << 24, UFloat32, math.Inf(1)},
		{1 << 30, UFloat32, math.Inf(1)},
		{1 << 30, UFloat64, 0x1p-23 / (1 - 0x1p-23)},
	} {
		if got := Gamma(c.n, c.u); got != c.want {
			t.Errorf("Gamma(%d, %g) = %g, want %g", c.n, c.u, got, c.want)
		}
	}
	if Gamma(1100, UFloat32) < 6.5e-5 || Gamma(1100, UFloat32) > 6.6e-5 {
		t.Errorf("γ_1100 in float32 = %g, want about 6.56e-5", Gamma(1100, UFloat32))
	}
}

// sum32 adds float32 terms in one of several orders, as kernels do.
func sum32(x []float32, order string) float32 {
	switch order {
	case "forward":
		var s float32
		for _, v := range x {
			s += v
		}
		return s
	case "backward":
		var s float32
		for i := len(x) - 1; i >= 0; i-- {
			s += x[i]
		}
		return s
	case "lanes8": // 8 accumulators, as an AVX2 loop
		var acc [8]float32
		for i, v := range x {
			acc[i%8] += v
		}
		return sum32(acc[:], "pairwise")
	case "pairwise":
		if len(x) <= 2 {
			return sum32(x, "forward")
		}
		return sum32(x[:len(x)/2], "pairwise") + sum32(x[len(x)/2:], "pairwise")
	}
	panic(order)
}

var orders = []string{"forward", "backward", "lanes8", "pairwise"}

// TestSumAndDotHold checks the bounds against float32 sums and dot
// products of every order, on inputs that cancel, inputs of one sign and
// inputs spread over many binades; and that the bounds are not vacuous.
func TestSumAndDotHold(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	gens := map[string]func() float64{
		"cancelling": func() float64 { return 2*rng.Float64() - 1 },
		"one sign":   func() float64 { return rng.Float64() },
		"binades":    func() float64 { return math.Ldexp(rng.Float64(), rng.IntN(20)-10) },
	}
	for name, gen := range gens {
		for _, n := range []int{1, 2, 31, 1100, 9000} {
			x, y := make([]float32, n), make([]float32, n)
			prod := make([]float32, n)
			var exactSum, exactDot, magSum, magDot float64
			for i := range x {
				x[i], y[i] = float32(gen()), float32(gen())
				prod[i] = x[i] * y[i]
				exactSum += float64(x[i]) // float64 holds these sums exactly enough: see below
				exactDot += float64(x[i]) * float64(y[i])
				magSum += math.Abs(float64(x[i]))
				magDot += math.Abs(float64(x[i]) * float64(y[i]))
			}
			// The float64 sums are themselves within γ_n(2^-53) of exact,
			// 2^-29 of the float32 bounds: the check allows for it.
			sb, db := Sum(n, UFloat32+UFloat64, magSum), Dot(n, UFloat32+UFloat64, magDot)
			for _, o := range orders {
				if d := math.Abs(float64(sum32(x, o)) - exactSum); d > sb {
					t.Errorf("%s n=%d %s sum: error %g > bound %g", name, n, o, d, sb)
				}
				if d := math.Abs(float64(sum32(prod, o)) - exactDot); d > db {
					t.Errorf("%s n=%d %s dot: error %g > bound %g", name, n, o, d, db)
				}
			}
			if n > 1 && !(sb < 1e-2*magSum && db < 1e-2*magDot) {
				t.Errorf("%s n=%d: bounds %g, %g of magnitudes %g, %g are vacuous", name, n, sb, db, magSum, magDot)
			}
		}
	}
}

// TestOrdersNeedTheBound shows why a fixed 1e-5 relative tolerance fails:
// two summation orders of a float32 dot product of length 1100 (the
// conformance suite's DropoutGEMM case) differ by more than 1e-5 relative
// to max(1, |x·y|) on some inputs, yet stay within Orders(Dot(...)).
func TestOrdersNeedTheBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 1100
	worst := 0.0
	for range 200 {
		p := make([]float32, n)
		var mag, exact float64
		for i := range p {
			a, b := float32(2*rng.Float64()-1), float32(2*rng.Float64()-1)
			p[i] = a * b
			mag += math.Abs(float64(a) * float64(b))
			exact += float64(a) * float64(b)
		}
		d := math.Abs(float64(sum32(p, "forward")) - float64(sum32(p, "lanes8")))
		if bound := Orders(Dot(n, UFloat32, mag)); d > bound {
			t.Fatalf("orders differ by %g > %g", d, bound)
		}
		worst = max(worst, d/max(1, math.Abs(exact)))
	}
	if worst <= 1e-5 {
		t.Errorf("the largest relative difference of two orders is %g, within the old 1e-5: the inputs do not show the problem", worst)
	}
	t.Logf("largest difference of two float32 summation orders, n=%d: %.3g relative to max(1,|x·y|)", n, worst)
}

func TestGEMM(t *testing.T) {
	// One element, k = 3, alpha 2, beta -1: |2|·(1·1 + 2·0.5 + 3·1) + |−1|·4.
	if got, want := GEMM(3, UFloat32, 2*(1+1+3)+4), Gamma(6, UFloat32)*14; got != want {
		t.Errorf("GEMM = %g, want %g", got, want)
	}
	if got := Orders(1.5); got != 3 {
		t.Errorf("Orders(1.5) = %g", got)
	}
}

func TestExceeds(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []struct {
		name         string
		got, want, b []float64
		wantIdx      int
		minRatio     float64
	}{
		{"within", []float64{1, 2.05}, []float64{1, 2}, []float64{0, 0.1}, -1, 0},
		{"exact zero bound", []float64{1, 2}, []float64{1, 2}, []float64{0, 0}, -1, 0},
		{"beyond", []float64{1, 2.5}, []float64{1, 2}, []float64{0, 0.1}, 1, 5},
		{"worst wins", []float64{1.3, 2.5}, []float64{1, 2}, []float64{0.1, 0.1}, 1, 5},
		{"zero bound differs", []float64{1, 2}, []float64{1, 2 + 1e-15}, []float64{0, 0}, 1, inf},
		{"nan both", []float64{nan}, []float64{nan}, []float64{0}, -1, 0},
		{"nan got", []float64{nan}, []float64{1}, []float64{10}, 0, inf},
		{"inf equal", []float64{inf}, []float64{inf}, []float64{0}, -1, 0},
		{"inf sign", []float64{-inf}, []float64{inf}, []float64{inf}, 0, inf},
		{"lengths", []float64{1}, []float64{1, 2}, []float64{1, 1}, 0, inf},
	} {
		idx, r := Exceeds(c.got, c.want, c.b)
		if idx != c.wantIdx || r < c.minRatio || (c.wantIdx < 0 && r != 0) {
			t.Errorf("%s: Exceeds = (%d, %g), want (%d, ≥ %g)", c.name, idx, r, c.wantIdx, c.minRatio)
		}
	}
}

// TestSlope checks central differences of functions computed in float32
// (an error of u·|f| per evaluation) against their exact derivatives: two
// smooth ones, one whose derivatives are 20, 400 and 8000 times what the
// step assumes, and one next to a kink: for the last two the bound must
// grow rather than fail.
func TestSlope(t *testing.T) {
	for _, c := range []struct {
		name  string
		f, df func(x float64) float64
		x, d3 float64
		loose bool
	}{
		{"sin", math.Sin, math.Cos, 1, 1, false},
		{"sin(20x)", func(x float64) float64 { return math.Sin(20 * x) }, func(x float64) float64 { return 20 * math.Cos(20*x) }, 0.3, 1, true},
		{"exp", math.Exp, math.Exp, 2.5, math.Exp(2.5), false},
		{"relu near its kink", func(x float64) float64 { return max(x, 0) }, func(x float64) float64 { return 1 }, 1e-4, 1, true},
	} {
		eps := UFloat32 * 2 * math.Max(1, math.Abs(c.f(c.x))) // one rounding of a value of that scale, with room
		h := CentralStep(eps, c.d3)
		got, bound := Slope(func(d float64) float64 { return float64(float32(c.f(c.x + d))) }, h, eps)
		if d := math.Abs(got - c.df(c.x)); d > bound {
			t.Errorf("%s: central difference %g off the derivative %g by %g > bound %g (h=%g)", c.name, got, c.df(c.x), d, bound, h)
		}
		if !c.loose && bound > 1e-2*math.Max(1, math.Abs(c.df(c.x))) {
			t.Errorf("%s: bound %g is vacuous", c.name, bound)
		}
	}
	num, bound := Gradient(2, func(i int, d float64) float64 { return float64(i+1) * d * d * d }, 1e-3, 0)
	// At 0, (i+1)·x³: D(h) = (i+1)h², D(2h) = 4(i+1)h², one-sided
	// differences equal (f'' = 0 there).
	if math.Abs(num[1]-2e-6) > 1e-15 || math.Abs(bound[1]-6e-6) > 1e-12 {
		t.Errorf("Gradient of (i+1)·x³ at 0: %v ± %v, want 2e-6 ± 6e-6 (Richardson)", num, bound)
	}
	// Next to the kink of |x|, the one-sided differences disagree.
	if _, b := Slope(math.Abs, 1e-3, 0); b < 0.99 {
		t.Errorf("|x| at its kink: bound %g, want about 1", b)
	}
}

// f32 emulates a float32 implementation: an operation on float32 values,
// rounded once.
func f32(v float64) float64 { return float64(float32(v)) }

// perturb returns a float32 value within x.E of x.V (a computed input).
func perturb(rng *rand.Rand, x Val) float64 {
	return f32(x.V + x.E*(2*rng.Float64()-1)*0.999)
}

// TestValHolds runs every operation of Arith on float32 values that are
// themselves off by their bounds, and checks the float32 result against
// the exact value and the derived bound (float64 references: U covers
// both roundings); and that bounds are finite and small where they should.
func TestValHolds(t *testing.T) {
	a := Checked32
	type op struct {
		name string
		val  func(x, y Val) Val
		f32  func(x, y float64) float64 // the float32 implementation
		lo   float64                    // inputs are drawn from [lo, lo+3)
	}
	ops := []op{
		{"add", a.Add, func(x, y float64) float64 { return f32(x + y) }, -1.5},
		{"sub", a.Sub, func(x, y float64) float64 { return f32(x - y) }, -1.5},
		{"mul", a.Mul, func(x, y float64) float64 { return f32(x * y) }, -1.5},
		{"div", a.Div, func(x, y float64) float64 { return f32(x / y) }, 0.5},
		{"sum", func(x, y Val) Val { return a.Sum(x, y, x) }, func(x, y float64) float64 { return f32(f32(x+y) + x) }, -1.5},
		{"dot", func(x, y Val) Val { return a.Dot([]Val{x, y}, []Val{y, y}) }, func(x, y float64) float64 { return f32(f32(x*y) + f32(y*y)) }, -1.5},
		{"exp", func(x, _ Val) Val { return a.Exp(x) }, func(x, _ float64) float64 { return f32(math.Exp(x)) }, -1.5},
		{"expm1", func(x, _ Val) Val { return a.Expm1(x) }, func(x, _ float64) float64 { return f32(math.Expm1(x)) }, -1.5},
		{"log", func(x, _ Val) Val { return a.Log(x) }, func(x, _ float64) float64 { return f32(math.Log(x)) }, 0.2},
		{"sqrt", func(x, _ Val) Val { return a.Sqrt(x) }, func(x, _ float64) float64 { return f32(math.Sqrt(x)) }, 0.2},
		{"rsqrt", func(x, _ Val) Val { return a.Div(In(1), a.Sqrt(x)) }, func(x, _ float64) float64 { return f32(1 / math.Sqrt(x)) }, 0.2},
		{"tanh", func(x, _ Val) Val { return a.Tanh(x) }, func(x, _ float64) float64 { return f32(math.Tanh(x)) }, -1.5},
		{"sigmoid", func(x, _ Val) Val { return a.Sigmoid(x) }, func(x, _ float64) float64 { return f32(1 / f32(1+f32(math.Exp(-x)))) }, -1.5},
		{"pow", func(x, _ Val) Val { return a.Pow(x, 1.7) }, func(x, _ float64) float64 { return f32(math.Pow(x, 1.7)) }, 0.2},
		{"pow<1", func(x, _ Val) Val { return a.Pow(x, 0.5) }, func(x, _ float64) float64 { return f32(math.Pow(x, 0.5)) }, 0.2},
		{"cos", func(x, _ Val) Val { return a.Cos(x) }, func(x, _ float64) float64 { return f32(math.Cos(x)) }, -1.5},
		{"sin", func(x, _ Val) Val { return a.Sin(x) }, func(x, _ float64) float64 { return f32(math.Sin(x)) }, -1.5},
		{"max", func(x, y Val) Val { return Max(x, y) }, math.Max, -1.5},
		{"neg", func(x, _ Val) Val { return Neg(x) }, func(x, _ float64) float64 { return -x }, -1.5},
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, o := range ops {
		for i := range 2000 {
			x := Val{f32(o.lo + 3*rng.Float64()), 0}
			y := Val{f32(o.lo + 3*rng.Float64()), 0}
			if i%2 == 1 { // inputs carrying the error of an earlier step
				x.E, y.E = 1e-3*math.Abs(x.V), 1e-3*math.Abs(y.V)
			}
			want := o.val(x, y)
			got := o.f32(perturb(rng, x), perturb(rng, y))
			if math.IsInf(want.E, 0) || want.E > 0.1*max(1, math.Abs(want.V)) {
				t.Fatalf("%s(%v, %v): bound %g is vacuous", o.name, x, y, want.E)
			}
			if d := math.Abs(got - want.V); d > want.E {
				t.Fatalf("%s(%v, %v) = %v in float32, exact %v: off by %g > bound %g", o.name, x, y, got, want.V, d, want.E)
			}
		}
	}
}

func TestValEdges(t *testing.T) {
	a := Arith{U: UFloat32}
	for _, c := range []struct {
		name string
		v    Val
		inf  bool
	}{
		{"divisor interval holds zero", a.Div(In(1), Val{0.1, 0.2}), true},
		{"log of an interval reaching zero", a.Log(Val{0.1, 0.2}), true},
		{"sqrt of an interval reaching zero", a.Sqrt(Val{0.1, 0.2}), true},
		{"exact inputs, one rounding", a.Add(In(1), In(2)), false},
		{"param", a.Param(0.1), false},
	} {
		if math.IsInf(c.v.E, 1) != c.inf {
			t.Errorf("%s: error %g, want infinite %v", c.name, c.v.E, c.inf)
		}
	}
	if got := a.Add(In(1), In(2)); got.V != 3 || got.E != 3*UFloat32 {
		t.Errorf("1+2 = %+v, want {3, 3u}", got)
	}
	if got := (Arith{U: UFloat32, Tiny: MinNormal32}).Mul(In(0x1p-70), In(0x1p-70)); got.E != 0x1p-140*UFloat32+MinNormal32 {
		t.Errorf("an underflowing product's error %g, want u·|v| + the smallest normal", got.E)
	}
	if got := a.Sum(); got.V != 0 || got.E != 0 {
		t.Errorf("empty sum = %+v", got)
	}
	if got := a.Sum(In(5)); got.V != 5 || got.E != 0 {
		t.Errorf("sum of one term = %+v, want exact", got)
	}
	vs := []Val{{1, 0.5}, {2, 0.25}}
	if !slices.Equal(Values(vs), []float64{1, 2}) || !slices.Equal(Errors(vs), []float64{0.5, 0.25}) || !slices.Equal(Values(Ins([]float64{3})), []float64{3}) {
		t.Errorf("Values/Errors/Ins")
	}
}
