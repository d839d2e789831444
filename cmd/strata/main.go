// Command strata trains graph neural networks whose layers are WebAssembly
// modules, and inspects, converts and validates their inputs.
//
//	strata train -c configs/gcn-cora.toml [--set key=value ...]
//	strata predict -m MODEL [-i DATASET] -o DIR
//	strata validate -c FILE
//	strata config explain [KEY|SECTION|MODULE]
//	strata list-plugins
//	strata inspect -i DATASET
//	strata convert -i DATASET -o OUTPUT [--to strata|npy|ogb] [--as-stored] [--json]
//	strata version (or strata --version)
//	strata help COMMAND
//	strata completion bash|zsh|fish
//
// Exit codes: 0 success, 2 bad input (config, dataset, module, usage),
// 1 an internal failure or failed experiment runs, 130 interrupted.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"strata/core/registry"
	_ "strata/plugins/all" // every built-in plugin
)

// version is the strata release; the VCS revision is appended when known.
const version = "0.1.0"

// linkedRevision is the git revision make build links in
// (-ldflags "-X main.linkedRevision=..."), for a binary that Go did not
// stamp (GOFLAGS=-buildvcs=false); "" otherwise. Set by the linker only.
var linkedRevision string

// binaryRevision is the revision the binary was built at: Go's VCS stamp,
// else the one make build linked in; "" when unknown.
func binaryRevision() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				return s.Value
			}
		}
	}
	return linkedRevision
}

func main() {
	ctx, stop := signalContext(withReexec(context.Background()))
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// interruptSignals cancel a command's context: it stops as at an
// interrupt (a result line with status "interrupted", logs committed,
// partial outputs removed) and exits 130. SIGHUP is one of them: a
// closed terminal or SSH session must not kill a run mid-write.
var interruptSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// signalContext returns parent cancelled at the first interruptSignals.
func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(parent, interruptSignals...)
}

// Exit codes.
const (
	exitOK          = 0
	exitInternal    = 1
	exitUser        = 2
	exitInterrupted = 130
)

// usageError is a mistake on the command line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// internalError marks a failure that is strata's fault, not the input's.
type internalError struct{ err error }

func (e *internalError) Error() string { return "internal error: " + e.err.Error() }
func (e *internalError) Unwrap() error { return e.err }

// failedError is a command that ran but did not fully succeed, such as an
// experiment with failed runs: exit code 1, without the "internal" label.
type failedError struct{ err error }

func (e *failedError) Error() string { return e.err.Error() }
func (e *failedError) Unwrap() error { return e.err }

type command struct {
	name, args, doc string
	run             func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"train", "[-c FILE] [--set key=value]... [--resume]", "train the model a config (or the defaults and --set data.dataset=...) describes; the last stdout line is a JSON summary", cmdTrain},
		{"experiment", experimentArgs, "run an experiment file: a sweep of configs over axes and seeds, resumable, with tables and plots", cmdExperiment},
		{"predict", "-m MODEL [-i DATASET] [-c FILE] [--set key=value]... -o DIR", "predict every node of the model's dataset, or of any graph with its features (-i), with a model saved by output.model: predictions (.npy, .csv), logits.npy and the last hidden layer (embeddings.npy, .csv) in DIR, and the accuracies when the graph has labels; a config of another model or module is refused, naming what differs", cmdPredict},
		{"validate", "[-c FILE] [--set key=value]... [--skip-data]", "check a config, its dataset path and its layer module without training", cmdValidate},
		{"config", configUsage, "print every config key with its type, allowed values, default and meaning, or only those of one key (train.lr), section (train, sampler) or module (sampler.uniform, model.gat)", cmdConfig},
		{"list-plugins", "", "list the registered partitioners, samplers, cache policies, models and cost models", cmdListPlugins},
		{"inspect", "-i DATASET [--json]", "print nodes, edges, degree distribution and memory footprint of a dataset", cmdInspect},
		{"partition", "[-c FILE] [-k K] [--batch] [--set key=value]...", "partition a config's graph (or its training batch) with its [partition] plugin and print the quality metrics", cmdPartition},
		{"hitratio", "-i DATASET -o DIR [--traffic]", "tiering Fig. 7 hit-ratio curves per cache score and host->device feature traffic", cmdHitRatio},
		{"split-edges", splitEdgesArgs, "write the edge split a link config trains on (data.edge_split, its negatives drawn from the seed) as .npy pairs, so every later run scores the same pairs", cmdSplitEdges},
		{"convert", convertArgs, "write a dataset in strata's binary format (reopens in milliseconds) or as .npy arrays for PyG/DGL", cmdConvert},
		{"version", "", "print the strata version (also strata --version)", cmdVersion},
		{"help", "[COMMAND]", "print the list of commands, or one command's flags", nil},
		{"completion", completionUsage, "print a shell completion script (see docs/cli.md)", cmdCompletion},
	}
}

// commandNames lists the command names in order.
func commandNames() []string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	return names
}

// isHelpFlag reports whether arg asks for help.
func isHelpFlag(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help"
}

// commandHelp writes the help of command c to w: its synopsis, what it
// does and, for a command with flags, each flag.
func commandHelp(ctx context.Context, c command, w io.Writer) {
	fmt.Fprintf(w, "%s\n\n%s.\n", strings.TrimSpace("usage: strata "+c.name+" "+c.args), c.doc)
	if c.run == nil {
		return
	}
	var flags bytes.Buffer
	if err := c.run(ctx, []string{"-h"}, io.Discard, &flags); errors.Is(err, errHelp) {
		// Drop the usage line the flag set prints; keep its flags.
		if _, rest, ok := strings.Cut(flags.String(), "\n"); ok && strings.TrimSpace(rest) != "" {
			fmt.Fprintf(w, "\nflags:\n%s", rest)
		}
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: strata <command> [flags]")
	fmt.Fprintln(w)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %s\n      %s\n", strings.TrimSpace(c.name+" "+c.args), c.doc)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run `strata help <command>` (or `strata <command> --help`) for a command's flags.")
}

// run executes one command line and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "strata: internal error: %v\n%s", r, debug.Stack())
			code = exitInternal
		}
	}()
	if len(args) == 0 {
		usage(stderr)
		return exitUser
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	case "--version", "-version", "-V":
		return report(cmdVersion(ctx, args[1:], stdout, stderr), stderr)
	case "help":
		return report(cmdHelp(ctx, args[1:], stdout), stderr)
	}
	for _, c := range commands() {
		if c.name == args[0] {
			if slices.ContainsFunc(args[1:], isHelpFlag) {
				commandHelp(ctx, c, stdout)
				return exitOK
			}
			return report(c.run(ctx, args[1:], stdout, stderr), stderr)
		}
	}
	msg := fmt.Sprintf("unknown command %q", args[0])
	if sug := registry.Suggest(args[0], commandNames()); sug != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", sug)
	}
	fmt.Fprintf(stderr, "strata: %s\n\n", msg)
	usage(stderr)
	return exitUser
}

// cmdHelp prints the command list, or the help of the named command.
func cmdHelp(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		usage(stdout)
		return nil
	}
	if slices.ContainsFunc(args, isHelpFlag) {
		args = []string{"help"}
	}
	if len(args) > 1 {
		return usagef("help takes one command name, got %d arguments", len(args))
	}
	for _, c := range commands() {
		if c.name == args[0] {
			commandHelp(ctx, c, stdout)
			return nil
		}
	}
	msg := fmt.Sprintf("help: unknown command %q", args[0])
	if sug := registry.Suggest(args[0], commandNames()); sug != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", sug)
	}
	return usagef("%s; the commands are %s", msg, strings.Join(commandNames(), ", "))
}

// report prints err and maps it to an exit code.
func report(err error, stderr io.Writer) int {
	var ie *internalError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errHelp):
		return exitOK
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "strata: interrupted")
		return exitInterrupted
	case errors.As(err, &ie):
		fmt.Fprintf(stderr, "strata: %v\n", err)
		return exitInternal
	}
	var fe *failedError
	if errors.As(err, &fe) {
		fmt.Fprintf(stderr, "strata: %v\n", err)
		return exitInternal
	}
	fmt.Fprintf(stderr, "strata: %v\n", err)
	return exitUser
}

func fullVersion() string {
	v := version
	if r := binaryRevision(); len(r) >= 12 {
		v += "+" + r[:12]
	}
	return v
}

func cmdVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		return usagef("version takes no arguments")
	}
	fmt.Fprintln(stdout, "strata", fullVersion())
	return nil
}
