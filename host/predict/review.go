package predict

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"amid/host/audit"
	"amid/host/export"
	"amid/viewer/fileio"
)

// FileReview holds the decisions a reader made on a predict run's cases (every decision
// in the order made: export.ReadDecisions gives the newest per case).
const FileReview = "review.json"

// Review records a reader's decision on one predicted case of the predict run in out
// (Apply's output folder): it is appended to review.json and to the run's own audit log
// (action review.decision, role user), whose export audit.jsonl is written again. As
// Apply's entries, the audit entry names the case by its place in results.json and its
// prediction files by sha256, never by a name or identifier; the decision, reviewer and
// note are the reader's own words.
func Review(out string, d export.Decision) error {
	if err := d.Check(); err != nil {
		return err
	}
	var res Result
	if err := fileio.ReadJSON(filepath.Join(out, FileResults), &res); err != nil {
		return fmt.Errorf("review: %s is not a finished predict run: %w", out, err)
	}
	k := -1
	for i, c := range res.Cases {
		if c.ID == d.Case {
			k = i
		}
	}
	if k < 0 || len(res.Cases[k].Predictions) == 0 {
		return fmt.Errorf("review: case %s has no prediction in %s", d.Case, out)
	}
	c := res.Cases[k]
	in := map[string]string{}
	for i, p := range c.Predictions {
		s, err := fileio.PathSHA256(filepath.Join(out, p))
		if err != nil {
			return fmt.Errorf("review: case %s: %w", d.Case, err)
		}
		in[fmt.Sprintf("prediction%d", i+1)] = s
	}
	if c.SEG != "" {
		s, err := fileio.PathSHA256(filepath.Join(out, c.SEG))
		if err != nil {
			return fmt.Errorf("review: case %s: %w", d.Case, err)
		}
		in["seg"] = s
	}
	if d.Time.IsZero() {
		d.Time = time.Now().UTC()
	}
	log, err := audit.Open(filepath.Join(out, fileAuditDB))
	if err != nil {
		return fmt.Errorf("review: %w", err)
	}
	defer log.Close()
	sum, err := export.AppendDecision(filepath.Join(out, FileReview), d)
	if err != nil {
		return fmt.Errorf("review: %w", err)
	}
	details, err := json.Marshal(map[string]any{"case": k + 1, "decision": d.Decision, "reviewer": d.Reviewer, "note": d.Note})
	if err != nil {
		return err
	}
	if _, err := log.Append(audit.Entry{Role: audit.RoleUser, Action: audit.ActionReviewDecision, Inputs: in,
		Outputs: map[string]string{FileReview: sum}, Details: details}); err != nil {
		return fmt.Errorf("review: %w", err)
	}
	return exportLog(log, out)
}

// Decisions are the newest review decision on each case of the predict run in out.
func Decisions(out string) ([]export.Decision, error) {
	return export.ReadDecisions(filepath.Join(out, FileReview))
}
