package optim

import (
	"fmt"
	"math"
	"path"
	"slices"
	"strings"
)

// Decay returns the weight decay of the parameter named name: the value
// of the train.weight_decay_by pattern that matches it, else
// train.weight_decay.
func (h Hyper) Decay(name string) float64 {
	for pat, wd := range h.DecayBy {
		if MatchParam(pat, name) {
			return wd // CheckDecayBy made the match unique
		}
	}
	return h.WeightDecay
}

// MatchParam reports whether a parameter name ("l3.weight",
// "l0.lin_in.bias") matches pattern: both are split at dots and each
// part is matched as a path.Match glob, so "l*.weight" matches
// "l3.weight" but not "l0.lin_in.weight" (the parts differ in number).
// A malformed pattern matches nothing (CheckDecayBy reports it).
func MatchParam(pattern, name string) bool {
	ps, ns := strings.Split(pattern, "."), strings.Split(name, ".")
	if len(ps) != len(ns) {
		return false
	}
	for i := range ps {
		if ok, err := path.Match(ps[i], ns[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

// CheckDecayBy checks train.weight_decay_by against the model's
// parameter names: every value finite and >= 0, every pattern well
// formed and matching at least one parameter, and no parameter matched
// by two patterns (which one would win is not written anywhere).
func CheckDecayBy(by map[string]float64, names []string) error {
	pats := make([]string, 0, len(by))
	for p := range by {
		pats = append(pats, p)
	}
	slices.Sort(pats)
	for _, p := range pats {
		if wd := by[p]; wd < 0 || math.IsNaN(wd) || math.IsInf(wd, 0) {
			return fmt.Errorf("train.weight_decay_by.%q = %g: must be a finite number >= 0", p, wd)
		}
		if _, err := path.Match(strings.ReplaceAll(p, ".", "/"), ""); err != nil {
			return fmt.Errorf("train.weight_decay_by: pattern %q is malformed (%v); write globs of the name's dot-separated parts, e.g. \"l*.weight\"", p, err)
		}
		n := 0
		for _, name := range names {
			if MatchParam(p, name) {
				n++
			}
		}
		if n == 0 {
			return fmt.Errorf("train.weight_decay_by: pattern %q matches no parameter of the model; its parameters are %s", p, listNames(names))
		}
	}
	for _, name := range names {
		var hit []string
		for _, p := range pats {
			if MatchParam(p, name) {
				hit = append(hit, p)
			}
		}
		if len(hit) > 1 {
			return fmt.Errorf("train.weight_decay_by: parameter %s is matched by %q and %q; make the patterns disjoint", name, hit[0], hit[1])
		}
	}
	return nil
}

// listNames lists up to a dozen parameter names for an error message.
func listNames(names []string) string {
	const most = 12
	if len(names) <= most {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:most], ", ") + fmt.Sprintf(" and %d more", len(names)-most)
}
