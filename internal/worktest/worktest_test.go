package worktest

import "testing"

var sink []byte

// TestGrowthBound: a linear allocation passes Linear's bound and a
// quadratic one does not, so the bound can fail.
func TestGrowthBound(t *testing.T) {
	cases := []struct {
		name string
		f    func(n int)
		pass bool
	}{
		{"linear", func(n int) { sink = make([]byte, 1000*n) }, true},
		{"linear in pieces", func(n int) {
			for range n {
				sink = make([]byte, 1000)
			}
		}, true},
		{"quadratic", func(n int) { sink = make([]byte, n*n) }, false},
		{"quadratic in pieces", func(n int) {
			for i := range n {
				sink = make([]byte, 1+i)
			}
		}, false},
	}
	for _, c := range cases {
		small, large := Growth(2000, c.f)
		if pass := float64(large) <= linearBound*float64(small); pass != c.pass {
			t.Errorf("%s: %d then %d bytes: within the bound %v, want %v", c.name, small, large, pass, c.pass)
		}
	}
}
