package main

import (
	"fmt"
	"io"
	"strings"
)

// writeBash writes the bash script of c.
func writeBash(w io.Writer, c completion) {
	fmt.Fprint(w, `# bash completion for strata. Load it with
#   source <(strata completion bash)
# or save it as ~/.local/share/bash-completion/completions/strata.
_strata() {
    local cur prev words
    cur="${COMP_WORDS[COMP_CWORD]}"
    prev="${COMP_WORDS[COMP_CWORD-1]}"
`)
	fmt.Fprintf(w, "    local commands=%q keys=%q\n", strings.Join(commandNames(), " "), strings.Join(c.keyNames(), " "))
	fmt.Fprint(w, `    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
        return
    fi
    # --set KEY=VALUE: bash splits words at '=' (COMP_WORDBREAKS), so the
    # word and the one before it are read from the line.
    local line="${COMP_LINE:0:COMP_POINT}"
    [ -n "$COMP_LINE" ] || line="${COMP_WORDS[*]:0:COMP_CWORD+1}"
    local word="${line##*[[:space:]]}"
    local before="${line%"$word"}"
    before="${before%"${before##*[![:space:]]}"}"
    case "${before##*[[:space:]]}" in
        --set|-set)
            if [[ "$word" == *=* ]]; then
                local key="${word%%=*}" vals=""
                case "$key" in
`)
	for _, k := range c.valued() {
		fmt.Fprintf(w, "                    %s) vals=%q ;;\n", k.Name, strings.Join(k.Values, " "))
	}
	fmt.Fprintf(w, `                esac
                COMPREPLY=($(compgen -W "$vals" -- "${word#*=}"))
                [[ "$COMP_WORDBREAKS" == *=* ]] || COMPREPLY=("${COMPREPLY[@]/#/$key=}")
            else
                compopt -o nospace 2>/dev/null
                COMPREPLY=($(compgen -W "$keys" -S = -- "$word"))
            fi
            return ;;
    esac
    case "$prev" in
        %s) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    esac
    if [ "${COMP_WORDS[1]}" = config ] && [ "$prev" = explain ]; then
        COMPREPLY=($(compgen -W %q -- "$cur"))
        return
    fi
    case "${COMP_WORDS[1]}" in
`, strings.Join(c.fileFlagNames(), "|"), strings.Join(c.topics, " "))
	for _, cmd := range c.commands {
		fmt.Fprintf(w, "        %s) words=%q ;;\n", cmd.name, cmd.wordList())
	}
	fmt.Fprint(w, `        *) words="" ;;
    esac
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _strata strata
`)
}

// writeZsh writes the zsh script of c.
func writeZsh(w io.Writer, c completion) {
	fmt.Fprint(w, `#compdef strata
# zsh completion for strata. Load it with
#   source <(strata completion zsh)
# or save it as _strata in a directory of your $fpath.
_strata() {
`)
	fmt.Fprintf(w, "    local commands=%q keys=%q\n", strings.Join(commandNames(), " "), strings.Join(c.keyNames(), " "))
	fmt.Fprintf(w, `    if (( CURRENT == 2 )); then
        compadd -- ${=commands} --help --version
        return
    fi
    case "${words[CURRENT-1]}" in
        %s) _files; return ;;
        --set|-set)
            if [[ $PREFIX == *=* ]]; then
                local key=${PREFIX%%%%=*} vals=""
                case $key in
`, strings.Join(c.fileFlagNames(), "|"))
	for _, k := range c.valued() {
		fmt.Fprintf(w, "                    %s) vals=%q ;;\n", k.Name, strings.Join(k.Values, " "))
	}
	fmt.Fprintf(w, `                esac
                compset -P '*='
                compadd -- ${=vals}
            else
                compadd -S = -- ${=keys}
            fi
            return ;;
        explain)
            if [[ ${words[2]} == config ]]; then
                compadd -- %s
                return
            fi ;;
    esac
    local -a opts
    case "${words[2]}" in
`, strings.Join(c.topics, " "))
	for _, cmd := range c.commands {
		fmt.Fprintf(w, "        %s) opts=(%s) ;;\n", cmd.name, cmd.wordList())
	}
	fmt.Fprint(w, `        *) opts=() ;;
    esac
    compadd -- $opts
}
if [ "$funcstack[1]" = "_strata" ]; then
    _strata "$@"               # autoloaded from $fpath
else
    compdef _strata strata     # sourced
fi
`)
}

// writeFish writes the fish script of c.
func writeFish(w io.Writer, c completion) {
	fmt.Fprint(w, `# fish completion for strata. Load it with
#   strata completion fish | source
# or save it as ~/.config/fish/completions/strata.fish.

# __strata_set prints the completions of --set's argument: the keys (with
# their '='), or after KEY= the values the key takes.
function __strata_set
    set -l tok (commandline -ct)
    if not string match -q -- '*=*' $tok
`)
	for _, chunk := range chunks(c.keyNames(), 8) {
		fmt.Fprintf(w, "        printf '%%s=\\n' %s\n", strings.Join(chunk, " "))
	}
	fmt.Fprint(w, `        return
    end
    set -l key (string split -m 1 = -- $tok)[1]
    switch $key
`)
	for _, k := range c.valued() {
		fmt.Fprintf(w, "        case %s\n            printf '%%s\\n' %s=%s\n", k.Name, k.Name, fishQuoteList(k.Values))
	}
	fmt.Fprint(w, `    end
end

complete -c strata -f
`)
	fmt.Fprintf(w, "complete -c strata -n __fish_use_subcommand -a %q\n", strings.Join(commandNames(), " "))
	fmt.Fprint(w, "complete -c strata -n __fish_use_subcommand -l version -d 'print the strata version'\n")
	for _, cmd := range c.commands {
		cond := fmt.Sprintf("'__fish_seen_subcommand_from %s'", cmd.name)
		if len(cmd.words) > 0 {
			fmt.Fprintf(w, "complete -c strata -n %s -a %q\n", cond, strings.Join(cmd.words, " "))
		}
		for _, f := range cmd.flags {
			fmt.Fprintf(w, "complete -c strata -n %s %s\n", cond, fishFlag(f))
		}
	}
	fmt.Fprintf(w, "complete -c strata -n '__fish_seen_subcommand_from explain' -a %q\n", strings.Join(c.topics, " "))
}

// fishFlag returns the complete options of flag f: -s c or -l name, and
// what its argument takes.
func fishFlag(f cflag) string {
	name := strings.TrimLeft(f.name, "-")
	spec := "-l " + name
	if len(name) == 1 {
		spec = "-s " + name
	}
	switch {
	case name == "set":
		return spec + " -x -a '(__strata_set)'"
	case f.files:
		return spec + " -r -F"
	case f.arg:
		return spec + " -x"
	}
	return spec
}

// fishQuoteList writes values as one brace list, {a,b}: after key= fish
// expands it to key=a key=b; a single value needs no braces.
func fishQuoteList(values []string) string {
	if len(values) == 1 {
		return values[0]
	}
	return "{" + strings.Join(values, ",") + "}"
}

// chunks splits s into slices of at most n.
func chunks(s []string, n int) [][]string {
	var out [][]string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}
