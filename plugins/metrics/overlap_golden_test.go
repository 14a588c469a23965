package metrics

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// The golden file is written by testdata/golden_volumetric.py (the command is recorded in
// it) from numpy/scipy/skimage re-implementations of the ReX-MLE graders' metrics.

type volShape struct {
	Kind  string `json:"kind"`
	C     [3]int `json:"c"`
	R     [3]int `json:"r"`
	Lo    [3]int `json:"lo"`
	Hi    [3]int `json:"hi"`
	Axis  int    `json:"axis"`
	Rad   int    `json:"-"`
	From  int    `json:"from"`
	To    int    `json:"to"`
	R1    int    `json:"r1"`
	R2    int    `json:"r2"`
	H     int    `json:"h"`
	Label uint8  `json:"label"`
}

// UnmarshalJSON reads "r", an integer radius for tubes and a triple for ellipsoids.
func (s *volShape) UnmarshalJSON(b []byte) error {
	type plain volShape
	var raw struct {
		plain
		R json.RawMessage `json:"r"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*s = volShape(raw.plain)
	if len(raw.R) > 0 {
		if raw.R[0] == '[' {
			return json.Unmarshal(raw.R, &s.R)
		}
		return json.Unmarshal(raw.R, &s.Rad)
	}
	return nil
}

type volCase struct {
	Name    string         `json:"name"`
	Dims    [3]int         `json:"dims"`
	Spacing [3]float64     `json:"spacing"`
	GT      []volShape     `json:"gt"`
	Pred    []volShape     `json:"pred"`
	Want    map[string]any `json:"want"`
}

type volGolden struct {
	Command string    `json:"command"`
	Binary  []volCase `json:"binary"`
	Labels  []volCase `json:"labels"`
	Boxes   []struct {
		A                  [2][3]int `json:"a"`
		B                  [2][3]int `json:"b"`
		RexIoU             float64   `json:"rex_iou"`
		RexBoundaryIoU     float64   `json:"rex_boundary_iou"`
		OfficialIoU        float64   `json:"official_iou"`
		OfficialBoundaryIo float64   `json:"official_boundary_iou"`
	} `json:"boxes"`
	Real *volCase `json:"real"`
}

func loadVolGolden(t testing.TB) *volGolden {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "golden_volumetric.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g volGolden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Binary) == 0 || len(g.Labels) == 0 || len(g.Boxes) == 0 {
		t.Fatal("golden_volumetric.json has no cases")
	}
	return &g
}

func sq(v int) int { return v * v }

// paintVol builds the label volume of a list of shapes with the integer formulas of
// golden_volumetric.py's paint.
func paintVol(dims [3]int, shapes []volShape) []uint8 {
	nx, ny, nz := dims[0], dims[1], dims[2]
	out := make([]uint8, nx*ny*nz)
	for _, s := range shapes {
		for z := 0; z < nz; z++ {
			for y := 0; y < ny; y++ {
				for x := 0; x < nx; x++ {
					var in bool
					switch s.Kind {
					case "ellipsoid":
						rx, ry, rz := s.R[0], s.R[1], s.R[2]
						in = sq(ry*rz*(x-s.C[0]))+sq(rx*rz*(y-s.C[1]))+sq(rx*ry*(z-s.C[2])) <= sq(rx*ry*rz)
					case "box":
						in = x >= s.Lo[0] && x <= s.Hi[0] && y >= s.Lo[1] && y <= s.Hi[1] && z >= s.Lo[2] && z <= s.Hi[2]
					case "tube":
						r2 := s.Rad * s.Rad
						switch s.Axis {
						case 0:
							in = sq(y-s.C[1])+sq(z-s.C[2]) <= r2 && x >= s.From && x <= s.To
						case 1:
							in = sq(x-s.C[0])+sq(z-s.C[2]) <= r2 && y >= s.From && y <= s.To
						default:
							in = sq(x-s.C[0])+sq(y-s.C[1]) <= r2 && z >= s.From && z <= s.To
						}
					case "ring":
						d2 := sq(x-s.C[0]) + sq(y-s.C[1])
						in = d2 >= s.R1*s.R1 && d2 <= s.R2*s.R2 && abs3(z-s.C[2]) <= s.H
					case "voxel":
						in = x == s.C[0] && y == s.C[1] && z == s.C[2]
					default:
						panic("unknown shape " + s.Kind)
					}
					if in {
						out[(z*ny+y)*nx+x] = s.Label
					}
				}
			}
		}
	}
	return out
}

func abs3(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func binarise(l []uint8) []uint8 {
	out := make([]uint8, len(l))
	for i, v := range l {
		if v != 0 {
			out[i] = 1
		}
	}
	return out
}

// wantF reads a golden number, accepting "NaN", "+Inf" and "-Inf".
func wantF(t testing.TB, w map[string]any, k string) (float64, bool) {
	t.Helper()
	v, ok := w[k]
	if !ok {
		return 0, false
	}
	switch x := v.(type) {
	case float64:
		return x, true
	case string:
		switch x {
		case "NaN":
			return math.NaN(), true
		case "+Inf":
			return math.Inf(1), true
		case "-Inf":
			return math.Inf(-1), true
		}
	}
	t.Fatalf("golden %s: unexpected value %v", k, v)
	return 0, false
}

// closeTo is the test tolerance: 1e-6 relative (absolute near 0); NaN equals NaN and
// infinities must match exactly.
func closeTo(got, want float64) bool {
	if math.IsNaN(want) || math.IsNaN(got) {
		return math.IsNaN(want) && math.IsNaN(got)
	}
	if math.IsInf(want, 0) || math.IsInf(got, 0) {
		return got == want
	}
	return math.Abs(got-want) <= 1e-6*math.Max(1, math.Max(math.Abs(got), math.Abs(want)))
}

func check(t *testing.T, w map[string]any, k string, got float64) {
	t.Helper()
	want, ok := wantF(t, w, k)
	if !ok {
		t.Errorf("%s: missing from golden file", k)
		return
	}
	if !closeTo(got, want) {
		t.Errorf("%s = %.17g, scipy/skimage reference %.17g", k, got, want)
	}
}

func sha32(l []int32) string {
	b := make([]byte, 4*len(l))
	for i, v := range l {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func sha8(l []uint8) string {
	h := sha256.Sum256(l)
	return hex.EncodeToString(h[:])
}

func TestOverlapGolden(t *testing.T) {
	g := loadVolGolden(t)
	for _, c := range g.Binary {
		t.Run(c.Name, func(t *testing.T) {
			gt, pred := binarise(paintVol(c.Dims, c.GT)), binarise(paintVol(c.Dims, c.Pred))
			o, err := BinaryOverlap(gt, pred)
			if err != nil {
				t.Fatal(err)
			}
			check(t, c.Want, "gt_voxels", float64(o.GT))
			check(t, c.Want, "pred_voxels", float64(o.Pred))
			check(t, c.Want, "inter", float64(o.Inter))
			check(t, c.Want, "dice_isles", o.Dice(1))
			check(t, c.Want, "dm_dice", o.Dice(math.NaN()))
			f1, err := LesionF1(gt, pred, c.Dims, Conn26, 1)
			if err != nil {
				t.Fatal(err)
			}
			check(t, c.Want, "lesion_f1", f1)
			d, err := LesionCountDiff(gt, pred, c.Dims, Conn26)
			if err != nil {
				t.Fatal(err)
			}
			check(t, c.Want, "lesion_count_diff", float64(d))
			check(t, c.Want, "abs_volume_diff_ml", AbsVolumeDiff(o, ISLESVoxelML(c.Spacing)))
		})
	}
}

func TestClassDiceGolden(t *testing.T) {
	g := loadVolGolden(t)
	for _, c := range g.Labels {
		t.Run(c.Name, func(t *testing.T) {
			gt, pred := paintVol(c.Dims, c.GT), paintVol(c.Dims, c.Pred)
			lo, err := CountLabels(gt, pred)
			if err != nil {
				t.Fatal(err)
			}
			check(t, c.Want, "class_dice_topcow", MeanDice(lo, DiceTopCoW))
			check(t, c.Want, "class_dice_topbrain", MeanDice(lo, DiceTopBrain))
			labels := c.Want["labels"].(map[string]any)
			if len(labels) != len(lo.AllLabels()) {
				t.Errorf("%d labels, reference %d", len(lo.AllLabels()), len(labels))
			}
			for _, l := range lo.AllLabels() {
				w, ok := labels[itoa(l)].(map[string]any)
				if !ok {
					t.Fatalf("label %d missing from golden file", l)
				}
				o := lo[l]
				check(t, w, "gt", float64(o.GT))
				check(t, w, "pred", float64(o.Pred))
				check(t, w, "inter", float64(o.Inter))
				dc := 0.0
				if o.GT > 0 {
					dc = o.DiceEps(1e-7)
				}
				check(t, w, "dice_topcow", dc)
				db := 0.0
				if o.GT > 0 && o.Pred > 0 {
					db = o.Dice(0)
				}
				check(t, w, "dice_topbrain", db)
				iou := 0.0
				if o.GT > 0 && o.Pred > 0 {
					iou = o.IoU()
				}
				check(t, w, "iou", iou)
			}
		})
	}
}

func itoa(v int64) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestDiceRules(t *testing.T) {
	empty := Overlap{}
	if empty.Dice(1) != 1 || !math.IsNaN(empty.Dice(math.NaN())) {
		t.Error("both-empty rules not applied")
	}
	// one voxel predicted, none in the ground truth: every rule gives 0
	fp := Overlap{Pred: 1}
	if fp.Dice(1) != 0 || fp.DiceEps(1e-7) != 0 {
		t.Error("false-positive-only Dice is not 0")
	}
	// PUMA smoothing: absent class in both scores (0+1e-5)/(0+1e-5) = 1
	if empty.DiceSmooth(1e-5) != 1 {
		t.Error("smoothed Dice of empty class is not 1")
	}
	if _, err := BinaryOverlap(make([]uint8, 3), make([]uint8, 4)); err == nil {
		t.Error("size mismatch accepted")
	}
	// TopCoW: a class only in the prediction is ignored; TopBrain counts it as 0.
	lo := LabelOverlaps{1: {GT: 10, Pred: 10, Inter: 10}, 2: {Pred: 5}}
	if got := MeanDice(lo, DiceTopCoW); !closeTo(got, 20/(20+1e-7)) {
		t.Errorf("TopCoW class Dice %v", got)
	}
	if got := MeanDice(lo, DiceTopBrain); got != 0.5 {
		t.Errorf("TopBrain class Dice %v, want (1+0)/2", got)
	}
	if MeanDice(LabelOverlaps{}, DiceTopCoW) != 1 || MeanDice(LabelOverlaps{}, DiceTopBrain) != 0 {
		t.Error("no-label rules not applied")
	}
}

func TestNumpyAggregates(t *testing.T) {
	// numpy.mean([0.1, 0.2, 0.3]) prints 0.20000000000000004 (pairwise sum below 8
	// elements is sequential); numpy.median([0.1, 0.2, 0.3, 0.7]) is 0.25.
	if got := NumpyMean([]float64{0.1, 0.2, 0.3}); got != 0.20000000000000004 {
		t.Errorf("mean %v", got)
	}
	if got := NumpyMedian([]float64{0.7, 0.1, 0.3, 0.2}); got != 0.25 {
		t.Errorf("median %v", got)
	}
	// numpy.percentile([1, 2, 3, 4], 95) = 3.85 (virtual index 2.85, t ≥ 0.5 branch).
	if got := NumpyPercentile([]float64{4, 1, 3, 2}, 95); !closeTo(got, 3.85) {
		t.Errorf("percentile %v", got)
	}
	// numpy.sum(numpy.full(10000, 0.1)) is 1000.0000000000002 (two blocks of 8192 and
	// 1808 elements, each summed pairwise); the sequential sum is 999.9999999998588.
	x := make([]float64, 10000)
	for i := range x {
		x[i] = 0.1
	}
	if got := NumpySum(x); got != 1000.0000000000002 {
		t.Errorf("NumpySum = %.17g, numpy 1000.0000000000002", got)
	}
}
