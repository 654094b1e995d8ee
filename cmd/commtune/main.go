// Command commtune runs and tunes commtune programs. Each subcommand lives
// in its own file and registers itself from init (see register), so adding
// one touches no other file.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
)

// command is one subcommand.
type command struct {
	name    string
	summary string                  // one line for `commtune help`
	run     func(args []string) int // returns the exit status
	hidden  bool                    // internal (e.g. the ranks a command starts of itself): not listed
}

// commands is the dispatch table, filled by register.
var commands = map[string]command{}

// register adds c to the dispatch table; call it from an init function in
// the subcommand's file. A name registered twice is a programming error,
// caught the first time the binary runs.
func register(c command) {
	if _, dup := commands[c.name]; dup || c.name == "help" {
		panic("commtune: subcommand registered twice: " + c.name)
	}
	commands[c.name] = c
}

func main() {
	// No command writes a heap profile (rank.go's profiles are of the
	// processor and the trace), but linking runtime/pprof turns sampling
	// on: its hash table of call stacks took 1-1.5 MiB of every rank.
	runtime.MemProfileRate = 0
	os.Exit(dispatch(os.Args[1:]))
}

// dispatch runs the subcommand args names and returns the exit status:
// usage errors exit 2, as the flag package's do.
func dispatch(args []string) int {
	if len(args) == 0 {
		usage(os.Stderr)
		return 2
	}
	switch name := args[0]; name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			if c, ok := commands[args[1]]; ok {
				return c.run([]string{"-h"})
			}
			fmt.Fprintf(os.Stderr, "commtune help: unknown command %q\n", args[1])
			return 2
		}
		usage(os.Stdout)
		return 0
	default:
		c, ok := commands[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "commtune: unknown command %q\n\n", name)
			usage(os.Stderr)
			return 2
		}
		return c.run(args[1:])
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: commtune <command> [arguments]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	names := make([]string, 0, len(commands))
	width := 0
	for name, c := range commands {
		if !c.hidden {
			names = append(names, name)
			width = max(width, len(name))
		}
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(w, "  %-*s  %s\n", width, name, commands[name].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `"commtune help <command>" describes a command's flags.`)
}

// newFlagSet returns a flag set for subcommand name whose usage message is
// "usage: commtune NAME SYNOPSIS" followed by the flags.
func newFlagSet(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: commtune %s %s\n\nflags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args into fs. When it returns false the command
// should exit with code: 0 after -h, 2 after a bad flag (the flag package
// has already said what was wrong).
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		return 0, false
	}
	return 2, false
}

// usageError reports a bad invocation of command name and returns 2.
func usageError(name, format string, args ...any) int {
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintf(os.Stderr, "commtune %s: %s\n", name, msg)
	fmt.Fprintf(os.Stderr, "run %q for usage\n", strings.Join([]string{"commtune", "help", name}, " "))
	return 2
}
