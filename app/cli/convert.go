package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"amid/viewer/imageio"
)

func convertCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "convert IN OUT",
		Short: "Convert an image to the format OUT's extension names, keeping its geometry",
		Long: `Reads IN in any supported format and writes OUT as .nii/.nii.gz, .mha/.mhd, .nrrd,
.png or .tif, keeping values, element type, spacing, origin and direction.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := imageio.Read(args[0])
			if err != nil {
				return err
			}
			if err := imageio.Write(args[1], v); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%d × %d × %d × %d %s)\n", args[1], v.Dims[0], v.Dims[1], v.Dims[2], v.Dims[3], v.DType())
			return nil
		},
	}
}
