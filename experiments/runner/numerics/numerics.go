// Package numerics describes what chooses the kernels whose floats an
// experiment's results depend on (OpenBLAS's kernel family, strata's own
// instruction set), the values published results pin them to, and how
// two processes' numerics differ (docs/experiments.md, "Numerics").
package numerics

import (
	"bufio"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"

	"strata/core/backend/cpu"
)

// Pin is an environment variable that chooses kernels whose floats a
// result depends on, and the value published experiments pin it to.
type Pin struct {
	Var, Value string
	What       string // what it chooses
}

// Pins are the numerics settings of published results: OpenBLAS's
// Haswell kernels (AVX2 + FMA, which every x86-64 machine strata runs on
// has; OpenBLAS reads the variable once, when the library loads, so it
// must be set before the process starts) and strata's own AVX2 kernels.
// With them, any x86-64 AVX2 machine computes the committed results bit
// for bit; thread counts need no pin (results do not depend on them,
// docs/experiments.md).
func Pins() []Pin {
	return []Pin{
		{Var: "OPENBLAS_CORETYPE", Value: "Haswell", What: "OpenBLAS's kernel family, read when the library loads"},
		{Var: "STRATA_CPU_ISA", Value: "avx2", What: "the instruction set of strata's own C kernels"},
	}
}

// Numerics is what chose the kernels of a process: the pin variables as
// set (absent when unset) and the kernel family OpenBLAS reports.
type Numerics struct {
	// Pinned says the runs required the pins (false: --native-numerics).
	Pinned   bool              `json:"pinned"`
	Env      map[string]string `json:"env,omitempty"`
	BLASCore string            `json:"blas_core,omitempty"`
	BLAS     string            `json:"blas,omitempty"` // OpenBLAS's build: version, options
}

// Current describes this process's numerics; pinned says whether
// they were required to be Pins.
func Current(pinned bool) Numerics {
	n := Numerics{Pinned: pinned, BLASCore: cpu.BLASCore(), BLAS: cpu.BLASConfig()}
	for _, p := range Pins() {
		if v, ok := os.LookupEnv(p.Var); ok {
			if n.Env == nil {
				n.Env = map[string]string{}
			}
			n.Env[p.Var] = v
		}
	}
	return n
}

// Pinned are the numerics the pins ask for (without the kernel
// family OpenBLAS will report, which only a process started with them
// can tell).
func Pinned() Numerics {
	n := Numerics{Pinned: true, Env: map[string]string{}}
	for _, p := range Pins() {
		n.Env[p.Var] = p.Value
	}
	return n
}

// Key is a stable text of the numerics, part of a run's code key.
func (n Numerics) Key() string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(n.Env)) {
		fmt.Fprintf(&b, "%s=%s;", k, n.Env[k])
	}
	fmt.Fprintf(&b, "core=%s;blas=%s", n.BLASCore, n.BLAS)
	return b.String()
}

// EnvString spells the numerics variables as a shell prefix:
// "OPENBLAS_CORETYPE=Haswell STRATA_CPU_ISA=avx2" ("" when none is set).
func (n Numerics) EnvString() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(n.Env)) {
		parts = append(parts, k+"="+n.Env[k])
	}
	return strings.Join(parts, " ")
}

// EnvDiffers lists how this process's environment differs from the
// numerics variables of want: one line per variable.
func (n Numerics) EnvDiffers(want Numerics) []string {
	whose := "pinned"
	if want.BLASCore != "" {
		whose = "in the committed results"
	}
	var out []string
	for _, p := range Pins() {
		w, wok := want.Env[p.Var]
		h, hok := n.Env[p.Var]
		if w == h && wok == hok {
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s %s, %s here (%s)", p.Var, setText(w, wok), whose, setText(h, hok), p.What))
	}
	return out
}

func setText(v string, ok bool) string {
	if !ok {
		return "unset"
	}
	return fmt.Sprintf("%q", v)
}

// Environ returns environ with the numerics variables of n set and the
// other pin variables removed: the environment of a process that runs
// with n's numerics.
func (n Numerics) Environ(environ []string) []string {
	out := make([]string, 0, len(environ)+len(n.Env))
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if slices.ContainsFunc(Pins(), func(p Pin) bool { return p.Var == k }) {
			continue
		}
		out = append(out, kv)
	}
	for _, k := range slices.Sorted(maps.Keys(n.Env)) {
		out = append(out, k+"="+n.Env[k])
	}
	return out
}

// CanPin tells whether this CPU runs the pinned kernels (AVX2 and FMA);
// nil where it cannot tell (not Linux).
func CanPin() error {
	if runtime.GOARCH != "amd64" {
		return fmt.Errorf("the pinned numerics (%s) are x86-64 kernels and this is %s", Pinned().EnvString(), runtime.GOARCH)
	}
	flags, err := cpuFlags()
	if err != nil {
		return nil
	}
	var missing []string
	for _, f := range []string{"avx2", "fma"} {
		if !slices.Contains(flags, f) {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("this CPU lacks %s, which the pinned kernels (%s) need", strings.Join(missing, " and "), Pinned().EnvString())
	}
	return nil
}

// cpuFlags reads the first "flags" line of /proc/cpuinfo.
func cpuFlags() ([]string, error) {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "flags" {
			return strings.Fields(v), nil
		}
	}
	return nil, errors.New("no flags line in /proc/cpuinfo")
}

// Compare tells how this process's numerics (n) differ from want, the
// numerics results were (or are to be) made with: problems make results
// differ in their last bits (another pin, another OpenBLAS kernel
// family, or an OpenBLAS that ignored OPENBLAS_CORETYPE); warnings may
// (another OpenBLAS release of the same family).
func (n Numerics) Compare(want Numerics) (problems, warnings []string) {
	problems = n.EnvDiffers(want)
	if want.BLASCore != "" && n.BLASCore != want.BLASCore {
		problems = append(problems, fmt.Sprintf("OpenBLAS runs its %s kernels here, %s in the committed results", n.BLASCore, want.BLASCore))
	}
	if ct, ok := want.Env["OPENBLAS_CORETYPE"]; ok && !strings.EqualFold(n.BLASCore, ct) && want.BLASCore == "" {
		problems = append(problems, fmt.Sprintf("OPENBLAS_CORETYPE=%s, yet OpenBLAS runs its %s kernels: this OpenBLAS ignores the variable (%s); install a DYNAMIC_ARCH build (Debian's libopenblas0-pthread)", ct, n.BLASCore, n.BLAS))
	}
	if v, w := blasVersion(n.BLAS), blasVersion(want.BLAS); w != "" && v != w {
		warnings = append(warnings, fmt.Sprintf("OpenBLAS %s here, %s in the committed results: if its %s kernels changed between the two, floats differ in the last bits", v, w, n.BLASCore))
	}
	return problems, warnings
}

// blasVersion is the version in OpenBLAS's config ("0.3.21"), or "".
func blasVersion(config string) string {
	f := strings.Fields(config)
	if len(f) >= 2 && f[0] == "OpenBLAS" {
		return f[1]
	}
	return ""
}

// Text describes the numerics in a few words: "OPENBLAS_CORETYPE=Haswell
// STRATA_CPU_ISA=avx2, OpenBLAS Haswell".
func (n Numerics) Text() string {
	env := n.EnvString()
	if env == "" {
		env = "unpinned"
	}
	return fmt.Sprintf("%s, OpenBLAS %s", env, n.BLASCore)
}
