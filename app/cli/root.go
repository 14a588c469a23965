// Package cli is AMID's headless command-line program, bin/amid. Each command lives in a
// file of its own and is listed in commands below. It imports no Fyne package, so it builds
// with CGO_ENABLED=0 and runs on a server or cluster node.
//
// Command parsing uses github.com/spf13/cobra, a well-kept library: flags, help and
// sub-commands are not AMID's core.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	hostrun "amid/host/run"

	"github.com/spf13/cobra"
)

// commands lists every top-level command; amid verify re-runs packages with reproduce.
func commands(reproduce reproducer) []*cobra.Command {
	return []*cobra.Command{
		inspectCmd(),
		convertCmd(),
		gradeCmd(),
		pluginsCmd(),
		synthCmd(),
		auditCmd(),
		verifyCmd(reproduce),
		demoCmd(),
		runCmd(),
		resumeCmd(),
		laneCmd(),
		reportCmd(),
		reproduceCmd(),
		predictCmd(),
		benchCmd(),
		taskCmd(),
	}
}

// exitError carries a process exit code through cobra.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// Main runs the program with args (without the program name) and returns the exit code.
// Errors are printed to stderr in one line, prefixed "amid: ".
func Main(args []string, stdout, stderr io.Writer) int {
	return mainWith(args, stdout, stderr, reproduceHook)
}

// mainWith is Main with amid verify's way to re-run a package as an argument.
func mainWith(args []string, stdout, stderr io.Writer, reproduce reproducer) int {
	root := &cobra.Command{
		Use:           "amid",
		Short:         "AMID develops medical-imaging models autonomously and auditably",
		Version:       hostrun.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetArgs(args)
	root.AddCommand(commands(reproduce)...)
	if err := root.Execute(); err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		fmt.Fprintf(stderr, "amid: %v\n", err)
		return 1
	}
	return 0
}

// Run is Main on the process's own arguments and streams.
func Run() int { return Main(os.Args[1:], os.Stdout, os.Stderr) }
