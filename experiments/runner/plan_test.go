package runner

import (
	"context"
	"slices"
	"testing"
)

func labels(cells []*Cell) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = c.Label()
	}
	return out
}

func TestExpandOrder(t *testing.T) {
	tests := []struct {
		name string
		head string
		want []string
	}{
		{"no axes", `metrics = ["test_acc"]`, []string{""}},
		{"one axis", `
metrics = ["test_acc"]
[[axis]]
key = "model.hidden"
values = [8, 16, 32]
`, []string{"model.hidden=8", "model.hidden=16", "model.hidden=32"}},
		{"cartesian, first axis slowest", `
metrics = ["test_acc"]
[[axis]]
key = "model.hidden"
values = [8, 16]
[[axis]]
key = "model.name"
values = ["gcn", "sage", "gin"]
`, []string{
			"model.hidden=8 model.name=gcn", "model.hidden=8 model.name=sage", "model.hidden=8 model.name=gin",
			"model.hidden=16 model.name=gcn", "model.hidden=16 model.name=sage", "model.hidden=16 model.name=gin",
		}},
		{"zip group advances together", `
metrics = ["test_acc"]
[[axis]]
key = "model.hidden"
values = [8, 16]
zip = "size"
[[axis]]
key = "model.name"
values = ["gcn", "sage"]
[[axis]]
key = "train.lr"
values = [0.1, 0.01]
zip = "size"
`, []string{
			"model.hidden=8 model.name=gcn train.lr=0.1", "model.hidden=8 model.name=sage train.lr=0.1",
			"model.hidden=16 model.name=gcn train.lr=0.01", "model.hidden=16 model.name=sage train.lr=0.01",
		}},
		{"zip only", `
metrics = ["test_acc"]
[[axis]]
key = "model.hidden"
values = [8, 16, 32]
zip = "z"
[[axis]]
key = "train.lr"
values = [0.1, 0.01, 0.001]
zip = "z"
`, []string{"model.hidden=8 train.lr=0.1", "model.hidden=16 train.lr=0.01", "model.hidden=32 train.lr=0.001"}},
		{"two zip groups", `
metrics = ["test_acc"]
[[axis]]
key = "model.hidden"
values = [8, 16]
zip = "a"
[[axis]]
key = "train.lr"
values = [0.1, 0.01]
zip = "b"
[[axis]]
key = "model.dropout"
values = [0.0, 0.5]
zip = "a"
[[axis]]
key = "train.epochs"
values = [1, 2]
zip = "b"
`, []string{
			"model.hidden=8 train.lr=0.1 model.dropout=0.0 train.epochs=1",
			"model.hidden=8 train.lr=0.01 model.dropout=0.0 train.epochs=2",
			"model.hidden=16 train.lr=0.1 model.dropout=0.5 train.epochs=1",
			"model.hidden=16 train.lr=0.01 model.dropout=0.5 train.epochs=2",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := mustParse(t, exp(tc.head))
			got := labels(e.Expand())
			if !slices.Equal(got, tc.want) {
				t.Errorf("cells\n got %q\nwant %q", got, tc.want)
			}
			if again := labels(mustParse(t, exp(tc.head)).Expand()); !slices.Equal(again, got) {
				t.Errorf("expansion is not deterministic: %q then %q", got, again)
			}
		})
	}
}

func TestPlanRuns(t *testing.T) {
	head := `
metrics = ["test_acc"]
seeds = [3, 1]
[[axis]]
key = "model.hidden"
values = [8, 16]
[[axis]]
key = "model.name"
values = ["gcn", "sage"]
`
	plan := func() *Plan {
		p, err := NewPlan(context.Background(), mustParse(t, exp(head)), "v1", nil)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := plan()
	want := []string{
		"model.hidden=8 model.name=gcn seed=3", "model.hidden=8 model.name=gcn seed=1",
		"model.hidden=8 model.name=sage seed=3", "model.hidden=8 model.name=sage seed=1",
		"model.hidden=16 model.name=gcn seed=3", "model.hidden=16 model.name=gcn seed=1",
		"model.hidden=16 model.name=sage seed=3", "model.hidden=16 model.name=sage seed=1",
	}
	var got []string
	ids := map[string]bool{}
	for i, r := range p.Runs {
		got = append(got, r.Label())
		if r.Index != i || r.Cell.Runs[slices.Index(r.Cell.Runs, r)] != r {
			t.Errorf("run %d: index %d", i, r.Index)
		}
		c := r.Config
		if int64(c.Model.Hidden) != r.Cell.Values[0].(int64) || c.Model.Name != r.Cell.Values[1].(string) || c.Train.Seed != r.Seed {
			t.Errorf("run %s: config has hidden %d, model %q, seed %d", r.Label(), c.Model.Hidden, c.Model.Name, c.Train.Seed)
		}
		if c.Train.Epochs != 2 {
			t.Errorf("run %s: epochs %d, want the base's 2", r.Label(), c.Train.Epochs)
		}
		ids[r.ID] = true
	}
	if !slices.Equal(got, want) {
		t.Errorf("runs\n got %q\nwant %q", got, want)
	}
	if len(ids) != len(p.Runs) {
		t.Errorf("%d distinct run IDs for %d runs", len(ids), len(p.Runs))
	}
	// Identities are stable, and depend on the strata version.
	q := plan()
	for i := range p.Runs {
		if p.Runs[i].ID != q.Runs[i].ID {
			t.Errorf("run %d: ID %s then %s", i, p.Runs[i].ID, q.Runs[i].ID)
		}
	}
	r, err := NewPlan(context.Background(), mustParse(t, exp(head)), "v2", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Runs[0].ID == p.Runs[0].ID {
		t.Error("the run ID does not depend on the strata version")
	}
}
