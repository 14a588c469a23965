package deidentify

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"amid/host/task"
	"amid/viewer/imageio"
	"amid/viewer/nifti"
	"amid/viewer/volume"
)

// identifiedNIfTI writes a NIfTI-1 file of v at path whose description names the patient:
// the header field a converter copies from DICOM.
func identifiedNIfTI(t *testing.T, path string, v *volume.Volume, patient string) {
	t.Helper()
	var buf bytes.Buffer
	if err := nifti.Encode(&buf, v); err != nil {
		t.Fatal(err)
	}
	// descrip: 80 bytes at offset 148 of the 348-byte NIfTI-1 header (nifti1.h).
	b := buf.Bytes()
	copy(b[148:148+80], append([]byte(patient), make([]byte, 80)...))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHandedCopies: what a plugin of a de-identified run reads of a case is a plain file
// under the run's own folder, named after the pseudonym, rewritten from the voxels and
// geometry alone: the header that names the patient, the folder named after the patient
// and the link that leads there stay behind, for the image and the label alike, and the
// voxels are the same. A case without copies is refused, never handed over as it is.
func TestHandedCopies(t *testing.T) {
	const patient = "QUIRKLEBY^ZENOBIA" // a patient's name, as in TestDeidentifiedEndToEnd
	data := filepath.Join(t.TempDir(), "QUIRKLEBY_ZENOBIA")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	// 4×3×2 voxels: the smallest 3D image whose axes differ, so a transposed copy shows.
	img, err := volume.New(volume.Int16, [4]int{4, 3, 2, 1})
	if err != nil {
		t.Fatal(err)
	}
	lab, err := volume.New(volume.Uint8, img.Dims)
	if err != nil {
		t.Fatal(err)
	}
	for i := range img.Data.([]int16) {
		img.Data.([]int16)[i] = int16(100 * i)
		lab.Data.([]uint8)[i] = uint8(i % 2)
	}
	img.Spacing = [3]float64{0.5, 0.75, 3}
	identifiedNIfTI(t, filepath.Join(data, "image.nii"), img, patient)
	identifiedNIfTI(t, filepath.Join(data, "label.nii"), lab, patient)

	run := t.TempDir()
	id := "anon-test" // a pseudonym's shape (deid.Keys.Pseudonym)
	links := filepath.Join(run, "cases", id)
	c := task.Case{ID: id, Patient: "anon-patient"}
	imgLink, err := linkTo(filepath.Join(data, "image.nii"), links, "image0")
	if err != nil {
		t.Fatal(err)
	}
	labLink, err := linkTo(filepath.Join(data, "label.nii"), links, "label")
	if err != nil {
		t.Fatal(err)
	}
	c.Images, c.Label = []string{imgLink}, labLink
	d := &task.Dataset{Train: []task.Case{c}}
	root := filepath.Join(run, HandedDir)
	h, err := MakeHanded(context.Background(), nil, d, map[string]string{id: labLink}, root, filepath.Join(run, "labels"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := h.Cases(d.Train)
	if err != nil {
		t.Fatal(err)
	}
	files := append(slices.Clone(got[0].Images), h.Labels(nil)[id])
	for i, p := range files {
		if !strings.HasPrefix(p, root+string(filepath.Separator)+id+string(filepath.Separator)) {
			t.Errorf("%s lies outside %s/%s", p, root, id)
		}
		if st, err := os.Lstat(p); err != nil || !st.Mode().IsRegular() {
			t.Errorf("%s is not a plain file: %v", p, err)
			continue
		}
		if raw := readMaybeGzip(t, p); bytes.Contains(raw, []byte(patient)) {
			t.Errorf("%s holds %q", p, patient)
		}
		want := img
		if i == len(files)-1 {
			want = lab
		}
		v, err := imageio.Read(p)
		if err != nil {
			t.Fatal(err)
		}
		if !volume.SameGrid(v, want, 1e-6) || !equalData(v, want) {
			t.Errorf("%s: %v %v, want the source's %v %v", p, v.Dims, v.Spacing, want.Dims, want.Spacing)
		}
	}
	// The sources do name the patient, as the test means them to.
	if raw := readMaybeGzip(t, imgLink); !bytes.Contains(raw, []byte(patient)) {
		t.Fatal("the test image does not name the patient")
	}
	if _, err := h.Cases([]task.Case{{ID: "anon-other"}}); !errors.Is(err, ErrCannot) {
		t.Errorf("a case without copies: %v, want ErrCannot", err)
	}
	// A run that is not de-identified hands its plugins the cases themselves.
	var none *Handed
	if cs, err := none.Cases(d.Train); err != nil || cs[0].Images[0] != imgLink {
		t.Errorf("not de-identified: %v, %v", cs, err)
	}
}

// readMaybeGzip is the file at p, decompressed when it is gzip.
func readMaybeGzip(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if zr, err := gzip.NewReader(bytes.NewReader(b)); err == nil {
		if b, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func equalData(a, b *volume.Volume) bool {
	n := a.Dims[0] * a.Dims[1] * a.Dims[2] * a.Dims[3]
	if n != b.Dims[0]*b.Dims[1]*b.Dims[2]*b.Dims[3] {
		return false
	}
	for i := range n {
		if a.AtIndex(i) != b.AtIndex(i) {
			return false
		}
	}
	return true
}
