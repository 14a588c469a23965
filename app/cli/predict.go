package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"amid/host"
	"amid/host/config"
	"amid/host/dicomweb"
	"amid/host/export"
	"amid/host/predict"
)

func predictCmd() *cobra.Command {
	var out, pacsURL string
	var studies, query []string
	cmd := &cobra.Command{
		Use:   "predict PACKAGE [INPUT...] --out DIR [--pacs URL --study UID | --query KEY=VALUE]",
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
audit verify checks it). The exit status is 1 when any case failed.

With --study or --query, the studies are retrieved from the PACS by DICOMweb (WADO-RS;
--query finds them by QIDO-RS), predicted as inputs, and each DICOM SEG is stored back in
the PACS by STOW-RS as soon as it is written; a study the PACS refuses it for fails alone,
its files kept. The PACS's user and password come from the settings, never the command
line, and are never written to a log or the audit log.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("--out DIR is needed: the folder the predictions go to")
			}
			w := cmd.OutOrStdout()
			inputs := args[1:]
			settings := config.FromEnv()
			if pacsURL != "" {
				settings.PACS.URL = pacsURL
			}
			var send predict.Sender
			if len(studies)+len(query) > 0 {
				if settings.PACS.URL == "" {
					return fmt.Errorf("--study and --query need a PACS: --pacs URL or $%s", config.EnvPACSURL)
				}
				c := &dicomweb.Client{URL: settings.PACS.URL, User: settings.PACS.User, Password: settings.PACS.Password}
				uids := studies
				if len(query) > 0 {
					found, err := predict.FindStudies(cmd.Context(), c, query)
					if err != nil {
						return err
					}
					if len(found) == 0 {
						return fmt.Errorf("the PACS %s holds no study for %s", settings.PACS, strings.Join(query, ", "))
					}
					uids = append(uids, found...)
				}
				tmp, err := os.MkdirTemp("", "amid-pacs-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(tmp)
				fmt.Fprintf(w, "retrieving %d studies from %s\n", len(uids), settings.PACS)
				got, err := predict.Retrieve(cmd.Context(), c, uids, tmp)
				if err != nil {
					return err
				}
				inputs, send = append(inputs, got...), c
			}
			if len(inputs) == 0 {
				return fmt.Errorf("nothing to predict: give INPUTs, or --study or --query with a PACS")
			}
			res, err := predict.Apply(cmd.Context(), args[0], inputs, out, predict.Options{
				Supervisor: host.SupervisorOptions(cmd.ErrOrStderr()),
				Version:    Version,
				Send:       send,
				Card: func(c *export.Card) {
					if c == nil {
						fmt.Fprintln(w, "intended use: the package has no model card (made by an older AMID)")
						return
					}
					fmt.Fprintf(w, "intended use: %s\n", c.IntendedUse)
					for _, l := range c.Limitations {
						fmt.Fprintf(w, "limit: %s\n", l)
					}
				},
				Progress: func(k, n int, c predict.CaseResult) {
					bar := strings.Repeat("#", 20*k/n) + strings.Repeat(".", 20-20*k/n)
					switch {
					case c.Error != "":
						fmt.Fprintf(w, "[%s] %d/%d %s: failed: %s\n", bar, k, n, c.ID, c.Error)
					default:
						sent := ""
						if c.Sent {
							sent = "; its DICOM SEG stored in the PACS"
						}
						sure := ""
						if c.Confidence != nil {
							sure = fmt.Sprintf(", confidence %.3f", *c.Confidence)
						}
						fmt.Fprintf(w, "[%s] %d/%d %s: %s in %.1f s%s%s\n", bar, k, n, c.ID, strings.Join(c.Predictions, ", "), c.Seconds, sure, sent)
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
			if len(res.ReviewOrder) > 1 {
				fmt.Fprintf(w, "to review, least sure first: %s\n", strings.Join(res.ReviewOrder, ", "))
			}
			if res.Failed > 0 {
				return fmt.Errorf("%d of %d cases failed; results.json says why for each", res.Failed, len(res.Cases))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "the folder the results go to (new or empty)")
	f.StringVar(&pacsURL, "pacs", "", "the PACS's DICOMweb root (default $"+config.EnvPACSURL+"; user and password from $"+config.EnvPACSUser+", $"+config.EnvPACSPassword+")")
	f.StringArrayVar(&studies, "study", nil, "a Study Instance UID to retrieve from the PACS (repeatable)")
	f.StringArrayVar(&query, "query", nil, "a QIDO-RS filter key=value for the studies to retrieve, such as PatientID=123 (repeatable)")
	return cmd
}
