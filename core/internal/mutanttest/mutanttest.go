// Package mutanttest checks that a conformance suite can fail: it runs the
// suite against deliberately broken modules (mutants) in child test
// processes and asserts that the subtest meant to catch each mutant fails.
package mutanttest

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"testing"
)

// Env is the environment variable that names the mutant a child runs.
const Env = "STRATA_MUTANT"

// Name returns the mutant a child process must run, or "" in the parent.
func Name() string { return os.Getenv(Env) }

// Mutant is one broken module and the subtests of the suite that must
// fail against it (names below the helper test, e.g. "Errors/k=0").
type Mutant struct {
	Name string
	Fail []string
}

// Check runs, for every mutant, the test named helper of the current test
// binary in a child process with Env set to the mutant's name, and fails
// t unless the child fails and each of the mutant's subtests fails in it.
func Check(t *testing.T, helper string, mutants []Mutant) {
	t.Helper()
	if Name() != "" {
		return
	}
	if testing.Short() {
		t.Skip("runs the suite in child processes")
	}
	re := regexp.MustCompile(`--- FAIL: ` + regexp.QuoteMeta(helper) + `/(\S+) \(`)
	for _, m := range mutants {
		t.Run(m.Name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^"+helper+"$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), Env+"="+m.Name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed against mutant %q:\n%s", m.Name, out)
			}
			var failed []string
			for _, s := range re.FindAllStringSubmatch(string(out), -1) {
				failed = append(failed, s[1])
			}
			for _, want := range m.Fail {
				if !slices.Contains(failed, want) {
					t.Errorf("mutant %q: subtest %s did not fail (failed: %q)", m.Name, want, failed)
				}
			}
			if t.Failed() {
				t.Logf("child output:\n%s", out)
			}
		})
	}
}
