package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/commtune/commtune/internal/trace"
)

func init() {
	register(command{name: "trace", summary: "trace merge DIR: join a job's timeline files (COMMTUNE_TRACE=DIR) into one, for Perfetto or chrome://tracing", run: traceMain})
}

// traceMain is `commtune trace merge DIR [-o FILE] [--job ID]`.
func traceMain(args []string) int {
	if len(args) > 0 && args[0] == "merge" {
		return traceMergeMain(args[1:])
	}
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		fmt.Println("usage: commtune trace merge DIR [-o FILE] [--job ID]   (commtune trace merge -h for flags)")
		return 0
	}
	return usageError("trace", "want a subcommand: merge")
}

func traceMergeMain(args []string) int {
	fs := newFlagSet("trace merge", "DIR [-o FILE] [--job ID]")
	out := fs.String("o", "", "write the merged file to `FILE` (default: DIR/commtune-trace-JOB.json)")
	job := fs.String("job", "", "merge the files of job `ID`, when DIR holds several jobs'")
	pos, code, ok := parseInterspersed(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError("trace", "merge: want one directory, the COMMTUNE_TRACE of the job (got %d arguments)", len(pos))
	}
	path, j, err := trace.MergeJob(pos[0], *job, *out)
	if err != nil {
		fmt.Fprintf(os.Stderr, "commtune trace merge: %v\n", withJobHint(err))
		return 1
	}
	fmt.Println(path)
	fmt.Printf("job %s: %d ranks, %d spans%s\n", j.ID, len(j.Ranks), j.SpanCount(), droppedNote(j))
	return 0
}

// droppedNote tells of spans the ranks could not record, if any.
func droppedNote(j *trace.Job) string {
	var n int64
	for _, r := range j.Ranks {
		n += r.Dropped
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d more not recorded: the file system refused them)", n)
}

// withJobHint adds to an error of a directory of several jobs' traces how
// to pick one.
func withJobHint(err error) error {
	if errors.Is(err, trace.ErrSeveralJobs) {
		return fmt.Errorf("%w\n(give --job ID to pick one)", err)
	}
	return err
}

// parseInterspersed parses args into fs, flags before, between and after
// the positional arguments ("report DIR --plot" as "report --plot DIR"),
// and returns the positional ones. When it returns false the command
// should exit with code, as after parseFlags.
func parseInterspersed(fs *flag.FlagSet, args []string) (pos []string, code int, ok bool) {
	for {
		if code, ok := parseFlags(fs, args); !ok {
			return nil, code, false
		}
		if fs.NArg() == 0 {
			return pos, 0, true
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
