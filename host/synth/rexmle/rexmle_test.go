package rexmle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"amid/assets"
	"amid/host/grade"
	"amid/host/task"
	"amid/viewer/imageio"
)

// realSize makes BenchmarkGenerate write real-size images.
var realSize = flag.Bool("real", false, "BenchmarkGenerate: real-size images")

// cases is the dataset size of the tests: ceil(0.2·6) = 2 test cases, 4 training cases.
const (
	cases           = 6
	wantTest        = 2
	wantTrain       = cases - wantTest
	seed      int64 = 7
)

func loadTask(t *testing.T, id string) *task.Task {
	t.Helper()
	def, err := assets.RexMLETask(id)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := task.Parse(def)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// Every challenge: the generated public folder resolves under the built-in task with the
// split's counts and a non-empty label per training case; the sample submission follows
// the task's contract; and a perfect submission assembled from the private answers
// through the task's submission contract is graded valid by the challenge's grader, with
// the task's metric as primary.
func TestGenerateAll(t *testing.T) {
	if got := IDs(); !slices.Equal(got, grade.ChallengeIDs) {
		t.Fatalf("IDs() = %v, want every challenge %v", got, grade.ChallengeIDs)
	}
	for _, id := range IDs() {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			out := t.TempDir()
			if err := Generate(id, out, Options{Cases: cases, Seed: seed}); err != nil {
				t.Fatal(err)
			}
			tk := loadTask(t, id)
			pub := filepath.Join(out, "public")
			ds, err := tk.Resolve(pub)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds.Train) != wantTrain || len(ds.Test) != wantTest {
				t.Fatalf("%d train and %d test cases, want %d and %d", len(ds.Train), len(ds.Test), wantTrain, wantTest)
			}
			for _, c := range ds.Train {
				checkLabel(t, tk, c)
				for _, img := range c.Images {
					if _, err := imageio.Read(img); err != nil {
						t.Errorf("case %s: %v", c.ID, err)
					}
				}
			}
			for _, c := range ds.Test {
				for _, img := range c.Images {
					if _, err := imageio.Read(img); err != nil {
						t.Errorf("test case %s: %v", c.ID, err)
					}
				}
			}
			for _, f := range []string{"description.md", "sample_submission.csv"} {
				if _, err := os.Stat(filepath.Join(pub, f)); err != nil {
					t.Error(err)
				}
			}
			checkSample(t, tk, pub, ds)
			sub := perfectSubmission(t, tk, filepath.Join(out, "private"))
			res, err := grade.Grade(context.Background(), id, sub, filepath.Join(out, "private"), grade.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Valid {
				t.Fatalf("perfect submission invalid: %v", res.Errors)
			}
			if res.Primary.Name != tk.Metric.Name {
				t.Errorf("grader's primary metric %q, the task says %q", res.Primary.Name, tk.Metric.Name)
			}
			// Where a perfect prediction has a known score, it must reach it: overlap
			// metrics 1 (every generated label is non-empty; TopCoW's Dice adds 1e-7 to its
			// denominator), balanced accuracy 1.
			if want, ok := perfectScore[id]; ok && math.Abs(float64(res.Primary.Value)-want) > 1e-6 {
				t.Errorf("perfect submission scores %s = %v, want %v", res.Primary.Name, float64(res.Primary.Value), want)
			}
			t.Logf("perfect: %s = %.4g", res.Primary.Name, float64(res.Primary.Value))
		})
	}
}

// perfectScore is the primary metric of a perfect submission where it does not depend on
// which classes the test cases hold (PUMA and DENTEX count absent classes as 0, LDCT's
// correlations need distinct scores).
var perfectScore = map[string]float64{
	"isles22": 1, "neurips-cellseg": 1, "panther-task1": 1, "panther-task2": 1, "seg_a": 1,
	"topbrain-track1": 1, "topbrain-track2": 1, "topcow-track1-task1": 1, "topcow-track2-task1": 1,
	"topcow-track1-task2": 1, "topcow-track2-task2": 1, "topcow-track1-task3": 1, "topcow-track2-task3": 1,
	"usenhance": 1,
}

// checkLabel checks that a training case's label holds something: an image label a
// non-zero voxel, a GeoJSON a feature, a ROI its size line, an edge file both groups.
func checkLabel(t *testing.T, tk *task.Task, c task.Case) {
	t.Helper()
	switch tk.Data.Train.Label.Format {
	case task.LabelImage:
		v, err := imageio.Read(c.Label)
		if err != nil {
			t.Fatalf("case %s: %v", c.ID, err)
		}
		if st := v.Stats(); st.Max <= 0 {
			t.Errorf("case %s: label %s is empty", c.ID, c.Label)
		}
	case task.LabelPUMATissue, task.LabelPUMANuclei:
		var g geoCollection
		readJSON(t, c.Label, &g)
		if g.Type != "FeatureCollection" || len(g.Features) == 0 {
			t.Errorf("case %s: %s has no feature", c.ID, c.Label)
		}
		prefix := map[string]string{task.LabelPUMATissue: "tissue_", task.LabelPUMANuclei: "nuclei_"}[tk.Data.Train.Label.Format]
		for _, f := range g.Features {
			ring := f.Geometry.Coordinates[0]
			if !strings.HasPrefix(f.Properties.Classification.Name, prefix) || len(ring) < 4 || ring[0] != ring[len(ring)-1] {
				t.Errorf("case %s: feature %+v is not a closed %s* polygon", c.ID, f, prefix)
				break
			}
		}
	case task.LabelTopCoWROI:
		b, err := os.ReadFile(c.Label)
		if err != nil || !strings.Contains(string(b), "\nSize (Voxels): ") || !strings.Contains(string(b), "\nLocation (Voxels): ") {
			t.Errorf("case %s: ROI %q (%v)", c.ID, b, err)
		}
	case task.LabelTopCoWEdges:
		var e map[string]map[string]int
		b, err := os.ReadFile(c.Label)
		if err == nil {
			err = yaml.Unmarshal(b, &e)
		}
		if err != nil || len(e["anterior"]) != 4 || len(e["posterior"]) != 4 {
			t.Errorf("case %s: edges %v (%v)", c.ID, e, err)
		}
	case task.LabelDENTEX:
		var f cocoFile
		readJSON(t, c.Label, &f)
		if len(f.Images) != wantTrain || len(f.Annotations) < wantTrain || len(f.Categories3) != 4 {
			t.Errorf("%s: %d images, %d annotations, %d diagnoses", c.Label, len(f.Images), len(f.Annotations), len(f.Categories3))
		}
	case task.LabelCSV:
		tb, err := grade.ReadTable(c.Label)
		if err != nil {
			t.Fatal(err)
		}
		if len(tb.Rows) != wantTrain || !tb.Has(tk.Data.Train.Label.IDColumn) || !tb.Has(tk.Data.Train.Label.ValueColumn) {
			t.Errorf("%s: header %v, %d rows", c.Label, tb.Header, len(tb.Rows))
		}
	default:
		t.Fatalf("label format %s not checked", tk.Data.Train.Label.Format)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// checkSample checks sample_submission.csv: the task's columns, one row per test case.
func checkSample(t *testing.T, tk *task.Task, pub string, ds *task.Dataset) {
	t.Helper()
	tb, err := grade.ReadTable(filepath.Join(pub, "sample_submission.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tb.Header, tk.Submission.Columns) {
		t.Errorf("sample submission columns %v, the task's %v", tb.Header, tk.Submission.Columns)
	}
	ids, _ := tb.Column(tk.Submission.IDColumn)
	var want []string
	for _, c := range ds.Test {
		want = append(want, c.ID)
	}
	if !slices.Equal(ids, want) {
		t.Errorf("sample submission ids %v, test cases %v", ids, want)
	}
}

// perfectSubmission writes a submission folder whose predictions are the private answers,
// through the task's contract: its columns, path pattern, constant columns and file format.
func perfectSubmission(t *testing.T, tk *task.Task, priv string) string {
	t.Helper()
	at, err := grade.ReadTable(filepath.Join(priv, grade.AnswersCSV))
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := at.Column(at.Header[0])
	var gts []string
	for _, col := range []string{"label_path", "mask_path", "ground_truth_json", "ground_truth_path", "quality_score"} {
		if c, ok := at.Column(col); ok {
			gts = c
			break
		}
	}
	if len(ids) != wantTest || len(gts) != wantTest {
		t.Fatalf("test_labels.csv: header %v, %d rows", at.Header, len(ids))
	}
	sub := t.TempDir()
	s := tk.Submission
	var b strings.Builder
	b.WriteString(strings.Join(s.Columns, ",") + "\n")
	for r, id := range ids {
		row := make([]string, len(s.Columns))
		for j, c := range s.Columns {
			switch c {
			case s.IDColumn:
				row[j] = id
			case s.ValueColumn:
				row[j] = gts[r]
			case s.FileColumn:
				rel := strings.ReplaceAll(s.Path, "{id}", id)
				writePrediction(t, s.Format, filepath.Join(priv, filepath.FromSlash(gts[r])), filepath.Join(sub, filepath.FromSlash(rel)))
				row[j] = rel
			default:
				row[j] = s.Const[c]
			}
		}
		b.WriteString(strings.Join(row, ",") + "\n")
	}
	if err := os.WriteFile(filepath.Join(sub, grade.SubmissionCSV), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return sub
}

// writePrediction writes the answer file src as the prediction dst in the submission's
// format: edge YAML as JSON, a DENTEX COCO file as a detection list, anything else copied
// unchanged (and then the answer must already have the submission's file type).
func writePrediction(t *testing.T, format, src, dst string) {
	t.Helper()
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	switch format {
	case "topcow-edges-json":
		var e map[string]map[string]int
		if err := yaml.Unmarshal(raw, &e); err != nil {
			t.Fatal(err)
		}
		out, err = json.Marshal(e)
	case "dentex-json":
		var f cocoFile
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatal(err)
		}
		stem := strings.TrimSuffix(f.Images[0].FileName, ".png")
		var dets []map[string]any
		for _, a := range f.Annotations {
			dets = append(dets, map[string]any{"image_id": stem, "bbox": a.BBox, "category_id_1": a.Quadrant,
				"category_id_2": a.Enumeration, "category_id_3": a.Diagnosis, "score": 1.0})
		}
		out, err = json.Marshal(dets)
	default:
		if task.Suffix(src) != task.Suffix(dst) {
			t.Fatalf("answer %s is not a %s file like the submission's %s", src, task.Suffix(dst), dst)
		}
		out = raw
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Two runs with one seed write the same bytes; another seed changes the images.
func TestDeterministic(t *testing.T) {
	for _, id := range IDs() {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			a, b, c := t.TempDir(), t.TempDir(), t.TempDir()
			for dir, s := range map[string]int64{a: 3, b: 3, c: 4} {
				if err := Generate(id, dir, Options{Cases: MinCases, Seed: s}); err != nil {
					t.Fatal(err)
				}
			}
			fa, fb, fc := tree(t, a), tree(t, b), tree(t, c)
			if len(fa) == 0 || !mapsEqual(fa, fb) {
				t.Fatalf("two runs with seed 3 differ (%d and %d files)", len(fa), len(fb))
			}
			if mapsEqual(fa, fc) {
				t.Errorf("seeds 3 and 4 write the same files")
			}
		})
	}
}

func tree(t *testing.T, root string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		m[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mapsEqual(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}

func TestGenerateErrors(t *testing.T) {
	if err := Generate("ravir", t.TempDir(), Options{}); !errors.Is(err, ErrUnknown) {
		t.Errorf("unknown challenge: %v", err)
	}
	for _, n := range []int{1, -3, MaxCases + 1} {
		if err := Generate("ldct-iqa", t.TempDir(), Options{Cases: n}); !errors.Is(err, ErrOptions) {
			t.Errorf("%d cases: %v", n, err)
		}
	}
	out := t.TempDir()
	if err := Generate("ldct-iqa", out, Options{Cases: 2}); err != nil {
		t.Fatal(err)
	}
	if err := Generate("ldct-iqa", out, Options{Cases: 2}); !errors.Is(err, ErrNotEmpty) {
		t.Errorf("second run into the same folder: %v", err)
	}
}

// BenchmarkGenerate times the generation of two cases of each challenge at tiny size and,
// with -real, at real size (seconds to minutes and up to about 1 GB of memory per 3D
// challenge), and reports the megabytes written per case.
func BenchmarkGenerate(b *testing.B) {
	for _, id := range IDs() {
		b.Run(id, func(b *testing.B) {
			var size int64
			for b.Loop() {
				out := b.TempDir()
				if err := Generate(id, out, Options{Cases: MinCases, Seed: 1, Real: *realSize}); err != nil {
					b.Fatal(err)
				}
				size = 0
				filepath.WalkDir(out, func(_ string, e fs.DirEntry, err error) error {
					if err == nil && !e.IsDir() {
						if fi, err := e.Info(); err == nil {
							size += fi.Size()
						}
					}
					return nil
				})
			}
			b.ReportMetric(float64(size)/MinCases/1e6, "MB/case")
		})
	}
}
