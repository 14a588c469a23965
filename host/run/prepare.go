package run

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"amid/host/finite"
	"amid/host/predict"

	"amid/assets/fileio"
	"amid/host/audit"
	"amid/host/deidentify"
	"amid/host/folds"
	"amid/host/ingest"
	"amid/host/profile"
	"amid/viewer/dicom/deid"
)

func (r *Runner) path(name ...string) string {
	return filepath.Join(append([]string{r.dir}, name...)...)
}

// writeJSON writes v as indented JSON to path (atomically and durably) and returns the
// hex sha256 of what it wrote.
func writeJSON(path string, v any) (string, error) {
	b, err := encode(filepath.Base(path), v, true)
	if err != nil {
		return "", err
	}
	if err := fileio.Write(path, b); err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// encode is how the run encodes its records (run.json, the files of its folder, the
// details of its audit entries), indented as a file or on one line: a non-finite float,
// which JSON cannot hold, is refused with the record's and the field's name
// (amid/host/finite).
func encode(name string, v any, indent bool) ([]byte, error) {
	if err := finite.Check(v); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if !indent {
		return json.Marshal(v)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return append(b, '\n'), nil
}

// idsHash is the sha256 of the sorted ids, one per line.
func idsHash(ids []string) string {
	s := append([]string(nil), ids...)
	sort.Strings(s)
	h := sha256.Sum256([]byte(strings.Join(s, "\n")))
	return hex.EncodeToString(h[:])
}

// prepare resolves the data, converts the labels, profiles the data, checks its contract
// and locks the folds (lockFolds).
func (r *Runner) prepare(ctx context.Context) error {
	if q := r.st.FromRequest; q != nil && (r.st.From == nil || r.st.From.SHA256 == "") {
		if err := r.startFrom(ctx, q.Package, q.Corrections); err != nil {
			return err
		}
	}
	taskSum, err := fileio.SHA256(r.st.Task)
	if err != nil {
		return err
	}
	if err := r.record(audit.RoleHost, audit.ActionTaskLoaded, map[string]string{"task.yaml": taskSum}, nil,
		map[string]any{"id": r.task.ID, "kind": r.task.Kind, "dims": r.task.Dims, "metric": r.task.Metric.Name, "budget_s": r.st.Budget.Seconds(), "planner": r.st.Planner}); err != nil {
		return err
	}
	d, err := resolve(r.task, r.st, r.dir)
	if err != nil {
		return err
	}
	if err := r.applyFrom(d); err != nil {
		return err
	}
	r.data = d
	if r.st.Deidentify {
		key, err := os.ReadFile(r.path(deidentify.KeyFile))
		if err != nil {
			return err
		}
		if err := r.record(audit.RoleHost, "data.deidentified", nil, nil,
			map[string]any{"case_ids": "pseudonyms", "key_id": deidentify.KeyID(key), "dicom_profile": deid.Method, "plugins_read": "copies rewritten from voxels and geometry alone"}); err != nil {
			return err
		}
	}
	moved, err := predict.Align(ctx, d, r.path("channels"))
	if err != nil {
		return err
	}
	if moved > 0 {
		r.logf("%d channels were on another grid than their case's first channel and were resampled onto it", moved)
	}
	if err := r.recordSeries(d); err != nil {
		return err
	}
	trainIDs, testIDs := make([]string, len(d.Train)), make([]string, len(d.Test))
	for i, c := range d.Train {
		trainIDs[i] = c.ID
	}
	for i, c := range d.Test {
		testIDs[i] = c.ID
	}
	overlap := map[string]bool{}
	for _, id := range trainIDs {
		overlap[id] = true
	}
	for _, id := range testIDs {
		if overlap[id] {
			return fmt.Errorf("case id %s is in both the training and the test split", id)
		}
	}
	r.logf("%d training and %d test cases in %s", len(d.Train), len(d.Test), d.Root)
	if err := r.record(audit.RoleHost, "data.resolved", nil, map[string]string{"train_ids": idsHash(trainIDs), "test_ids": idsHash(testIDs)},
		map[string]any{"train": len(trainIDs), "test": len(testIDs), "test_labels_read": false}); err != nil {
		return err
	}
	if err := os.MkdirAll(r.path("labels"), 0o755); err != nil {
		return err
	}
	labels, err := ingest.Labels(ctx, r.task, d.Train, r.path("labels"))
	if err != nil {
		return err
	}
	r.labels = labels
	sum, err := writeJSON(r.path("labels.json"), labels)
	if err != nil {
		return err
	}
	if err := r.handOver(ctx); err != nil {
		return err
	}
	fp, contract, err := profile.Profile(ctx, r.task, d, labels)
	if err != nil {
		return err
	}
	fpSum, err := writeJSON(r.path("fingerprint.json"), fp)
	if err != nil {
		return err
	}
	cSum, err := writeJSON(r.path("contract.json"), contract)
	if err != nil {
		return err
	}
	warnings := 0
	for _, p := range contract.Problems {
		if p.Severity == profile.Warning {
			warnings++
			r.logf("data contract warning: %s", p.Message)
		}
	}
	if err := r.record(audit.RoleHost, "data.profiled", map[string]string{"labels.json": sum},
		map[string]string{"fingerprint.json": fpSum, "contract.json": cSum}, map[string]any{"ok": contract.OK(), "problems": len(contract.Problems), "warnings": warnings}); err != nil {
		return err
	}
	if err := contract.Err(); err != nil {
		return err
	}
	asked := r.st.Folds
	if err := r.lockFolds(d.Train, idsHash(trainIDs), fp.Patients); err != nil {
		return err
	}
	return r.stateLimits(d, fp, asked)
}

// load rebuilds the in-memory data of a prepared run and checks that neither the data
// nor the folds changed since.
func (r *Runner) load(ctx context.Context) error {
	d, err := resolve(r.task, r.st, r.dir)
	if err != nil {
		return err
	}
	if err := r.applyFrom(d); err != nil {
		return err
	}
	r.data = d
	if _, err := predict.Align(ctx, d, r.path("channels")); err != nil {
		return err
	}
	if err := fileio.ReadJSON(r.path("labels.json"), &r.labels); err != nil {
		return err
	}
	if err := r.handOver(ctx); err != nil {
		return err
	}
	fl, err := folds.Load(r.path("folds.json"))
	if err != nil {
		return err
	}
	for _, c := range d.Train {
		if _, ok := fl.Assign[c.ID]; !ok {
			return fmt.Errorf("training case %s appeared after the folds were locked", c.ID)
		}
	}
	return ctx.Err()
}

func (r *Runner) folds() (*folds.Folds, error) { return folds.Load(r.path("folds.json")) }
