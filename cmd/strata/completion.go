package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"

	"strata/core/config"
	"strata/core/registry"
	"strata/plugins/wasm"
)

// shells are the shells strata completion writes a script for.
var shells = []string{"bash", "zsh", "fish"}

// completionUsage is the synopsis of strata completion.
const completionUsage = "bash|zsh|fish [--wasm-cache DIR]"

// cmdCompletion prints a completion script for bash, zsh or fish:
// commands, each command's flags, the keys --set takes and the values of
// the keys that take a fixed set (module names after sampler.name=, enum
// values), the topics of config explain, and file names after the flags
// that take a file. Everything comes from the commands' own flag sets,
// the config schema, the registry and the layer modules' options, so the
// script never falls out of step with them.
func cmdCompletion(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	pos, wopts, err := parseWithWasm("completion", completionUsage, args, 1, stderr)
	if err != nil {
		return err
	}
	if len(pos) != 1 || !slices.Contains(shells, pos[0]) {
		return usagef("usage: strata completion %s (e.g. source <(strata completion bash), strata completion fish | source)", completionUsage)
	}
	c, err := completionData(ctx, wopts)
	if err != nil {
		return &internalError{err}
	}
	switch pos[0] {
	case "bash":
		writeBash(stdout, c)
	case "zsh":
		writeZsh(stdout, c)
	default:
		writeFish(stdout, c)
	}
	return nil
}

// cflag is one flag of a command: its spelling (-c, --set) and whether it
// takes an argument, and a file name.
type cflag struct {
	name       string
	arg, files bool
}

// ccommand is what may follow one command: its flags and fixed words.
type ccommand struct {
	name  string
	flags []cflag
	words []string
}

// completion is what the scripts complete.
type completion struct {
	commands []ccommand
	keys     []config.Key // --set keys, with their values
	topics   []string     // config explain's topics
}

// fileFlags are the flags whose argument is a path whatever its
// placeholder in the help.
var fileFlags = []string{"c", "config", "i", "o", "m", "out", "wasm-cache"}

// completionData gathers the commands, their flags, the config keys
// (with model.options' keys from every layer module) and the topics.
func completionData(ctx context.Context, wopts wasm.Options) (completion, error) {
	var c completion
	for _, cmd := range commands() {
		cc := ccommand{name: cmd.name}
		switch cmd.name {
		case "help":
			cc.words = commandNames()
		case "completion":
			cc.words = shells
		case "config":
			cc.words = []string{"explain"}
		}
		cc.flags = commandFlags(ctx, cmd)
		c.commands = append(c.commands, cc)
	}
	c.keys = config.Keys()
	var opts []string
	for _, id := range modelIDs() {
		o, err := layerOptions(ctx, wopts, id)
		if err != nil {
			return c, err
		}
		for _, x := range o {
			opts = append(opts, x.key)
		}
	}
	slices.Sort(opts)
	for _, o := range slices.Compact(opts) {
		c.keys = append(c.keys, config.Key{Name: "model.options." + o})
	}
	slices.SortFunc(c.keys, func(a, b config.Key) int { return strings.Compare(a.Name, b.Name) })
	c.topics = config.Sections()
	for _, k := range c.keys {
		c.topics = append(c.topics, k.Name)
	}
	for _, ns := range registry.Namespaces() {
		for _, m := range registry.Namespace(ns) {
			c.topics = append(c.topics, m.ID)
		}
	}
	return c, nil
}

// commandFlags reads the flags of cmd from its help.
func commandFlags(ctx context.Context, cmd command) []cflag {
	var out []cflag
	if cmd.run != nil {
		var help bytes.Buffer
		if err := cmd.run(ctx, []string{"-h"}, io.Discard, &help); errors.Is(err, errHelp) {
			for _, line := range strings.Split(help.String(), "\n") {
				f, ok := strings.CutPrefix(line, "  -")
				if !ok {
					continue
				}
				name, arg, _ := strings.Cut(strings.TrimLeft(f, "-"), " ")
				out = append(out, cflag{name: flagName(name), arg: arg != "",
					files: arg == "FILE" || arg == "DIR" || slices.Contains(fileFlags, name)})
			}
		}
	}
	return append(out, cflag{name: "--help"})
}

// valued returns the keys that take a fixed set of values.
func (c completion) valued() []config.Key {
	return slices.DeleteFunc(slices.Clone(c.keys), func(k config.Key) bool { return len(k.Values) == 0 })
}

// keyNames returns the --set keys.
func (c completion) keyNames() []string {
	out := make([]string, len(c.keys))
	for i, k := range c.keys {
		out[i] = k.Name
	}
	return out
}

// fileFlagNames returns every spelling of the flags that take a file.
func (c completion) fileFlagNames() []string {
	var out []string
	for _, cmd := range c.commands {
		for _, f := range cmd.flags {
			if f.files && !slices.Contains(out, f.name) {
				out = append(out, f.name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// words returns the flags and fixed words of cmd, space-separated.
func (cmd ccommand) wordList() string {
	w := slices.Clone(cmd.words)
	for _, f := range cmd.flags {
		w = append(w, f.name)
	}
	return strings.Join(w, " ")
}
