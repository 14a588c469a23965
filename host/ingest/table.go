package ingest

import (
	"encoding/json"
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"

	"amid/host/grade"
	"amid/plugins/taskspec"
)

// cocoCategoryFields are the DENTEX annotation fields of attributes 1, 2 and 3.
var cocoCategoryFields = []string{"category_id_1", "category_id_2", "category_id_3"}

// parseCOCO reads a DENTEX COCO JSON into one annotation per image, keyed by the image's
// file-name stem: every annotation's bbox [x, y, w, h] becomes a box with score 1 whose
// attribute k (the task's attributes in order) is category_id_<k+1> as written.
func parseCOCO(b []byte, attrs []taskspec.Attribute) (map[string]*taskspec.Annotation, error) {
	if len(attrs) > len(cocoCategoryFields) {
		return nil, fmt.Errorf("the task has %d box attributes; DENTEX COCO files hold at most %d", len(attrs), len(cocoCategoryFields))
	}
	var doc struct {
		Images []struct {
			ID       *float64 `json:"id"`
			FileName string   `json:"file_name"`
		} `json:"images"`
		Annotations []map[string]json.RawMessage `json:"annotations"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("not a COCO JSON object: %w", err)
	}
	byImage := map[int64]*taskspec.Annotation{}
	out := map[string]*taskspec.Annotation{}
	for i, im := range doc.Images {
		id, ok := cocoInt(im.ID)
		stem := strings.TrimSuffix(path.Base(strings.ReplaceAll(im.FileName, "\\", "/")), path.Ext(im.FileName))
		switch {
		case !ok:
			return nil, fmt.Errorf("images[%d] has no integer id", i)
		case im.FileName == "" || stem == "":
			return nil, fmt.Errorf("images[%d] has no file_name", i)
		case out[stem] != nil:
			return nil, fmt.Errorf("images[%d] repeats the file name %s", i, im.FileName)
		case byImage[id] != nil:
			return nil, fmt.Errorf("images[%d] repeats the image id %d", i, id)
		}
		a := &taskspec.Annotation{Boxes: []taskspec.Box{}}
		out[stem], byImage[id] = a, a
	}
	for i, raw := range doc.Annotations {
		var imgID *float64
		var bbox []float64
		if err := json.Unmarshal(orNull(raw["image_id"]), &imgID); err != nil {
			return nil, fmt.Errorf("annotations[%d].image_id is not a number", i)
		}
		id, ok := cocoInt(imgID)
		if !ok || byImage[id] == nil {
			return nil, fmt.Errorf("annotations[%d].image_id is not the id of an image of the file", i)
		}
		if err := json.Unmarshal(orNull(raw["bbox"]), &bbox); err != nil || len(bbox) != 4 {
			return nil, fmt.Errorf("annotations[%d].bbox is not 4 numbers [x, y, w, h]", i)
		}
		box := taskspec.Box{X: bbox[0], Y: bbox[1], W: bbox[2], H: bbox[3], Score: 1, Attrs: map[string]int{}}
		if !(box.W > 0 && box.H > 0) || math.Abs(box.X) > maxCoord || math.Abs(box.Y) > maxCoord || box.W > maxCoord || box.H > maxCoord {
			return nil, fmt.Errorf("annotations[%d].bbox %v is not a box of positive size", i, bbox)
		}
		for k, a := range attrs {
			field := cocoCategoryFields[k]
			var c *float64
			if err := json.Unmarshal(orNull(raw[field]), &c); err != nil {
				return nil, fmt.Errorf("annotations[%d].%s is not a number", i, field)
			}
			v, ok := cocoInt(c)
			if !ok || v < 0 || v >= int64(len(a.Classes)) {
				return nil, fmt.Errorf("annotations[%d].%s is missing or outside the %d classes of %s", i, field, len(a.Classes), a.Name)
			}
			box.Attrs[a.Name] = int(v)
		}
		if len(box.Attrs) == 0 {
			box.Attrs = nil
		}
		byImage[id].Boxes = append(byImage[id].Boxes, box)
	}
	return out, nil
}

func orNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

func cocoInt(f *float64) (int64, bool) {
	if f == nil || *f != math.Trunc(*f) || math.Abs(*f) > 1<<53 {
		return 0, false
	}
	return int64(*f), true
}

// scoreTable is a CSV label table: case id → score.
type scoreTable struct {
	raw  map[string]float64
	ints map[int64]float64 // ids that are integers, by value (pandas reads "001" as 1)
}

// readScores reads the CSV at path, columns idCol and valCol, as pandas reads it.
func readScores(path, idCol, valCol string) (*scoreTable, error) {
	t, err := grade.ReadTable(path)
	if err != nil {
		return nil, err
	}
	ids, ok1 := t.Column(idCol)
	vals, ok2 := t.Column(valCol)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("it has no column %q or %q (header: %s)", idCol, valCol, strings.Join(t.Header, ","))
	}
	s := &scoreTable{raw: map[string]float64{}, ints: map[int64]float64{}}
	for i, id := range ids {
		v, err := strconv.ParseFloat(strings.TrimSpace(vals[i]), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("line %d: %s %q is not a finite number", i+2, valCol, vals[i])
		}
		id = strings.TrimSpace(id)
		if _, dup := s.raw[id]; dup {
			return nil, fmt.Errorf("line %d repeats the id %q", i+2, id)
		}
		s.raw[id] = v
		if n, err := strconv.ParseInt(id, 10, 64); err == nil {
			s.ints[n] = v
		}
	}
	return s, nil
}

// score is the value of case id: by its text, else by its integer value.
func (s *scoreTable) score(id string) (float64, bool) {
	if v, ok := s.raw[id]; ok {
		return v, true
	}
	if n, err := strconv.ParseInt(id, 10, 64); err == nil {
		v, ok := s.ints[n]
		return v, ok
	}
	return 0, false
}
