package metrics

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// cocoOne evaluates one category (id 1) on the given images.
func cocoOne(gts []COCOGT, dts []COCODet, imgs ...int64) COCOStats {
	return COCOEvaluate(gts, dts, imgs, []int64{1})
}

func gtBox(id, img int64, x, y, w, h float64) COCOGT {
	return COCOGT{ID: id, ImageID: img, CategoryID: 1, Box: COCOBox{x, y, w, h}, Area: w * h}
}

func det(img int64, x, y, w, h, s float64) COCODet {
	return COCODet{ImageID: img, CategoryID: 1, Box: COCOBox{x, y, w, h}, Score: s}
}

func TestCOCOPerfect(t *testing.T) {
	s := cocoOne([]COCOGT{gtBox(1, 7, 0, 0, 10, 10)}, []COCODet{det(7, 0, 0, 10, 10, 0.9)}, 7)
	// One TP at every threshold: precision 1/(1+ε) at all 101 recall points, recall 1.
	for name, v := range map[string]float64{"AP": s.AP, "AP50": s.AP50, "AP75": s.AP75, "APSmall": s.APSmall, "AR1": s.AR1, "AR100": s.AR100, "ARSmall": s.ARSmall} {
		if !closeRel(v, 1) {
			t.Errorf("%s = %v, want 1", name, v)
		}
	}
	// A 10×10 box (area 100 < 32²) is small: medium and large have no GT, so -1.
	if s.APMedium != -1 || s.APLarge != -1 || s.ARMedium != -1 || s.ARLarge != -1 {
		t.Errorf("undefined ranges: %+v", s)
	}
}

// Two GTs; detections TP (0.9), FP (0.8), TP (0.7). Recall after each: 0.5, 0.5, 1;
// precision 1, 1/2, 2/3, made monotone: 1, 2/3, 2/3. Recall thresholds 0.00…0.50 (51 of
// them) take precision 1, 0.51…1.00 (50) take 2/3: AP = (51 + 50·2/3)/101 at every IoU
// threshold.
func TestCOCOHandWorked(t *testing.T) {
	gts := []COCOGT{gtBox(1, 1, 0, 0, 10, 10), gtBox(2, 1, 50, 50, 10, 10)}
	dts := []COCODet{det(1, 0, 0, 10, 10, 0.9), det(1, 200, 200, 10, 10, 0.8), det(1, 50, 50, 10, 10, 0.7)}
	s := cocoOne(gts, dts, 1)
	want := (51 + 50*2.0/3) / 101
	if !closeRel(s.AP, want) || !closeRel(s.AP50, want) || !closeRel(s.AP75, want) {
		t.Errorf("AP %v AP50 %v AP75 %v, want %v", s.AP, s.AP50, s.AP75, want)
	}
	// maxDets 1: only the first detection: recall 1/2. maxDets 100: recall 1.
	if !closeRel(s.AR1, 0.5) || !closeRel(s.AR100, 1) {
		t.Errorf("AR1 %v AR100 %v", s.AR1, s.AR100)
	}
	// A duplicate of the first box in place of the stray FP gives the same numbers: the
	// duplicate is a false positive.
	dts[1] = det(1, 0, 0, 10, 10, 0.8)
	if d := cocoOne(gts, dts, 1); !closeRel(d.AP, want) {
		t.Errorf("duplicate: AP %v, want %v", d.AP, want)
	}
	// Scores reordered so the FP ranks last: perfect ranking, AP 1.
	dts[1].Score = 0.1
	if d := cocoOne(gts, dts, 1); !closeRel(d.AP, 1) {
		t.Errorf("FP last: AP %v, want 1", d.AP)
	}
}

// GT [0,0,10,10] and detection [0,0,10,5]: IoU = 50/100 = 0.5, a match at threshold 0.50
// only (pycocotools matches when IoU ≥ t): AP50 = 1, AP75 = 0, AP = 1/10.
func TestCOCOThresholdBoundary(t *testing.T) {
	s := cocoOne([]COCOGT{gtBox(1, 1, 0, 0, 10, 10)}, []COCODet{det(1, 0, 0, 10, 5, 1)}, 1)
	if !closeRel(s.AP50, 1) || s.AP75 != 0 || !closeRel(s.AP, 0.1) {
		t.Errorf("AP50 %v AP75 %v AP %v", s.AP50, s.AP75, s.AP)
	}
}

func TestCOCOEdgeCases(t *testing.T) {
	gts := []COCOGT{gtBox(1, 1, 0, 0, 10, 10)}
	// No detections: precision and recall 0 where GT exists.
	s := cocoOne(gts, nil, 1)
	if s.AP != 0 || s.AR100 != 0 {
		t.Errorf("empty predictions: %+v", s)
	}
	// No GT at all: every entry undefined, -1.
	s = cocoOne(nil, []COCODet{det(1, 0, 0, 10, 10, 1)}, 1)
	if s.AP != -1 || s.AR100 != -1 {
		t.Errorf("empty GT: %+v", s)
	}
	// A detection on a crowd GT is ignored, not a false positive; the real GT is found by
	// the other detection: AP 1.
	gts = append(gts, COCOGT{ID: 2, ImageID: 1, CategoryID: 1, Box: COCOBox{100, 100, 50, 50}, Area: 2500, Crowd: true})
	s = cocoOne(gts, []COCODet{det(1, 110, 110, 10, 10, 0.95), det(1, 0, 0, 10, 10, 0.9)}, 1)
	if !closeRel(s.AP, 1) {
		t.Errorf("crowd: AP %v, want 1", s.AP)
	}
	// Detections of a category or image outside the evaluation are not counted.
	s = COCOEvaluate([]COCOGT{gtBox(1, 1, 0, 0, 10, 10)}, []COCODet{{ImageID: 1, CategoryID: 0, Box: COCOBox{0, 0, 10, 10}, Score: 1}, det(9, 0, 0, 10, 10, 1)}, []int64{1}, []int64{1})
	if s.AP != 0 {
		t.Errorf("foreign category/image: AP %v, want 0", s.AP)
	}
	// A NaN score sorts last (numpy's argsort of −score): the true positive with score 0.1
	// ranks first, the NaN-scored false positive after it, so AP is 1.
	s = cocoOne([]COCOGT{gtBox(1, 1, 0, 0, 10, 10)}, []COCODet{det(1, 50, 50, 10, 10, math.NaN()), det(1, 0, 0, 10, 10, 0.1)}, 1)
	if !closeRel(s.AP, 1) {
		t.Errorf("NaN score: AP %v, want 1", s.AP)
	}
	// pycocotools quirk: a GT with annotation id 0 matched by a detection still counts as
	// unmatched, so the detection is a false positive.
	s = cocoOne([]COCOGT{gtBox(0, 1, 0, 0, 10, 10)}, []COCODet{det(1, 0, 0, 10, 10, 1)}, 1)
	if s.AP != 0 {
		t.Errorf("GT id 0: AP %v, want 0", s.AP)
	}
}

// Property: ranking the true positives above the false positives gives AP 1; shuffling the
// scores gives a lower AP.
func TestCOCOShuffledScoresLower(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var gts []COCOGT
	var dts []COCODet
	for i := 0; i < 50; i++ {
		x, y := float64(i%10)*100, float64(i/10)*100
		gts = append(gts, gtBox(int64(i+1), 1, x, y, 40, 40))
		dts = append(dts, det(1, x, y, 40, 40, 0.5+0.5*rng.Float64()))
		dts = append(dts, det(1, x+50, y+50, 20, 20, 0.5*rng.Float64()))
	}
	good := cocoOne(gts, dts, 1)
	if !closeRel(good.AP, 1) {
		t.Fatalf("ordered AP %v, want 1", good.AP)
	}
	for i := range dts {
		dts[i].Score = rng.Float64()
	}
	if bad := cocoOne(gts, dts, 1); !(bad.AP < good.AP) || math.IsNaN(bad.AP) {
		t.Errorf("shuffled AP %v not below %v", bad.AP, good.AP)
	}
}

// TestGoldenCOCO compares COCOEvaluate with pycocotools' evaluate/accumulate/summarize
// re-stated in numpy by testdata/golden_2d.py (pycocotools itself is not packaged in
// Debian) on random fixtures: 6 images, 3 categories plus a foreign one, crowd GTs, GT
// areas differing from the box area, all area ranges, tied scores and more than 100
// detections in one image.
func TestGoldenCOCO(t *testing.T) {
	b, err := os.ReadFile("testdata/golden_2d.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		COCO []struct {
			GTs []struct {
				ID         int64      `json:"id"`
				ImageID    int64      `json:"image_id"`
				CategoryID int64      `json:"category_id"`
				IsCrowd    int64      `json:"iscrowd"`
				BBox       [4]float64 `json:"bbox"`
				Area       float64    `json:"area"`
			} `json:"gts"`
			DTs []struct {
				ImageID    int64      `json:"image_id"`
				CategoryID int64      `json:"category_id"`
				BBox       [4]float64 `json:"bbox"`
				Score      float64    `json:"score"`
			} `json:"dts"`
			ImgIDs []int64   `json:"img_ids"`
			CatIDs []int64   `json:"cat_ids"`
			Stats  []float64 `json:"stats"`
		} `json:"coco"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.COCO) == 0 {
		t.Fatal("no COCO fixtures")
	}
	for i, c := range g.COCO {
		var gts []COCOGT
		for _, a := range c.GTs {
			gts = append(gts, COCOGT{ID: a.ID, ImageID: a.ImageID, CategoryID: a.CategoryID,
				Box: COCOBox{a.BBox[0], a.BBox[1], a.BBox[2], a.BBox[3]}, Area: a.Area, Crowd: a.IsCrowd != 0})
		}
		var dts []COCODet
		for _, d := range c.DTs {
			dts = append(dts, COCODet{ImageID: d.ImageID, CategoryID: d.CategoryID,
				Box: COCOBox{d.BBox[0], d.BBox[1], d.BBox[2], d.BBox[3]}, Score: d.Score})
		}
		got := COCOEvaluate(gts, dts, c.ImgIDs, c.CatIDs).Slice()
		for k := range got {
			if !closeRel(got[k], c.Stats[k]) {
				t.Errorf("case %d stats[%d] = %v, reference %v", i, k, got[k], c.Stats[k])
			}
		}
	}
}
