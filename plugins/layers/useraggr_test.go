package layers

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"strata/core/backend/cpu"
	"strata/core/engine"
	"strata/core/modhost"
	"strata/core/tensor"
)

// buildUserAggregator builds a copy of testdata/useraggr, a guest module
// with its own go.mod that imports the SDK, in dir (go build may rewrite
// a go.mod; the source tree stays as it is) and returns its bytes.
func buildUserAggregator(t *testing.T, dir string) []byte {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "src")
	if err := os.CopyFS(src, os.DirFS(filepath.Join("testdata", "useraggr"))); err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mod = []byte(strings.Replace(string(mod), "replace strata => ../../../..", "replace strata => "+root, 1))
	if err := os.WriteFile(filepath.Join(src, "go.mod"), mod, 0o644); err != nil {
		t.Fatal(err)
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	out := filepath.Join(dir, "lse.wasm")
	cmd := exec.Command(goBin, "build", "-buildmode=c-shared", "-o", out, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOFLAGS=-mod=mod", "GOPROXY=off")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the user aggregator: %v\n%s", err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestUserAggregator builds a user's aggregator outside the strata module
// (log-mean-exp, its own go.mod), loads it as a string option names it, and
// checks it against the dense log-mean-exp and by finite differences.
func TestUserAggregator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a guest module with its own go.mod (about 15 s)")
	}
	code := buildUserAggregator(t, t.TempDir())
	rt := aggrRuntime(t)
	var cfg modhost.LayerConfig
	cfg.SetString("aggr", "lse.wasm")
	cfg.Modules = map[string][]byte{"lse.wasm": code}
	g, err := rt.AggregatorGraph(context.Background(), "lse.wasm", cfg, aggrIn, false)
	if err != nil {
		t.Fatal(err)
	}
	be := cpu.New(cpu.Options{Threads: 2})
	p := aggrProgram(t, be, tensor.Host, g)
	if err := p.Forward(context.Background(), engine.Mode{}); err != nil {
		t.Fatal(err)
	}
	got := download(t, be, p.Output())
	csr, x := aggrTestCSR(), aggrInput()
	// TestAggregatorForward's bound: terms no larger than 4 or the value.
	gam := aggrGamma(len(g.Ops))
	for i := range aggrNodes {
		for c := range aggrIn {
			want := 0.0
			if csr.Indptr[i+1] > csr.Indptr[i] {
				s := 0.0
				for k := csr.Indptr[i]; k < csr.Indptr[i+1]; k++ {
					s += math.Exp(x[int(csr.Col(k))*aggrIn+c])
				}
				want = math.Log(s / float64(csr.Indptr[i+1]-csr.Indptr[i]))
			}
			if d := got[i*aggrIn+c] - want; math.Abs(d) > gam*math.Max(4, math.Abs(want)) {
				t.Fatalf("node %d column %d: got %.15g, want %.15g", i, c, got[i*aggrIn+c], want)
			}
		}
	}
	gp, err := rt.AggregatorGraph(context.Background(), "lse.wasm", cfg, aggrIn, true)
	if err != nil {
		t.Fatal(err)
	}
	checkAggrGradients(t, gp)
}
