package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"amid/assets"
	"amid/host/synth/rexmle"
	"amid/host/task"
)

func synthCmd() *cobra.Command {
	var id, out string
	var cases int
	var seed int64
	var real, list bool
	cmd := &cobra.Command{
		Use:   "synth --task ID --out DIR [--cases N] [--seed S] [--real-size] | synth --list",
		Short: "Generate a small dataset shaped like a ReX-MLE challenge",
		Long: `Writes DIR/public, laid out exactly as ReX-MLE's prepare.py lays out the challenge's
prepared/public folder (train and test images and labels in the challenge's formats,
sample_submission.csv, description.md), and DIR/private, its answers (test_labels.csv
and the ground truth the grader reads). The built-in task assets/tasks/rexmle/ID.yaml
runs on DIR/public unchanged and "amid grade --answers DIR/private" scores its
submissions. Images resemble the modality; sizes are tiny unless --real-size. The same
seed writes the same bytes. Scores on generated data are not comparable with the
challenge's published ones.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			if list {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				for _, id := range rexmle.IDs() {
					title := ""
					if b, err := assets.RexMLETask(id); err == nil {
						if t, err := task.Parse(b); err == nil {
							title = t.Title
						}
					}
					fmt.Fprintf(tw, "%s\t%s\n", id, title)
				}
				return tw.Flush()
			}
			if id == "" || out == "" {
				return errors.New("synth: --task and --out are required (or --list)")
			}
			if err := rexmle.Generate(id, out, rexmle.Options{Cases: cases, Seed: seed, Real: real}); err != nil {
				return err
			}
			b, err := assets.RexMLETask(id)
			if err != nil {
				return err
			}
			t, err := task.Parse(b)
			if err != nil {
				return err
			}
			pub := filepath.Join(out, "public")
			ds, err := t.Resolve(pub)
			if err != nil {
				return fmt.Errorf("synth: the generated data does not resolve under the built-in task: %w", err)
			}
			fmt.Fprintf(w, "%s: %d train and %d test cases in %s\n", id, len(ds.Train), len(ds.Test), pub)
			fmt.Fprintf(w, "answers in %s (amid grade --task %s --answers %s --submission DIR)\n",
				filepath.Join(out, "private"), id, filepath.Join(out, "private"))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&id, "task", "", "challenge id: "+strings.Join(rexmle.IDs(), ", "))
	f.StringVar(&out, "out", "", "output folder (its public and private folders must be absent or empty)")
	f.IntVar(&cases, "cases", rexmle.DefaultCases, fmt.Sprintf("labelled cases before the 80/20 train/test split (%d to %d)", rexmle.MinCases, rexmle.MaxCases))
	f.Int64Var(&seed, "seed", 1, "random seed")
	f.BoolVar(&real, "real-size", false, "the real challenge's image dimensions (hundreds of MB for 3D tasks)")
	f.BoolVar(&list, "list", false, "list the challenge ids and exit")
	return cmd
}
