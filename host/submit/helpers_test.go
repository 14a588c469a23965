package submit

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"amid/host/grade"
	"amid/host/ingest"
	"amid/host/task"
	"amid/plugins/taskspec"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

func writeFile(t *testing.T, path, s string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeJSON(t *testing.T, path string, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, path, string(b))
}

// grid is the geometry of a test image.
type grid struct {
	dims      [4]int
	spacing   [3]float64
	origin    [3]float64
	direction [9]float64
}

// writeVol writes data on grid g to path.
func writeVol(t *testing.T, path string, g grid, data any) {
	t.Helper()
	if g.dims[3] == 0 {
		g.dims[3] = 1
	}
	if g.direction == ([9]float64{}) {
		g.direction = volume.Identity
	}
	if g.spacing == ([3]float64{}) {
		g.spacing = [3]float64{1, 1, 1}
	}
	v := &volume.Volume{Dims: g.dims, Spacing: g.spacing, Origin: g.origin, Direction: g.direction, Data: data}
	if err := v.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := imageio.Write(path, v); err != nil {
		t.Fatal(err)
	}
}

func parseTask(t *testing.T, y string) *task.Task {
	t.Helper()
	tk, err := task.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// writeAnn writes a canonical annotation prediction.
func writeAnn(t *testing.T, path string, a *taskspec.Annotation) string {
	t.Helper()
	b, err := a.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, path, string(b))
}

// gradePerfect writes the submission, grades it against the answers and checks that it
// is valid with every named metric at its perfect value.
func gradePerfect(t *testing.T, challenge string, tk *task.Task, test []task.Case, preds []Prediction, ans string, want map[string]float64) *grade.Result {
	t.Helper()
	sub := filepath.Join(t.TempDir(), "submission")
	if err := Write(context.Background(), tk, test, preds, sub); err != nil {
		t.Fatal(err)
	}
	r, err := grade.Grade(context.Background(), challenge, sub, ans, grade.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Valid {
		t.Fatalf("%s: invalid submission: %v", challenge, r.Errors)
	}
	for k, v := range want {
		got := float64(r.Metrics[k])
		if !(got == v || math.Abs(got-v) <= 1e-9) {
			t.Errorf("%s: %s = %v, want %v", challenge, k, got, v)
		}
	}
	return r
}

// ingestAll runs ingest.Labels and returns predictions that are the canonical labels.
func ingestAll(t *testing.T, tk *task.Task, cases []task.Case) []Prediction {
	t.Helper()
	labels, err := ingest.Labels(context.Background(), tk, cases, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	preds := make([]Prediction, 0, len(labels))
	for _, c := range cases {
		preds = append(preds, Prediction{CaseID: c.ID, File: labels[c.ID]})
	}
	return preds
}

// answersCSV writes test_labels.csv with header and one row per id in sorted order.
func answersCSV(t *testing.T, dir, header string, rows map[string]string) {
	t.Helper()
	ids := make([]string, 0, len(rows))
	for id := range rows {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var b strings.Builder
	b.WriteString(header + "\n")
	for _, id := range ids {
		b.WriteString(id + "," + rows[id] + "\n")
	}
	writeFile(t, filepath.Join(dir, grade.AnswersCSV), b.String())
}
