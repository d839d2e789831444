package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/BurntSushi/toml"

	"strata/core/backend/cpu"
	"strata/core/config"
	"strata/core/graph/graphtest"
	"strata/core/registry"
	"strata/internal/testcache"
)

// scratch holds what the tests share across cases: the Go guests built
// from source. The compiled-module cache is wasmCacheDir.
var scratch string

// wasmCacheDir is the compiled-module cache every test binary shares
// (internal/testcache): compiling the modules is most of the CPU of the
// tests that run experiments.
var wasmCacheDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "strata-cli-test-")
	if err != nil {
		panic(err)
	}
	scratch = dir
	wasmCacheDir = testcache.MustWasmDir()
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cli runs one command line in-process.
func cli(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// wasmCache is the compiled-module cache the tests pass with -wasm-cache, so
// they never write to the user's cache directory.
func wasmCache() string { return wasmCacheDir }

var (
	guestMu    sync.Mutex
	guestBuilt = map[string]string{}
)

// guest builds the Go guest in pkg (relative to the repository root) once
// per test process and returns the path of the .wasm file.
func guest(t testing.TB, pkg string) string {
	t.Helper()
	guestMu.Lock()
	defer guestMu.Unlock()
	if p, ok := guestBuilt[pkg]; ok {
		return p
	}
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	dir := filepath.Join(scratch, "guests", strings.ReplaceAll(pkg, "/", "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, filepath.Base(pkg)+".wasm")
	cmd := exec.Command(goTool, "build", "-buildmode=c-shared", "-trimpath", "-o", out, "./"+pkg)
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building guest %s: %v\n%s", pkg, err, msg)
	}
	guestBuilt[pkg] = out
	return out
}

// write writes content to dir/rel, creating directories, and returns the path.
func write(t testing.TB, dir, rel, content string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// tinyOGB writes a valid 5-node dataset in the OGB raw layout (plain .csv)
// with one split "s", after applying the changes (relative path -> content;
// "" removes the file), and returns the directory.
func tinyOGB(t testing.TB, changes map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny")
	files := graphtest.TinyOGB()
	for k, v := range changes {
		files[k] = v
	}
	for rel, content := range files {
		if content != "" {
			write(t, dir, rel, content)
		}
	}
	return dir
}

const cora = "[data]\ndataset = \"embedded:cora\"\n"

// conf writes a config file named bad.toml into a fresh directory.
func conf(t testing.TB, text string) string {
	t.Helper()
	return write(t, t.TempDir(), "bad.toml", text)
}

// moduleConf writes a config whose model.module is module (line 4) and
// whose [model.options] follow on line 6.
func moduleConf(t testing.TB, module string, options string) string {
	t.Helper()
	text := cora + "[model]\nmodule = " + strconv.Quote(module) + "\n"
	if options != "" {
		text += "[model.options]\n" + options
	}
	return conf(t, text)
}

func testdata(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// wasmArgs are the WASM host flags every model-loading case passes.
func wasmArgs(extra ...string) []string {
	return append([]string{"-wasm-cache", wasmCache()}, extra...)
}

// TestMalformedInputs runs malformed configs, datasets, modules and command
// lines through run: each must exit 2 with a message that names the
// problem and where it is, and without a Go stack trace.
func TestMalformedInputs(t *testing.T) {
	validate := func(cfg string, extra ...string) []string {
		return append(append([]string{"validate", "-c", cfg}, wasmArgs()...), extra...)
	}
	misc := func(t testing.TB, mode string, extra ...string) []string {
		return validate(moduleConf(t, guest(t, "plugins/wasm/testdata/guests/misc"), "mode = "+mode+"\n"), extra...)
	}
	cases := []struct {
		name string
		args func(t testing.TB) []string
		want []string
	}{
		// Configs.
		{"config/unknown-key", func(t testing.TB) []string {
			return validate(conf(t, cora+"[model]\nhiden = 16\n"))
		}, []string{`bad.toml:4: unknown key "model.hiden" (did you mean "model.hidden"?)`}},
		{"config/wrong-type", func(t testing.TB) []string {
			return validate(conf(t, cora+"[model]\nhidden = \"16\"\n"))
		}, []string{`bad.toml:4: model.hidden: expected integer, got string "16"`}},
		{"config/bad-enum", func(t testing.TB) []string {
			return validate(conf(t, cora+"[train]\noptimizer = \"lion\"\n"))
		}, []string{`bad.toml:4: train.optimizer = "lion": allowed values are "adam", "adamw", "sgd"`}},
		{"config/bad-lr-schedule", func(t testing.TB) []string {
			return validate(conf(t, cora+"[train]\nepochs = 5\n[train.lr_schedule]\nname = \"cosine\"\nwarmup_epochs = 5\n"))
		}, []string{`bad.toml:7: train.lr_schedule.warmup_epochs = 5 is not below train.epochs = 5`, "lower warmup_epochs or raise train.epochs"}},
		{"config/bad-grad-clip", func(t testing.TB) []string {
			return validate(conf(t, cora+"[train]\ngrad_clip = -1\n"))
		}, []string{`bad.toml:4: train.grad_clip = -1: must be >= 0`}},
		{"config/missing-dataset", func(t testing.TB) []string {
			return validate(conf(t, "[model]\nhidden = 16\n"))
		}, []string{`bad.toml: data.dataset: required key is missing`}},
		{"config/out-of-range", func(t testing.TB) []string {
			return validate(conf(t, cora+"[model]\ndropout = 1.5\n"))
		}, []string{`bad.toml:4: model.dropout = 1.5: must be in [0, 1)`}},
		{"config/out-of-range-epochs", func(t testing.TB) []string {
			return validate(conf(t, cora+"[train]\nepochs = 0\n"))
		}, []string{`bad.toml:4: train.epochs = 0: must be`}},
		{"config/toml-syntax", func(t testing.TB) []string {
			return validate(conf(t, "[data]\ndataset = \"embedded:cora\n[model]\n"))
		}, []string{`bad.toml:2:`, `TOML syntax error`}},
		{"config/set-bad-value", func(t testing.TB) []string {
			return validate(conf(t, cora), "--set", "train.epochs=abc")
		}, []string{`--set train.epochs=abc: train.epochs: expected integer`}},
		{"config/set-unknown-key", func(t testing.TB) []string {
			return validate(conf(t, cora), "--set", "train.epoch=3")
		}, []string{`--set train.epoch=3: unknown key "train.epoch" (did you mean "train.epochs"?)`}},
		// validate runs what train runs before training: a strategy's
		// config checks, and with data its stepper.
		{"config/validate-like-train-minibatch", func(t testing.TB) []string {
			return validate(conf(t, cora), "--set", "train.mode=minibatch")
		}, []string{`train.mode = "minibatch" needs a neighbour sampler`}},
		// A layer that cannot bind one sampled block per layer (APPNP
		// propagates k hops in its last layer) is refused before
		// batch 0, at model.name.
		{"config/model-cannot-bind-blocks", func(t testing.TB) []string {
			return validate(conf(t, cora+"[model]\nname = \"appnp\"\n[train]\nmode = \"minibatch\"\n[sampler]\nname = \"uniform\"\nfanouts = [5, 5]\n"))
		}, []string{`bad.toml:4: model.name = "appnp"`, `layer 0 of 2 reads no graph, but train.mode = "minibatch" binds one sampled block (one hop) per layer`}},
		{"config/validate-outputs", func(t testing.TB) []string {
			return validate(conf(t, cora), "--set", "output.model=same.bin", "--set", "output.checkpoint=same.bin", "--set", "train.checkpoint_every=1")
		}, []string{`output.checkpoint and output.model are the same file`}},
		{"config/micro-mode-no-partitioner", func(t testing.TB) []string {
			return validate(conf(t, cora), "--set", "train.mode=micro", "--set", "micro.micro_batches=4")
		}, []string{`micro.micro_batches = 4 needs a partitioner to split the training nodes: add [partition]`}},
		{"config/validate-like-train-micro", func(t testing.TB) []string {
			return validate(conf(t, cora), "--set", "train.micro_batches=141", "--set", "partition.name=range")
		}, []string{`train.micro_batches = 141 is more than the 140 training nodes`}},
		{"config/set-no-equals", func(t testing.TB) []string {
			return validate(conf(t, cora), "--set", "trainepochs")
		}, []string{`--set trainepochs has no '=': write --set trainepochs=VALUE`}},
		{"config/unknown-model-name", func(t testing.TB) []string {
			return validate(conf(t, cora+"[model]\nname = \"gcnn\"\n"))
		}, []string{`bad.toml:4: model.name = "gcnn": unknown model (did you mean "gcn"?)`}},
		{"config/unknown-model-option", func(t testing.TB) []string {
			return validate(conf(t, cora+"[model]\nname = \"gcn\"\n[model.options]\nheadz = 4\n"))
		}, []string{`bad.toml:6: model.options.headz: the "gcn" module does not use option "headz"`}},
		{"config/host-reserved-option", func(t testing.TB) []string {
			return validate(conf(t, cora+"[model]\nname = \"gcn\"\n[model.options]\nin_dim = 4\n"))
		}, []string{`bad.toml:6: model.options.in_dim is set by strata for every layer`}},
		{"config/duplicate-key", func(t testing.TB) []string {
			return validate(conf(t, cora+"dataset = \"embedded:cora\"\n"))
		}, []string{`bad.toml:3:`, `'data.dataset' has already been defined`}},
		{"config/option-wrong-type", func(t testing.TB) []string {
			return validate(conf(t, cora+"[model.options]\nheads = [8]\n"))
		}, []string{`bad.toml:4: model.options.heads: expected integer, float, boolean or string, got array [8]`}},
		{"config/option-string-for-number", func(t testing.TB) []string {
			return validate(conf(t, cora+"[model]\nname = \"gat\"\n[model.options]\nheads = \"8\"\n"))
		}, []string{`bad.toml:6: model.options.heads = "8": layer 0 of 2:`, `op #0 cfg_i64: option "heads" = "8" is a string; the module reads it as a number`}},
		{"config/unknown-aggregator", func(t testing.TB) []string {
			return validate(conf(t, cora+"[model]\nname = \"sage\"\n[model.options]\naggr = \"powermaen\"\n"))
		}, []string{`bad.toml:6: model.options.aggr = "powermaen": layer 0 of 2:`, `unknown aggregator "powermaen" (registered: attentional, deepsets,`, "powermean"}},
		{"config/module-not-wasm-path", func(t testing.TB) []string {
			return validate(conf(t, cora+"[model]\nmodule = \"layer.so\"\n"))
		}, []string{`bad.toml:4: model.module = "layer.so": expected a path to a .wasm file`}},
		{"config/unknown-section", func(t testing.TB) []string {
			return validate(conf(t, cora+"[trian]\nepochs = 1\n"))
		}, []string{`bad.toml:3: unknown key "trian" (did you mean "train"?)`}},
		{"config/missing-file", func(t testing.TB) []string {
			return validate(filepath.Join(t.TempDir(), "nonexistent.toml"))
		}, []string{`nonexistent.toml: cannot read config`}},
		{"config/missing-dataset-path", func(t testing.TB) []string {
			return validate(conf(t, "[data]\ndataset = \"nothere/ds\"\n"))
		}, []string{`bad.toml:2: `, `nothere/ds: no such file or directory`}},

		// Dataset files.
		{"data/bad-number", func(t testing.TB) []string {
			return []string{"inspect", "-i", tinyOGB(t, map[string]string{"raw/edge.csv": "0,1\n1,x2\n2,3\n3,4\n"})}
		}, []string{`raw/edge.csv:2: column 2: "x2" is not an integer`}},
		{"data/bad-feature", func(t testing.TB) []string {
			return []string{"inspect", "-i", tinyOGB(t, map[string]string{"raw/node-feat.csv": "1,0\n0,1\n0.5,2\n0,zero\n1e-3,-3\n"})}
		}, []string{`raw/node-feat.csv:4: column 2:`, `"zero"`}},
		{"data/nan-feature", func(t testing.TB) []string {
			return []string{"inspect", "-i", tinyOGB(t, map[string]string{"raw/node-feat.csv": "1,0\n0,1\n0.5,NaN\n0,0\n1e-3,-3\n"})}
		}, []string{`raw/node-feat.csv:3: column 2: "NaN" is not a finite`}},
		{"data/column-count", func(t testing.TB) []string {
			return []string{"inspect", "-i", tinyOGB(t, map[string]string{"raw/edge.csv": "0,1\n1,2,5\n2,3\n3,4\n"})}
		}, []string{`raw/edge.csv:2: 3 columns, expected 2`}},
		{"data/node-id-out-of-range", func(t testing.TB) []string {
			return []string{"inspect", "-i", tinyOGB(t, map[string]string{"raw/edge.csv": "0,1\n1,9\n2,3\n3,4\n"})}
		}, []string{`raw/edge.csv:2: column 2: node id 9 outside [0,5)`}},
		{"data/label-out-of-range", func(t testing.TB) []string {
			return []string{"inspect", "-i", tinyOGB(t, map[string]string{"raw/node-label.csv": "0\n1\n0\n7\n-1\n"})}
		}, []string{`raw/node-label.csv:4: label 7`}},
		{"data/label-negative", func(t testing.TB) []string {
			return []string{"inspect", "-i", tinyOGB(t, map[string]string{"raw/node-label.csv": "0\n1\n0\n-5\n-1\n"})}
		}, []string{`raw/node-label.csv:4: label -5 is negative`}},
		{"data/overlapping-splits", func(t testing.TB) []string {
			return []string{"inspect", "-i", tinyOGB(t, map[string]string{"split/s/test.csv": "1\n"})}
		}, []string{`split/s/test.csv:1: node 1 is also in the train split`}},
		{"data/missing-file", func(t testing.TB) []string {
			return []string{"inspect", "-i", tinyOGB(t, map[string]string{"raw/edge.csv": ""})}
		}, []string{`raw/edge.csv.gz: file does not exist (nor edge.csv)`}},
		{"data/via-config", func(t testing.TB) []string {
			dir := tinyOGB(t, map[string]string{"raw/edge.csv": "0,1\n1,2\n2,-3\n3,4\n"})
			return validate(write(t, filepath.Dir(dir), "bad.toml", "[data]\ndataset = \"tiny@s\"\n"))
		}, []string{`raw/edge.csv:3: column 2:`, `-3`}},
		{"data/snap-bad-id", func(t testing.TB) []string {
			return []string{"inspect", "-i", write(t, t.TempDir(), "edges.txt", "# a SNAP edge list\n0\t1\n1\tfoo\n")}
		}, []string{`edges.txt:3: column 2: "foo" is not an integer node id`}},
		{"data/snap-columns", func(t testing.TB) []string {
			return []string{"inspect", "-i", write(t, t.TempDir(), "edges.txt", "0 1\n1 2 3 4\n")}
		}, []string{`edges.txt:2: 4 columns, expected 2`}},
		{"data/strata-truncated", func(t testing.TB) []string {
			dir := t.TempDir()
			full := filepath.Join(dir, "full.strata")
			if code, _, stderr := cli(t, "convert", "-i", tinyOGB(t, nil)+"@s", "-o", full); code != 0 {
				t.Fatalf("convert: exit %d: %s", code, stderr)
			}
			b, err := os.ReadFile(full)
			if err != nil {
				t.Fatal(err)
			}
			return []string{"inspect", "-i", write(t, dir, "cut.strata", string(b[:len(b)/2]))}
		}, []string{`cut.strata: file is `, `the file is truncated`}},
		{"data/strata-empty", func(t testing.TB) []string {
			return []string{"inspect", "-i", write(t, t.TempDir(), "empty.strata", "")}
		}, []string{`empty.strata: empty file, not a strata binary graph`}},
		{"data/strata-not-binary", func(t testing.TB) []string {
			return []string{"inspect", "-i", write(t, t.TempDir(), "text.strata", "this is not a graph, just some text that is long enough\n")}
		}, []string{`text.strata: `}},

		// WASM modules.
		{"wasm/guest-panic", func(t testing.TB) []string {
			cfg := moduleConf(t, guest(t, "plugins/wasm/testdata/guests/misc"), "mode = 1\n")
			return append([]string{"train", "-c", cfg, "--set", "train.epochs=1"}, wasmArgs()...)
		}, []string{`model "misc": strata_layer_spec trapped: wasm error: unreachable`, `guest stderr: panic: assignment to entry in nil map`}},
		{"wasm/infinite-loop", func(t testing.TB) []string {
			return misc(t, "3", "-wasm-deadline", "300ms")
		}, []string{`model "misc": strata_layer_spec exceeded the 300ms deadline (infinite loop?)`}},
		{"wasm/out-of-memory", func(t testing.TB) []string {
			return misc(t, "2", "-wasm-memory-pages", "200")
		}, []string{`model "misc": strata_layer_spec trapped`, `out of memory`, `memory limit 200 pages`}},
		{"wasm/shape-error", func(t testing.TB) []string {
			return misc(t, "4")
		}, []string{`layer 0 of 2: model "misc" layer spec: op #2 matmul: inner dims mismatch: a=[N,4] b=[5,3]`}},
		{"wasm/sdk-fail", func(t testing.TB) []string {
			return misc(t, "5")
		}, []string{`model "misc" layer spec: option mode=5 is not supported`}},
		{"wasm/abi-v2", func(t testing.TB) []string {
			return validate(moduleConf(t, testdata(t, "abi-v2.wasm"), ""))
		}, []string{`"abi-v2" speaks strata ABI v2, host supports v1`}},
		{"wasm/abi-v2-imports", func(t testing.TB) []string {
			return validate(moduleConf(t, testdata(t, "abi-v2-imports.wasm"), ""))
		}, []string{`"abi-v2-imports" speaks strata ABI v2 (imports strata_v2.matmul), host supports v1`}},
		{"wasm/wasi-command", func(t testing.TB) []string {
			return validate(moduleConf(t, testdata(t, "wasi-command.wasm"), ""))
		}, []string{`"wasi-command" is a WASI command (it exports _start, not _initialize)`}},
		{"wasm/truncated", func(t testing.TB) []string {
			b, err := os.ReadFile(testdata(t, "abi-v2.wasm"))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			write(t, dir, "cut.wasm", string(b[:30]))
			return validate(write(t, dir, "bad.toml", cora+"[model]\nmodule = \"cut.wasm\"\n"))
		}, []string{`"cut" does not compile`}},
		{"wasm/not-wasm", func(t testing.TB) []string {
			dir := t.TempDir()
			write(t, dir, "notwasm.wasm", "hello, I am text\n")
			return validate(write(t, dir, "bad.toml", cora+"[model]\nmodule = \"notwasm.wasm\"\n"))
		}, []string{`bad.toml:4: `, `notwasm.wasm is not a WebAssembly binary`}},
		{"wasm/missing-module", func(t testing.TB) []string {
			return validate(moduleConf(t, "gone.wasm", ""))
		}, []string{`bad.toml:4: `, `gone.wasm: no such file`}},
		{"wasm/unused-option", func(t testing.TB) []string {
			return validate(moduleConf(t, guest(t, "plugins/wasm/testdata/guests/misc"), "mode = 0\nmoed = 1\n"))
		}, []string{`bad.toml:7: model.options.moed: the "misc" module does not use option "moed"`, `mode`}},
		{"wasm/fractional-option", func(t testing.TB) []string {
			return validate(moduleConf(t, guest(t, "plugins/wasm/testdata/guests/misc"), "mode = 2.5\n"))
		}, []string{`model "misc" layer spec: op #1 cfg_i64: option "mode" = 2.5 must be an integer`}},
		{"wasm/cost-model-as-layer", func(t testing.TB) []string {
			return validate(moduleConf(t, guest(t, "models/costmodels/roofline"), ""))
		}, []string{`model "roofline" is not a layer module (it does not export strata_layer_spec)`}},
		{"wasm/input-width", func(t testing.TB) []string {
			return validate(moduleConf(t, guest(t, "plugins/wasm/testdata/guests/misc"), "mode = 0\n"))
		}, []string{`model "misc": layer 0 takes input width 4 but the dataset has 1433 features`}},
		{"wasm/bad-deadline-flag", func(t testing.TB) []string {
			return validate(conf(t, cora), "-wasm-deadline", "0s")
		}, []string{`-wasm-deadline must be positive`}},
		{"wasm/bad-memory-flag", func(t testing.TB) []string {
			return validate(conf(t, cora), "-wasm-memory-pages", "0")
		}, []string{`-wasm-memory-pages must be in [1,65536]`}},

		// Command line.
		{"cli/no-command", func(testing.TB) []string { return nil }, []string{`usage: strata <command>`}},
		{"cli/unknown-command", func(testing.TB) []string { return []string{"trian"} }, []string{`unknown command "trian"`}},
		{"cli/missing-c", func(testing.TB) []string { return []string{"train"} }, []string{`train: -c FILE is required`}},
		{"cli/validate-missing-c", func(testing.TB) []string { return []string{"validate"} }, []string{`validate: -c FILE is required`}},
		{"cli/positional", func(t testing.TB) []string {
			return []string{"train", "-c", conf(t, cora), "extra"}
		}, []string{`train: unexpected argument "extra"`}},
		{"cli/unknown-flag", func(testing.TB) []string { return []string{"train", "-bogus"} }, []string{`train: flag provided but not defined: -bogus`}},
		{"cli/inspect-missing-i", func(testing.TB) []string { return []string{"inspect"} }, []string{`inspect: -i DATASET is required`}},
		{"cli/convert-missing-o", func(testing.TB) []string {
			return []string{"convert", "-i", "embedded:cora"}
		}, []string{`convert: both -i DATASET and -o OUTPUT are required`}},
		{"cli/convert-bad-to", func(testing.TB) []string {
			return []string{"convert", "-i", "embedded:cora", "-o", "x", "--to", "csv"}
		}, []string{`convert: --to "csv": want strata, npy or ogb`}},
		{"cli/hitratio-needs-o", func(testing.TB) []string {
			return []string{"hitratio", "-i", "embedded:cora"}
		}, []string{`hitratio: -o DIR is required`}},
		{"cli/config-subcommand", func(testing.TB) []string { return []string{"config", "explian"} }, []string{`usage: strata config explain`}},
		{"cli/version-args", func(testing.TB) []string { return []string{"version", "x"} }, []string{`version takes no arguments`}},
		{"cli/unknown-dataset-spec", func(testing.TB) []string {
			return []string{"inspect", "-i", "embedded:coraa"}
		}, []string{`embedded:coraa`}},
		// A single-valued flag given twice: not "the last one wins".
		{"cli/repeated-shard", func(testing.TB) []string {
			return []string{"experiment", "-c", "../../experiments/cora-hidden.toml", "--shard", "0/2", "--shard", "1/3"}
		}, []string{`--shard given twice ("0/2" and "1/3")`}},
		{"cli/repeated-output", func(t testing.TB) []string {
			dir := t.TempDir()
			return []string{"convert", "-i", "embedded:cora", "-o", filepath.Join(dir, "a.strata"), "-o", filepath.Join(dir, "b.strata")}
		}, []string{`-o given twice (`, `a.strata" and "`, `b.strata")`}},
		{"cli/repeated-bool", func(testing.TB) []string {
			return []string{"experiment", "-c", "../../experiments/cora-hidden.toml", "--dry-run", "--dry-run"}
		}, []string{`--dry-run given twice`}},
		// Experiment files: bounded before anything is expanded.
		{"experiment/too-many-runs", func(t testing.TB) []string {
			return []string{"experiment", "--dry-run", "-c", write(t, t.TempDir(), "big.toml", bigExperiment(3, 200, false))}
		}, []string{`big.toml:3: `, `more than 100000 runs`, `split it into several experiment files, or zip axes`}},
		{"experiment/duplicate-axes", func(t testing.TB) []string {
			return []string{"experiment", "--dry-run", "-c", write(t, t.TempDir(), "dup.toml", bigExperiment(5000, 1, true))}
		}, []string{`dup.toml:6: axis "train.a0" is already defined on line 3`, `and 4949 more problems not shown`}},
		// convert --to npy onto its own input directory.
		{"convert/npy-onto-input", func(t testing.TB) []string {
			dir := filepath.Join(t.TempDir(), "npy")
			if code, _, stderr := cli(t, "convert", "--to", "npy", "-i", "embedded:cora", "-o", dir); code != 0 {
				t.Fatalf("convert: %s", stderr)
			}
			return []string{"convert", "--to", "npy", "-i", dir, "-o", dir}
		}, []string{`is the input dataset's directory`, `give a new output directory`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := c.args(t)
			code, _, stderr := cli(t, args...)
			t.Logf("exit %d: %s", code, strings.TrimSpace(stderr))
			if code != exitUser {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, exitUser, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not contain %q; stderr:\n%s", w, stderr)
				}
			}
			for _, bad := range []string{"goroutine ", "runtime/debug", "internal error", ".go:"} {
				if strings.Contains(stderr, bad) {
					t.Errorf("stderr contains %q (a stack trace?):\n%s", bad, stderr)
				}
			}
		})
	}
}

// bigExperiment writes an experiment of n axes of values values each;
// with same, every axis has the same key.
func bigExperiment(n, values int, same bool) string {
	var b strings.Builder
	b.WriteString("name = \"big\"\nmetrics = [\"test_acc\"]\n")
	vals := make([]string, values)
	for i := range vals {
		vals[i] = strconv.Itoa(i + 1)
	}
	for i := range n {
		key := "train.a" + strconv.Itoa(i)
		if same {
			key = "train.a0"
		}
		fmt.Fprintf(&b, "[[axis]]\nkey = %q\nvalues = [%s]\n", key, strings.Join(vals, ", "))
	}
	b.WriteString("[base.data]\ndataset = \"embedded:cora\"\n")
	return b.String()
}

func TestVersion(t *testing.T) {
	code, stdout, stderr := cli(t, "version")
	if code != 0 || !strings.HasPrefix(stdout, "strata "+version) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}, {"train", "-h"}} {
		if code, _, stderr := cli(t, args...); code != 0 {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
	}
	// Every command answers -h, --help and `strata help CMD` on stdout
	// with exit 0, and spells its long flags with two dashes.
	for _, c := range commands() {
		for _, args := range [][]string{{c.name, "-h"}, {c.name, "--help"}, {"help", c.name}} {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				code, stdout, stderr := cli(t, args...)
				if code != 0 || stderr != "" {
					t.Fatalf("exit %d, stderr %q", code, stderr)
				}
				if !strings.HasPrefix(stdout, "usage: strata "+c.name) {
					t.Errorf("stdout %q does not start with the command's usage", stdout)
				}
				if strings.Contains(stdout, "\n  -set") || strings.Contains(stdout, "\n  -wasm") {
					t.Errorf("help spells a long flag with one dash:\n%s", stdout)
				}
			})
		}
	}
	code, stdout, _ := cli(t, "help", "train")
	if code != 0 || !strings.Contains(stdout, "--set key=value") || !strings.Contains(stdout, "-c string") {
		t.Errorf("help train: exit %d:\n%s", code, stdout)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"trian"}, `unknown command "trian" (did you mean "train"?)`},
		{[]string{"convret", "-i", "x"}, `(did you mean "convert"?)`},
		{[]string{"help", "inspcet"}, `help: unknown command "inspcet" (did you mean "inspect"?)`},
		{[]string{"completion", "tcsh"}, `usage: strata completion bash|zsh|fish`},
	} {
		if code, _, stderr := cli(t, tc.args...); code != exitUser || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q lacks %q", tc.args, code, stderr, tc.want)
		}
	}
}

func TestVersionFlag(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}, {"-version"}} {
		code, stdout, stderr := cli(t, args...)
		if code != 0 || !strings.HasPrefix(stdout, "strata "+version) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
}

var (
	scriptMu sync.Mutex
	scripts  = map[string]string{}
)

// completionScript returns strata completion SHELL's script, generated
// once per test process (it runs every layer module).
func completionScript(t *testing.T, shell string) string {
	t.Helper()
	scriptMu.Lock()
	defer scriptMu.Unlock()
	if s, ok := scripts[shell]; ok {
		return s
	}
	code, stdout, stderr := cli(t, append([]string{"completion", shell}, wasmArgs()...)...)
	if code != 0 {
		t.Fatalf("completion %s: exit %d: %s", shell, code, stderr)
	}
	scripts[shell] = stdout
	return stdout
}

// TestCompletion checks that the completion scripts parse in their shell
// and offer the commands, each command's flags, the config keys (every
// plugin section's and strategy section's, model.options' of every layer
// module) and the module names after a *.name key.
func TestCompletion(t *testing.T) {
	want := []string{"train", "experiment", "--set", "--wasm-deadline", "data.split", "train.epochs", "--to", "--config",
		"cache.name", "sampler.fanouts", "partition.seed", "placement.name", "store.graph_ratio", "minibatch.store.placement",
		"model.options.heads", "model.options.out_heads", "model.options.aggr"}
	for _, m := range registry.Namespace("cache") {
		want = append(want, m.Name()) // cache.name's values
	}
	for _, shell := range shells {
		t.Run(shell, func(t *testing.T) {
			stdout := completionScript(t, shell)
			for _, w := range want {
				if shell == "fish" {
					w = strings.TrimLeft(w, "-") // complete -l wasm-deadline
				}
				if !strings.Contains(stdout, w) {
					t.Errorf("script lacks %q", w)
				}
			}
			sh, err := exec.LookPath(shell)
			if err != nil {
				t.Skipf("%s not installed: syntax not checked", shell)
			}
			script := write(t, t.TempDir(), "strata."+shell, stdout)
			if out, err := exec.Command(sh, "-n", script).CombinedOutput(); err != nil {
				t.Errorf("%s -n: %v\n%s", shell, err, out)
			}
		})
	}
	// bash: run the completion function for "strata train --s".
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	script := completionScript(t, "bash")
	path := write(t, t.TempDir(), "c.bash", script+`
COMP_WORDS=(strata train --s); COMP_CWORD=2; _strata; echo "${COMPREPLY[@]}"
COMP_WORDS=(strata train --set data.sp); COMP_CWORD=3; _strata; echo "${COMPREPLY[@]}"
COMP_WORDS=(strata conv); COMP_CWORD=1; _strata; echo "${COMPREPLY[@]}"
# As bash splits them: '=' is a word break.
COMP_LINE="strata train --set cache.na"; COMP_POINT=${#COMP_LINE}; COMP_WORDS=(strata train --set cache.na); COMP_CWORD=3; _strata; echo "${COMPREPLY[@]}"
COMP_LINE="strata train --set sampler.name=u"; COMP_POINT=${#COMP_LINE}; COMP_WORDS=(strata train --set sampler.name = u); COMP_CWORD=5; _strata; echo "${COMPREPLY[@]}"
COMP_LINE="strata train --set model.options.out_"; COMP_POINT=${#COMP_LINE}; COMP_WORDS=(strata train --set model.options.out_); COMP_CWORD=3; _strata; echo "${COMPREPLY[@]}"
COMP_LINE="strata config explain sampler.u"; COMP_POINT=${#COMP_LINE}; COMP_WORDS=(strata config explain sampler.u); COMP_CWORD=3; _strata; echo "${COMPREPLY[@]}"
`)
	out, err := exec.Command(bash, path).CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	if want := "--set\ndata.split=\nconvert\ncache.name=\nuniform\nmodel.options.out_heads=\nsampler.uniform\n"; string(out) != want {
		t.Errorf("completions %q, want %q", out, want)
	}
}

// TestFishCompletion runs the fish script's completions (fish's own
// complete -C) when fish is installed.
func TestFishCompletion(t *testing.T) {
	fish, err := exec.LookPath("fish")
	if err != nil {
		t.Skip("fish not installed")
	}
	script := completionScript(t, "fish")
	path := write(t, t.TempDir(), "strata.fish", script)
	var lines []string
	for _, l := range []string{"strata train --set cache.na", "strata train --set sampler.name=u", "strata validate --set model.options.out_", "strata config explain sampler.u", "strata tr", "strata train --res"} {
		lines = append(lines, fmt.Sprintf("complete -C %q", l))
	}
	out, err := exec.Command(fish, "-c", "source "+path+"; "+strings.Join(lines, "; ")).CombinedOutput()
	if err != nil {
		t.Fatalf("fish: %v\n%s", err, out)
	}
	if want := "cache.name=\nsampler.name=uniform\nmodel.options.out_heads=\nsampler.uniform\ntrain\n--resume\n"; string(out) != want {
		t.Errorf("completions %q, want %q", out, want)
	}
}

// TestZshCompletion runs the zsh script's function with compadd, compset
// and _files stubbed (they exist only inside a completion widget): it
// must offer what the real ones would then filter by the prefix.
func TestZshCompletion(t *testing.T) {
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Skip("zsh not installed")
	}
	script := completionScript(t, "zsh")
	path := write(t, t.TempDir(), "_strata", script)
	var samplers []string
	for _, m := range registry.Namespace("sampler") {
		samplers = append(samplers, m.Name())
	}
	prog := `compdef() { : }
source ` + path + `
compadd() { while [[ $1 != -- ]]; do shift; done; shift; print -r -- "$*" }
compset() { PREFIX=${PREFIX#*=} }
_files() { print files }
words=(strata train --set sampler.name=u); CURRENT=4; PREFIX=sampler.name=u; _strata
words=(strata train -c x); CURRENT=4; PREFIX=x; _strata
words=(strata train --set cache.na); CURRENT=4; PREFIX=cache.na; _strata
`
	out, err := exec.Command(zsh, "-f", "-c", prog).CombinedOutput()
	if err != nil {
		t.Fatalf("zsh: %v\n%s", err, out)
	}
	lines := strings.Split(string(out), "\n")
	if len(lines) < 3 || lines[0] != strings.Join(samplers, " ") || lines[1] != "files" || !slices.Contains(strings.Fields(lines[2]), "cache.name") {
		t.Errorf("zsh completions:\n%s\nwant the samplers %v, files, and keys with cache.name", out, samplers)
	}
}

// inspectJSON runs inspect --json on spec and decodes the result.
func inspectJSON(t *testing.T, spec string) map[string]any {
	t.Helper()
	code, stdout, stderr := cli(t, "inspect", "-i", spec, "--json")
	if code != 0 {
		t.Fatalf("inspect %s: exit %d: %s", spec, code, stderr)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("inspect --json output does not parse: %v\n%s", err, stdout)
	}
	return r
}

func TestInspectJSON(t *testing.T) {
	r := inspectJSON(t, "embedded:cora")
	if r["nodes"] != float64(2708) {
		t.Errorf("nodes = %v, want 2708", r["nodes"])
	}
	if r["classes"] != float64(7) || r["features"] != float64(1433) {
		t.Errorf("classes %v, features %v; want 7, 1433", r["classes"], r["features"])
	}
}

func TestConvertRoundTrip(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cora.strata")
	code, stdout, stderr := cli(t, "convert", "-i", "embedded:cora", "-o", out)
	if code != 0 {
		t.Fatalf("convert: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "2708 nodes") {
		t.Errorf("convert output %q does not mention 2708 nodes", stdout)
	}
	a, b := inspectJSON(t, "embedded:cora"), inspectJSON(t, out)
	for _, k := range []string{"nodes", "edges", "id_bits", "features", "classes", "train", "valid", "test", "degrees", "memory_bytes", "total_bytes"} {
		ja, _ := json.Marshal(a[k])
		jb, _ := json.Marshal(b[k])
		if !bytes.Equal(ja, jb) {
			t.Errorf("%s: embedded %s, converted %s", k, ja, jb)
		}
	}
}

func TestValidateShippedConfig(t *testing.T) {
	code, stdout, stderr := cli(t, append([]string{"validate", "-c", "../../configs/gcn-cora.toml"}, wasmArgs()...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "ok") {
		t.Errorf("stdout %q does not say ok", stdout)
	}
}

func TestListPlugins(t *testing.T) {
	code, stdout, stderr := cli(t, "list-plugins")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, w := range []string{"model.gcn", "costmodel.roofline"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("list-plugins does not list %s:\n%s", w, stdout)
		}
	}
}

func TestConfigExplainIsTOML(t *testing.T) {
	code, stdout, stderr := cli(t, "config", "explain")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var m map[string]any
	if _, err := toml.Decode(stdout, &m); err != nil {
		t.Fatalf("config explain is not TOML: %v", err)
	}
	for _, section := range []string{"data", "model", "train"} {
		if _, ok := m[section].(map[string]any); !ok {
			t.Errorf("config explain has no [%s] table", section)
		}
	}
	// It is also a valid strata config (every key with its default).
	if _, err := config.Parse("explain.toml", []byte(stdout)); err != nil {
		t.Errorf("config explain output is not a valid config: %v", err)
	}
}

// trainCora trains GCN on embedded:cora for 3 epochs and returns the JSON
// summary.
func trainCora(t *testing.T) map[string]any {
	t.Helper()
	args := append([]string{"train", "-c", "../../configs/gcn-cora.toml", "--set", "train.epochs=3", "--set", "data.dataset=embedded:cora"}, wasmArgs()...)
	code, stdout, stderr := cli(t, args...)
	if code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 1 {
		t.Fatalf("train printed %d lines on stdout, want 1:\n%s", len(lines), stdout)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &r); err != nil {
		t.Fatalf("train output does not parse: %v\n%s", err, stdout)
	}
	return r
}

func TestTrainDeterministic(t *testing.T) {
	a := trainCora(t)
	for _, k := range []string{"dataset", "model", "mode", "epochs", "best_valid_acc", "test_acc",
		"epoch_time_median_s", "peak_rss_bytes", "params", "config_sha256", "version"} {
		if _, ok := a[k]; !ok {
			t.Errorf("result has no key %q", k)
		}
	}
	if a["dataset"] != "cora" || a["model"] != "gcn" || a["mode"] != "fullgraph" || a["epochs"] != float64(3) {
		t.Errorf("dataset %v, model %v, mode %v, epochs %v", a["dataset"], a["model"], a["mode"], a["epochs"])
	}
	b := trainCora(t)
	timing := map[string]bool{"epoch_time_median_s": true, "eval_time_median_s": true, "load_time_s": true, "peak_rss_bytes": true, "load_peak_rss_bytes": true, "train_peak_rss_bytes": true}
	if len(a) != len(b) {
		t.Errorf("runs have %d and %d keys", len(a), len(b))
	}
	for k, va := range a {
		if timing[k] {
			continue
		}
		ja, _ := json.Marshal(va)
		jb, _ := json.Marshal(b[k])
		if !bytes.Equal(ja, jb) {
			t.Errorf("%s differs between identical runs: %s vs %s", k, ja, jb)
		}
	}
}

// TestDocsExample builds the example layer of docs/models.md and trains it
// on Cora with its config.
func TestDocsExample(t *testing.T) {
	wasmPath := guest(t, "models/examples/mixagg")
	text, err := os.ReadFile("../../models/examples/mixagg/mixagg-cora.toml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	b, err := os.ReadFile(wasmPath)
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "mixagg.wasm", string(b))
	cfg := write(t, dir, "mixagg-cora.toml", string(text))
	args := append([]string{"train", "-c", cfg, "--set", "train.epochs=5"}, wasmArgs()...)
	code, stdout, stderr := cli(t, args...)
	if code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	var r struct {
		Model   string  `json:"model"`
		Epochs  int     `json:"epochs"`
		TestAcc float64 `json:"test_acc"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(stdout)), &r); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if r.Model != "mixagg" || r.Epochs != 5 || r.TestAcc <= 0.2 {
		t.Errorf("model %q, epochs %d, test_acc %v", r.Model, r.Epochs, r.TestAcc)
	}
}

// TestLogsOffTerminal trains with stderr not a terminal (a buffer, as
// under nohup): one plain progress line per epoch with the loss, accuracy
// and ETA, and output.log holds one JSON line per epoch.
func TestLogsOffTerminal(t *testing.T) {
	dir := t.TempDir()
	cfg := write(t, dir, "log.toml", cora+"[train]\nepochs = 3\n[output]\nprogress = \"auto\"\nlog = \"run.jsonl\"\n")
	code, _, stderr := cli(t, append([]string{"train", "-c", cfg}, wasmArgs()...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stderr, "\r") || !strings.Contains(stderr, "train 100% (3 of 3)") ||
		!strings.Contains(stderr, "epoch 2 loss") || !strings.Contains(stderr, "ETA") {
		t.Errorf("stderr is not plain per-epoch progress:\n%q", stderr)
	}
	if lines := strings.Split(strings.TrimSpace(stderr), "\n"); !strings.HasPrefix(lines[len(lines)-1], "strata: 3 epochs in ") {
		t.Errorf("stderr does not end with the summary line:\n%q", stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "run.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 {
		t.Fatalf("output.log has %d lines, want 3:\n%s", len(lines), b)
	}
	for i, l := range lines {
		var rec struct {
			Epoch int     `json:"epoch"`
			Loss  float64 `json:"loss"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Epoch != i || !(rec.Loss > 0) {
			t.Errorf("line %d %q: %+v, %v", i, l, rec, err)
		}
	}
}

// TestBadCPUISA: a bad STRATA_CPU_ISA is an input error naming the
// variable and its values, exit 2, before any training, on the backends
// that compute on the CPU.
func TestBadCPUISA(t *testing.T) {
	t.Setenv(cpu.ISAEnv, "avx512")
	for _, args := range [][]string{
		{"validate", "-c", conf(t, cora), "--skip-data"},
		{"train", "-c", conf(t, cora), "--set", "train.epochs=1"},
		{"train", "-c", conf(t, cora), "--set", "train.epochs=1", "--set", "train.backend=sim"},
	} {
		code, _, stderr := cli(t, args...)
		if code != exitUser || !strings.Contains(stderr, `STRATA_CPU_ISA="avx512": want auto`) || strings.Contains(stderr, "goroutine ") {
			t.Errorf("%v: exit %d, stderr %q: want exit %d naming STRATA_CPU_ISA", args, code, stderr, exitUser)
		}
	}
}
