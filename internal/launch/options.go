// Package launch starts the ranks of a job on this node and supervises
// them: the engine behind `commtune run` (docs/launcher.md).
//
// Run hands each rank the COMMTUNE_* environment (internal/boot), serves
// the job's key-value service, forwards output and signals, and ends the
// whole job when one rank fails (or, with KeepGoing, lets it go on without
// a rank that is lost), leaving no process behind. Its failure
// policy is a state machine without I/O (policy.go); the process plumbing
// is in proc_linux.go.
package launch

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/commtune/commtune/internal/boot"
)

// DefaultKillGrace is the KillGrace used when Options leaves it zero: long
// enough for the surviving ranks to notice a lost peer and report it,
// short enough that a failed job ends promptly.
const DefaultKillGrace = time.Second

// Options says what Run starts and how. The zero value of every field but
// N and Args is usable.
type Options struct {
	// N is the number of ranks, at least 1.
	N int
	// Args is the program (looked up in PATH like a shell does) and its
	// arguments. See Self for starting the running executable.
	Args []string
	// Nodes, when above 1, splits the ranks into that many pretend
	// nodes, in blocks of consecutive ranks (the first N mod Nodes blocks
	// one rank larger): each block has its own node identity
	// (COMMTUNE_NODE = host name/i), runs on its share of the launcher's
	// processors (when there are as many as nodes) and reaches the others
	// over TCP as if on another host. It exercises what a job of several
	// nodes does on one machine; 0 or 1 is one node.
	Nodes int
	// Env holds extra "NAME=value" variables for every rank, on top of the
	// launcher's own environment. It may not set the launcher's COMMTUNE_*
	// variables (boot.IsLauncherVar).
	Env []string
	// Prefix starts every line of a rank's output with "[rank] ".
	Prefix bool
	// Stdout and Stderr receive the ranks' output, line by line; nil means
	// os.Stdout and os.Stderr. Ranks read nothing: stdin is /dev/null.
	Stdout, Stderr io.Writer
	// KillGrace is how long the other ranks may keep running after the
	// first failure (so they can report the lost peer) before SIGTERM, and
	// then how long after SIGTERM before SIGKILL. Zero means
	// DefaultKillGrace.
	KillGrace time.Duration
	// Signals, if not nil, carries signals for the ranks: each one is sent
	// to every running rank's process group, and ranks still running
	// KillGrace after the first are killed. The CLI feeds it from
	// signal.Notify(SIGINT, SIGTERM). (Ending ctx instead sends SIGTERM and
	// makes Run return ctx's error.)
	Signals <-chan os.Signal
	// Cleanup, if not nil, runs once every rank and everything it started
	// has ended, whatever the outcome (e.g. to remove /dev/shm files).
	Cleanup func()
	// Logger receives the launcher's own diagnostics; nil discards them.
	Logger *slog.Logger
	// KeepGoing lets the job go on when a rank is lost: killed by a
	// signal the launcher did not send, or ending (its process or its KVS
	// connection) without saying goodbye. The launcher tells the other
	// ranks (boot.Server.ReportLost; they run with COMMTUNE_KEEP_GOING=1)
	// and signals nobody; the job ends when every rank has exited. Run
	// then returns nil if every rank that was not lost exited 0, and the
	// first loss if every rank was lost. A rank that said goodbye and
	// exited with an error, an abort, a forwarded signal and ctx ending
	// stop the job as without KeepGoing.
	KeepGoing bool
	// OnLost, if not nil, is called with each rank lost under KeepGoing,
	// once its cause is known (how it exited), from Run's goroutine
	// before Run returns: it is how a caller learns of losses in a job
	// whose result is nil. `commtune run` prints one line for each.
	OnLost func(*RankError)
	// OnJob, if set, is told the job's id (COMMTUNE_JOB) before any rank
	// starts: what names the files the ranks write (COMMTUNE_TRACE).
	OnJob func(id string)
}

// withDefaults checks o and fills in its defaults.
func (o Options) withDefaults() (Options, error) {
	switch {
	case o.N < 1 || o.N > boot.MaxSize:
		return o, fmt.Errorf("launch: %d ranks requested, want 1 to %d", o.N, boot.MaxSize)
	case len(o.Args) == 0 || o.Args[0] == "":
		return o, fmt.Errorf("launch: no program to run")
	case o.Nodes < 0 || o.Nodes > o.N:
		return o, fmt.Errorf("launch: %d nodes for %d ranks, want 0 to %d", o.Nodes, o.N, o.N)
	case o.KillGrace < 0:
		return o, fmt.Errorf("launch: negative kill grace %v", o.KillGrace)
	}
	for _, kv := range o.Env {
		name, _, ok := strings.Cut(kv, "=")
		switch {
		case !ok || name == "":
			return o, fmt.Errorf("launch: environment entry %q is not NAME=value", kv)
		case boot.IsLauncherVar(name):
			return o, fmt.Errorf("launch: environment entry %q sets %s, which the launcher sets for each rank", kv, name)
		case name == boot.EnvKeepGoing:
			return o, fmt.Errorf("launch: environment entry %q sets %s, which the launcher sets for each rank with KeepGoing", kv, name)
		}
	}
	if o.KillGrace == 0 {
		o.KillGrace = DefaultKillGrace
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// Self returns Args that start the running executable with args: how a
// command such as `commtune bench` starts its own ranks, e.g.
//
//	args, err := launch.Self("bench-rank", "-size", "1M")
//	err = launch.Run(ctx, launch.Options{N: n, Args: args})
//
// with "bench-rank" a hidden subcommand of the same binary.
func Self(args ...string) ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("launch: finding the running executable: %w", err)
	}
	return append([]string{exe}, args...), nil
}
