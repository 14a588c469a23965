package grade

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"amid/plugins/metrics"
)

func init() { Register("dentex", GraderFunc(gradeDENTEX)) }

// dentexAspects are the three DENTEX aspects: metric suffix, annotation field, fallback
// field, and the category ids the grader declares to pycocotools (1–4, 1–8, 1–4).
var dentexAspects = []struct {
	name, field, alt string
	cats             []int64
}{
	{"quadrant", "category_id_1", "quadrant_id", []int64{1, 2, 3, 4}},
	{"enumeration", "category_id_2", "enumeration_id", []int64{1, 2, 3, 4, 5, 6, 7, 8}},
	{"diagnosis", "category_id_3", "diagnosis_id", []int64{1, 2, 3, 4}},
}

// dentexNoCat stands for a category value that is not an integer (never evaluated).
const dentexNoCat = math.MinInt64

// gradeDENTEX grades DENTEX (rexmle.md §6.12): submission.csv image_id,predictions_json,
// each JSON a list of detections (or {"annotations": [...]}, or one detection object) with
// bbox [x, y, w, h], category_id_1/2/3 (or quadrant_id / enumeration_id / diagnosis_id,
// default 1) and score (or confidence, default 0.5); answers test_labels.csv
// image_id,ground_truth_json, one COCO JSON per image. For each aspect the category is set
// to that aspect's id and pycocotools bbox evaluation runs over the declared categories
// (1–4 / 1–8 / 1–4): AP, AP50, AP75 and AR@100 per aspect and their means; ap_mean is
// primary. The grader's rules are kept: string image_ids map through the GT file names, a
// box with w > x and h > y and (w > x+50 or h > y+50) is read as [x1, y1, x2, y2], and a
// submission with no detection at all, or a detection on an image outside the test set, is
// invalid (pycocotools' loadRes fails on both).
func gradeDENTEX(ctx context.Context, subDir, ansDir string, _ Options) (*Result, error) {
	at, ids, err := ReadAnswers(ansDir, "image_id", "ground_truth_json")
	if err != nil {
		return nil, err
	}
	gtPath := answerPaths(at, ids, "ground_truth_json", ansDir)
	var gts []dentexAnn
	var imgIDs []int64
	fileToID := map[string]int64{}
	for _, id := range ids {
		g, err := dentexReadGT(gtPath[id])
		if err != nil {
			return nil, fmt.Errorf("grade: dentex answers: %w", err)
		}
		for _, im := range g.Images {
			imgIDs = append(imgIDs, im.ID)
			fileToID[strings.ReplaceAll(im.FileName, ".png", "")] = im.ID
		}
		gts = append(gts, g.Annotations...)
	}
	imgSet := map[int64]bool{}
	for _, i := range imgIDs {
		imgSet[i] = true
	}
	var p Problems
	s := ReadSubmission(subDir, Spec{IDColumn: "image_id", FileColumns: []string{"predictions_json"}}, ids, &p)
	if s == nil || !s.Table.Has("predictions_json") || !s.Table.Has("image_id") {
		return Invalid(p.List()), nil
	}
	var dets []dentexDet
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if _, ok := s.Row[id]; !ok || !fileExists(s.File(id, "predictions_json")) {
			continue
		}
		rel := s.Value(id, "predictions_json")
		d, err := dentexReadPreds(s.File(id, "predictions_json"), id, fileToID)
		if err != nil {
			p.Addf("row %q: %s: %v.", id, rel, err)
			continue
		}
		for _, x := range d {
			if !x.imgOK || !imgSet[x.img] {
				p.Addf("row %q: %s: a detection's image_id %s is not an image of the test set.", id, rel, x.imgText)
				break
			}
		}
		dets = append(dets, d...)
	}
	if p.Empty() && len(dets) == 0 {
		p.Addf("the submission holds no detection at all (pycocotools cannot load an empty result list).")
	}
	if !p.Empty() {
		return Invalid(p.List()), nil
	}
	// pycocotools indexes GT annotations by id (a repeated id resolves to the last one).
	byID := map[int64]dentexAnn{}
	for _, a := range gts {
		byID[a.ID] = a
	}
	m := map[string]float64{}
	var sumAP, sumAP50, sumAP75, sumAR float64
	for ai, asp := range dentexAspects {
		catSet := map[int64]bool{}
		for _, c := range asp.cats {
			catSet[c] = true
		}
		var g []metrics.COCOGT
		for _, a := range gts {
			if !catSet[a.cat[ai]] {
				continue
			}
			r := byID[a.ID]
			g = append(g, metrics.COCOGT{ID: r.ID, ImageID: r.Image, CategoryID: r.cat[ai], Box: r.Box, Area: r.Area, Crowd: r.Crowd})
		}
		d := make([]metrics.COCODet, len(dets))
		for i, x := range dets {
			d[i] = metrics.COCODet{ImageID: x.img, CategoryID: x.cat[ai], Box: x.box, Score: x.score}
		}
		st := metrics.COCOEvaluate(g, d, imgIDs, asp.cats)
		m["ap_"+asp.name], m["ap50_"+asp.name], m["ap75_"+asp.name], m["ar_"+asp.name] = st.AP, st.AP50, st.AP75, st.AR100
		sumAP += st.AP
		sumAP50 += st.AP50
		sumAP75 += st.AP75
		sumAR += st.AR100
	}
	m["ap_mean"], m["ap50_mean"], m["ap75_mean"], m["ar_mean"] = sumAP/3, sumAP50/3, sumAP75/3, sumAR/3
	return Finish("dentex", "ap_mean", m)
}

type dentexAnn struct {
	ID, Image int64
	Box       metrics.COCOBox
	Area      float64
	Crowd     bool
	cat       [3]int64
}

type dentexGT struct {
	Images []struct {
		ID       int64  `json:"id"`
		FileName string `json:"file_name"`
	} `json:"images"`
	Annotations []dentexAnn
}

func dentexReadGT(path string) (*dentexGT, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raw struct {
		Images      json.RawMessage  `json:"images"`
		Annotations []map[string]any `json:"annotations"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	g := &dentexGT{}
	if err := json.Unmarshal(raw.Images, &g.Images); err != nil {
		return nil, fmt.Errorf("%s: images: %w", path, err)
	}
	for i, a := range raw.Annotations {
		id, ok1 := dentexInt(a["id"])
		img, ok2 := dentexInt(a["image_id"])
		box, ok3 := dentexBox(a["bbox"])
		area, ok4 := a["area"].(float64)
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return nil, fmt.Errorf("%s: annotation %d lacks a numeric id, image_id, bbox or area", path, i)
		}
		ann := dentexAnn{ID: id, Image: img, Box: box, Area: area}
		if c, ok := a["iscrowd"]; ok {
			ann.Crowd = c != nil && c != false && c != float64(0)
		}
		for k, asp := range dentexAspects {
			ann.cat[k] = dentexCat(a, asp.field, asp.alt)
		}
		g.Annotations = append(g.Annotations, ann)
	}
	return g, nil
}

// dentexCat is anno.get(field), or anno.get(alt, 1) when that is null or absent.
func dentexCat(a map[string]any, field, alt string) int64 {
	v, ok := a[field]
	if !ok || v == nil {
		v, ok = a[alt]
		if !ok {
			return 1
		}
	}
	if c, ok := dentexInt(v); ok {
		return c
	}
	return dentexNoCat
}

func dentexInt(v any) (int64, bool) {
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

func dentexBox(v any) (metrics.COCOBox, bool) {
	a, ok := v.([]any)
	if !ok || len(a) != 4 {
		return metrics.COCOBox{}, false
	}
	var f [4]float64
	for i, x := range a {
		if f[i], ok = x.(float64); !ok {
			return metrics.COCOBox{}, false
		}
	}
	return metrics.COCOBox{X: f[0], Y: f[1], W: f[2], H: f[3]}, true
}

type dentexDet struct {
	img     int64
	imgOK   bool
	imgText string
	cat     [3]int64
	box     metrics.COCOBox
	score   float64
}

// dentexReadPreds reads one prediction JSON as the grader does.
func dentexReadPreds(path, rowID string, fileToID map[string]int64) ([]dentexDet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var top any
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	var list []any
	switch t := top.(type) {
	case []any:
		list = t
	case map[string]any:
		if a, ok := t["annotations"]; ok {
			if list, ok = a.([]any); !ok {
				return nil, fmt.Errorf(`"annotations" is not a list`)
			}
		} else {
			list = []any{t}
		}
	default:
		return nil, fmt.Errorf("neither a list of detections nor an object")
	}
	// The row's own image id: through the file names, else the number after the last "_".
	rowImg, rowOK := fileToID[rowID]
	rowText := rowID
	if !rowOK {
		parts := strings.Split(rowID, "_")
		if n, err := strconv.ParseInt(strings.TrimSpace(parts[len(parts)-1]), 10, 64); err == nil {
			rowImg, rowOK = n, true
		}
	}
	out := make([]dentexDet, 0, len(list))
	for i, it := range list {
		obj, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("detection %d is not an object", i)
		}
		d := dentexDet{img: rowImg, imgOK: rowOK, imgText: strconv.Quote(rowText)}
		if v, has := obj["image_id"]; has {
			switch x := v.(type) {
			case string:
				if n, ok := fileToID[strings.ReplaceAll(x, ".png", "")]; ok {
					d.img, d.imgOK = n, true
				}
			default:
				d.img, d.imgOK = dentexInt(v)
				d.imgText = fmt.Sprint(v)
			}
		}
		bv, has := obj["bbox"]
		if !has {
			return nil, fmt.Errorf("detection %d has no bbox", i)
		}
		box, ok := dentexBox(bv)
		if !ok {
			return nil, fmt.Errorf("detection %d: bbox is not 4 numbers", i)
		}
		if box.W > box.X && box.H > box.Y && (box.W > box.X+50 || box.H > box.Y+50) {
			box = metrics.COCOBox{X: box.X, Y: box.Y, W: box.W - box.X, H: box.H - box.Y}
		}
		d.box = box
		for k, asp := range dentexAspects {
			d.cat[k] = dentexCat(obj, asp.field, asp.alt)
		}
		d.score = 0.5
		sv, has := obj["score"]
		if !has {
			sv, has = obj["confidence"]
		}
		if has {
			f, ok := sv.(float64)
			if !ok {
				return nil, fmt.Errorf("detection %d: score %v is not a number", i, sv)
			}
			d.score = f
		}
		out = append(out, d)
	}
	return out, nil
}
