package run

import (
	"amid/host/audit"
	"amid/host/task"
)

// seriesChoice is what the audit log records of a case's DICOM series: no UIDs, no paths.
type seriesChoice struct {
	Case        string     `json:"case"`
	Image       int        `json:"image"`
	Description string     `json:"description"`
	Modality    string     `json:"modality"`
	Orientation string     `json:"orientation,omitempty"`
	Slices      int        `json:"slices"`
	Spacing     [3]float64 `json:"spacing"`
}

// recordSeries writes the DICOM series chosen for each case whose image is a DICOM folder
// into the audit log, with the resampling warnings and the notes of what was passed over
// (amid/host/task): the series a model was trained and tested on is part of the record.
func (r *Runner) recordSeries(d *task.Dataset) error {
	var chosen []seriesChoice
	for _, split := range [][]task.Case{d.Train, d.Test} {
		for _, c := range split {
			for i, s := range c.Series {
				if s != nil {
					chosen = append(chosen, seriesChoice{Case: c.ID, Image: i, Description: s.Description, Modality: s.Modality,
						Orientation: s.Orientation, Slices: s.Slices, Spacing: s.Spacing})
				}
			}
		}
	}
	if len(chosen) == 0 {
		return nil
	}
	warnings, notes := d.SeriesNotes()
	for _, w := range warnings {
		r.logf("DICOM series resampled: %s", w)
	}
	r.logf("%d DICOM series chosen in study folders; %d warnings, %d objects passed over (contract.json lists them)", len(chosen), len(warnings), len(notes))
	return r.record(audit.RoleHost, "data.series", nil, nil, map[string]any{"series": chosen, "warnings": warnings, "notes": notes})
}
