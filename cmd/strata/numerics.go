package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"strata/experiments/runner/numerics"
)

// reexecKey is the context key of the function that replaces the process
// with itself under another environment: main sets it; a command run in
// process by a test has none, and cannot change its numerics.
type reexecKey struct{}

// reexecFunc replaces the process by this executable with the same
// arguments and env; it returns only on failure.
type reexecFunc func(env []string) error

// withReexec gives ctx the process's re-exec.
func withReexec(ctx context.Context) context.Context {
	return context.WithValue(ctx, reexecKey{}, reexecFunc(func(env []string) error {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		return syscall.Exec(exe, os.Args, env)
	}))
}

// reexecGuard marks a process that re-executed itself for its numerics,
// so that it never does so twice.
const reexecGuard = "STRATA_NUMERICS_REEXEC"

// ensureNumerics makes the process run with the numerics want (the
// pinned ones, or the committed results' for --check). OpenBLAS reads
// OPENBLAS_CORETYPE once, when it loads, so a process whose environment
// differs re-executes itself with it set. Where that cannot be done (in a
// test), a run that publishes warns and records its own numerics, and a
// check (want holds the committed kernel family) fails with the fix
// (exit 2), as it does when the kernels still differ; native
// (--native-numerics) runs with this machine's own kernels and only
// warns.
func ensureNumerics(ctx context.Context, want numerics.Numerics, native bool, stderr io.Writer) (numerics.Numerics, error) {
	have := numerics.Current(want.Pinned && !native)
	if native {
		if want.Pinned || want.BLASCore != "" {
			probs, warns := have.Compare(want)
			for _, w := range append(probs, warns...) {
				fmt.Fprintf(stderr, "experiment: warning: --native-numerics: %s\n", w)
			}
		}
		have.Pinned = false
		return have, nil
	}
	if want.Pinned {
		if err := numerics.CanPin(); err != nil {
			return have, usagef("experiment: %v; run with --native-numerics (results then differ from pinned ones in their last bits)", err)
		}
	}
	if diff := have.EnvDiffers(want); len(diff) > 0 {
		re, _ := ctx.Value(reexecKey{}).(reexecFunc)
		if re != nil && os.Getenv(reexecGuard) == "" {
			fmt.Fprintf(stderr, "experiment: running again with %s (the numerics of %s; docs/experiments.md)\n", envText(want), numericsOf(want))
			if err := re(append(want.Environ(os.Environ()), reexecGuard+"=1")); err != nil {
				return have, &internalError{fmt.Errorf("re-executing with the pinned numerics: %w", err)}
			}
		}
		if want.BLASCore == "" {
			// Publishing from a process that cannot re-execute (a test
			// driving the command): the results record their numerics.
			fmt.Fprintf(stderr, "experiment: warning: running with this machine's own kernels, not the pinned ones (%s): %s\n", envText(want), strings.Join(diff, "; "))
			have.Pinned = false
			return have, nil
		}
		return have, usagef("experiment: this process does not run with the numerics of %s:\n  %s\nrun it as `%s strata experiment ...` (bin/strata does so itself), or give --native-numerics to run with this machine's own kernels", numericsOf(want), strings.Join(diff, "\n  "), envText(want))
	}
	probs, warns := have.Compare(want)
	for _, w := range warns {
		fmt.Fprintf(stderr, "experiment: warning: %s\n", w)
	}
	if len(probs) > 0 {
		return have, usagef("experiment: the kernels differ from those of %s:\n  %s\nthe results would differ in their last bits; give --native-numerics to compare anyway (a difference may then come from the kernels)", numericsOf(want), strings.Join(probs, "\n  "))
	}
	return have, nil
}

// envText spells the environment of the numerics ("no numerics
// variables" for none).
func envText(n numerics.Numerics) string {
	if s := n.EnvString(); s != "" {
		return s
	}
	return "no numerics variable set"
}

// numericsOf says whose numerics want are.
func numericsOf(want numerics.Numerics) string {
	if want.BLASCore != "" {
		return "the committed results (provenance.json)"
	}
	return "published results"
}
