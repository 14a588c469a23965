package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"amid/host"
	"amid/host/config"
	"amid/host/dicomweb"
	"amid/host/export"
	"amid/host/predict"
	hostrun "amid/host/run"
)

func predictCmd() *cobra.Command {
	var out, pacsURL string
	var studies, query []string
	var watch, probs bool
	var every time.Duration
	cmd := &cobra.Command{
		Use:   "predict PACKAGE [INPUT...] --out DIR [--pacs URL (--study UID | --query KEY=VALUE | --watch)]",
		Short: "Use a model package on new patients: predictions, DICOM SEG, SR or series, volumes, an audit log",
		Long: `predict verifies the model package PACKAGE, a folder or its zip (files, sha256s, audit chain, weights;
a changed package is refused before anything is predicted), prints its intended use and
limits, then predicts each case of the INPUTs with the package's own plugin, weights,
ensemble and configuration.

An INPUT is an image file, a DICOM series or study folder (the task's series selector picks
the series, as in training), a folder laid out as the task's test split, or, for a task of
one image per case, any folder of images. Each case is checked against the data the model
was trained on: what it cannot read is refused with the reason; a spacing or intensity it
never saw gives a warning that stays with the result. One case failing loses no other's
result.

DIR (new or empty) receives predictions/ in the task's own format, for DICOM input
dicom/ID.dcm (a DICOM SEG of a segmentation; a DICOM structured report, TID 1500, of a
detection, classification or image-quality score) or dicom/ID/ (an enhancement's derived
series, one file per slice), volumes.csv (each label's voxels and mL),
results.json (with each case's confidence where the plugin gives one, and the cases in
review order, least sure first), with --probabilities for a segmentation
probabilities/ID_probabilities.nii.gz (each label's probability at each voxel, one float32
channel per label, background first; a fold ensemble's is its members' mean), and
audit.jsonl: this predict run's own audit log, which names the package's manifest and audit
anchor and records each input and output by its sha256 alone (amid audit verify checks it).
The exit status is 1 when any case failed.

With --study or --query, the studies are retrieved from the PACS by DICOMweb (WADO-RS;
--query finds them by QIDO-RS), predicted as inputs, and each DICOM object is stored back in
the PACS by STOW-RS as soon as it is written; a study the PACS refuses it for fails alone,
its files kept. With --watch, the PACS is asked every --every for the studies --query finds
(every study without one), and each study not yet predicted is predicted into DIR/UID, once:
DIR/watch.json records them, so a watch started again predicts none twice. The PACS's user
and password come from the settings ($AMID_PACS_USER, $AMID_PACS_PASSWORD), never the
command line, and are never written to a log or the audit log.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("--out DIR is needed: the folder the predictions go to")
			}
			w := cmd.OutOrStdout()
			o := predict.Options{Supervisor: host.SupervisorOptions(cmd.ErrOrStderr()), Version: hostrun.Version, Progress: progress(w), Probabilities: probs}
			settings := config.FromEnv()
			if pacsURL != "" {
				settings.PACS.URL = pacsURL
			}
			var c *dicomweb.Client
			if watch || len(studies)+len(query) > 0 {
				if settings.PACS.URL == "" {
					return fmt.Errorf("--study, --query and --watch need a PACS: --pacs URL or $%s", config.EnvPACSURL)
				}
				c = &dicomweb.Client{URL: settings.PACS.URL, User: settings.PACS.User, Password: settings.PACS.Password}
			}
			if watch {
				// The card once, with the first study (a package's zip is read then).
				var once sync.Once
				o.Card = func(card *export.Card) { once.Do(func() { printCard(w, card) }) }
				fmt.Fprintf(w, "watching %s every %v for studies%s; Ctrl-C stops\n", settings.PACS, every, queryText(query))
				wt := &predict.Watch{Package: args[0], Client: c, Query: query, Every: every, Out: out, Options: o,
					Log: func(s string) { fmt.Fprintln(w, s) }}
				return wt.Run(cmd.Context())
			}
			o.Card = func(card *export.Card) { printCard(w, card) }
			inputs := args[1:]
			if c != nil {
				tmp, err := os.MkdirTemp("", "amid-pacs-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(tmp)
				got, err := retrieve(cmd.Context(), w, c, settings.PACS, studies, query, tmp)
				if err != nil {
					return err
				}
				inputs, o.Send = append(inputs, got...), c
			}
			if len(inputs) == 0 {
				return fmt.Errorf("nothing to predict: give INPUTs, or --study or --query with a PACS")
			}
			res, err := predict.Apply(cmd.Context(), args[0], inputs, out, o)
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
	f.StringVar(&out, "out", "", "the folder the results go to (new or empty; with --watch, the watch folder)")
	f.StringVar(&pacsURL, "pacs", "", "the PACS's DICOMweb root (default $"+config.EnvPACSURL+"; user and password from $"+config.EnvPACSUser+", $"+config.EnvPACSPassword+")")
	f.StringArrayVar(&studies, "study", nil, "a Study Instance UID to retrieve from the PACS (repeatable)")
	f.StringArrayVar(&query, "query", nil, "a QIDO-RS filter key=value for the studies to retrieve, such as PatientID=123 (repeatable)")
	f.BoolVar(&watch, "watch", false, "keep asking the PACS for new studies and predict each once")
	f.BoolVar(&probs, "probabilities", false, "a segmentation: write each case's probability map too (probabilities/, float32 NIfTI, one channel per label)")
	f.DurationVar(&every, "every", 30*time.Second, "with --watch, how often the PACS is asked")
	return cmd
}

// retrieve fetches the studies named, and those the query finds, into dir.
func retrieve(ctx context.Context, w io.Writer, c *dicomweb.Client, pacs config.PACS, studies, query []string, dir string) ([]string, error) {
	uids := studies
	if len(query) > 0 {
		found, err := predict.FindStudies(ctx, c, query)
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("the PACS %s holds no study for %s", pacs, strings.Join(query, ", "))
		}
		uids = append(uids, found...)
	}
	fmt.Fprintf(w, "retrieving %d studies from %s\n", len(uids), pacs)
	return predict.Retrieve(ctx, c, uids, dir)
}

func queryText(query []string) string {
	if len(query) == 0 {
		return ""
	}
	return " where " + strings.Join(query, ", ")
}

// progress prints a case's end with a bar of the cases done.
func progress(w io.Writer) func(k, n int, c predict.CaseResult) {
	return func(k, n int, c predict.CaseResult) {
		bar := strings.Repeat("#", 20*k/n) + strings.Repeat(".", 20-20*k/n)
		if c.Error != "" && len(c.Predictions) == 0 {
			fmt.Fprintf(w, "[%s] %d/%d %s: failed: %s\n", bar, k, n, c.ID, c.Error)
		} else {
			sure, sent := "", ""
			if c.Confidence != nil {
				sure = fmt.Sprintf(", confidence %.3f", *c.Confidence)
			}
			if c.Sent {
				sent = "; its " + c.DICOM() + " stored in the PACS"
			}
			files := strings.Join(c.Predictions, ", ")
			if c.Probabilities != "" {
				files += " and " + c.Probabilities
			}
			fmt.Fprintf(w, "[%s] %d/%d %s: %s in %.1f s%s%s\n", bar, k, n, c.ID, files, c.Seconds, sure, sent)
			if c.Error != "" {
				fmt.Fprintf(w, "      failed: %s\n", c.Error)
			}
		}
		for _, x := range c.Warnings {
			fmt.Fprintf(w, "      warning: %s\n", x)
		}
	}
}

// printCard prints the intended use and the limits of a package's model card.
func printCard(w io.Writer, c *export.Card) {
	if c == nil {
		fmt.Fprintln(w, "intended use: the package has no model card (made by an older AMID)")
		return
	}
	fmt.Fprintf(w, "intended use: %s\n", c.IntendedUse)
	for _, l := range c.Limitations {
		fmt.Fprintf(w, "limit: %s\n", l)
	}
}
