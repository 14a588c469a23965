package cli

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"amid/host/bench"
	hostrun "amid/host/run"
	"amid/host/task"
	"amid/viewer/fileio"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// A degenerate dataset of the sweep (issue 32): too small or too uniform to learn from.
type degenerate struct {
	name  string
	cases int // generated, train and test (the generators keep 1 test case of 2–4)
	// spoil makes the dataset degenerate; nil: as generated.
	spoil func(t *testing.T, tk *task.Task, ds *task.Dataset)
	// kinds are the task kinds the dataset applies to; nil: every kind.
	kinds []string
}

var degenerates = []degenerate{
	// The fewest cases a generator makes: 1 training case (the segmentation demo keeps
	// 2), with which validation is impossible, and prepare says so in one sentence.
	{name: "fewest cases", cases: 2},
	// 2 training cases: 2 folds of one case each (a correlation of one case is undefined).
	{name: "two training cases", cases: 3},
	// Every training case holds the first's labels: one class, the same boxes, one score.
	{name: "one label for all", cases: 4, spoil: sameLabels},
	// No training case holds a label: empty masks, no boxes, black targets (a class or
	// a score cannot be empty: classification and IQA are left out).
	{name: "empty labels", cases: 4, spoil: emptyLabels, kinds: []string{"segmentation", "detection", "enhancement"}},
	// Every training image is the first training case's (a test image the same as a
	// training one is refused at prepare: the splits overlap).
	{name: "one training image for all", cases: 4, spoil: sameImages},
}

// degenerateSweep runs each degenerate dataset of each kind with a budget of seconds: each
// ends in a package that `amid verify` accepts, or stops at prepare with one sentence that
// says what is missing. Before issue 32's fixes, classification and detection with 2
// training cases failed every lane (the stratified split put both patients in fold 0,
// which then had no training case), and LDCT-IQA's 1-case folds ended in "json:
// unsupported value: NaN". The sweep's table is logged (kind, dataset, outcome, seconds).
func degenerateSweep(t *testing.T) {
	var table []string
	for _, kind := range bench.PlainKinds() {
		for _, d := range degenerates {
			if d.kinds != nil && !slices.Contains(d.kinds, kind) {
				continue
			}
			t.Run(kind+"/"+d.name, func(t *testing.T) {
				path, err := bench.Plain(context.Background(), kind, t.TempDir(), d.cases, 1)
				if err != nil {
					t.Fatal(err)
				}
				tk, err := task.Load(path)
				if err != nil {
					t.Fatal(err)
				}
				ds, err := tk.Resolve(filepath.Dir(path))
				if err != nil {
					t.Fatal(err)
				}
				if d.spoil != nil {
					d.spoil(t, tk, ds)
				}
				out := filepath.Join(t.TempDir(), "run")
				began := time.Now()
				o, e, code := run(t, "run", path, "--out", out, "--budget", "6s", "--seed", "1")
				took := time.Since(began).Round(100 * time.Millisecond)
				saneLog(t, o+e)
				lines := strings.Split(strings.TrimSpace(e), "\n")
				last := lines[len(lines)-1] // the log goes to stderr too; the error is its last line
				if refused := d.refused(kind, len(ds.Train)); refused != "" {
					// One sentence naming what is missing, and no package.
					if code == 0 || !strings.HasPrefix(last, "amid: prepare: ") || !strings.Contains(last, refused) {
						t.Errorf("%d training case(s): exit %d, last line %q; want one sentence at prepare that says %q", len(ds.Train), code, last, refused)
					}
					table = append(table, fmt.Sprintf("| %s | %s | %d | refused at prepare: %s | %v |", kind, d.name, len(ds.Train), strings.TrimPrefix(last, "amid: "), took))
					return
				}
				if code != 0 {
					t.Fatalf("amid run: exit %d\n%s\n%s", code, o, e)
				}
				if _, e, code := run(t, "verify", filepath.Join(out, "package")); code != 0 {
					t.Fatalf("amid verify: exit %d: %s", code, e)
				}
				st, err := hostrun.LoadState(out)
				if err != nil {
					t.Fatal(err)
				}
				var means []string
				for _, l := range st.Lanes {
					means = append(means, l.ID+" "+l.MeanText())
				}
				table = append(table, fmt.Sprintf("| %s | %s | %d | package; chosen %s; validation %s | %v |", kind, d.name, len(ds.Train), st.Chosen, strings.Join(means, ", "), took))
			})
		}
	}
	t.Logf("\n| kind | dataset | training cases | outcome | took |\n|---|---|---|---|---|\n%s", strings.Join(table, "\n"))
}

// refused is what prepare's one sentence says when the dataset of kind with train
// training cases is refused; "" when it runs.
func (d degenerate) refused(kind string, train int) string {
	switch {
	case train < 2:
		return "validation needs 2 or more"
	case kind == "detection" && d.name == "empty labels":
		return "lists no boxes, and the detection plugin trains on cases that hold one"
	}
	return ""
}

// sameLabels gives every training case the first's label: its label file, or its value
// in a label table.
func sameLabels(t *testing.T, tk *task.Task, ds *task.Dataset) {
	t.Helper()
	first := ds.Train[0]
	if task.Table(tk.Data.Train.Label.Format) {
		f, err := os.Open(first.Label)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil || len(rows) < 2 {
			t.Fatalf("label table %s: %v", first.Label, err)
		}
		col := -1
		for i, h := range rows[0] {
			if h == tk.Data.Train.Label.ValueColumn {
				col = i
			}
		}
		if col < 0 {
			t.Fatalf("label table %s has no column %s", first.Label, tk.Data.Train.Label.ValueColumn)
		}
		for _, r := range rows[2:] {
			r[col] = rows[1][col]
		}
		var b strings.Builder
		w := csv.NewWriter(&b)
		if err := w.WriteAll(rows); err != nil {
			t.Fatal(err)
		}
		if err := fileio.Write(first.Label, []byte(b.String())); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, c := range ds.Train[1:] {
		copyFile(t, first.Label, c.Label)
	}
}

// emptyLabels empties every training case's label: an image label all zeros (on its
// grid, in its format), an annotation without boxes.
func emptyLabels(t *testing.T, tk *task.Task, ds *task.Dataset) {
	t.Helper()
	for _, c := range ds.Train {
		switch tk.Data.Train.Label.Format {
		case task.LabelAnnotation:
			if err := fileio.Write(c.Label, []byte("{}\n")); err != nil {
				t.Fatal(err)
			}
		default:
			v, err := imageio.Read(c.Label)
			if err != nil {
				t.Fatal(err)
			}
			v.Data = volume.MakeData(v.DType(), v.Len())
			if err := imageio.Write(c.Label, v); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// sameImages makes every training case's images the first's.
func sameImages(t *testing.T, _ *task.Task, ds *task.Dataset) {
	t.Helper()
	first := ds.Train[0]
	for _, c := range ds.Train[1:] {
		for i, img := range c.Images {
			copyFile(t, first.Images[i], img)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := fileio.Write(to, b); err != nil {
		t.Fatal(err)
	}
}
