package export

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"amid/host/synth"
	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/derived"
	"amid/viewer/dicom/source"
	"amid/viewer/dicom/sr"
	"amid/viewer/imageio"
)

// TestCheckDICOMKinds: the package check reads a structured report (dicom/ID.dcm) as one
// and a derived series (dicom/ID/) back to its predicted image, and names what fails: a
// derived series whose prediction changed by one value in one voxel, and an object that
// is neither a SEG nor a structured report (the source image itself).
func TestCheckDICOMKinds(t *testing.T) {
	srcDir := filepath.Join(t.TempDir(), "study")
	ct, _, err := synth.HeadSeries(srcDir, 1)
	if err != nil {
		t.Fatal(err)
	}
	grid, src, err := source.Image(srcDir)
	if err != nil {
		t.Fatal(err)
	}
	pkg := t.TempDir()
	write := func(rel string, b []byte) {
		t.Helper()
		p := filepath.Join(pkg, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeDICOM := func(rel string, f *dataset.File) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(pkg, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := dataset.WriteFile(filepath.Join(pkg, rel), f); err != nil {
			t.Fatal(err)
		}
	}
	write(FileTask, []byte(iqaTask)) // the check reads the task only for a SEG's labels
	// A structured report of one box, beside its prediction.
	score := 0.5
	rep, err := sr.Encode(&sr.Report{Findings: []sr.Finding{{Score: &score, Rect: &sr.Rect{X: 4, Y: 4, W: 10, H: 8}}}}, grid, src, sr.Options{})
	if err != nil {
		t.Fatal(err)
	}
	writeDICOM("dicom/case1.dcm", rep)
	write("predictions/case1.json", []byte(`{"boxes": [{"x": 4, "y": 4, "w": 10, "h": 8, "score": 0.5}]}`))
	// A derived series of an enhanced image (the source + 10), beside the image.
	enhanced := ct.Clone()
	for i := range enhanced.Len() {
		enhanced.SetIndex(i, enhanced.AtIndex(i)+10)
	}
	files, err := derived.Encode(enhanced, grid, src, derived.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		writeDICOM(filepath.Join("dicom", "case2", derived.Name(i)), f)
	}
	if err := os.MkdirAll(filepath.Join(pkg, "predictions"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := imageio.Write(filepath.Join(pkg, "predictions", "case2.tif"), enhanced); err != nil {
		t.Fatal(err)
	}
	check := func() *Verification {
		t.Helper()
		listed := map[string]File{}
		err := filepath.WalkDir(pkg, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(pkg, p)
				listed[filepath.ToSlash(rel)] = File{Path: filepath.ToSlash(rel)}
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		v := &Verification{}
		v.checkDICOM(os.DirFS(pkg), listed)
		return v
	}
	if v := check(); v.SRs != 1 || v.Derived != 1 || v.SEGs != 0 || len(v.Problems) > 0 {
		t.Fatalf("%d SRs, %d derived series, %d SEGs checked; problems %q", v.SRs, v.Derived, v.SEGs, v.Problems)
	}

	// The prediction changed by one in one voxel: the series no longer reads back to it.
	enhanced.SetIndex(7, enhanced.AtIndex(7)+1)
	if err := imageio.Write(filepath.Join(pkg, "predictions", "case2.tif"), enhanced); err != nil {
		t.Fatal(err)
	}
	// An image that is neither a SEG nor a structured report.
	srcFiles, _ := filepath.Glob(filepath.Join(srcDir, "*"))
	b, err := os.ReadFile(srcFiles[0])
	if err != nil {
		t.Fatal(err)
	}
	write("dicom/case3.dcm", b)
	write("predictions/case3.json", []byte(`{}`))
	v := check()
	got := strings.Join(v.Problems, "\n")
	for _, want := range []string{
		// The tolerance is the prediction's range over 65535, a few hundredths of a HU.
		"dicom/case2/: it reads back to an image that differs from predictions/case2.tif by more than 0.0",
		" in 1 voxels",
		"dicom/case3.dcm: neither a DICOM SEG nor a structured report (SOP class 1.2.840.10008.5.1.4.1.1.2)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the check does not say %q:\n%s", want, got)
		}
	}
	if v.SRs != 1 || v.Derived != 0 {
		t.Errorf("%d SRs, %d derived series read back; want 1 and 0", v.SRs, v.Derived)
	}
}
