package toyplugins

import (
	"context"
	"strconv"

	"strata/core/registry"
	"strata/core/train"
)

// Repeat is strategy.toy-repeat: the toy full-graph strategy with options
// of its own (the [toy-repeat] section), figures of its own in the result
// line ("toy-repeat": {...}) and a column of its own in output.csv, all in
// this one file: no core file names it.
type Repeat struct {
	Steps int    `toml:"steps" range:"[1,16]" doc:"optimizer steps per epoch, each over the whole graph"`
	Tag   string `toml:"tag" doc:"a label the run copies into its figures"`
}

var (
	_ train.Strategy       = (*Repeat)(nil)
	_ train.FigureDeclarer = (*Repeat)(nil)
)

// StrataModule implements registry.Module.
func (*Repeat) StrataModule() registry.ModuleInfo {
	return registry.ModuleInfo{ID: "strategy.toy-repeat", New: func() registry.Module { return &Repeat{Steps: 1} },
		Doc: "toy: full-graph training, [toy-repeat] steps optimizer steps per epoch"}
}

// Uses implements train.Strategy.
func (*Repeat) Uses() train.Uses { return train.Uses{Float64: true, Checkpoints: true} }

// RepeatFigures are strategy.toy-repeat's figures.
type RepeatFigures struct {
	Steps int    `json:"steps" doc:"optimizer steps the run took"`
	Tag   string `json:"tag"`
}

// Figures implements train.FigureDeclarer.
func (*Repeat) Figures() any { return &RepeatFigures{} }

// NewStepper implements train.Strategy.
func (r *Repeat) NewStepper(ctx context.Context, e *train.Env) (train.Stepper, error) {
	st, err := (*Whole)(nil).NewStepper(ctx, e)
	if err != nil {
		return nil, err
	}
	return &repeat{Stepper: st, opts: *r}, nil
}

// repeat runs the toy stepper's epoch opts.Steps times.
type repeat struct {
	train.Stepper
	opts  Repeat
	steps int
}

func (s *repeat) Epoch(ctx context.Context, seed uint64, update func() error) (float64, error) {
	var sum float64
	for i := range s.opts.Steps {
		loss, err := s.Stepper.Epoch(ctx, seed+uint64(i), update)
		if err != nil {
			return 0, err
		}
		sum += loss
		s.steps++
	}
	return sum / float64(s.opts.Steps), nil
}

// Columns implements train.Columner.
func (*repeat) Columns() []string { return []string{"toy_steps"} }

// ReportEpoch implements train.EpochReporter.
func (s *repeat) ReportEpoch(rec *train.EpochRecord) {
	if rec.Extra == nil {
		rec.Extra = map[string]string{}
	}
	rec.Extra["toy_steps"] = strconv.Itoa(s.steps)
}

// ReportResult implements train.ResultReporter.
func (s *repeat) ReportResult(res *train.Result) {
	res.SetFigures("toy-repeat", &RepeatFigures{Steps: s.steps, Tag: s.opts.Tag})
}

func init() { registry.Register(new(Repeat)) }
