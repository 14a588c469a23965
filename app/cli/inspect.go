package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// Info is what `amid inspect` reports about an image.
type Info struct {
	Path        string              `json:"path"`
	Format      imageio.Format      `json:"format"`
	Dims        [4]int              `json:"dims"`
	Spacing     [3]float64          `json:"spacing"`
	Origin      [3]float64          `json:"origin"`
	Direction   [9]float64          `json:"direction"`
	Orientation string              `json:"orientation"`
	DType       string              `json:"dtype"`
	Min         float64             `json:"min"`
	Max         float64             `json:"max"`
	Mean        float64             `json:"mean"`
	NaN         int                 `json:"nan,omitempty"`
	Labels      map[string]int64    `json:"labels,omitempty"`
	labelOrder  []volume.LabelCount `json:"-"`
}

// maxLabels is the most distinct values for which inspect lists label counts: an 8-bit
// label map can hold at most 256.
const maxLabels = 256

// Inspect reads an image and summarises it.
func Inspect(path string) (*Info, error) {
	v, f, err := imageio.Load(path)
	if err != nil {
		return nil, err
	}
	s := v.Stats()
	info := &Info{
		Path: path, Format: f, Dims: v.Dims, Spacing: v.Spacing, Origin: v.Origin,
		Direction: v.Direction, Orientation: v.Orientation(), DType: v.DType().String(),
		Min: s.Min, Max: s.Max, Mean: s.Mean, NaN: s.NaN,
	}
	if counts, ok := v.Labels(maxLabels); ok {
		info.Labels = make(map[string]int64, len(counts))
		for _, c := range counts {
			info.Labels[fmt.Sprint(c.Value)] = c.Count
		}
		info.labelOrder = counts
	}
	return info, nil
}

func inspectCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "inspect PATH",
		Short: "Print an image's format, geometry, type and value summary",
		Long: `Reads an image (NIfTI, MetaImage, NRRD, DICOM file or series folder, PNG, TIFF,
BMP) and prints its format, dims (x, y, z, channels), spacing (mm), origin and direction
(LPS), element type, min, max, mean and, for integer images with at most 256 distinct
values, the voxel count of each label.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			info, err := Inspect(args[0])
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(info)
			}
			printInfo(cmd.OutOrStdout(), info)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printInfo(w io.Writer, in *Info) {
	fmt.Fprintf(w, "path         %s\n", in.Path)
	fmt.Fprintf(w, "format       %s\n", in.Format)
	fmt.Fprintf(w, "dims         %d × %d × %d × %d (x, y, z, channels)\n", in.Dims[0], in.Dims[1], in.Dims[2], in.Dims[3])
	// Text shows 7 significant digits, the precision of the float32 fields most formats
	// store geometry in; --json gives every digit.
	fmt.Fprintf(w, "spacing      %.7g × %.7g × %.7g mm\n", in.Spacing[0], in.Spacing[1], in.Spacing[2])
	fmt.Fprintf(w, "origin       %.7g, %.7g, %.7g mm (LPS)\n", in.Origin[0], in.Origin[1], in.Origin[2])
	d := in.Direction
	fmt.Fprintf(w, "direction    [%.7g %.7g %.7g; %.7g %.7g %.7g; %.7g %.7g %.7g] (%s)\n", d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], in.Orientation)
	fmt.Fprintf(w, "dtype        %s\n", in.DType)
	fmt.Fprintf(w, "min/max/mean %g / %g / %.6g\n", in.Min, in.Max, in.Mean)
	if in.NaN > 0 {
		fmt.Fprintf(w, "NaN          %d voxels\n", in.NaN)
	}
	if len(in.labelOrder) > 0 {
		parts := make([]string, len(in.labelOrder))
		for i, c := range in.labelOrder {
			parts[i] = fmt.Sprintf("%d:%d", c.Value, c.Count)
		}
		fmt.Fprintf(w, "labels       %s\n", strings.Join(parts, " "))
	}
}
