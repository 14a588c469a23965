package run

import (
	"fmt"
	"path/filepath"
	"time"

	"amid/assets/fileio"
	"amid/host/audit"
	"amid/host/export"
)

// SaveMeasurements keeps a reader's measurements on one test case of a finished run with
// its review: measurements/ID.json beside review.json (the newest replaces the one
// before), recorded in the run's audit log (action review.measured, role user) with the
// file's sha256 and how many measurements of each kind it holds, never a value of the
// image. The run must not be running.
func SaveMeasurements(dir string, m *export.Measurements) error {
	st, err := LoadState(dir)
	if err != nil {
		return err
	}
	if phaseIndex(st.Phase) < phaseIndex(PhaseFinal)+1 {
		return fmt.Errorf("review: run %s has no test predictions yet (phase %s)", st.ID, st.Phase)
	}
	var preds map[string][]string
	if err := fileio.ReadJSON(filepath.Join(dir, "final", "predictions.json"), &preds); err != nil {
		return fmt.Errorf("review: %w", err)
	}
	if _, ok := preds[m.Case]; !ok {
		return fmt.Errorf("review: case %s is not a test case of run %s", m.Case, st.ID)
	}
	if m.Time.IsZero() {
		m.Time = time.Now().UTC()
	}
	lg, err := audit.Open(filepath.Join(dir, "audit.db"))
	if err != nil {
		return fmt.Errorf("review: %w", err)
	}
	defer lg.Close()
	rel, sum, err := export.SaveMeasurements(dir, m)
	if err != nil {
		return err
	}
	details := map[string]any{"case": m.Case, "reviewer": m.Reviewer, "count": len(m.Measurements), "kinds": m.Counts()}
	_, err = lg.Append(audit.Entry{Role: audit.RoleUser, Action: export.ActionReviewMeasured,
		Outputs: map[string]string{filepath.ToSlash(rel): sum}, Details: mustJSON(details)})
	if err != nil {
		return fmt.Errorf("review: case %s's measurements: %w", m.Case, err)
	}
	return nil
}

// Measurements are the measurements kept with the review of case id of the run in dir:
// nil when none were saved; a file that no longer reads is an error in one sentence.
func Measurements(dir, id string) (*export.Measurements, error) {
	return export.ReadMeasurements(dir, id)
}
