package cpu

import (
	"fmt"
	"os"
)

// ISAEnv names the environment variable that caps the instruction set of
// strata's own C kernels (kernels.c): "auto" (the default, also when
// unset: AVX-512 where the CPU has it) or "avx2" (AVX2 only, as
// Options.AVX2Only), so that a test run or an experiment can pin the
// kernels another machine would pick (make test-float). New reads it;
// CheckEnv reports a bad value, which the backend modules return as an
// input error.
const ISAEnv = "STRATA_CPU_ISA"

// avx2FromEnv reads ISAEnv: whether it restricts the kernels to AVX2.
func avx2FromEnv() (bool, error) {
	switch v := os.Getenv(ISAEnv); v {
	case "", "auto":
		return false, nil
	case "avx2":
		return true, nil
	default:
		return false, fmt.Errorf("%s=%q: want auto (the widest instructions the CPU has, the default) or avx2 (strata's own kernels on AVX2 only)", ISAEnv, v)
	}
}

// CheckEnv returns the error of a bad STRATA_CPU_ISA, nil when it is
// unset or valid.
func CheckEnv() error {
	_, err := avx2FromEnv()
	return err
}
