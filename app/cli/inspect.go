package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"amid/viewer/dicom"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// Info is what `amid inspect` reports about an image.
type Info struct {
	Path        string           `json:"path"`
	Format      imageio.Format   `json:"format"`
	Dims        [4]int           `json:"dims"`
	Spacing     [3]float64       `json:"spacing"`
	Origin      [3]float64       `json:"origin"`
	Direction   [9]float64       `json:"direction"`
	Orientation string           `json:"orientation"`
	DType       string           `json:"dtype"`
	Min         float64          `json:"min"`
	Max         float64          `json:"max"`
	Mean        float64          `json:"mean"`
	NaN         int              `json:"nan,omitempty"`
	Labels      map[string]int64 `json:"labels,omitempty"`
	// Warnings say how a DICOM series was resampled onto a regular grid (gantry tilt,
	// uneven slice spacing); Skipped what a DICOM folder held beside its one series.
	Warnings   []string            `json:"warnings,omitempty"`
	Skipped    []dicom.Skipped     `json:"skipped,omitempty"`
	labelOrder []volume.LabelCount `json:"-"`
}

// StudyInfo is what `amid inspect` reports about a DICOM folder that does not hold exactly
// one image series: each series it holds (and the objects passed over), to choose from
// with a task's data.series.
type StudyInfo struct {
	Path     string              `json:"path"`
	Format   imageio.Format      `json:"format"`
	DICOMDIR bool                `json:"dicomdir,omitempty"`
	Series   []*dicom.SeriesInfo `json:"series"`
	Skipped  []dicom.Skipped     `json:"skipped,omitempty"`
}

// maxLabels is the most distinct values for which inspect lists label counts: an 8-bit
// label map can hold at most 256.
const maxLabels = 256

// Inspect reads an image and summarises it. A DICOM folder holding one image series is
// that image (with what was passed over in Skipped); one holding none or several gives
// the folder's series instead (Info is then nil).
func Inspect(path string) (*Info, *StudyInfo, error) {
	var v *volume.Volume
	f, err := imageio.FormatOf(path)
	if err != nil {
		return nil, nil, err
	}
	var warnings []string
	var skipped []dicom.Skipped
	if st, serr := os.Stat(path); serr == nil && st.IsDir() {
		study, err := dicom.Scan(path)
		if err != nil {
			return nil, nil, err
		}
		if len(study.Series) != 1 {
			return nil, &StudyInfo{Path: path, Format: imageio.DICOM, DICOMDIR: study.DICOMDIR, Series: study.Series, Skipped: study.Skipped}, nil
		}
		var m *dicom.Meta
		if v, m, err = study.Series[0].Read(); err != nil {
			return nil, nil, err
		}
		warnings, skipped = m.Warnings, study.Skipped
	} else if v, f, err = imageio.Load(path); err != nil {
		return nil, nil, err
	}
	s := v.Stats()
	info := &Info{
		Path: path, Format: f, Dims: v.Dims, Spacing: v.Spacing, Origin: v.Origin,
		Direction: v.Direction, Orientation: v.Orientation(), DType: v.DType().String(),
		Min: s.Min, Max: s.Max, Mean: s.Mean, NaN: s.NaN, Warnings: warnings, Skipped: skipped,
	}
	if counts, ok := v.Labels(maxLabels); ok {
		info.Labels = make(map[string]int64, len(counts))
		for _, c := range counts {
			info.Labels[fmt.Sprint(c.Value)] = c.Count
		}
		info.labelOrder = counts
	}
	return info, nil, nil
}

func inspectCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "inspect PATH",
		Short: "Print an image's format, geometry, type and value summary",
		Long: `Reads an image (NIfTI, MetaImage, NRRD, DICOM file or folder, PNG, TIFF, BMP) and
prints its format, dims (x, y, z, channels), spacing (mm), origin and direction (LPS),
element type, min, max, mean and, for integer images with at most 256 distinct values,
the voxel count of each label.

A DICOM folder (a series, or a study as PACS exports it, searched through its subfolders
or its DICOMDIR) that holds one image series is read as that image; localizers, reports
and other objects beside it are listed as "skipped", and a series resampled onto a
regular grid (gantry tilt, uneven slice spacing) says so in "warnings". A folder that
holds several image series (or none) is not read; --json then prints

  {"path": …, "format": "dicom", "dicomdir": true|absent,
   "series": [{"uid", "number", "description", "modality",
               "orientation": "axial"|"coronal"|"sagittal",
               "slices", "files", "rows", "columns", "spacing": [x, y, z] (mm),
               "transfer_syntax", "transfer_syntax_uid",
               "warnings": [...], "problem": "why it cannot be read"}, …],
   "skipped": [{"uid", "description", "modality", "files", "path", "reason"}, …]}

to choose a series by (a task's data.series: modality, description, orientation,
min_slices, prefer). Series Instance UIDs identify a study: keep the output private.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			info, study, err := Inspect(args[0])
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if study != nil {
					return enc.Encode(study)
				}
				return enc.Encode(info)
			}
			if study != nil {
				printStudy(cmd.OutOrStdout(), study)
				return nil
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
	for _, x := range in.Warnings {
		fmt.Fprintf(w, "warning      %s\n", x)
	}
	for _, s := range in.Skipped {
		fmt.Fprintf(w, "skipped      %s\n", s.Note())
	}
}

func printStudy(w io.Writer, st *StudyInfo) {
	fmt.Fprintf(w, "path         %s\n", st.Path)
	how := "searched through its subfolders"
	if st.DICOMDIR {
		how = "the files its DICOMDIR lists"
	}
	fmt.Fprintf(w, "format       dicom folder (%s): %d image series; a task picks one with data.series\n", how, len(st.Series))
	if len(st.Series) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  #\tmodality\torientation\tslices\tspacing (mm)\ttransfer syntax\tdescription\tuid")
		for _, s := range st.Series {
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%d\t%.4g × %.4g × %.4g\t%s\t%s\t%s\n", s.Number, s.Modality, s.Orientation, s.Slices,
				s.Spacing[0], s.Spacing[1], s.Spacing[2], s.TransferSyntax, s.Description, s.UID)
		}
		tw.Flush()
		for _, s := range st.Series {
			for _, x := range s.Warnings {
				fmt.Fprintf(w, "warning      series %d: %s\n", s.Number, x)
			}
			if s.Problem != "" {
				fmt.Fprintf(w, "problem      series %d: %s\n", s.Number, s.Problem)
			}
		}
	}
	for _, s := range st.Skipped {
		fmt.Fprintf(w, "skipped      %s\n", s.Note())
	}
}
