package cli

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"amid/host/synth"
)

func demoCmd() *cobra.Command {
	var cases int
	var seed uint64
	var dicom, studies bool
	cmd := &cobra.Command{
		Use:   "demo DIR [--dicom [--studies]]",
		Short: "Write the demo task (generated head CTs) into DIR, ready for amid run DIR/task.yaml",
		Long: `demo writes the demo task into DIR: generated head CTs with six labels, a quarter as many
test cases, and the test answers. With --dicom every case is a DICOM CT series folder (the
series cycle through explicit and implicit VR little endian, deflated and RLE Lossless) and
every training label a DICOM SEG (even cases) or RTSTRUCT (odd cases); --studies adds to
each case folder a thicker second series and a localizer, as a PACS export holds them.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if dicom {
				err = synth.DemoDICOM(args[0], cases, seed, synth.DICOMOptions{Studies: studies})
			} else {
				err = synth.Demo(args[0], cases, seed)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "demo task written: %s (answers in %s)\n", filepath.Join(args[0], "task.yaml"), filepath.Join(args[0], "answers"))
			return nil
		},
	}
	cmd.Flags().IntVar(&cases, "cases", 16, "training cases (a quarter as many test cases are added)")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "seed of the first case")
	cmd.Flags().BoolVar(&dicom, "dicom", false, "DICOM series with DICOM SEG and RTSTRUCT labels")
	cmd.Flags().BoolVar(&studies, "studies", false, "with --dicom: each case a study of two series and a localizer")
	return cmd
}
