package export

import (
	"bytes"
	"encoding/csv"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"amid/viewer/measure"
	"amid/viewer/volume"
)

// someMeasurements are a length and an ellipse on an 8×8×3 grid of 0.7 × 0.7 × 3 mm voxels
// (the anisotropic CT spacing), computed by a measure.Set.
func someMeasurements(t *testing.T, id string) *Measurements {
	t.Helper()
	vol, err := volume.New(volume.Int16, [4]int{8, 8, 3, 1})
	if err != nil {
		t.Fatal(err)
	}
	vol.Spacing = [3]float64{0.7, 0.7, 3}
	set, err := measure.NewSet(vol, measure.UnitHU)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []measure.Measurement{
		{Kind: measure.Length, Axis: 2, Slice: 1, Label: "lesion 1", Points: [][3]float64{{1, 1, 0}, {4, 5, 0}}},
		{Kind: measure.Ellipse, Axis: 0, Slice: 2, Points: [][3]float64{{0, 1, 0.5}, {0, 6, 2.5}}},
	} {
		if _, err := set.Add(m); err != nil {
			t.Fatal(err)
		}
	}
	// A whole second keeps the time equal through JSON.
	return &Measurements{Case: id, Reviewer: "dr", Time: time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC), Unit: measure.UnitHU, Measurements: set.List()}
}

// TestMeasurementsSurviveSaving: what SaveMeasurements wrote reads back equal, replaces
// the case's earlier record, and a case with none reads as nil.
func TestMeasurementsSurviveSaving(t *testing.T) {
	dir := t.TempDir()
	m := someMeasurements(t, "case_001")
	rel, sum, err := SaveMeasurements(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	if rel != filepath.Join("measurements", "case_001.json") || len(sum) != 64 {
		t.Fatalf("saved as %s with sha256 %q", rel, sum)
	}
	got, err := ReadMeasurements(dir, "case_001")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("read back\n%+v\nwant\n%+v", got, m)
	}
	m.Measurements = m.Measurements[:1]
	if _, _, err := SaveMeasurements(dir, m); err != nil {
		t.Fatal(err)
	}
	if got, _ := ReadMeasurements(dir, "case_001"); len(got.Measurements) != 1 {
		t.Fatalf("%d measurements after saving one", len(got.Measurements))
	}
	if got, err := ReadMeasurements(dir, "case_002"); got != nil || err != nil {
		t.Fatalf("a case with no measurements: %v, %v", got, err)
	}
	if c := m.Counts(); !reflect.DeepEqual(c, map[string]int{"length": 1}) {
		t.Errorf("counts %v", c)
	}
}

// TestMeasurementsUnreadable: a stored file that no longer parses is an error in one
// sentence naming the file; other cases still read.
func TestMeasurementsUnreadable(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := SaveMeasurements(dir, someMeasurements(t, "good")); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"bad1": `{"case":"bad1","measurements":[{"kind":"length"`,
		"bad2": `{"case":"bad2","measurements":[{"kind":"spiral","axis":2,"points":[[1,1,1]]}]}`,
		"bad3": `{"case":"other","measurements":[]}`,
	} {
		os.WriteFile(filepath.Join(dir, MeasurementsDir, name+".json"), []byte(body), 0o644)
		_, err := ReadMeasurements(dir, name)
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), name+".json") {
			t.Errorf("%s: %v, want one line naming the file", name, err)
		}
	}
	if m, err := ReadMeasurements(dir, "good"); err != nil || len(m.Measurements) != 2 {
		t.Errorf("the good case: %v, %v", m, err)
	}
	if _, err := AllMeasurements(dir); err == nil {
		t.Error("AllMeasurements read a folder with unreadable files")
	}
	if _, _, err := SaveMeasurements(dir, &Measurements{Case: "../x"}); err == nil {
		t.Error("a case that is not a file name was saved")
	}
}

// TestPackageMeasurements: the package carries the measurements and their table, listed
// by the manifest; Verify passes it and fails it when a value is changed.
func TestPackageMeasurements(t *testing.T) {
	f := newFixture(t)
	src := t.TempDir()
	for _, id := range []string{"case_002", "case_001"} {
		if _, _, err := SaveMeasurements(src, someMeasurements(t, id)); err != nil {
			t.Fatal(err)
		}
	}
	all, err := AllMeasurements(src)
	if err != nil || len(all) != 2 || all[0].Case != "case_001" {
		t.Fatalf("%v, %v", all, err)
	}
	f.c.Measurements = all
	pkg := f.write(t)
	v := verify(t, pkg, VerifyOptions{})
	if !v.OK() {
		t.Fatalf("%q", v.Problems)
	}
	listed := map[string]bool{}
	for _, x := range v.Manifest.Files {
		listed[x.Path] = true
	}
	if !listed[FileMeasurements] || !listed[FileMeasurementsTable] {
		t.Fatalf("the manifest lists %v", v.Manifest.Files)
	}
	table, _ := os.ReadFile(filepath.Join(pkg, FileMeasurementsTable))
	rows, err := csv.NewReader(bytes.NewReader(table)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// Each case: a length (1 value) and an ellipse (area, mean, sd, min, max, voxels: 6).
	if len(rows) != 1+2*(1+6) || !reflect.DeepEqual(rows[0], MeasurementsTableHeader) {
		t.Fatalf("%d rows, header %v", len(rows), rows[0])
	}
	if r := rows[1]; r[0] != "case_001" || r[2] != "lesion 1" || r[3] != "axial" || r[5] != "1" || r[6] != "length" || r[9] != "mm" || r[10] != "1 1 1.5;4 5 1.5" {
		t.Errorf("first row %q", r)
	}

	for _, file := range []string{FileMeasurementsTable, FileMeasurements} {
		t.Run(file, func(t *testing.T) {
			f := newFixture(t)
			f.c.Measurements = all
			pkg := f.write(t)
			p := filepath.Join(pkg, file)
			b, _ := os.ReadFile(p)
			changed := bytes.Replace(b, []byte("lesion 1"), []byte("lesion 2"), 1)
			if bytes.Equal(changed, b) {
				t.Fatal("nothing to change")
			}
			os.WriteFile(p, changed, 0o644)
			_, err := Verify(t.Context(), pkg, VerifyOptions{})
			if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), file) {
				t.Fatalf("a changed %s: %v", file, err)
			}
			// Even with the manifest written again, the export entry records the file.
			rewriteManifest(t, pkg, nil)
			if _, err = Verify(t.Context(), pkg, VerifyOptions{}); err == nil {
				t.Fatalf("a changed %s with its manifest rewritten verifies", file)
			}
		})
	}
}

// FuzzDecodeMeasurements: nothing makes the decoder panic, and what it accepts saves and
// reads back equal.
func FuzzDecodeMeasurements(f *testing.F) {
	f.Add([]byte(`{"case":"a","measurements":[{"id":1,"kind":"length","axis":2,"slice":0,"points":[[1,1,0.5],[2,2,0.5]]}]}`))
	f.Add([]byte(`{"case":"a","measurements":null}`))
	f.Add([]byte(`{"case":"../a","measurements":[]}`))
	f.Add([]byte(`{"case":"a","measurements":[{"kind":"freehand","axis":1,"points":[[1,1,1],[2,2,2],[1e308,3,3]]}]} {}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMeasurements(b)
		if err != nil {
			return
		}
		dir := t.TempDir()
		if _, _, err := SaveMeasurements(dir, m); err != nil {
			t.Fatalf("decoded but not saved: %v", err)
		}
		if _, err := ReadMeasurements(dir, m.Case); err != nil {
			t.Fatalf("saved but not read back: %v", err)
		}
	})
}
