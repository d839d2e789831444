package runner

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestClassOf(t *testing.T) {
	train, part, hit := kindByName("train"), kindByName("partition-batch"), kindByName("hitratio")
	tests := []struct {
		kind    *Kind
		column  string
		checked bool
	}{
		{train, "test_acc", true},
		{train, "final_loss", true},
		{train, "epoch_time_median_s", false},
		{train, "peak_rss_bytes", false},
		{train, "peak_tier_bytes.device0", true},
		{train, "traffic.host->device0.bytes", true},
		{train, "traffic.host->device0.seconds", true},
		{train, "hybrid.cpu_bind_s", false},
		{train, "hybrid.cpu_bind_s_pred", true},
		{train, "hybrid.cpu_share", true},
		{train, "hybrid.train_threads", false},
		{train, "distfull.ranks.1.comm_s", false},
		{train, "distmini.ranks.1.sent_by_purpose.features", true},
		{train, "hybrid.sample_med_s", false},
		{train, "hybrid.measured_mteps", false},
		{train, "hybrid.predicted_mteps", true},
		{train, "chunked.comm_bytes.p2p", true},
		{train, "minibatch.sampled_edges_per_s", false},
		{train, "minibatch.tier_hit_rates.host", true},
		{train, "chunked.intermediates.0", true},
		{train, "chunked.preprocess_s", false},
		{train, "chunked.preprocess_phases_s.dedup_plan", false},
		{train, "chunked.dedup_preprocess_s", false},
		{train, "chunked.dedup_preprocess_share", false},
		{train, "config_sha256", false},
		{train, "threads", false},
		{train, "a_field_nobody_declared", true}, // new fields are compared until declared
		{part, "time_s", false},
		{part, "input_redundancy", true},
		{part, "layer_redundancy.1", true},
		{hit, "rank_time_s", false},
		{hit, "hit_ratio", true},
	}
	for _, tc := range tests {
		if got := tc.kind.ClassOf(tc.column); got.Checked != tc.checked || !got.Checked && got.Why == "" {
			t.Errorf("%s %s: %+v, want checked=%v (and a reason when not)", tc.kind.Name, tc.column, got, tc.checked)
		}
	}
}

// TestEveryResultFieldClassed: each top-level field of each kind's result
// is named by a rule of the kind (not left to the default), so that a new
// field is a decision about --check.
func TestEveryResultFieldClassed(t *testing.T) {
	for _, k := range Kinds {
		for _, name := range jsonFields(k.Result) {
			found := slices.ContainsFunc(k.classes, func(r classRule) bool {
				return r.pattern == name || strings.HasPrefix(r.pattern, name+".")
			})
			if !found {
				t.Errorf("kind %s: result field %q has no class in kinds' rules (classes.go): declare whether --check compares it", k.Name, name)
			}
		}
	}
}

// jsonFields lists the JSON names of a struct's fields, embedded structs
// flattened.
func jsonFields(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && name == "" {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

func TestLeaves(t *testing.T) {
	res := map[string]any{
		"test_acc": 0.5, "dataset": "cora", "peak_tier_bytes": map[string]int64{"device0": 12},
		"traffic":       []map[string]any{{"link": "host->device0", "bytes": 3}},
		"intermediates": []string{"cache", "recompute"}, "final_loss": "NaN",
	}
	got, err := Leaves(res)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"test_acc": "0.5", "dataset": `"cora"`, "peak_tier_bytes.device0": "12", "traffic.host->device0.link": `"host->device0"`,
		"traffic.host->device0.bytes": "3", "intermediates.0": `"cache"`, "intermediates.1": `"recompute"`, "final_loss": `"NaN"`,
	}
	if len(got) != len(want) {
		t.Errorf("leaves %v, want %v", got, want)
	}
	for k, v := range want {
		if string(got[k]) != v {
			t.Errorf("leaf %s = %s, want %s", k, got[k], v)
		}
	}
	same := []struct {
		a, b string
		want bool
	}{
		{"1", "1.0", true}, {"0.1", "0.1", true}, {"0.1", "0.10000000000000002", false},
		{`"NaN"`, `"NaN"`, true}, {`"NaN"`, "0", false}, {`"1"`, "1", false}, {`"a"`, `"b"`, false}, {"true", "true", true},
	}
	for _, s := range same {
		if got := SameLeaf(json.RawMessage(s.a), json.RawMessage(s.b)); got != s.want {
			t.Errorf("SameLeaf(%s, %s) = %v", s.a, s.b, got)
		}
	}
}

const declHead = `
metrics = ["test_acc"]
seeds = [0, 1]
[[axis]]
key = "model.hidden"
values = [8, 16]
[[axis]]
key = "model.name"
values = ["gcn", "sage"]
labels = ["GCN", "SAGE"]
`

func TestDeclarationErrors(t *testing.T) {
	tests := []struct {
		name string
		decl string
		want []string
	}{
		{"unknown axis", `[check]
runs = [{ "model.hiden" = 8 }]
why = "cheap"
`, []string{"exp.toml:11:", `"model.hiden" is not an axis`, `"model.hidden"`}},
		{"value not on the axis", `[check]
runs = [{ "model.hidden" = 32 }]
why = "cheap"
`, []string{"exp.toml:11:", "model.hidden = 32 is not one of the axis values [8, 16]"}},
		{"seed not among seeds", `[check]
runs = [{ seed = 7 }]
why = "cheap"
`, []string{"exp.toml:11:", "seed = 7 is not one of seeds [0, 1]"}},
		{"runs without why", `[check]
runs = [{ seed = 0 }]
`, []string{"exp.toml:11:", "needs why"}},
		{"runs not tables", `[check]
runs = ["seed=0"]
why = "x"
`, []string{"exp.toml:11:", "expected inline tables"}},
		{"exclude unknown column", `[check]
[[check.exclude]]
column = "test_accuracy"
why = "noise"
`, []string{"exp.toml:12:", `"test_accuracy": not a result column`}},
		{"exclude without why", `[[check.exclude]]
column = "test_acc"
`, []string{"exp.toml:10:", "check.exclude.why: required key is missing"}},
		{"expected failure without why", `[[expected_failure]]
runs = [{ "model.name" = "SAGE" }]
`, []string{"exp.toml:10:", "expected_failure.why: required key is missing"}},
		{"expected failure bad value", `[[expected_failure]]
runs = [{ "model.name" = "gat" }]
why = "diverges"
`, []string{"exp.toml:11:", `model.name = "gat" is not one of the axis values`, `labels "GCN", "SAGE"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("exp.toml", []byte(exp(declHead+tc.decl)))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestSelectorPicksNoRun(t *testing.T) {
	// Without seeds, a seed key can miss the base config's seed: an error
	// of the plan at the selector's line.
	e := mustParse(t, exp(`
metrics = ["test_acc"]
[[axis]]
key = "model.hidden"
values = [8, 16]
[check]
runs = [{ "model.hidden" = 8, seed = 5 }]
why = "cheap"
`))
	_, err := NewPlan(context.Background(), e, "test", nil)
	if err == nil || !strings.Contains(err.Error(), "exp.toml:6:") || !strings.Contains(err.Error(), "picks no run") {
		t.Fatalf("err %v, want a located 'picks no run'", err)
	}
}

func TestSubsetAndExpectedFailures(t *testing.T) {
	e := mustParse(t, exp(`mirrors = "a sanity check"`+declHead+`[check]
runs = [{ "model.hidden" = 8, "model.name" = "GCN", seed = 0 }, { "model.name" = "sage", seed = 1, "model.hidden" = 16 }]
why = "the cheapest point of each model"
[[check.exclude]]
column = "peak_tier_bytes.*"
why = "overlap"
[[expected_failure]]
runs = [{ "model.name" = "SAGE", seed = 1 }]
why = "diverges"
`))
	p, err := NewPlan(context.Background(), e, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, r := range p.Subset() {
		labels = append(labels, r.Label())
	}
	want := []string{"model.hidden=8 model.name=GCN seed=0", "model.hidden=16 model.name=SAGE seed=1"}
	if !slices.Equal(labels, want) {
		t.Errorf("subset %q, want %q", labels, want)
	}
	var failing []string
	for _, r := range p.Runs {
		if f := e.ExpectedFailure(r); f != nil {
			failing = append(failing, r.Label()+": "+f.Why)
		}
	}
	if want := []string{"model.hidden=8 model.name=SAGE seed=1: diverges", "model.hidden=16 model.name=SAGE seed=1: diverges"}; !slices.Equal(failing, want) {
		t.Errorf("expected failures %q, want %q", failing, want)
	}
	if e.Mirrors != "a sanity check" || e.Check.Why == "" {
		t.Errorf("mirrors %q, why %q", e.Mirrors, e.Check.Why)
	}
	if c := e.ClassOf("peak_tier_bytes.device0"); c.Checked || !strings.Contains(c.Why, "overlap") {
		t.Errorf("excluded column: %+v", c)
	}
	if !e.ClassOf("test_acc").Checked {
		t.Error("test_acc is not checked")
	}
}

// TestSelectorLabelsOfAZipGroup: a label picks its own point of a zip
// group whose values repeat; a value picks every point that has it.
func TestSelectorLabelsOfAZipGroup(t *testing.T) {
	e := mustParse(t, exp(`
metrics = ["test_acc"]
[[axis]]
key = "model.hidden"
values = [8, 16, 16]
labels = ["small", "wide", "wide-slow"]
zip = "step"
[[axis]]
key = "train.lr"
values = [0.01, 0.01, 0.001]
zip = "step"
[check]
runs = [{ "model.hidden" = "wide-slow" }]
why = "the last step"
[[expected_failure]]
runs = [{ "model.hidden" = 16 }]
why = "wide"
`))
	p, err := NewPlan(context.Background(), e, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Subset(); len(s) != 1 || s[0].Index != 2 {
		t.Errorf("subset %v, want the third run only", s)
	}
	var failing []int
	for _, r := range p.Runs {
		if e.ExpectedFailure(r) != nil {
			failing = append(failing, r.Index)
		}
	}
	if !slices.Equal(failing, []int{1, 2}) {
		t.Errorf("expected failures at %v, want runs 1 and 2 (value 16)", failing)
	}
}
