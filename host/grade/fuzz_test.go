package grade

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadTable feeds arbitrary bytes to the CSV reader: it must return a table or an
// error, never panic. Seeds: a ReX sample submission, a BOM, quotes, a ragged row.
func FuzzReadTable(f *testing.F) {
	f.Add([]byte("image_id,predicted_mask_path\ncell_00001,predictions/cell_00001_label.tiff\n"))
	f.Add([]byte("\xef\xbb\xbfcase_id,x\n\"a,b\",1\n\n2\n"))
	f.Add([]byte("a,b\n1,2,3\n"))
	f.Add([]byte("\"unterminated\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "t.csv")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		tb, err := ReadTable(p)
		if err != nil {
			return
		}
		for _, h := range tb.Header {
			ids, _ := tb.IDStrings(h)
			if len(ids) != len(tb.Rows) {
				t.Fatalf("%d ids for %d rows", len(ids), len(tb.Rows))
			}
		}
	})
}

// FuzzPUMANuclei feeds arbitrary JSON to the nuclei reader of both tracks.
func FuzzPUMANuclei(f *testing.F) {
	f.Add([]byte(`{"polygons":[{"name":"nuclei_tumor","path_points":[[1,2],[3,4],[5,1]],"score":1}]}`))
	f.Add([]byte(`{"nuclei":[{"centroid":[10.5,3],"class":"TILs","confidence":0.4}]}`))
	f.Add([]byte(`{"polygons":[{"name":null},{"name":"other","path_points":[[1],[2],[3]]}]}`))
	f.Add([]byte(`[]`))
	dir := f.TempDir()
	t1 := func(raw any) (string, bool, error) { s, _ := raw.(string); return s, true, nil }
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "n.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, _ = pumaReadNuclei(p, t1)
	})
}

// FuzzDENTEXPreds feeds arbitrary JSON to the DENTEX prediction reader.
func FuzzDENTEXPreds(f *testing.F) {
	f.Add([]byte(`[{"image_id":"train_1","bbox":[1,2,30,40],"category_id_1":1,"category_id_2":3,"category_id_3":0,"score":0.9}]`))
	f.Add([]byte(`{"annotations":[{"bbox":[10,10,100,100],"quadrant_id":2,"confidence":1}]}`))
	f.Add([]byte(`{"bbox":[1,2,3]}`))
	dir := f.TempDir()
	files := map[string]int64{"train_1": 1}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "d.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, _ = dentexReadPreds(p, "train_1", files)
	})
}
