package metrics

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"testing"
)

// golden2D mirrors testdata/golden_2d.json, written by testdata/golden_2d.py (the exact
// command is recorded in the file) with scipy, skimage and sklearn.
type golden2D struct {
	Command string            `json:"command"`
	Vers    map[string]string `json:"versions"`
	LSA     []struct {
		NR, NC int
		Cost   []any   `json:"cost"`
		Rows   []int   `json:"rows"`
		Cols   []int   `json:"cols"`
		Total  float64 `json:"total"`
	} `json:"lsa"`
	Corr []struct {
		X, Y                       []float64
		Pearson, Spearman, Kendall float64
	} `json:"corr"`
	Bal []struct {
		True, Pred []string
		Value      float64
	} `json:"balanced_accuracy"`
	Images []struct {
		W, H       int
		Pred, GT   []float64
		DataRange  float64 `json:"data_range"`
		SSIM       float64 `json:"ssim"`
		SSIM32     float64 `json:"ssim_float32"`
		PSNR, LNCC float64
	} `json:"images"`
	Cells []struct {
		W, H     int
		GT, Pred []int32
		Results  map[string]struct {
			TP      int `json:"tp"`
			FP      int `json:"fp"`
			FN      int `json:"fn"`
			TrueNum int `json:"true_num"`
			PredNum int `json:"pred_num"`
			F1      float64
		} `json:"results"`
	} `json:"cellseg"`
	Tiled struct {
		Tile    int `json:"tile"`
		Case    int `json:"case"`
		Results map[string]struct {
			TP      int `json:"tp"`
			FP      int `json:"fp"`
			FN      int `json:"fn"`
			TrueNum int `json:"true_num"`
			PredNum int `json:"pred_num"`
			F1      float64
		} `json:"results"`
	} `json:"cellseg_tiled"`
}

func loadGolden2D(t testing.TB) *golden2D {
	t.Helper()
	b, err := os.ReadFile("testdata/golden_2d.json")
	if err != nil {
		t.Fatal(err)
	}
	var g golden2D
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	return &g
}

// closeRel reports |a−b| ≤ 1e-6·max(1, |b|), the tolerance of every golden comparison.
func closeRel(a, b float64) bool {
	if math.IsNaN(b) {
		return math.IsNaN(a)
	}
	return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b))
}

func TestGoldenCorrelations(t *testing.T) {
	g := loadGolden2D(t)
	for i, c := range g.Corr {
		if p := Pearson(c.X, c.Y); !closeRel(p, c.Pearson) {
			t.Errorf("case %d pearson %v, scipy %v", i, p, c.Pearson)
		}
		if s := Spearman(c.X, c.Y); !closeRel(s, c.Spearman) {
			t.Errorf("case %d spearman %v, scipy %v", i, s, c.Spearman)
		}
		if k := Kendall(c.X, c.Y); !closeRel(k, c.Kendall) {
			t.Errorf("case %d kendall %v, scipy %v", i, k, c.Kendall)
		}
	}
	for i, b := range g.Bal {
		if v := BalancedAccuracy(b.True, b.Pred); !closeRel(v, b.Value) {
			t.Errorf("balanced accuracy %d: %v, sklearn %v", i, v, b.Value)
		}
	}
}

func TestStatsEdgeCases(t *testing.T) {
	constant := []float64{2, 2, 2}
	y := []float64{1, 2, 3}
	// scipy returns NaN (with a warning) for a constant input.
	if !math.IsNaN(Pearson(constant, y)) || !math.IsNaN(Spearman(constant, y)) || !math.IsNaN(Kendall(constant, y)) {
		t.Error("constant input must give NaN")
	}
	s, _, _, _ := LDCTScore(constant, y)
	if !math.IsNaN(s) {
		t.Error("LDCT score of a constant prediction must be NaN")
	}
	// nan_policy='propagate'.
	if !math.IsNaN(Pearson([]float64{1, math.NaN(), 3}, y)) || !math.IsNaN(Kendall([]float64{1, math.NaN(), 3}, y)) {
		t.Error("NaN input must give NaN")
	}
	// Perfect agreement: 1 + 1 + 1.
	if s, _, _, _ := LDCTScore(y, y); !closeRel(s, 3) {
		t.Errorf("perfect LDCT score %v, want 3", s)
	}
	// Reversed order: |−1| three times.
	if s, _, _, _ := LDCTScore([]float64{3, 2, 1}, y); !closeRel(s, 3) {
		t.Errorf("reversed LDCT score %v, want 3", s)
	}
	if !math.IsNaN(BalancedAccuracy([]string{}, []string{})) {
		t.Error("empty balanced accuracy")
	}
	if v := TopCoWVariant("Ant", []int{1, 1, 0, 1}); v != "Var_Ant_1_1_0_1" {
		t.Errorf("variant %q", v)
	}
	// Rank ties: scipy.stats.rankdata([3, 1, 3, 2]) = [3.5, 1, 3.5, 2].
	r := RankAverage([]float64{3, 1, 3, 2})
	if r[0] != 3.5 || r[1] != 1 || r[2] != 3.5 || r[3] != 2 {
		t.Errorf("ranks %v", r)
	}
}

func TestGoldenLSA(t *testing.T) {
	g := loadGolden2D(t)
	for i, c := range g.LSA {
		cost := make([]float64, len(c.Cost))
		for k, v := range c.Cost {
			if f, ok := v.(float64); ok {
				cost[k] = f
			} else {
				cost[k] = math.Inf(1)
			}
		}
		rows, cols, err := LinearSumAssignment(cost, c.NR, c.NC)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		total := 0.0
		for k := range rows {
			total += cost[rows[k]*c.NC+cols[k]]
		}
		if !closeRel(total, c.Total) {
			t.Errorf("case %d (%d×%d): total %v, scipy %v", i, c.NR, c.NC, total, c.Total)
		}
		for k := range rows {
			if k >= len(c.Rows) || rows[k] != c.Rows[k] || cols[k] != c.Cols[k] {
				t.Errorf("case %d: assignment %v→%v, scipy %v→%v", i, rows, cols, c.Rows, c.Cols)
				break
			}
		}
	}
	// Every entry of a row infinite: infeasible, as scipy raises.
	inf := math.Inf(1)
	if _, _, err := LinearSumAssignment([]float64{inf, inf, 1, 2}, 2, 2); err == nil {
		t.Error("infeasible matrix accepted")
	}
	if _, _, err := LinearSumAssignment([]float64{math.NaN(), 1, 1, 2}, 2, 2); err == nil {
		t.Error("NaN accepted")
	}
	if r, c, err := LinearSumAssignment(nil, 0, 3); err != nil || len(r) != 0 || len(c) != 0 {
		t.Error("empty matrix")
	}
}

func TestGoldenImages(t *testing.T) {
	g := loadGolden2D(t)
	for i, c := range g.Images {
		p, q := Image{W: c.W, H: c.H, Pix: c.Pred}, Image{W: c.W, H: c.H, Pix: c.GT}
		if dr := DataRange(p, q); dr != c.DataRange {
			t.Errorf("case %d data range %v, want %v", i, dr, c.DataRange)
		}
		s, err := SSIM(p, q, c.DataRange)
		if err != nil || !closeRel(s, c.SSIM) {
			t.Errorf("case %d ssim %v (%v), skimage %v", i, s, err, c.SSIM)
		}
		// The grader's float32 SSIM differs by less than 1e-6 here.
		if !closeRel(s, c.SSIM32) {
			t.Errorf("case %d ssim %v vs skimage float32 %v", i, s, c.SSIM32)
		}
		ps, _ := PSNR(p, q, c.DataRange)
		if !closeRel(ps, c.PSNR) {
			t.Errorf("case %d psnr %v, skimage %v", i, ps, c.PSNR)
		}
		l, err := LNCC(p, q)
		if err != nil || !closeRel(l, c.LNCC) {
			t.Errorf("case %d lncc %v (%v), reference %v", i, l, err, c.LNCC)
		}
	}
}

func TestImageEdgeCases(t *testing.T) {
	a := Image{W: 8, H: 8, Pix: make([]float64, 64)}
	for i := range a.Pix {
		a.Pix[i] = float64(i % 7)
	}
	if p, _ := PSNR(a, a, 6); !math.IsInf(p, 1) {
		t.Errorf("identical PSNR %v, want +Inf", p)
	}
	if s, _ := SSIM(a, a, 6); !closeRel(s, 1) {
		t.Errorf("identical SSIM %v", s)
	}
	if l, _ := LNCC(a, a); !closeRel(l, 1) {
		t.Errorf("identical LNCC %v", l)
	}
	// The negative, min–max normalised, is 1 − the image: correlation −1 in every window.
	neg := Image{W: 8, H: 8, Pix: make([]float64, 64)}
	for i, v := range a.Pix {
		neg.Pix[i] = -v
	}
	if l, _ := LNCC(neg, a); !closeRel(l, -1) {
		t.Errorf("LNCC with the negative %v, want −1", l)
	}
	// A constant offset of 2 on a range of 8 (0…6 and 2…8): MSE 4, PSNR 10·log10(8²/4).
	off := Image{W: 8, H: 8, Pix: make([]float64, 64)}
	for i, v := range a.Pix {
		off.Pix[i] = v + 2
	}
	if r := DataRange(off, a); r != 8 {
		t.Errorf("data range %v, want 8", r)
	} else if p, _ := PSNR(off, a, r); !closeRel(p, 10*math.Log10(64/4.0)) {
		t.Errorf("PSNR with an offset of 2: %v, want %v", p, 10*math.Log10(64/4.0))
	}
	flat := Image{W: 8, H: 8, Pix: make([]float64, 64)}
	if l, _ := LNCC(flat, flat); l != 1 {
		t.Errorf("flat identical LNCC %v, want 1 (no variance, allclose)", l)
	}
	small := Image{W: 6, H: 6, Pix: make([]float64, 36)}
	if _, err := SSIM(small, small, 1); !errors.Is(err, ErrShape) {
		t.Error("SSIM of a 6×6 image must fail (window 7)")
	}
	if _, err := LNCC(a, small); !errors.Is(err, ErrShape) {
		t.Error("shape mismatch accepted")
	}
	// PIL luma of pure red: (255·19595 + 0x8000) >> 16 = 76.
	g, _ := GrayPIL([]uint8{255, 0, 0}, 1, 1, 3)
	if g.Pix[0] != 76 {
		t.Errorf("PIL L of red %v, want 76", g.Pix[0])
	}
	// cv2 INTER_LINEAR 2→4: source x = (d+0.5)/2 − 0.5 = −0.25, 0.25, 0.75, 1.25 → clamped
	// 0, 0.25, 0.75, 1 of the way from 0 to 8.
	r := ResizeLinear(Image{W: 2, H: 1, Pix: []float64{0, 8}}, 4, 1)
	if r.Pix[0] != 0 || r.Pix[1] != 2 || r.Pix[2] != 6 || r.Pix[3] != 8 {
		t.Errorf("resize %v", r.Pix)
	}
}

func TestGoldenCellSeg(t *testing.T) {
	g := loadGolden2D(t)
	for i, c := range g.Cells {
		for th, want := range c.Results {
			var tv float64
			if err := json.Unmarshal([]byte(th), &tv); err != nil {
				t.Fatal(err)
			}
			got, err := CellSegF1(c.GT, c.Pred, c.W, c.H, []float64{tv})
			if err != nil {
				t.Fatal(err)
			}
			r := got[0]
			if r.TP != want.TP || r.FP != want.FP || r.FN != want.FN || r.TrueNum != want.TrueNum || r.PredNum != want.PredNum || !closeRel(r.F1, want.F1) {
				t.Errorf("case %d t=%s: got %+v, grader %+v", i, th, r, want)
			}
		}
	}
}

// The tiling branch with a 40-pixel tile (the reference re-states compute_metric.py's
// tiling with roi_size 40 so that it runs on a small fixture).
func TestGoldenCellSegTiled(t *testing.T) {
	g := loadGolden2D(t)
	c := g.Cells[g.Tiled.Case]
	for th, want := range g.Tiled.Results {
		var tv float64
		if err := json.Unmarshal([]byte(th), &tv); err != nil {
			t.Fatal(err)
		}
		got, err := instanceCellSeg(c.GT, c.Pred, c.W, c.H, []float64{tv}, 0, g.Tiled.Tile)
		if err != nil {
			t.Fatal(err)
		}
		r := got[0]
		if r.TP != want.TP || r.FP != want.FP || r.FN != want.FN || r.TrueNum != want.TrueNum || r.PredNum != want.PredNum || !closeRel(r.F1, want.F1) {
			t.Errorf("t=%s: got %+v, reference %+v", th, r, want)
		}
	}
	if _, err := CellSegF1([]int32{-1, 0, 0, 0}, make([]int32, 4), 2, 2, CellSegThresholds); err == nil {
		t.Error("negative label accepted")
	}
}

// Labels above the dense-table limit take the map path: the same cells with labels
// scaled by 2²⁸ must score the same (F1 1 on a prediction equal to the GT).
func TestCellSegSparseLabels(t *testing.T) {
	const w, h = 20, 20
	gt := make([]int32, w*h)
	for k := 0; k < 3; k++ {
		for y := 5; y < 9; y++ {
			for x := 3 + 5*k; x < 7+5*k; x++ {
				gt[y*w+x] = int32(k+1) << 28
			}
		}
	}
	r, err := CellSegF1(gt, gt, w, h, CellSegThresholds)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r {
		if c.TP != 3 || c.F1 != 1 {
			t.Errorf("%+v", c)
		}
	}
}
