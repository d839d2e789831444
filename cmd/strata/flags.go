package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"strata/core/config"
	"strata/core/graph"
	"strata/plugins/wasm"
)

// errHelp is returned when -h was asked for (exit 0).
var errHelp = errors.New("help requested")

// multi is a repeatable string flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, " ") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// newFlags returns a flag set that reports its errors instead of exiting.
func newFlags(name, args string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: strata %s %s\n", name, args)
		printFlags(stderr, fs)
	}
	return fs
}

// flagName spells a flag as the help and the docs do: one dash for a
// one-letter flag (-c), two for a word (--set). Both forms are accepted.
func flagName(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// printFlags lists the flags of fs like flag.PrintDefaults, spelled with
// flagName.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		f = unwrapFlag(f)
		arg, usage := flag.UnquoteUsage(f)
		line := "  " + flagName(f.Name)
		if arg != "" {
			line += " " + arg
		}
		def := ""
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			def = fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "%s\n    \t%s%s\n", line, strings.ReplaceAll(usage, "\n", "\n    \t"), def)
	})
}

// parse parses args and rejects positional arguments and a single-valued
// flag given twice (--shard 0/2 --shard 1/3 would silently run 1/3).
func parse(fs *flag.FlagSet, args []string) error {
	if err := checkSetArgs(fs, args); err != nil {
		return err
	}
	restore := guardRepeats(fs)
	err := fs.Parse(args)
	restore()
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return usagef("%s: %v", fs.Name(), err)
	}
	if flagSet(fs, "c") && flagSet(fs, "config") {
		return usagef("%s: -c and --config are the same flag; give the file once", fs.Name())
	}
	if fs.NArg() > 0 {
		if arg := fs.Arg(0); fs.Lookup("c") != nil && !flagSet(fs, "c") && !flagSet(fs, "config") && strings.HasSuffix(strings.ToLower(arg), ".toml") {
			return usagef("%s: unexpected argument %q: name the file with -c FILE (strata %s -c %s)", fs.Name(), arg, fs.Name(), arg)
		}
		return usagef("%s: unexpected argument %q (flags go before it? see `strata %s -h`)", fs.Name(), fs.Arg(0), fs.Name())
	}
	return nil
}

// parsePositional parses the flags of args wherever they stand among the
// positional arguments, which it returns (at most max of them).
func parsePositional(fs *flag.FlagSet, args []string, max int) ([]string, error) {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		f := fs.Lookup(name)
		if f == nil || strings.Contains(name, "=") || i+1 == len(args) {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
			flags = append(flags, args[i+1])
			i++
		}
	}
	if err := parse(fs, flags); err != nil {
		return nil, err
	}
	if len(pos) > max {
		return nil, usagef("%s: unexpected argument %q (see `strata %s -h`)", fs.Name(), pos[max], fs.Name())
	}
	return pos, nil
}

// parseWithWasm parses the args of a command that takes at most max
// positional arguments and the WASM host flags (a command that runs the
// layer modules to list their options): its positional arguments and
// host options.
func parseWithWasm(name, synopsis string, args []string, max int, stderr io.Writer) ([]string, wasm.Options, error) {
	fs := newFlags(name, synopsis, stderr)
	var wf wasmFlags
	wf.register(fs)
	pos, err := parsePositional(fs, args, max)
	if err != nil {
		return nil, wasm.Options{}, err
	}
	wopts, err := wf.options()
	return pos, wopts, err
}

// checkSetArgs refuses a --set whose argument has no '=' (--set
// train.epochs 50), naming the spelling that works, before the flag
// parser takes the value for a positional argument.
func checkSetArgs(fs *flag.FlagSet, args []string) error {
	if fs.Lookup("set") == nil {
		return nil
	}
	for i, a := range args {
		if a == "--" {
			return nil
		}
		v, inline := strings.CutPrefix(strings.TrimLeft(a, "-"), "set=")
		switch {
		case inline && strings.HasPrefix(a, "-"):
		case (a == "--set" || a == "-set") && i+1 < len(args):
			v = args[i+1]
		default:
			continue
		}
		if strings.Contains(v, "=") {
			continue
		}
		val := "VALUE"
		if !inline && i+2 < len(args) && !strings.HasPrefix(args[i+2], "-") {
			val = args[i+2]
		}
		return usagef("%s: --set %s has no '=': write --set %s=%s (key=value in one argument)", fs.Name(), v, v, val)
	}
	return nil
}

// registerConfigFile adds -c FILE, and --config FILE as its other name.
func registerConfigFile(fs *flag.FlagSet, path *string, usage string) {
	fs.StringVar(path, "c", "", usage)
	fs.StringVar(path, "config", "", "same as -c")
}

// onceValue is a flag.Value that refuses a second Set: a flag that takes
// one value given twice is a mistake, not "the last one wins".
type onceValue struct {
	flag.Value
	name  string
	first *string // the first value given; nil until then
}

func (o *onceValue) Set(v string) error {
	if o.first != nil {
		return fmt.Errorf("%s given twice (%q and %q); it takes one value: keep the one you mean", flagName(o.name), *o.first, v)
	}
	o.first = &v
	return o.Value.Set(v)
}

// onceBool is onceValue for a boolean flag (-x without a value).
type onceBool struct{ *onceValue }

func (o onceBool) IsBoolFlag() bool { return true }

// repeatable marks the flag values that may be given several times.
type repeatable interface{ repeatable() }

func (*multi) repeatable() {}

// guardRepeats wraps every single-valued flag of fs in a onceValue and
// returns the function that puts the values back (so that the help and
// flag.UnquoteUsage see the flag's own type).
func guardRepeats(fs *flag.FlagSet) (restore func()) {
	orig := map[*flag.Flag]flag.Value{}
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := f.Value.(repeatable); ok {
			return
		}
		orig[f] = f.Value
		o := &onceValue{Value: f.Value, name: f.Name}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			f.Value = onceBool{o}
		} else {
			f.Value = o
		}
	})
	return func() {
		for f, v := range orig {
			f.Value = v
		}
	}
}

// unwrapFlag returns f with its own value when parse wrapped it.
func unwrapFlag(f *flag.Flag) *flag.Flag {
	g := *f
	switch v := g.Value.(type) {
	case *onceValue:
		g.Value = v.Value
	case onceBool:
		g.Value = v.Value
	}
	return &g
}

// wasmFlags are the WASM host settings shared by train and validate.
type wasmFlags struct {
	cacheDir string
	deadline time.Duration
	memPages uint
}

func (w *wasmFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&w.cacheDir, "wasm-cache", "", `directory of the compiled-module cache ("" = the user cache dir, "off" = none)`)
	fs.DurationVar(&w.deadline, "wasm-deadline", wasm.DefaultDeadline, "time limit for a layer module to describe one layer")
	fs.UintVar(&w.memPages, "wasm-memory-pages", wasm.DefaultMemoryLimitPages, "memory limit of a layer module, in 64 KiB pages")
}

func (w *wasmFlags) options() (wasm.Options, error) {
	if w.deadline <= 0 {
		return wasm.Options{}, usagef("--wasm-deadline must be positive, got %v", w.deadline)
	}
	if w.memPages == 0 || w.memPages > 65536 {
		return wasm.Options{}, usagef("--wasm-memory-pages must be in [1,65536], got %d", w.memPages)
	}
	return wasm.Options{CacheDir: w.cacheDir, Deadline: w.deadline, MemoryLimitPages: uint32(w.memPages)}, nil
}

// configFlags are the flags of the commands that read a config.
type configFlags struct {
	path   string
	sets   multi
	wasm   wasmFlags
	maxMem memFlag
}

func (c *configFlags) register(fs *flag.FlagSet) {
	registerConfigFile(fs, &c.path, "config file (TOML); see 'strata config explain'. Without it, the defaults and the --set overrides (data.dataset required)")
	fs.Var(&c.sets, "set", "override a config key: `key=value`, e.g. --set train.epochs=50 or --set train.backend=sim (repeatable; strings need no quotes)")
	c.wasm.register(fs)
	registerMaxMemory(fs, &c.maxMem)
}

// load parses the flags in args, then the config they name.
func (c *configFlags) load(fs *flag.FlagSet, args []string) (*config.Config, wasm.Options, error) {
	if err := parse(fs, args); err != nil {
		return nil, wasm.Options{}, err
	}
	if c.path == "" && !slices.ContainsFunc(c.sets, func(s string) bool { return strings.HasPrefix(strings.TrimSpace(s), "data.dataset=") }) {
		return nil, wasm.Options{}, usagef("%s: -c FILE is required (try configs/gcn-cora.toml), or give at least --set data.dataset=DATASET to start from the defaults", fs.Name())
	}
	wopts, err := c.wasm.options()
	if err != nil {
		return nil, wasm.Options{}, err
	}
	if c.path == "" {
		// No file: the defaults (strata config explain) and the overrides.
		cfg, err := config.Parse("", nil, c.sets...)
		return cfg, wopts, err
	}
	cfg, err := config.Load(c.path, c.sets...)
	return cfg, wopts, err
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// memFlag is a byte count flag: 8G, 512M, 64K, 1.5GiB or a plain number
// of bytes; 0 means the default (graph.DefaultMaxMemory).
type memFlag int64

func (m *memFlag) String() string { return strconv.FormatInt(int64(*m), 10) }

func (m *memFlag) Set(s string) error {
	t := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B"), "I")
	mult := 1.0
	if t != "" {
		switch t[len(t)-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:len(t)-1]
		}
	}
	x, err := strconv.ParseFloat(t, 64)
	if err != nil || x < 0 || math.IsNaN(x) || x*mult >= math.MaxInt64 {
		return fmt.Errorf("want a byte count such as 8G, 512M or 1000000, got %q", s)
	}
	*m = memFlag(x * mult)
	return nil
}

// registerMaxMemory adds --max-memory to fs.
func registerMaxMemory(fs *flag.FlagSet, m *memFlag) {
	fs.Var(m, "max-memory", "memory budget for what a dataset file declares (e.g. 16G; default 3/4 of the physical memory): a declared size needing more is an error before anything is allocated")
}

// withMaxMemory returns ctx carrying the budget of m for the loaders.
func withMaxMemory(ctx context.Context, m memFlag) context.Context {
	return graph.WithMaxMemory(ctx, int64(m))
}
