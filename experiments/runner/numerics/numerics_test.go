package numerics

import (
	"slices"
	"strings"
	"testing"
)

func TestCompare(t *testing.T) {
	pinned := Numerics{Pinned: true, Env: map[string]string{"OPENBLAS_CORETYPE": "Haswell", "STRATA_CPU_ISA": "avx2"}, BLASCore: "Haswell", BLAS: "OpenBLAS 0.3.21 DYNAMIC_ARCH Haswell"}
	tests := []struct {
		name           string
		have, want     Numerics
		problems, warn []string // substrings, one per expected line
	}{
		{"same", pinned, pinned, nil, nil},
		{"unset here", Numerics{BLASCore: "Zen", BLAS: pinned.BLAS}, pinned,
			[]string{`OPENBLAS_CORETYPE: "Haswell" in the committed results, unset here`, `STRATA_CPU_ISA: "avx2" in the committed results, unset here`, "OpenBLAS runs its Zen kernels here, Haswell in the committed results"}, nil},
		{"another release", func() Numerics { n := pinned; n.BLAS = "OpenBLAS 0.3.26 DYNAMIC_ARCH Haswell"; return n }(), pinned,
			nil, []string{"OpenBLAS 0.3.26 here, 0.3.21 in the committed results"}},
		{"pins ignored by OpenBLAS", func() Numerics { n := pinned; n.BLASCore = "Zen"; return n }(), Pinned(),
			[]string{"OPENBLAS_CORETYPE=Haswell, yet OpenBLAS runs its Zen kernels: this OpenBLAS ignores the variable"}, nil},
		{"pins honoured", pinned, Pinned(), nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			probs, warns := tc.have.Compare(tc.want)
			check := func(what string, got, want []string) {
				if len(got) != len(want) {
					t.Errorf("%s %q, want %d lines like %q", what, got, len(want), want)
					return
				}
				for i := range want {
					if !strings.Contains(got[i], want[i]) {
						t.Errorf("%s[%d] = %q, want %q in it", what, i, got[i], want[i])
					}
				}
			}
			check("problems", probs, tc.problems)
			check("warnings", warns, tc.warn)
		})
	}
}

func TestEnviron(t *testing.T) {
	env := []string{"HOME=/root", "OPENBLAS_CORETYPE=SkylakeX", "PATH=/bin"}
	got := Pinned().Environ(env)
	want := []string{"HOME=/root", "PATH=/bin", "OPENBLAS_CORETYPE=Haswell", "STRATA_CPU_ISA=avx2"}
	if !slices.Equal(got, want) {
		t.Errorf("pinned environ %q, want %q", got, want)
	}
	if got := (Numerics{}).Environ(env); !slices.Equal(got, []string{"HOME=/root", "PATH=/bin"}) {
		t.Errorf("unpinned environ %q: the pin variables must be unset", got)
	}
	if s := Pinned().EnvString(); s != "OPENBLAS_CORETYPE=Haswell STRATA_CPU_ISA=avx2" {
		t.Errorf("EnvString %q", s)
	}
	if (Numerics{BLASCore: "Zen"}).Text() != "unpinned, OpenBLAS Zen" || Pinned().Key() == (Numerics{}).Key() {
		t.Error("Text or Key do not tell numerics apart")
	}
}
