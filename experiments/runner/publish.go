package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// PublishError is a refusal to write results into a git work tree whose
// state would not name one clean revision (bad input: exit code 2).
type PublishError struct {
	Out      string
	Problems []string
}

func (e *PublishError) Error() string {
	return fmt.Sprintf("experiment: refusing to write results into %s: they would not follow from one clean revision:\n  %s\n"+
		"fix: commit or stash the changes (git stash -u), rebuild (make build), and run again; "+
		"or pass --force to write them anyway (provenance.json then records the revision as dirty)",
		e.Out, strings.Join(e.Problems, "\n  "))
}

// gitTree is the state of the git work tree that holds a directory.
type gitTree struct {
	Top      string   // its top-level directory ("" outside git)
	Head     string   // the revision checked out
	Changes  []string // `git status --porcelain` lines, the excluded paths left out
	Complete bool     // status could be read
}

// readGitTree reads the work tree holding dir (its nearest existing
// ancestor), leaving out the changes under the exclude paths (the results
// directories an experiment writes). Best effort: a zero Top without git.
func readGitTree(dir string, exclude ...string) gitTree {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dir = existingAncestor(dir)
	top, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return gitTree{}
	}
	t := gitTree{Top: strings.TrimSpace(string(top))}
	head, err := exec.CommandContext(ctx, "git", "-C", t.Top, "rev-parse", "HEAD").Output()
	if err != nil {
		return gitTree{}
	}
	t.Head = strings.TrimSpace(string(head))
	args := []string{"--no-optional-locks", "-C", t.Top, "status", "--porcelain", "--untracked-files=normal", "--", "."}
	for _, x := range exclude {
		if rel, ok := relInside(t.Top, x); ok {
			args = append(args, ":(top,exclude)"+filepath.ToSlash(rel))
		}
	}
	st, err := exec.CommandContext(ctx, "git", args...).Output()
	if err != nil {
		return t
	}
	t.Complete = true
	for _, l := range strings.Split(strings.TrimRight(string(st), "\n"), "\n") {
		if strings.TrimSpace(l) != "" {
			t.Changes = append(t.Changes, l)
		}
	}
	return t
}

// existingAncestor is dir, or its nearest ancestor that exists.
func existingAncestor(dir string) string {
	d, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	for {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return d
		}
		d = parent
	}
}

// relInside returns p relative to top when p lies inside top.
func relInside(top, p string) (string, bool) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", false
	}
	// Compare real paths: top comes from git, resolved.
	if r, err := filepath.EvalSymlinks(existingAncestor(abs)); err == nil {
		rest, _ := filepath.Rel(existingAncestor(abs), abs)
		abs = filepath.Join(r, rest)
	}
	rel, err := filepath.Rel(top, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

// resultsDirs are the paths an experiment's runs write, left out of the
// work tree's state: the results directory and the results/ directory
// beside the experiment file, where make experiments writes the others.
func resultsDirs(e *Experiment, out string) []string {
	return []string{out, filepath.Dir(DefaultOutDir(e))}
}

// publishProblems lists why results written to out, inside a git work
// tree, would not name one clean revision: changes to the tree (outside
// the results directories) and a binary not built at its HEAD. None
// outside a work tree (a temporary directory, a cluster's scratch).
func publishProblems(e *Experiment, out string, stamp Revision) []string {
	t := readGitTree(out, resultsDirs(e, out)...)
	if t.Top == "" {
		return nil
	}
	var probs []string
	if !t.Complete {
		probs = append(probs, "cannot read `git status` of "+t.Top)
	}
	const most = 10
	for i, c := range t.Changes {
		if i == most {
			probs = append(probs, fmt.Sprintf("... and %d more changes (git status)", len(t.Changes)-most))
			break
		}
		probs = append(probs, "uncommitted: "+c)
	}
	switch {
	case stamp.Revision == "":
		probs = append(probs, "the strata binary carries no revision (built outside make build, with -buildvcs=false): build it with make build")
	case stamp.Revision != t.Head:
		probs = append(probs, fmt.Sprintf("the strata binary was built at %s, the work tree is at %s: rebuild it (make build)", short(stamp.Revision), short(t.Head)))
	}
	// The stamp's dirty flag is not asked: Go sets it for any change,
	// results included, so a binary rebuilt while results are being
	// regenerated has it. The tree is clean now, and the binary's digest
	// keys every stored run.
	return probs
}
