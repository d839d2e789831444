package cpu

import (
	"os"
	"strings"
	"testing"
)

// TestISAEnv checks the values STRATA_CPU_ISA takes, that a bad one is an
// error naming the variable, and that avx2 keeps New's kernels narrow.
func TestISAEnv(t *testing.T) {
	for _, c := range []struct {
		value string
		avx2  bool
		bad   bool
	}{
		{"", false, false},
		{"auto", false, false},
		{"avx2", true, false},
		{"AVX2", false, true},
		{"avx512", false, true},
		{" avx2", false, true},
	} {
		t.Setenv(ISAEnv, c.value)
		avx2, err := avx2FromEnv()
		if (err != nil) != c.bad || avx2 != c.avx2 || (err == nil) != (CheckEnv() == nil) {
			t.Errorf("%s=%q: avx2 %v, err %v; want avx2 %v, error %v", ISAEnv, c.value, avx2, err, c.avx2, c.bad)
		}
		if c.bad {
			if err == nil || !strings.Contains(err.Error(), ISAEnv) || !strings.Contains(err.Error(), "want auto") {
				t.Errorf("%q: error %v does not name the variable and its values", c.value, err)
			}
			func() {
				defer func() {
					if r := recover(); r == nil || !strings.Contains(r.(string), ISAEnv) {
						t.Errorf("%q: New did not panic naming %s (%v)", c.value, ISAEnv, r)
					}
				}()
				New(Options{Threads: 1})
			}()
			continue
		}
		if b := New(Options{Threads: 1}); c.avx2 && b.wide {
			t.Errorf("%q: the kernels run with AVX-512", c.value)
		}
	}
}

// TestBLASCoreType checks that OPENBLAS_CORETYPE, when set, took effect:
// OpenBLAS runs the kernels it names (make test-float runs the float tests
// under several; an unknown name would fall back silently).
func TestBLASCoreType(t *testing.T) {
	core := BLASCore()
	t.Logf("OpenBLAS kernels: %s", core)
	if want := os.Getenv("OPENBLAS_CORETYPE"); want != "" && !strings.EqualFold(core, want) {
		t.Fatalf("OPENBLAS_CORETYPE=%s did not take effect: OpenBLAS runs its %s kernels", want, core)
	}
}
