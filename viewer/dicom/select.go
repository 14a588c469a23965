package dicom

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"amid/viewer/volume"
)

// ErrSeries marks a study in which a selector does not pick exactly one image series.
var ErrSeries = errors.New("the series selector does not pick one series")

// Selector picks one image series of a study. Every field is optional; the zero Selector
// picks the study's only image series.
type Selector struct {
	// Modality is the series' Modality (CT, MR, PT, …), compared without regard to case.
	Modality string `yaml:"modality" json:"modality,omitempty"`
	// Description is a regular expression (RE2 syntax) found anywhere in the Series
	// Description, without regard to case: "venous", "^t1.*(gd|contrast)".
	Description string `yaml:"description" json:"description,omitempty"`
	// Orientation is axial, coronal or sagittal: the patient axis nearest the slice
	// normal.
	Orientation string `yaml:"orientation" json:"orientation,omitempty"`
	// MinSlices leaves out series of fewer slices (localizers, single reformats).
	MinSlices int `yaml:"min_slices" json:"min_slices,omitempty"`
	// Prefer settles a choice between several series that fit: thinnest (the smallest
	// slice spacing, then the most slices) or most (the most slices, then the thinnest).
	Prefer string `yaml:"prefer" json:"prefer,omitempty"`
}

// Preferences a Selector may name.
const (
	PreferThinnest = "thinnest"
	PreferMost     = "most"
)

// Orientations a Selector may name.
var Orientations = []string{"axial", "coronal", "sagittal"}

// Check reports the first field that is not valid, naming it.
func (s Selector) Check() error {
	if _, err := regexp.Compile(s.Description); err != nil {
		return fmt.Errorf("description: %w", err)
	}
	if s.Orientation != "" && !slices.Contains(Orientations, strings.ToLower(s.Orientation)) {
		return fmt.Errorf("orientation: %q is not one of %v", s.Orientation, Orientations)
	}
	if s.MinSlices < 0 {
		return fmt.Errorf("min_slices: %d is negative", s.MinSlices)
	}
	if s.Prefer != "" && s.Prefer != PreferThinnest && s.Prefer != PreferMost {
		return fmt.Errorf("prefer: %q is not %s or %s", s.Prefer, PreferThinnest, PreferMost)
	}
	return nil
}

// String writes the selector's rule as in task.yaml ("any series" for the zero one).
func (s Selector) String() string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+": "+v)
		}
	}
	add("modality", s.Modality)
	if s.Description != "" {
		add("description", fmt.Sprintf("%q", s.Description))
	}
	add("orientation", s.Orientation)
	if s.MinSlices > 0 {
		add("min_slices", fmt.Sprint(s.MinSlices))
	}
	add("prefer", s.Prefer)
	if len(parts) == 0 {
		return "any series"
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// Select picks the series of the study that sel names. Notes say, in a sentence each and
// without identifiers, what was passed over: the study's skipped objects, series with
// fewer slices than sel.MinSlices, and series that fit but lost to the preference. When no series or several fit, the error (wrapping
// ErrSeries) lists each candidate with its Series Instance UID, description, slice count
// and spacing.
func (st *Study) Select(sel Selector) (*SeriesInfo, []string, error) {
	if err := sel.Check(); err != nil {
		return nil, nil, fmt.Errorf("dicom: series selector: %w", err)
	}
	re := regexp.MustCompile("(?i)" + sel.Description)
	var notes []string
	for _, s := range st.Skipped {
		notes = append(notes, s.Note())
	}
	var fit []*SeriesInfo
	for _, s := range st.Series {
		switch {
		case sel.Modality != "" && !strings.EqualFold(s.Modality, sel.Modality),
			sel.Description != "" && !re.MatchString(s.Description),
			sel.Orientation != "" && !strings.EqualFold(s.Orientation, sel.Orientation):
			continue
		case s.Slices < sel.MinSlices:
			noun := "slices"
			if s.Slices == 1 {
				noun = "slice"
			}
			notes = append(notes, fmt.Sprintf("%s skipped: %d %s, fewer than min_slices %d", describe(s.Description, s.Modality, s.Files), s.Slices, noun, sel.MinSlices))
			continue
		}
		fit = append(fit, s)
	}
	if len(fit) == 0 {
		what := "the folder holds no image series"
		if len(st.Series) > 0 {
			what = fmt.Sprintf("no series fits %s; the folder holds %s", sel, list(st.Series))
		}
		if n := len(st.Skipped); n > 0 {
			what += fmt.Sprintf("; %d skipped: %s", n, skippedText(st.Skipped))
		}
		return nil, notes, fmt.Errorf("dicom: %s: %w: %s", st.Dir, ErrSeries, what)
	}
	if len(fit) > 1 && sel.Prefer != "" {
		better := func(a, b *SeriesInfo) int { // <0 when a is preferred
			thin := cmpFloat(a.Spacing[2], b.Spacing[2])
			most := b.Slices - a.Slices
			if sel.Prefer == PreferMost {
				return cmpOr(most, thin)
			}
			return cmpOr(thin, most)
		}
		slices.SortStableFunc(fit, better)
		n := 1
		for n < len(fit) && better(fit[0], fit[n]) == 0 {
			n++
		}
		if n == 1 {
			for _, s := range fit[1:] {
				notes = append(notes, fmt.Sprintf("%s passed over: %s (%d slices, %.4g mm apart) preferred", describe(s.Description, s.Modality, s.Files),
					describe(fit[0].Description, fit[0].Modality, fit[0].Files), fit[0].Slices, fit[0].Spacing[2]))
			}
		}
		fit = fit[:n]
	}
	if len(fit) > 1 {
		return nil, notes, fmt.Errorf("dicom: %s: %w: %d series fit %s: %s; narrow the choice with modality, description, orientation, min_slices or prefer",
			st.Dir, ErrSeries, len(fit), sel, list(fit))
	}
	return fit[0], notes, nil
}

// cmpFloat compares slice spacings, taking those within 1 µm as equal.
func cmpFloat(a, b float64) int {
	switch {
	case a < b-1e-3:
		return -1
	case a > b+1e-3:
		return 1
	}
	return 0
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// skippedText names up to three skipped objects with their reasons.
func skippedText(sk []Skipped) string {
	parts := make([]string, 0, 3)
	for i, s := range sk {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(sk)-3))
			break
		}
		parts = append(parts, s.Note())
	}
	return strings.Join(parts, "; ")
}

func list(ss []*SeriesInfo) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = s.String()
	}
	return strings.Join(parts, "; ")
}

// ReadDir reads the one image series in dir (searched as Scan does) as a volume:
// localizers, reports and other objects that are not image series are passed over. A
// folder holding several image series is an error (wrapping ErrSeries) that lists them;
// Scan and Select choose among them.
func ReadDir(dir string) (*volume.Volume, *Meta, error) {
	st, err := Scan(dir)
	if err != nil {
		return nil, nil, err
	}
	s, _, err := st.Select(Selector{})
	if err != nil {
		return nil, nil, err
	}
	return s.Read()
}

// ReadSeries reads every image series in dir (searched as Scan does) into a volume, in the
// order of Study.Series. Any series that cannot be read is an error.
func ReadSeries(dir string) ([]Series, error) {
	st, err := Scan(dir)
	if err != nil {
		return nil, err
	}
	if len(st.Series) == 0 {
		return nil, fmt.Errorf("dicom: %s: %w: the folder holds no image series", dir, volume.ErrFormat)
	}
	out := make([]Series, 0, len(st.Series))
	for _, s := range st.Series {
		v, m, err := s.Read()
		if err != nil {
			return nil, err
		}
		out = append(out, Series{UID: s.UID, Files: s.Files, Volume: v, Meta: m})
	}
	return out, nil
}
