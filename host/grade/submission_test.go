package grade

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A submission breaking five rules at once must list all five.
func TestReadSubmissionListsEveryRule(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "predictions", "b.tif"), "x")
	writeFile(t, filepath.Join(dir, SubmissionCSV),
		"image_id,predicted_mask_path\n"+
			"a,predictions/a.tif\n"+ // file missing
			"b,predictions/b.tif\n"+ // fine
			"b,predictions/b.tif\n"+ // repeated
			"z,predictions/z.tif\n"+ // extra ID
			"d,../d.tif\n") // leaves the folder
	var p Problems
	spec := Spec{IDColumn: "image_id", FileColumns: []string{"predicted_mask_path"}}
	s := ReadSubmission(dir, spec, []string{"a", "b", "c", "d"}, &p)
	if s == nil {
		t.Fatal("nil submission")
	}
	got := strings.Join(p.List(), "\n")
	for _, want := range []string{"repeats 1 IDs: b", "lacks 1 test IDs: c", "not in the test set: z",
		`row "a": predicted_mask_path "predictions/a.tif" does not exist`, `"../d.tif" leaves the submission folder`} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	if len(p.List()) != 5 {
		t.Errorf("%d problems, want 5:\n%s", len(p.List()), got)
	}
}

func TestReadSubmissionMissingColumnsAndFile(t *testing.T) {
	dir := t.TempDir()
	var p Problems
	if s := ReadSubmission(dir, Spec{IDColumn: "image_id"}, nil, &p); s != nil || len(p.List()) != 1 {
		t.Errorf("missing csv: %v %v", s, p.List())
	}
	writeFile(t, filepath.Join(dir, SubmissionCSV), "\xef\xbb\xbfid,score\n1,2\n")
	p = Problems{}
	ReadSubmission(dir, Spec{IDColumn: "image_id", Columns: []string{"quality_score"}}, []string{"1"}, &p)
	if len(p.List()) != 2 {
		t.Errorf("want 2 missing columns, got %v", p.List())
	}
	writeFile(t, filepath.Join(dir, SubmissionCSV), "image_id,x\n1,2,3\n")
	p = Problems{}
	if s := ReadSubmission(dir, Spec{IDColumn: "image_id"}, []string{"1"}, &p); s != nil || len(p.List()) != 1 {
		t.Errorf("ragged row: %v", p.List())
	}
}
