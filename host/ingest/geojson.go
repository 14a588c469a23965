package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"amid/plugins/metrics"
	"amid/plugins/taskspec"
)

// maxCoord bounds a GeoJSON coordinate: Pillow casts coordinates to C int, and a PUMA
// tile is 1024 pixels wide, so anything beyond ±2²⁴ is a broken file, not a polygon.
const maxCoord = 1 << 24

// feature is one GeoJSON feature as the PUMA files (QuPath exports) hold it.
type feature struct {
	Geometry *struct {
		Type        string          `json:"type"`
		Coordinates json.RawMessage `json:"coordinates"`
	} `json:"geometry"`
	Properties *struct {
		Classification *struct {
			Name *string `json:"name"`
		} `json:"classification"`
		Name *string `json:"name"`
	} `json:"properties"`
}

// className is properties.classification.name, lower case ("" when absent).
func (f *feature) className() string {
	if f.Properties == nil || f.Properties.Classification == nil || f.Properties.Classification.Name == nil {
		return ""
	}
	return strings.ToLower(*f.Properties.Classification.Name)
}

// decodeFeatures reads a FeatureCollection (or a bare list of features, as QuPath can
// export). A collection without "features" has none.
func decodeFeatures(b []byte) ([]feature, error) {
	b = bytes.TrimSpace(b)
	var fs []feature
	if len(b) > 0 && b[0] == '[' {
		if err := json.Unmarshal(b, &fs); err != nil {
			return nil, fmt.Errorf("not a GeoJSON feature list: %w", err)
		}
		return fs, nil
	}
	var top struct {
		Features []feature `json:"features"`
	}
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("not a GeoJSON feature collection: %w", err)
	}
	return top.Features, nil
}

// rings returns the exterior ring of each polygon of a Polygon or MultiPolygon geometry
// (holes are ignored, as ReX-MLE's preparation ignores them); nil for other geometries.
// Every point must be two finite numbers. A ring of fewer than minPoints points is left
// out: a tissue ring needs 3 to enclose any area (annotation tools do save degenerate
// ones, and refusing the whole dataset for a shape of no area would help nobody), a
// nucleus needs 1 for its centroid.
func (f *feature) rings(i, minPoints int) ([][][2]float64, error) {
	g := f.Geometry
	if g == nil {
		return nil, nil
	}
	var polys [][][][]float64
	switch g.Type {
	case "Polygon":
		var p [][][]float64
		if err := json.Unmarshal(g.Coordinates, &p); err != nil {
			return nil, fmt.Errorf("feature %d: the Polygon's coordinates are not rings of points: %w", i, err)
		}
		polys = [][][][]float64{p}
	case "MultiPolygon":
		if err := json.Unmarshal(g.Coordinates, &polys); err != nil {
			return nil, fmt.Errorf("feature %d: the MultiPolygon's coordinates are not polygons of points: %w", i, err)
		}
	default:
		return nil, nil
	}
	out := make([][][2]float64, 0, len(polys))
	for k, p := range polys {
		if len(p) == 0 {
			return nil, fmt.Errorf("feature %d polygon %d has no ring", i, k)
		}
		ext := p[0]
		if len(ext) < max(minPoints, 1) {
			continue
		}
		ring := make([][2]float64, len(ext))
		for n, pt := range ext {
			if len(pt) != 2 {
				return nil, fmt.Errorf("feature %d polygon %d point %d has %d coordinates, want x and y", i, k, n, len(pt))
			}
			for _, c := range pt {
				if math.IsNaN(c) || math.Abs(c) > maxCoord {
					return nil, fmt.Errorf("feature %d polygon %d point %d (%g, %g) is not a pixel position", i, k, n, pt[0], pt[1])
				}
			}
			ring[n] = [2]float64{pt[0], pt[1]}
		}
		out = append(out, ring)
	}
	return out, nil
}

// PUMA tissue class names and their label values (ReX-MLE's corrected preparation).
var tissueValues = map[string]int{
	"tissue_white_background": 0,
	"tissue_stroma":           1,
	"tissue_blood_vessel":     2,
	"tissue_tumor":            3,
	"tissue_epidermis":        4,
	"tissue_necrosis":         5,
}

// tissuePoly is one exterior ring with its label value.
type tissuePoly struct {
	value int
	ring  [][2]float64
}

// parseTissue reads a PUMA tissue GeoJSON: per feature the class is
// properties.classification.name, else properties.name (lower case); unknown classes and
// geometries other than (Multi)Polygon are skipped, as the preparation skips them. Every
// value must be one of allowed.
func parseTissue(b []byte, allowed map[int]bool) ([]tissuePoly, error) {
	fs, err := decodeFeatures(b)
	if err != nil {
		return nil, err
	}
	var out []tissuePoly
	for i := range fs {
		f := &fs[i]
		name := f.className()
		if name == "" && f.Properties != nil && f.Properties.Name != nil {
			name = strings.ToLower(*f.Properties.Name)
		}
		v, ok := tissueValues[name]
		if !ok {
			continue
		}
		rings, err := f.rings(i, 3)
		if err != nil {
			return nil, err
		}
		if len(rings) > 0 && !allowed[v] {
			return nil, fmt.Errorf("feature %d is %s, label value %d, which is not among the task's labels", i, name, v)
		}
		for _, r := range rings {
			out = append(out, tissuePoly{value: v, ring: r})
		}
	}
	return out, nil
}

// rasterise draws the polygons in order on a w×h map, as the preparation draws them.
func rasterise(polys []tissuePoly, w, h int) *label {
	l := newLabel(w, h)
	for _, p := range polys {
		xy := make([][2]int, len(p.ring))
		for i, pt := range p.ring {
			xy[i] = [2]int{int(pt[0]), int(pt[1])} // C's (int) cast: toward zero
		}
		l.fillPolygon(xy, uint8(p.value))
	}
	return l
}

// The raw PUMA nuclei classes and their track 1 and track 2 names, as ReX-MLE's corrected
// preparation maps them (track 2 keeps raw names the grader then normalises).
var (
	nucleiTrack1 = map[string]string{
		"nuclei_tumor": "tumor", "nuclei_lymphocyte": "TILs", "nuclei_plasma_cell": "TILs",
		"nuclei_histiocyte": "other", "nuclei_melanophage": "other", "nuclei_neutrophil": "other",
		"nuclei_stroma": "other", "nuclei_epithelium": "other", "nuclei_endothelium": "other",
		"nuclei_apoptosis": "other",
	}
	nucleiTrack2 = map[string]string{
		"nuclei_tumor": "tumor", "nuclei_lymphocytes": "lymphocytes", "nuclei_plasma_cells": "plasma_cells",
		"nuclei_histiocytes": "histiocytes", "nuclei_melanophages": "melanophages", "nuclei_neutrophils": "neutrophils",
		"nuclei_stromal_cells": "stromal_cells", "nuclei_epithelium": "epithelium", "nuclei_endothelium": "endothelium",
		"nuclei_apoptotic_cells": "apoptotic_cells",
	}
)

// nucleiClasser maps a raw class name (lower case) to one of the task's point classes.
type nucleiClasser func(raw string) (string, bool)

// nucleiClasses picks the mapping for the task's point classes: track 1 when they are the
// 3 track 1 classes, track 2 when they are the 10 track 2 classes (each as the grader
// normalises names), otherwise the raw name with or without its "nuclei_" prefix.
func nucleiClasses(points []string) nucleiClasser {
	find := func(norm func(string) (string, bool), c string) (string, bool) {
		for _, p := range points {
			if n, ok := norm(p); ok && n == c {
				return p, true
			}
		}
		return "", false
	}
	t1 := func(s string) (string, bool) { return metrics.PUMAT1Class(s), true }
	covers := func(norm func(string) (string, bool), classes []string) bool {
		for _, c := range classes {
			if _, ok := find(norm, c); !ok {
				return false
			}
		}
		return len(points) == len(classes)
	}
	switch {
	case covers(t1, metrics.PUMAT1Classes):
		return func(raw string) (string, bool) {
			m, ok := nucleiTrack1[raw]
			if !ok {
				m = raw
			}
			return find(t1, metrics.PUMAT1Class(m))
		}
	case covers(metrics.PUMAT2Class, metrics.PUMAT2Classes):
		return func(raw string) (string, bool) {
			m, ok := nucleiTrack2[raw]
			if !ok {
				m = raw
			}
			c, ok := metrics.PUMAT2Class(m)
			if !ok {
				return "", false
			}
			return find(metrics.PUMAT2Class, c)
		}
	}
	return func(raw string) (string, bool) {
		for _, p := range points {
			l := strings.ToLower(p)
			if l == raw || "nuclei_"+l == raw {
				return p, true
			}
		}
		return "", false
	}
}

// parseNuclei reads a PUMA nuclei GeoJSON into points at each polygon's centroid (the
// mean of its exterior ring's points, closing point included, as the grader computes it)
// with score 1. Features the preparation drops (no class, a geometry other than Polygon)
// and classes outside the task are left out.
func parseNuclei(b []byte, classOf nucleiClasser) ([]taskspec.Point, error) {
	fs, err := decodeFeatures(b)
	if err != nil {
		return nil, err
	}
	out := []taskspec.Point{}
	for i := range fs {
		f := &fs[i]
		if f.Geometry == nil || f.Geometry.Type != "Polygon" {
			continue
		}
		name := f.className()
		if name == "" {
			continue
		}
		rings, err := f.rings(i, 1)
		if err != nil {
			return nil, err
		}
		class, ok := classOf(name)
		if !ok || len(rings) == 0 {
			continue
		}
		var cx, cy float64
		for _, pt := range rings[0] {
			cx += pt[0]
			cy += pt[1]
		}
		n := float64(len(rings[0]))
		out = append(out, taskspec.Point{X: cx / n, Y: cy / n, Class: class, Score: 1})
	}
	return out, nil
}
