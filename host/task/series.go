package task

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"amid/viewer/dicom"
)

// chooseSeries reads the headers of the DICOM folder that is image i of c (a study, as
// PACS exports it) and picks its series with the task's selector for channel i (any
// series when the task has none): c.Series[i], with the study's notes and the series'
// resampling warnings. An error names the case, the folder and, when the selector does
// not pick one series, every candidate.
func (t *Task) chooseSeries(c *Case, i int, split string) error {
	st, err := dicom.Scan(c.Images[i])
	if err != nil {
		return fmt.Errorf("%w: %s case %s: %w", ErrData, split, c.ID, err)
	}
	s, notes, err := st.Select(t.selector(i))
	if err != nil {
		return fmt.Errorf("%w: %s case %s, %s: %w", ErrData, split, c.ID, channelName(t, i), err)
	}
	c.Series[i] = s
	for _, n := range notes {
		c.Notes = append(c.Notes, fmt.Sprintf("%s: %s", channelName(t, i), n))
	}
	for _, w := range s.Warnings {
		c.Warnings = append(c.Warnings, fmt.Sprintf("%s, series %q: %s", channelName(t, i), s.Description, w))
	}
	// When the folder holds more than the series, LinkSeries gives it a folder of its own.
	c.shared[i] = len(st.Series) != 1 || len(st.Skipped) > 0 || st.DICOMDIR || !flat(c.Images[i], s.Paths())
	return nil
}

// selector picks the series of image i in a case's DICOM folder.
func (t *Task) selector(i int) dicom.Selector {
	var sel dicom.Selector
	if i < len(t.Data.Series) {
		sel = t.Data.Series[i]
	}
	if t.Dims == 3 && sel.MinSlices == 0 {
		sel.MinSlices = 2 // one image is not a volume (a localizer, a screen capture)
	}
	return sel
}

// channelName names image i of a case: "channel ct" or "image 1".
func channelName(t *Task, i int) string {
	if i < len(t.Channels) {
		return "channel " + t.Channels[i]
	}
	return fmt.Sprintf("image %d", i+1)
}

// flat reports whether every path is directly in dir.
func flat(dir string, paths []string) bool {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	for _, p := range paths {
		if filepath.Dir(p) != real && filepath.Dir(p) != dir {
			return false
		}
	}
	return true
}

// LinkSeries gives each chosen DICOM series that shares its case's folder with other
// files (other series, localizers, reports, a DICOMDIR, subfolders) a folder of its own
// under dir, dir/<case>_<image>/, holding links to its files in slice order, and points
// the case's image at it; every reader of the image (the viewer, the profile, the
// plugins, the DICOM SEG writer) then sees that series alone. A series that is alone in
// its folder keeps it. The folders are made anew each time (a resumed run, a
// reproduction), so they always match the data.
func (d *Dataset) LinkSeries(dir string) error {
	for _, split := range [][]Case{d.Train, d.Test} {
		for ci := range split {
			c := &split[ci]
			for i, s := range c.Series {
				if s == nil || !c.shared[i] {
					continue
				}
				link := filepath.Join(dir, fmt.Sprintf("%s_%d", c.ID, i))
				if err := os.RemoveAll(link); err != nil {
					return err
				}
				if err := os.MkdirAll(link, 0o755); err != nil {
					return err
				}
				for k, p := range s.Paths() {
					abs, err := filepath.Abs(p)
					if err != nil {
						return err
					}
					if err := os.Symlink(abs, filepath.Join(link, fmt.Sprintf("%05d.dcm", k+1))); err != nil {
						return fmt.Errorf("case %s: linking the series' files: %w", c.ID, err)
					}
				}
				c.Images[i] = link
			}
		}
	}
	return nil
}

// SeriesNotes are the notes and warnings of every case, each prefixed with the case id,
// warnings first: what the profile and the audit log record.
func (d *Dataset) SeriesNotes() (warnings, notes []string) {
	for _, split := range [][]Case{d.Train, d.Test} {
		for _, c := range split {
			for _, w := range c.Warnings {
				warnings = append(warnings, "case "+c.ID+": "+w)
			}
			for _, n := range c.Notes {
				notes = append(notes, "case "+c.ID+": "+n)
			}
		}
	}
	return warnings, notes
}

// checkSeries checks data.series: one selector per image pattern at most, each valid.
func (d *Data) checkSeries() error {
	if n, m := len(d.Series), len(d.Train.Images); n > m {
		return fieldErr("data.series", "%d selectors for %d image patterns", n, m)
	}
	for i, s := range d.Series {
		if err := s.Check(); err != nil {
			return fieldErr(fmt.Sprintf("data.series[%d]", i), "%s", strings.TrimPrefix(err.Error(), "dicom: "))
		}
	}
	return nil
}
