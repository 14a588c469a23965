package synth

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"amid/host/ingest"
	"amid/host/task"
	"amid/viewer/dicom"
	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/dicomtest"
	"amid/viewer/dicom/source"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// TestDemoDICOM: the DICOM demo's series read back to the generated head CTs in every
// transfer syntax it writes (pydicom agrees on the RLE one), dciodvfy finds no error in a
// slice, a SEG or an RTSTRUCT, and the task's labels (SEG for even cases, RTSTRUCT for odd
// ones, matched by code and by name) turn into exactly the generated label maps.
func TestDemoDICOM(t *testing.T) {
	dir := t.TempDir()
	if err := DemoDICOM(dir, 4, 3, DICOMOptions{}); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(filepath.Join(dir, "task.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := tk.Resolve(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Train) != 4 || len(ds.Test) != 1 {
		t.Fatalf("%d train and %d test cases", len(ds.Train), len(ds.Test))
	}
	labels, err := ingest.Labels(context.Background(), tk, ds.Train, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range append(ds.Train, ds.Test...) {
		ct, lab, err := HeadCT(3+uint64(i), DemoDims, DemoSpacing)
		if err != nil {
			t.Fatal(err)
		}
		v, m, err := dicom.ReadDir(c.Images[0])
		if err != nil {
			t.Fatal(err)
		}
		if m.TransferSyntaxUID != DICOMSyntaxes[i%len(DICOMSyntaxes)] {
			t.Errorf("case %s: transfer syntax %s", c.ID, m.TransferSyntaxUID)
		}
		if !volume.SameGrid(v, ct, 1e-4) || diff(v, ct) != 0 {
			t.Errorf("case %s (%s): the series does not read back to the generated CT", c.ID, m.TransferSyntax)
		}
		if i >= len(ds.Train) {
			continue
		}
		got, err := imageio.Read(labels[c.ID])
		if err != nil {
			t.Fatal(err)
		}
		if n := diff(got, lab); n != 0 {
			t.Errorf("case %s: its %s label gives a label map %d voxels off the generated one", c.ID, map[bool]string{true: "SEG", false: "RTSTRUCT"}[i%2 == 0], n)
		}
	}
	// The reference tools on one file of each kind.
	rle := filepath.Join(dir, "train/images/head004/S2IM0007.dcm")
	for _, p := range []string{filepath.Join(dir, "train/images/head001/S2IM0001.dcm"), rle,
		filepath.Join(dir, "train/labels/head001.dcm"), filepath.Join(dir, "train/labels/head002.dcm")} {
		dicomtest.Dciodvfy(t, p)
	}
	py := dicomtest.Python(t)
	out, err := exec.Command(py, "-c", `import sys, pydicom
d = pydicom.dcmread(sys.argv[1])
a = d.pixel_array
print(d.file_meta.TransferSyntaxUID, int(a.astype("int64").sum()), a.shape)`, rle).CombinedOutput()
	if err != nil {
		t.Fatalf("pydicom: %v\n%s", err, out)
	}
	ct, _, _ := HeadCT(3+3, DemoDims, DemoSpacing)
	var sum int64
	n := DemoDims[0] * DemoDims[1]
	for _, x := range ct.Data.([]int16)[6*n : 7*n] {
		sum += int64(x)
	}
	if f := strings.Fields(string(out)); len(f) < 2 || f[0] != RLELossless || f[1] != strconv.FormatInt(sum, 10) {
		t.Errorf("pydicom decodes the RLE slice to %q, the generated slice sums to %d", out, sum)
	}
}

// TestDemoDICOMStudies: with Studies, a case folder holds the axial series, a thicker
// series and a localizer, each a valid series of its own.
func TestDemoDICOMStudies(t *testing.T) {
	dir := t.TempDir()
	if err := DemoDICOM(dir, 2, 1, DICOMOptions{Studies: true, Syntaxes: []string{dataset.ExplicitVRLittleEndian}}); err != nil {
		t.Fatal(err)
	}
	study := filepath.Join(dir, "train/images/head001")
	s := Study{Seed: 1}
	for n, want := range map[int]int{1: 1, 2: DemoDims[2], 3: DemoDims[2] / 2} {
		src, err := source.Read(study, s.SeriesUID(n))
		if err != nil {
			t.Fatal(err)
		}
		if len(src.Instances) != want {
			t.Errorf("series %d has %d images, want %d", n, len(src.Instances), want)
		}
	}
	// Read as a study: the localizer is passed over, and the two CT series need a selector.
	if _, _, err := dicom.ReadDir(study); !errors.Is(err, dicom.ErrSeries) || !strings.Contains(err.Error(), `2 series fit any series`) ||
		!strings.Contains(err.Error(), `"HEAD 8mm"`) || !strings.Contains(err.Error(), `"HEAD 16mm"`) {
		t.Errorf("a study folder read as one series: %v", err)
	}
	st, err := dicom.Scan(study)
	if err != nil {
		t.Fatal(err)
	}
	chosen, notes, err := st.Select(dicom.Selector{Modality: "CT", Prefer: dicom.PreferThinnest})
	if err != nil || chosen.Description != "HEAD 8mm" || chosen.Slices != DemoDims[2] || len(notes) != 2 || !strings.Contains(notes[0], `"SCOUT" (CT, 1 file) skipped: a localizer`) || !strings.Contains(notes[1], `"HEAD 16mm" (CT, 10 files) passed over`) {
		t.Errorf("the thinnest CT series: %+v, %q, %v", chosen, notes, err)
	}
	ents, _ := os.ReadDir(study)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "S1") || e.Name() == "S3IM0001.dcm" {
			dicomtest.Dciodvfy(t, filepath.Join(study, e.Name()))
		}
	}
}

func diff(a, b *volume.Volume) int {
	if a.NumVoxels() != b.NumVoxels() {
		return a.NumVoxels() + b.NumVoxels()
	}
	n := 0
	for i := range a.NumVoxels() {
		if a.AtIndex(i) != b.AtIndex(i) {
			n++
		}
	}
	return n
}
