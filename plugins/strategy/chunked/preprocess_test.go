package chunked

import (
	"math"
	"slices"
	"testing"

	"strata/core/train"
	"strata/internal/floattol"
	"strata/plugins/strategy/internal/chunkfeed"
	"strata/plugins/strategy/internal/testkit"
)

// TestPreprocessFigures checks the preprocessing figures' structure (no
// time is asserted): every phase is reported, none is negative, they sum
// to preprocess_s, the phases that do not run are zero (the dedup plan
// with chunked.dedup = "none", Alg. 4 without chunked.reorganize, the
// peak estimate without a device capacity, the split plan with "cache"
// or "recompute") and the ones that run are measured (the split plan
// with "split" and "hybrid", which prices the split); dedup_preprocess_s is
// reorganize + dedup_plan, dedup_preprocess_share it over 100 predicted
// epochs; the run holds a deduplication plan exactly when it
// deduplicates, with a reuse plan exactly with reuse.
func TestPreprocessFigures(t *testing.T) {
	cases := []struct {
		name  string
		sets  []string
		ran   []string // phases that must have taken time
		zeros []string // phases that must not have run
	}{
		{"none", []string{`chunked.dedup="none"`, "chunked.reorganize=true", "chunked.chunks=8"},
			[]string{phasePartition, phaseChunks, phaseReorganize, phaseComm, phaseSplit}, []string{phaseDedup, phasePeak}},
		{"p2p", []string{`chunked.dedup="p2p"`, "chunked.chunks=8", `chunked.intermediates="cache"`},
			[]string{phasePartition, phaseChunks, phaseComm, phaseDedup}, []string{phaseReorganize, phasePeak, phaseSplit}},
		{"p2p_reuse, auto, split", []string{`chunked.dedup="p2p_reuse"`, "chunked.reorganize=true", `chunked.chunks="auto"`, "devices.memory_bytes=8000000", `chunked.intermediates="split"`},
			[]string{phasePartition, phaseChunks, phaseReorganize, phasePeak, phaseComm, phaseDedup, phaseSplit}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sets := chunkedSets(append(tc.sets, `devices.preset="nvlink-clique-4"`)...)
			r, _ := newTestRun(t, testkit.MustParse(t, testkit.CoraBase, sets...))
			res := train.Result{PredictedEpochS: 0.25}
			r.ReportResult(&res)
			figs := res.Figures["chunked"].(*ChunkedFigures)
			phases := preprocessPhases()
			if len(figs.PreprocessPhasesS) != len(phases) {
				t.Errorf("phases %v, want one entry for each of %v", figs.PreprocessPhasesS, phases)
			}
			var sum float64
			for _, p := range phases {
				s, ok := figs.PreprocessPhasesS[p]
				if !ok || s < 0 {
					t.Errorf("phase %s: %v s (reported: %v)", p, s, ok)
				}
				sum += s
				switch {
				case slices.Contains(tc.zeros, p) && s != 0:
					t.Errorf("phase %s did not run but took %v s", p, s)
				case slices.Contains(tc.ran, p) && s == 0:
					t.Errorf("phase %s ran but took no time", p)
				}
			}
			// Each phase's seconds are rounded twice from its integer
			// nanoseconds (as is the total) and the sum rounds once a term.
			n := len(phases)
			tol := floattol.Sum(n, 0x1p-53, figs.PreprocessS) + floattol.Gamma(2*(n+1), 0x1p-53)*figs.PreprocessS
			if figs.PreprocessS <= 0 || math.Abs(sum-figs.PreprocessS) > tol {
				t.Errorf("phases sum to %.17g s, preprocess_s %.17g s (tolerance %.3g)", sum, figs.PreprocessS, tol)
			}
			dp := figs.PreprocessPhasesS[phaseReorganize] + figs.PreprocessPhasesS[phaseDedup]
			if figs.DedupPreprocessS != dp || figs.DedupPreprocessShare == nil || *figs.DedupPreprocessShare != dp/25 {
				t.Errorf("dedup preprocessing %v s, share %v; want %v s (reorganize + dedup_plan) and %v (over 100 epochs of 0.25 s)",
					figs.DedupPreprocessS, figs.DedupPreprocessShare, dp, dp/25)
			}
			dedup := tc.name != "none"
			if (r.trans != nil) != dedup || dedup && (r.trans.Prev != nil) != (r.dedup == chunkfeed.DedupReuse) {
				t.Errorf("dedup %s: deduplication plan %v", r.dedup, r.trans != nil)
			}
		})
	}
}
