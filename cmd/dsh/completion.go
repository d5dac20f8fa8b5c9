package main

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/dsh-dev/dsh/cmd/internal/headless"
)

// completionCommand prints a completion script for bash, zsh or fish. The
// scripts are generated from the same FlagSets the commands parse with, so
// a new flag is completed without anyone remembering to add it here.
func completionCommand(args []string, stdout, stderr io.Writer) int {
	pos, code := noFlags("completion", "dsh completion bash|zsh|fish",
		"Print a shell completion script. For example:\n"+
			"  bash: source <(dsh completion bash)        (or save it under ~/.local/share/bash-completion/completions/dsh)\n"+
			"  zsh:  dsh completion zsh > \"${fpath[1]}/_dsh\"\n"+
			"  fish: dsh completion fish > ~/.config/fish/completions/dsh.fish", args, stdout, stderr, nil)
	if code >= 0 {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "dsh completion: name one shell: bash, zsh or fish")
		return 2
	}
	w := completionWords()
	switch pos[0] {
	case "bash":
		fmt.Fprint(stdout, bashCompletion(w))
	case "zsh":
		fmt.Fprint(stdout, "#compdef dsh\nautoload -U +X bashcompinit && bashcompinit\n"+bashCompletion(w))
	case "fish":
		fmt.Fprint(stdout, fishCompletion(w))
	default:
		fmt.Fprintf(stderr, "dsh completion: unknown shell %q (want bash, zsh or fish)\n", pos[0])
		return 2
	}
	return 0
}

// words are what a shell completes: command words and each command's flags.
type words struct {
	commands []string
	flags    map[string][]string // command → "--flag" names
	sessions []string
}

func completionWords() words {
	w := words{flags: map[string][]string{}, sessions: []string{"list", "show", "rm", "compact"}}
	w.commands = append(w.commands, commandNames...)
	sort.Strings(w.commands)
	settings := func(fs *flag.FlagSet) { registerSettingFlags(fs) }
	extra := map[string]func(*flag.FlagSet){
		"run": func(fs *flag.FlagSet) { _, _, _ = headless.ParseRunFlags(fs, nil) },
		"sessions": func(fs *flag.FlagSet) {
			fs.String("cwd", "", "")
			fs.Bool("json", false, "")
		},
		"config": func(fs *flag.FlagSet) { fs.Bool("json", false, "") },
	}
	for _, c := range []string{"run", "sdk", "acp", "sessions", "config"} {
		fs := flag.NewFlagSet(c, flag.ContinueOnError)
		settings(fs)
		if e := extra[c]; e != nil {
			e(fs)
		}
		fs.VisitAll(func(f *flag.Flag) {
			if len(f.Name) > 1 {
				w.flags[c] = append(w.flags[c], "--"+f.Name)
			}
		})
		w.flags[c] = append(w.flags[c], "--help")
	}
	w.flags["completion"] = []string{"bash", "zsh", "fish"}
	return w
}

func bashCompletion(w words) string {
	var b strings.Builder
	b.WriteString("# bash completion for dsh (dsh completion bash)\n_dsh() {\n")
	b.WriteString("  local cur=${COMP_WORDS[COMP_CWORD]} cmd=\"\" i\n")
	b.WriteString("  for ((i=1; i<COMP_CWORD; i++)); do case ${COMP_WORDS[i]} in -*) ;; *) cmd=${COMP_WORDS[i]}; break;; esac; done\n")
	b.WriteString("  case $cmd in\n")
	for _, c := range w.commands {
		list := strings.Join(w.flags[c], " ")
		if c == "sessions" {
			list += " " + strings.Join(w.sessions, " ")
		}
		fmt.Fprintf(&b, "    %s) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", c, list)
	}
	fmt.Fprintf(&b, "    *) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", strings.Join(w.commands, " ")+" --help --profile")
	b.WriteString("  esac\n}\ncomplete -o default -F _dsh dsh\n")
	return b.String()
}

func fishCompletion(w words) string {
	var b strings.Builder
	b.WriteString("# fish completion for dsh (dsh completion fish)\ncomplete -c dsh -f\n")
	fmt.Fprintf(&b, "complete -c dsh -n '__fish_use_subcommand' -a '%s'\n", strings.Join(w.commands, " "))
	for _, c := range w.commands {
		for _, f := range w.flags[c] {
			if name, ok := strings.CutPrefix(f, "--"); ok {
				fmt.Fprintf(&b, "complete -c dsh -n '__fish_seen_subcommand_from %s' -l %s\n", c, name)
			} else {
				fmt.Fprintf(&b, "complete -c dsh -n '__fish_seen_subcommand_from %s' -a %s\n", c, f)
			}
		}
	}
	fmt.Fprintf(&b, "complete -c dsh -n '__fish_seen_subcommand_from sessions' -a '%s'\n", strings.Join(w.sessions, " "))
	return b.String()
}
