package graph

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
)

// RandomSplit is a generated split: per class, Train training and Valid
// validation nodes drawn at random with Seed; every other labeled node is a
// test node (the protocol of Shchur et al., "Pitfalls of Graph Neural
// Network Evaluation", 2018).
type RandomSplit struct {
	Train, Valid int
	Seed         uint64
}

// randomSplitRE matches "random-<train>-<valid>-seed<k>".
var randomSplitRE = regexp.MustCompile(`^random-([0-9]+)-([0-9]+)-seed([0-9]+)$`)

// ParseRandomSplit parses a split name "random-<train>-<valid>-seed<k>",
// such as "random-20-30-seed0". ok is false when name is not of that form.
func ParseRandomSplit(name string) (s RandomSplit, ok bool, err error) {
	m := randomSplitRE.FindStringSubmatch(name)
	if m == nil {
		return s, false, nil
	}
	tr, err1 := strconv.Atoi(m[1])
	va, err2 := strconv.Atoi(m[2])
	seed, err3 := strconv.ParseUint(m[3], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || tr < 1 || tr > 1<<30 || va > 1<<30 {
		return s, true, fmt.Errorf("split %q: want random-<train>-<valid>-seed<k> with 1 <= train and counts below 2^30: %w", name, ErrFormat)
	}
	return RandomSplit{Train: tr, Valid: va, Seed: seed}, true, nil
}

// String returns the split's name.
func (s RandomSplit) String() string {
	return fmt.Sprintf("random-%d-%d-seed%d", s.Train, s.Valid, s.Seed)
}

// Apply replaces the splits of d: for each class, s.Train nodes go to the
// training split and the next s.Valid to validation, drawn by a shuffle
// seeded with s.Seed; the remaining labeled nodes are the test split. A
// class with fewer nodes gives what it has, training first. The result
// depends only on the labels and s.
func (s RandomSplit) Apply(d *Dataset) error {
	if d.HasTargets() {
		return fmt.Errorf("%s: split %s draws per class, and the dataset has %s targets, no classes: give the split as files (train_idx.npy, valid_idx.npy, test_idx.npy; docs/datasets.md): %w", d.Name, s, d.Kind, ErrSplit)
	}
	if d.Labels == nil || d.NumClasses == 0 {
		return fmt.Errorf("%s: split %s needs labels, and the dataset has none: %w", d.Name, s, ErrSplit)
	}
	byClass := make([][]int32, d.NumClasses)
	for i, l := range d.Labels {
		if l >= 0 {
			byClass[l] = append(byClass[l], int32(i))
		}
	}
	rng := rand.New(rand.NewPCG(s.Seed, 0x5eed5711))
	var train, valid, test []int32
	for _, ids := range byClass {
		rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		a := min(s.Train, len(ids))
		b := min(a+s.Valid, len(ids))
		train = append(train, ids[:a]...)
		valid = append(valid, ids[a:b]...)
		test = append(test, ids[b:]...)
	}
	slices.Sort(train)
	slices.Sort(valid)
	slices.Sort(test)
	d.Train, d.Valid, d.Test = train, valid, test
	return nil
}
