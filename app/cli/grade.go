package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"amid/host/grade"
)

func gradeCmd() *cobra.Command {
	var task, sub, ans string
	var official, asJSON bool
	cmd := &cobra.Command{
		Use:   "grade --task ID --submission DIR --answers DIR",
		Short: "Score a ReX-MLE submission exactly as the challenge's grader does and rank it",
		Long: `Grades a submission folder (submission.csv plus the prediction files it names, paths
relative to the folder) against an answers folder (ReX-MLE prepared/private:
test_labels.csv plus ground-truth files) with the host's own implementation of the
challenge's grader, then ranks it on the challenge leaderboard (mean position,
percentile, medal). An invalid submission lists every rule it breaks and exits with
status 2. --official applies the official challenge's rules where they differ from the
ReX grader (PUMA track 2 nuclei averaging). Challenge ids: ` + strings.Join(grade.ChallengeIDs, ", ") + ".",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for name, v := range map[string]string{"--task": task, "--submission": sub, "--answers": ans} {
				if v == "" {
					return fmt.Errorf("grade: %s is required", name)
				}
			}
			res, err := grade.Grade(cmd.Context(), task, sub, ans, grade.Options{Official: official})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(res); err != nil {
					return err
				}
			} else {
				printResult(out, task, res)
			}
			if !res.Valid {
				return exitError{code: 2}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&task, "task", "", "challenge id, e.g. neurips-cellseg")
	f.StringVar(&sub, "submission", "", "submission folder holding submission.csv")
	f.StringVar(&ans, "answers", "", "answers folder holding test_labels.csv (ReX-MLE prepared/private)")
	f.BoolVar(&official, "official", false, "use the official challenge's rules where they differ from ReX's")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func printResult(w io.Writer, task string, r *grade.Result) {
	if !r.Valid {
		fmt.Fprintf(w, "%s: invalid submission (%d problems)\n", task, len(r.Errors))
		for _, e := range r.Errors {
			fmt.Fprintf(w, "  - %s\n", e)
		}
		return
	}
	fmt.Fprintf(w, "%s: %s = %.6g\n", task, r.Primary.Name, float64(r.Primary.Value))
	fmt.Fprintf(w, "mean position %.4g, percentile %.4g, medal %s\n", float64(r.MeanPosition), float64(r.Percentile), r.Medal)
	keys := make([]string, 0, len(r.Metrics))
	for k := range r.Metrics {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %-28s %.6g\n", k, float64(r.Metrics[k]))
	}
}
