package runner

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"strata/core/safefile"
	"strata/experiments/runner/numerics"
)

// RunState is what a results directory holds for a run.
type RunState string

// The states of a run's stored result.
const (
	StateToRun RunState = "to run" // no result
	StateDone  RunState = "done"   // a result of the current code
	StateStale RunState = "stale"  // a result of other code: it runs again
)

// codeKeys computes the code key of every run of the plan.
func codeKeys(p *Plan, opts Options) (*runKeyer, map[string]string, error) {
	bin := opts.Binary
	if bin == "" {
		var err error
		if bin, err = BinaryDigest(); err != nil {
			return nil, nil, err
		}
	}
	num := numerics.Current(false)
	if opts.Numerics != nil {
		num = *opts.Numerics
	}
	k := &runKeyer{binary: bin, numerics: num}
	keys := make(map[string]string, len(p.Runs))
	for _, r := range p.Runs {
		key, err := k.key(r.Config)
		if err != nil {
			return nil, nil, err
		}
		keys[r.ID] = key
	}
	return k, keys, nil
}

// States reports, per run of the plan, what out holds for it under the
// code of opts (Binary, Numerics).
func States(p *Plan, out string, opts Options) ([]RunState, error) {
	k, keys, err := codeKeys(p, opts)
	if err != nil {
		return nil, err
	}
	states := make([]RunState, len(p.Runs))
	for _, r := range p.Runs {
		rec, why := loadRecord(out, r, p.Exp, k, keys[r.ID])
		switch {
		case rec != nil:
			states[r.Index] = StateDone
		case why != "":
			states[r.Index] = StateStale
		default:
			states[r.Index] = StateToRun
		}
	}
	return states, nil
}

// scanned is what the results directory holds for the runs of an
// invocation.
type scanned struct {
	records  []*Record // the reused results, by run index
	pending  []*Run    // the runs to run
	mine     int       // the runs of this invocation (shard, selection)
	stale    int
	staleWhy []string // why stored results are not reused, with counts
}

// scan loads the stored results of the invocation's runs: those of the
// current code are reused; the others run (again).
func (env *runEnv) scan(p *Plan, out string) *scanned {
	st := &scanned{records: make([]*Record, len(p.Runs))}
	count := map[string]int{}
	var order []string
	for _, r := range p.Runs {
		if !env.opts.Shard.Has(r) || env.opts.Select != nil && !env.opts.Select(r) {
			continue
		}
		st.mine++
		key := env.keys[r.ID]
		if env.opts.ReportsOnly {
			key = "" // any code's result
		}
		rec, why := loadRecord(out, r, p.Exp, env.keyer, key)
		if rec != nil {
			st.records[r.Index] = rec
			continue
		}
		if why != "" {
			st.stale++
			if count[why] == 0 {
				order = append(order, why)
			}
			count[why]++
		}
		st.pending = append(st.pending, r)
	}
	for _, why := range order {
		st.staleWhy = append(st.staleWhy, fmt.Sprintf("%d stored results not reused: %s; running them again", count[why], why))
	}
	return st
}

// MaxResultBytes bounds a stored file of results that the runner reads
// back (a run's JSON, results.csv, provenance.json): a run's result is a
// few kilobytes, a results table of 100,000 runs some tens of megabytes.
const MaxResultBytes = 256 << 20

// loadRecord returns the stored result of r if it was made by the code
// of key ("": by any code) and is a success, or a failure the experiment
// expects; else nil and, for a result that exists but is not reused, why
// ("" when there is none, or it is unreadable).
func loadRecord(out string, r *Run, e *Experiment, k *runKeyer, key string) (*Record, string) {
	b, err := safefile.ReadFile(filepath.Join(out, "runs", r.ID+".json"), MaxResultBytes)
	if err != nil {
		return nil, ""
	}
	var rec Record
	if json.Unmarshal(b, &rec) != nil || rec.RunID != r.ID {
		return nil, ""
	}
	switch {
	case rec.Status == "ok" && rec.Result == nil:
		return nil, ""
	case rec.Status != "ok" && e.ExpectedFailure(r) == nil:
		return nil, "a stored failure that the experiment no longer expects"
	case key == "":
	case rec.Code == "":
		return nil, "they record no code key (made before results were keyed by their code)"
	case rec.Code != key:
		return nil, staleReason(&rec, k)
	}
	rec.Skipped = true
	return &rec, ""
}

// staleReason says what differs between the code of a stored result and
// the current one.
func staleReason(rec *Record, k *runKeyer) string {
	switch {
	case rec.Numerics != nil && rec.Numerics.Key() != k.numerics.Key():
		return fmt.Sprintf("the numerics changed (%s → %s)", rec.Numerics.Text(), k.numerics.Text())
	case rec.Binary != k.binary:
		return fmt.Sprintf("the strata binary or its libraries changed (%s → %s)", short(rec.Binary), short(k.binary))
	}
	return "a module file they load changed"
}
