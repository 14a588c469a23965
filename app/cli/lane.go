package cli

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"amid/host"
	"amid/host/lanejob"
)

func laneCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lane",
		Short: "Train one lane-fold of a run headless, as a cluster job does",
	}
	cmd.AddCommand(laneExecCmd())
	return cmd
}

func laneExecCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "exec SPEC.json",
		Short: "Train the lane-fold a job folder's spec.json names, writing its events and its end beside it",
		Long: `lane exec is what a Slurm job (amid run --executor slurm) or a lane process of its own runs:
it reads SPEC.json from a lane-fold's job folder in the run folder, checks that the plugin
binary's sha256 is the one the run trusted (a changed binary is refused, and the lane fails
with a sentence saying why), waits while an earlier process of the same lane-fold still runs,
continues from the newest checkpoint one wrote, trains through the local supervisor, and
appends its progress and its end (the verified result, or why it failed) to events.jsonl in
the job folder, which the host follows. SIGTERM (scancel) stops the plugin at its last
checkpoint. The exit status is 0 when the lane-fold finished, 1 when it failed, 2 when it was
cancelled.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			end, err := lanejob.Exec(ctx, args[0], lanejob.ExecOptions{Supervisor: host.SupervisorOptions(cmd.ErrOrStderr())})
			if err != nil {
				return err
			}
			switch end.State {
			case lanejob.EndFinished:
				fmt.Fprintf(cmd.OutOrStdout(), "finished at step %d: %s\n", end.Result.Steps, end.Result.Checkpoint)
			default:
				fmt.Fprintf(cmd.ErrOrStderr(), "amid: lane %s: %s\n", end.State, end.Error)
			}
			if code := lanejob.ExitCode(end); code != 0 {
				return exitError{code}
			}
			return nil
		},
	}
}
