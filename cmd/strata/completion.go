package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"strata/core/config"
)

// cmdCompletion prints a completion script for bash or zsh: commands,
// each command's flags, the keys --set takes, and file names after -c, -i
// and -o. The flags come from the commands' own flag sets, so the script
// never falls out of step with them.
func cmdCompletion(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) != 1 || args[0] != "bash" && args[0] != "zsh" {
		return usagef("usage: strata completion bash|zsh (e.g. source <(strata completion bash))")
	}
	cases := completionCases(ctx)
	keys := strings.Join(configKeys(), " ")
	names := strings.Join(commandNames(), " ")
	if args[0] == "bash" {
		fmt.Fprint(stdout, bashHead)
		fmt.Fprintf(stdout, "    local commands=%q keys=%q\n", names, keys)
		fmt.Fprint(stdout, bashBody)
		for _, c := range cases {
			fmt.Fprintf(stdout, "        %s) words=%q ;;\n", c[0], c[1])
		}
		fmt.Fprint(stdout, bashTail)
		return nil
	}
	fmt.Fprint(stdout, zshHead)
	fmt.Fprintf(stdout, "    local commands=%q keys=%q\n", names, keys)
	fmt.Fprint(stdout, zshBody)
	for _, c := range cases {
		fmt.Fprintf(stdout, "        %s) opts=(%s) ;;\n", c[0], c[1])
	}
	fmt.Fprint(stdout, zshTail)
	return nil
}

// completionCases returns, per command, the words that may follow it: its
// flags (read from its help) or its fixed arguments.
func completionCases(ctx context.Context) [][2]string {
	var out [][2]string
	for _, c := range commands() {
		var words []string
		switch c.name {
		case "help":
			words = commandNames()
		case "completion":
			words = []string{"bash", "zsh"}
		case "config":
			words = []string{"explain"}
		}
		if c.run != nil {
			var help bytes.Buffer
			if err := c.run(ctx, []string{"-h"}, io.Discard, &help); errors.Is(err, errHelp) {
				for _, line := range strings.Split(help.String(), "\n") {
					if f, ok := strings.CutPrefix(line, "  -"); ok {
						name, _, _ := strings.Cut(f, " ")
						words = append(words, "-"+name)
					}
				}
			}
		}
		words = append(words, "--help")
		out = append(out, [2]string{c.name, strings.Join(words, " ")})
	}
	return out
}

// configKeys lists every dotted config key (the keys --set takes), read
// from the annotated config that `strata config explain` prints.
func configKeys() []string {
	var doc map[string]any
	if _, err := toml.Decode(config.Explain(), &doc); err != nil {
		return nil
	}
	var keys []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			if sub, ok := v.(map[string]any); ok {
				walk(prefix+k+".", sub)
				continue
			}
			keys = append(keys, prefix+k)
		}
	}
	walk("", doc)
	slices.Sort(keys)
	return keys
}

const bashHead = `# bash completion for strata. Load it with
#   source <(strata completion bash)
# or save it as ~/.local/share/bash-completion/completions/strata.
_strata() {
    local cur prev words
    cur="${COMP_WORDS[COMP_CWORD]}"
    prev="${COMP_WORDS[COMP_CWORD-1]}"
`

const bashBody = `    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
        return
    fi
    case "$prev" in
        -c|-i|-o|--out) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --set|-set) compopt -o nospace 2>/dev/null; COMPREPLY=($(compgen -W "$keys" -S = -- "$cur")); return ;;
    esac
    case "${COMP_WORDS[1]}" in
`

const bashTail = `        *) words="" ;;
    esac
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _strata strata
`

const zshHead = `#compdef strata
# zsh completion for strata. Load it with
#   source <(strata completion zsh)
# or save it as _strata in a directory of your $fpath.
_strata() {
`

const zshBody = `    if (( CURRENT == 2 )); then
        compadd -- ${=commands} --help --version
        return
    fi
    case "${words[CURRENT-1]}" in
        -c|-i|-o|--out) _files; return ;;
        --set|-set) compadd -S = -- ${=keys}; return ;;
    esac
    local -a opts
    case "${words[2]}" in
`

const zshTail = `        *) opts=() ;;
    esac
    compadd -- $opts
}
if [ "$funcstack[1]" = "_strata" ]; then
    _strata "$@"               # autoloaded from $fpath
else
    compdef _strata strata     # sourced
fi
`
