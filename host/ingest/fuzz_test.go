package ingest

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"amid/plugins/metrics"
	"amid/plugins/taskspec"
)

// FuzzTissue feeds arbitrary bytes to the tissue GeoJSON reader and rasterises what it
// accepts on a small map: an error or a map, never a panic.
func FuzzTissue(f *testing.F) {
	f.Add([]byte(tissueGeoJSON))
	f.Add([]byte(`[{"geometry": {"type": "Polygon", "coordinates": [[[0,0],[1e6,3],[-7,9]]]}, "properties": {"name": "tissue_tumor"}}]`))
	f.Add([]byte(`{"features": [{"geometry": {"type": "MultiPolygon", "coordinates": [[]]}, "properties": {"classification": {"name": "tissue_stroma"}}}]}`))
	f.Add([]byte(`{"features": [{"geometry": null, "properties": null}]}`))
	all := map[int]bool{0: true, 1: true, 2: true, 3: true, 4: true, 5: true}
	f.Fuzz(func(t *testing.T, b []byte) {
		polys, err := parseTissue(b, all)
		if err != nil {
			return
		}
		l := rasterise(polys, 13, 7)
		for _, v := range l.pix {
			if v > 5 {
				t.Fatalf("value %d drawn", v)
			}
		}
	})
}

// FuzzPolygon fills arbitrary integer polygons: every pixel written is inside the map and
// holds the ink.
func FuzzPolygon(f *testing.F) {
	f.Add([]byte{0, 0, 4, 0, 0, 4})
	f.Add([]byte{0, 0, 40, 1, 0, 2, 3, 3, 255, 128})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 64 {
			return
		}
		var xy [][2]int
		for i := 0; i+1 < len(b); i += 2 {
			xy = append(xy, [2]int{int(int8(b[i])), int(int8(b[i+1]))})
		}
		l := newLabel(11, 9)
		l.fillPolygon(xy, 3)
		for _, v := range l.pix {
			if v != 0 && v != 3 {
				t.Fatalf("value %d", v)
			}
		}
	})
}

// FuzzNuclei feeds arbitrary bytes to the nuclei reader with the track 1 classes.
func FuzzNuclei(f *testing.F) {
	f.Add([]byte(`{"features": [` + nucleus("nuclei_tumor", 1, 2) + `]}`))
	f.Add([]byte(`{"features": [{"geometry": {"type": "Polygon", "coordinates": [[[1,2]]]}, "properties": {"classification": {"name": "nuclei_stroma"}}}]}`))
	f.Add([]byte(`{"features": [{"geometry": {"type": "Polygon", "coordinates": 5}, "properties": {"classification": {"name": 7}}}]}`))
	classOf := nucleiClasses(metrics.PUMAT1Classes)
	spec := &taskspec.Spec{Kind: taskspec.Detection, Dims: 2, Points: metrics.PUMAT1Classes}
	f.Fuzz(func(t *testing.T, b []byte) {
		pts, err := parseNuclei(b, classOf)
		if err != nil {
			return
		}
		a := taskspec.Annotation{Points: pts}
		if err := a.Check(spec); err != nil {
			t.Fatalf("accepted points fail the spec: %v", err)
		}
	})
}

// FuzzROI feeds arbitrary text to the TopCoW ROI reader.
func FuzzROI(f *testing.F) {
	f.Add([]byte("ROI\nSize (Voxels): 79 62 39\nLocation (Voxels): 32 86 94\n"))
	f.Add([]byte("Size (Voxels): 1 2\nLocation: x y z"))
	f.Add([]byte("size: 1,2,3\nlocation: [0, 0, 99999999999]\n"))
	spec := &taskspec.Spec{Kind: taskspec.Detection, Dims: 3, Box3D: true}
	f.Fuzz(func(t *testing.T, b []byte) {
		box, err := parseROI(b)
		if err != nil {
			return
		}
		a := taskspec.Annotation{Box3D: box}
		if err := a.Check(spec); err != nil {
			t.Fatalf("accepted box fails the spec: %v", err)
		}
	})
}

// FuzzEdges feeds arbitrary YAML to the TopCoW edge reader.
func FuzzEdges(f *testing.F) {
	f.Add([]byte("anterior:\n  L-A1: 1\n  Acom: 0\nposterior:\n  L-P1: true\n"))
	f.Add([]byte("anterior: {L-A1: 2.0, Acom: '1'}\n"))
	f.Add([]byte("- 1\n- 2\n"))
	attrs := []taskspec.Attribute{
		{Name: "L-A1", Classes: []string{"0", "1"}, Group: "anterior"},
		{Name: "Acom", Classes: []string{"absent", "present"}},
	}
	spec := &taskspec.Spec{Kind: taskspec.Classification, Dims: 3, Attributes: attrs}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseEdges(b, attrs)
		if err != nil {
			return
		}
		a := taskspec.Annotation{Classes: m}
		if err := a.Check(spec); err != nil {
			t.Fatalf("accepted classes fail the spec: %v", err)
		}
	})
}

// FuzzCOCO feeds arbitrary JSON to the DENTEX COCO reader.
func FuzzCOCO(f *testing.F) {
	f.Add([]byte(`{"images": [{"id": 1, "file_name": "a.png"}], "annotations": [{"image_id": 1, "bbox": [1, 2, 3, 4], "category_id_1": 0, "category_id_2": 1}]}`))
	f.Add([]byte(`{"images": [{"id": 1.5}], "annotations": [{"image_id": "1"}]}`))
	f.Add([]byte(`{"annotations": [{"bbox": [1, 2, -3, 4]}]}`))
	attrs := []taskspec.Attribute{{Name: "q", Classes: []string{"a", "b"}}, {Name: "e", Classes: []string{"a", "b", "c"}}}
	spec := &taskspec.Spec{Kind: taskspec.Detection, Dims: 2, Attributes: attrs}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseCOCO(b, attrs)
		if err != nil {
			return
		}
		for stem, a := range m {
			if err := a.Check(spec); err != nil {
				t.Fatalf("image %s: accepted boxes fail the spec: %v", stem, err)
			}
		}
	})
}

// FuzzScores feeds arbitrary bytes to the CSV score reader.
func FuzzScores(f *testing.F) {
	f.Add([]byte("image_id,quality_score\n0000,2.4\n17,3\n"))
	f.Add([]byte("image_id,quality_score\n1,inf\n"))
	f.Add([]byte("image_id\n1\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "s.csv")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := readScores(p, "image_id", "quality_score")
		if err != nil {
			return
		}
		for id := range s.raw {
			if _, ok := s.score(id); !ok {
				t.Fatalf("id %q read but not found", id)
			}
		}
	})
}

// BenchmarkTissue parses and rasterises a PUMA-sized tissue file: 20 star-shaped polygons
// of 2000 vertices each on a 1024² tile (PUMA tiles are 1024²; QuPath tissue outlines have
// thousands of vertices).
func BenchmarkTissue(b *testing.B) {
	var feats []map[string]any
	for k := range 20 {
		cx, cy := float64(100+40*k), float64(150+35*k)
		ring := make([][2]float64, 0, 2001)
		for i := range 2000 {
			a := 2 * math.Pi * float64(i) / 2000
			r := 80 + 30*math.Sin(7*a)
			ring = append(ring, [2]float64{cx + r*math.Cos(a), cy + r*math.Sin(a)})
		}
		ring = append(ring, ring[0])
		feats = append(feats, map[string]any{
			"geometry":   map[string]any{"type": "Polygon", "coordinates": [][][2]float64{ring}},
			"properties": map[string]any{"classification": map[string]any{"name": "tissue_tumor"}},
		})
	}
	raw, _ := json.Marshal(map[string]any{"features": feats})
	all := map[int]bool{0: true, 1: true, 2: true, 3: true, 4: true, 5: true}
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		polys, err := parseTissue(raw, all)
		if err != nil {
			b.Fatal(err)
		}
		rasterise(polys, 1024, 1024)
	}
}
