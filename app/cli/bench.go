package cli

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"amid/host/bench"
	"amid/host/config"
)

func benchCmd() *cobra.Command {
	var o bench.Options
	var tasks string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run ReX-MLE challenges end to end and print a scoreboard beside the published scores",
		Long: `bench runs each challenge (--tasks, default all 20) with its built-in task definition: on the
real prepared folders under --data (<id>/public and <id>/private), or else on small generated
data; it trains within --budget per challenge, grades the submission with the challenge's
grader and prints challenge, metric, our score, time, and the published AMID, best agent and
human scores. Our score is on the leaderboard column the published figures are (TopCoW
detection: iou), with the grader's primary metric beside it when that is another column
(boundary_iou), and the note names the columns the ReX grader ranks by (the mean of the
positions over all of them). Scores on generated data are not comparable with the published
ones.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if tasks != "" {
				o.Tasks = strings.Split(tasks, ",")
			}
			if o.Out == "" {
				d, err := os.MkdirTemp("", "amid-bench-")
				if err != nil {
					return err
				}
				o.Out = d
			}
			env, done, err := runEnv(cmd.ErrOrStderr(), config.Executor{}, false)
			if err != nil {
				return err
			}
			defer done()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			rows, err := bench.Run(ctx, o, env, func(r bench.Row) {
				status := "valid"
				if !r.Valid {
					status = "invalid: " + r.Error
				}
				also := ""
				if r.Primary != "" && r.Primary != r.Metric {
					also = fmt.Sprintf(", primary %s %.4f", r.Primary, r.PrimaryScore)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s %.4f%s (%s) in %v\n", r.ID, r.Metric, r.Score, also, status, r.Took.Round(time.Second))
			})
			if len(rows) == 0 {
				return err
			}
			if asJSON {
				if jerr := bench.JSON(cmd.OutOrStdout(), rows); jerr != nil {
					return jerr
				}
			} else if terr := bench.Table(cmd.OutOrStdout(), rows); terr != nil {
				return terr
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "runs and data: %s\n", o.Out)
			if err != nil {
				return err
			}
			failed := 0
			for _, r := range rows {
				if !r.Valid {
					failed++
				}
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d challenges gave no valid submission", failed, len(rows))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&tasks, "tasks", "", "comma-separated challenge ids (default: all 20)")
	f.DurationVar(&o.Budget, "budget", 5*time.Minute, "budget per challenge")
	f.StringVar(&o.Data, "data", "", "folder of real prepared challenges (<id>/public, <id>/private); default: generated data")
	f.StringVar(&o.Out, "out", "", "where runs (and generated data) are written (default: a new temporary folder)")
	f.IntVar(&o.Cases, "cases", 0, "generated cases per challenge (default: the generator's)")
	f.Int64Var(&o.Seed, "seed", 42, "seed")
	f.IntVar(&o.Folds, "folds", 3, "cross-validation folds")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
