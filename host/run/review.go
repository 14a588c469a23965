package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"amid/assets/fileio"
	"amid/host/audit"
	"amid/host/export"
	"amid/host/store"
	"amid/host/task"
)

// Review decisions.
const (
	Approved = export.Approved
	Rejected = export.Rejected
)

// ErrReview means the review does not allow an export.
var ErrReview = errors.New("review incomplete")

// reviewFile holds a run's review decisions, the newest per case last.
const reviewFile = "review.json"

// Decisions returns a run's review decisions, one per case (the newest).
func Decisions(dir string) ([]export.Decision, error) {
	return export.ReadDecisions(filepath.Join(dir, reviewFile))
}

// Review records a user's decision on one test case of a finished run: it is appended to
// review.json and to the run's audit log (action review.decision, role user). A correction
// (export.SaveCorrection first) is recorded with its file's sha256 and the voxels each
// label took or lost against the prediction. The run must not be running.
func Review(dir string, d export.Decision) error {
	st, err := LoadState(dir)
	if err != nil {
		return err
	}
	if err := d.Check(); err != nil {
		return err
	}
	if phaseIndex(st.Phase) < phaseIndex(PhaseFinal)+1 {
		return fmt.Errorf("review: run %s has no test predictions yet (phase %s)", st.ID, st.Phase)
	}
	var preds map[string][]string
	if err := fileio.ReadJSON(filepath.Join(dir, "final", "predictions.json"), &preds); err != nil {
		return fmt.Errorf("review: %w", err)
	}
	files, ok := preds[d.Case]
	if !ok {
		return fmt.Errorf("review: case %s is not a test case of run %s", d.Case, st.ID)
	}
	outs := map[string]string{}
	details := map[string]any{"case": d.Case, "decision": d.Decision, "reviewer": d.Reviewer, "note": d.Note}
	if d.Decision == export.Corrected {
		if len(files) == 0 {
			return fmt.Errorf("review: case %s has no prediction to correct", d.Case)
		}
		rec, err := recordCorrection(dir, d, files[0], st)
		if err != nil {
			return err
		}
		outs["correction"] = rec.SHA256
		details["correction"], details["changes"] = d.Correction, rec.Counts()
	}
	if d.Time.IsZero() {
		d.Time = time.Now().UTC()
	}
	lg, err := audit.Open(filepath.Join(dir, "audit.db"))
	if err != nil {
		return fmt.Errorf("review: %w", err)
	}
	defer lg.Close()
	sum, err := export.AppendDecision(filepath.Join(dir, reviewFile), d)
	if err != nil {
		return err
	}
	outs[reviewFile] = sum
	_, err = lg.Append(audit.Entry{Role: audit.RoleUser, Action: audit.ActionReviewDecision, Outputs: outs, Details: mustJSON(details)})
	return err
}

// recordCorrection records decision d's correction of the prediction pred: a label map, or
// a detection's annotation (corrections/ID.json), read against the run's task.
func recordCorrection(dir string, d export.Decision, pred string, st *State) (export.CorrectionRecord, error) {
	if !export.IsAnnotationCorrection(d) {
		return export.RecordCorrection(dir, d, pred)
	}
	t, err := task.Load(st.Task)
	if err != nil {
		return export.CorrectionRecord{}, fmt.Errorf("review: run %s's task: %w", st.ID, err)
	}
	return export.RecordAnnotationCorrection(dir, d, pred, t.Spec())
}

func mustJSON(v any) []byte {
	b, err := jsonOf(v)
	if err != nil {
		panic(err) // maps of strings always encode
	}
	return b
}

// ExportTo writes the run's model package, with its review decisions, into dest (a folder
// that must not exist) and its zip beside it, and returns the zip's path. It refuses while
// a test case has no decision, unless reason is given: the reason is then recorded in the
// audit log with the cases left unreviewed.
func ExportTo(ctx context.Context, dir, dest, reason string, env Env) (string, error) {
	r, err := Open(dir, nil, env)
	if err != nil {
		return "", err
	}
	if r.st.Phase != PhaseDone {
		return "", fmt.Errorf("export: run %s is in phase %s; it must finish first", r.st.ID, r.st.Phase)
	}
	if _, err := os.Stat(dest); err == nil {
		return "", fmt.Errorf("export: %s exists; choose a new folder", dest)
	}
	var preds map[string][]string
	if err := fileio.ReadJSON(r.path("final", "predictions.json"), &preds); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	ds, err := Decisions(dir)
	if err != nil {
		return "", err
	}
	done := map[string]bool{}
	for _, d := range ds {
		done[d.Case] = true
	}
	var missing []string
	for id := range preds {
		if !done[id] {
			missing = append(missing, id)
		}
	}
	if r.audit, err = audit.Open(r.path("audit.db")); err != nil {
		return "", err
	}
	defer r.audit.Close()
	if r.store, err = store.Open(r.path("run.db"), store.DefaultTimeout); err != nil {
		return "", err
	}
	defer r.store.Close()
	if len(missing) > 0 {
		if reason == "" {
			return "", fmt.Errorf("%w: %d of %d test cases have no decision; review them or give a reason", ErrReview, len(missing), len(preds))
		}
		if err := r.record(audit.RoleUser, "export.unreviewed", nil, nil, map[string]any{"reason": reason, "unreviewed": len(missing)}); err != nil {
			return "", err
		}
	}
	if err := r.load(ctx); err != nil {
		return "", err
	}
	r.began = r.now()
	saved := r.st.Package
	if err := r.exportInto(ctx, dest); err != nil {
		return "", err
	}
	r.st.Package = saved
	zip := dest + ".zip"
	return zip, export.Zip(dest, zip)
}
