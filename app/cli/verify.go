package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"amid/host/export"
	"amid/plugins/compute"
)

// reproducer re-runs the prediction of the model package in pkg into the empty folder out,
// in the layout of the package's predictions/ folder (see export.VerifyOptions). The
// program's is reproduceHook; a test passes its own, or nil, with which amid verify checks
// everything but reproducibility and says so.
type reproducer func(ctx context.Context, pkg, out string) (compute.Identity, error)

func verifyCmd(reproduce reproducer) *cobra.Command {
	var noReproduce, asJSON bool
	cmd := &cobra.Command{
		Use:   "verify PACKAGE",
		Short: "Check a model package: files, checksums, audit chain, weights and reproducibility",
		Long: `Checks a model package folder or zip: every file listed in manifest.json is present
with its size and sha256 and none is extra; audit.jsonl is an intact hash chain that ends
with the hash the manifest records and with the export entry, which records every file;
the weights are the ones the audit log says the chosen lane trained; and the package,
re-run in a clean temporary folder, reproduces its predictions. A re-run under the compute
identity the package records (engine, device, BLAS kernels, worker split) must write the
same bytes; one under another identity (another CPU's kernels, a GPU) must agree within
the tolerance table of amid/plugins/compute, and the verdict names both identities and the
worst agreement. Every problem is printed on a line of its own naming the file; the exit
status is then 1.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var opt export.VerifyOptions
			if !noReproduce {
				opt.Reproduce = reproduce
			}
			v, err := export.Verify(cmd.Context(), args[0], opt)
			switch {
			case noReproduce:
				v.ReproduceNote = "reproducibility not checked (--no-reproduce)"
			case reproduce == nil:
				v.ReproduceNote = "reproducibility not checked: no way to re-run a package was given"
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(v); err != nil {
					return err
				}
			} else {
				printVerification(out, v)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&noReproduce, "no-reproduce", false, "skip re-running the package's prediction")
	f.BoolVar(&asJSON, "json", false, "print the findings as JSON")
	return cmd
}

func printVerification(w io.Writer, v *export.Verification) {
	if !v.OK() {
		fmt.Fprintf(w, "package %s: %d problems\n", v.Path, len(v.Problems))
		for _, p := range v.Problems {
			fmt.Fprintf(w, "  - %s\n", p)
		}
		if !v.Rerun.IsZero() {
			fmt.Fprintf(w, "package computed with: %s\nre-run computed with:  %s\n", v.Compute, v.Rerun)
		}
		if v.ReproduceNote != "" {
			fmt.Fprintln(w, v.ReproduceNote)
		}
		return
	}
	fmt.Fprintf(w, "package %s verified: %d files match the manifest\n", v.Path, v.Files)
	fmt.Fprintf(w, "audit log intact: %d entries, last hash %s\n", v.AuditEntries, v.AuditLastHash)
	if v.SRs > 0 {
		fmt.Fprintf(w, "%d DICOM structured reports read\n", v.SRs)
	}
	if v.Derived > 0 {
		fmt.Fprintf(w, "%d derived DICOM series read back to their predictions\n", v.Derived)
	}
	if v.SEGs > 0 {
		fmt.Fprintf(w, "%d DICOM SEG objects read back to their predictions\n", v.SEGs)
	}
	if v.Reproduced {
		fmt.Fprintf(w, "predictions %s (%d files)\n", v.ReproduceNote, v.Compared)
		fmt.Fprintf(w, "  package computed with: %s\n  re-run computed with:  %s\n", v.Compute, v.Rerun)
	} else {
		fmt.Fprintln(w, v.ReproduceNote)
	}
}
