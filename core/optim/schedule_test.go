package optim_test

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"strata/core/config"
	"strata/core/optim"
	"strata/internal/floattol"
)

// schedule parses a config with the given [train.lr_schedule] lines and
// returns its schedule module (nil when the section is absent).
func schedule(t *testing.T, epochs int, lines string) optim.Schedule {
	t.Helper()
	src := "[data]\ndataset = \"embedded:cora\"\n[train]\nepochs = " + strconv.Itoa(epochs) + "\n" + lines
	c, err := config.Parse("s.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := c.Train.LRSchedule.Module.(optim.Schedule)
	return s
}

// TestScheduleTable checks every schedule against a table of rates worked
// out by hand from PyTorch's definitions (StepLR, CosineAnnealingLR,
// LinearLR warm-up chained by SequentialLR), one rate per epoch.
func TestScheduleTable(t *testing.T) {
	c4 := (1 + math.Sqrt2/2) / 2 // (1+cos(π/4))/2
	s4 := (1 - math.Sqrt2/2) / 2 // (1+cos(3π/4))/2
	cases := []struct {
		name   string
		epochs int
		lr     float64
		toml   string
		want   []float64
	}{
		{"absent", 3, 0.1, "", []float64{0.1, 0.1, 0.1}},
		{"constant", 3, 0.1, "[train.lr_schedule]\nname = \"constant\"\n", []float64{0.1, 0.1, 0.1}},
		{"constant warm-up", 6, 1, "[train.lr_schedule]\nname = \"constant\"\nwarmup_epochs = 4\nwarmup_start_factor = 0.25\n",
			[]float64{0.25, 0.4375, 0.625, 0.8125, 1, 1}},
		{"constant warm-up default factor", 4, 0.3, "[train.lr_schedule]\nname = \"constant\"\nwarmup_epochs = 2\n",
			[]float64{0.1, 0.2, 0.3, 0.3}},
		{"step", 8, 0.1, "[train.lr_schedule]\nname = \"step\"\nstep_size = 3\ngamma = 0.5\n",
			[]float64{0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025}},
		{"step warm-up", 5, 1, "[train.lr_schedule]\nname = \"step\"\nstep_size = 2\ngamma = 0.1\nwarmup_epochs = 1\nwarmup_start_factor = 0.5\n",
			[]float64{0.5, 1, 1, 0.1, 0.1}},
		{"cosine", 5, 1, "[train.lr_schedule]\nname = \"cosine\"\nt_max = 4\n", []float64{1, c4, 0.5, s4, 0}},
		{"cosine default t_max", 4, 1, "[train.lr_schedule]\nname = \"cosine\"\n", []float64{1, c4, 0.5, s4}},
		{"cosine eta_min", 5, 2, "[train.lr_schedule]\nname = \"cosine\"\nt_max = 4\neta_min = 1\n", []float64{2, 1 + c4, 1.5, 1 + s4, 1}},
		{"cosine warm-up", 6, 1, "[train.lr_schedule]\nname = \"cosine\"\nwarmup_epochs = 2\nwarmup_start_factor = 0.5\n",
			[]float64{0.5, 0.75, 1, c4, 0.5, s4}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := schedule(t, c.epochs, c.toml)
			for e, want := range c.want {
				got := optim.LR(s, c.lr, e, c.epochs)
				// At most 8 float64 roundings (a cosine or a power within
				// FuncULPs, a sum, products) of terms no larger than lr.
				if math.Abs(got-want) > floattol.Gamma(8+floattol.FuncULPs, floattol.UFloat64)*c.lr {
					t.Errorf("epoch %d: lr %.17g, want %.17g", e, got, want)
				}
			}
		})
	}
}

// TestScheduleErrors checks that bad schedule values are refused naming
// the key and the fix.
func TestScheduleErrors(t *testing.T) {
	cases := map[string][]string{
		"[train.lr_schedule]\nname = \"step\"\nstep_size = 0\n":             {"s.toml:7:", "train.lr_schedule.step_size = 0", "[1, 10000000]"},
		"[train.lr_schedule]\nname = \"step\"\ngama = 0.5\n":                {"s.toml:7:", `unknown key "train.lr_schedule.gama"`, `did you mean "train.lr_schedule.gamma"`},
		"[train.lr_schedule]\nname = \"cosin\"\n":                           {"s.toml:6:", `unknown lrschedule plugin (did you mean "cosine"?)`},
		"[train.lr_schedule]\nname = \"cosine\"\nwarmup_epochs = 10\n":      {"s.toml:7:", "train.lr_schedule.warmup_epochs = 10 is not below train.epochs = 10", "lower warmup_epochs or raise train.epochs"},
		"[train.lr_schedule]\nname = \"cosine\"\nwarmup_start_factor = 0\n": {"s.toml:7:", "train.lr_schedule.warmup_start_factor = 0", "(0, 1]"},
		"[train.lr_schedule]\nwarmup_epochs = 2\n":                          {"train.lr_schedule.name: required key is missing"},
		"grad_clip = -1\n": {"s.toml:5:", "train.grad_clip = -1", ">= 0"},
	}
	for src, want := range cases {
		_, err := config.Parse("s.toml", []byte("[data]\ndataset = \"embedded:cora\"\n[train]\nepochs = 10\n"+src))
		if err == nil {
			t.Errorf("%q: no error", src)
			continue
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q lacks %q", src, err, w)
			}
		}
	}
}
