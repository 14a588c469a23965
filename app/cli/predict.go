package cli

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"amid/host"
	"amid/host/predict"
)

func predictCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "predict PACKAGE INPUT... --out DIR",
		Short: "Use a model package on new patients: predictions, DICOM SEG, volumes, an audit log",
		Long: `predict verifies the model package folder PACKAGE (files, sha256s, audit chain, weights;
a changed package is refused before anything is predicted), then predicts each case of the
INPUTs with the package's own plugin, weights, ensemble and configuration.

An INPUT is an image file, a DICOM series or study folder (the task's series selector picks
the series, as in training), a folder laid out as the task's test split, or, for a task of
one image per case, any folder of images. Each case is checked against the data the model
was trained on: what it cannot read is refused with the reason; a spacing or intensity it
never saw gives a warning that stays with the result. One case failing loses no other's
result.

DIR (new or empty) receives predictions/ in the task's own format, dicom/ID.dcm (a DICOM
SEG, for segmentations of DICOM input), volumes.csv (each label's voxels and mL),
results.json, and audit.jsonl: this predict run's own audit log, which names the package's
manifest and audit anchor and records each input and output by its sha256 alone (amid
audit verify checks it). The exit status is 1 when any case failed.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("--out DIR is needed: the folder the predictions go to")
			}
			w := cmd.OutOrStdout()
			res, err := predict.Apply(cmd.Context(), args[0], args[1:], out, predict.Options{
				Supervisor: host.SupervisorOptions(cmd.ErrOrStderr()),
				Version:    Version,
				Progress: func(k, n int, c predict.CaseResult) {
					bar := strings.Repeat("#", 20*k/n) + strings.Repeat(".", 20-20*k/n)
					switch {
					case c.Error != "":
						fmt.Fprintf(w, "[%s] %d/%d %s: failed: %s\n", bar, k, n, c.ID, c.Error)
					default:
						fmt.Fprintf(w, "[%s] %d/%d %s: %s in %.1f s\n", bar, k, n, c.ID, strings.Join(c.Predictions, ", "), c.Seconds)
					}
					for _, x := range c.Warnings {
						fmt.Fprintf(w, "      warning: %s\n", x)
					}
				},
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "%d of %d cases predicted into %s with the package's %s lane (%s); audit log %s\n",
				len(res.Cases)-res.Failed, len(res.Cases), out, res.Lane, res.Compute, filepath.Join(out, predict.FileAudit))
			if res.Failed > 0 {
				return fmt.Errorf("%d of %d cases failed; results.json says why for each", res.Failed, len(res.Cases))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "the folder the results go to (new or empty)")
	return cmd
}
