package stats

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// golden mirrors testdata/golden.json (see testdata/extract.py): scipy 1.10.1 and sklearn
// 1.2.1 values.
type golden struct {
	Corr []struct {
		X, Y                       []float64
		Pearson, Spearman, Kendall float64
	} `json:"corr"`
	Bal []struct {
		True, Pred []string
		Value      float64
	} `json:"balanced_accuracy"`
}

func load(t *testing.T) golden {
	t.Helper()
	b, err := os.ReadFile("testdata/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Corr) == 0 || len(g.Bal) == 0 {
		t.Fatal("golden file has no cases")
	}
	return g
}

// tol: float64 sums over at most 300 values in a different order from numpy's pairwise
// summation differ by a few ulps of the sums; 1e-12 is far above that and far below any
// real error.
const tol = 1e-12

func TestCorrelationsMatchScipy(t *testing.T) {
	for i, c := range load(t).Corr {
		for _, m := range []struct {
			name      string
			got, want float64
		}{{"pearson", Pearson(c.X, c.Y), c.Pearson}, {"spearman", Spearman(c.X, c.Y), c.Spearman}, {"kendall", Kendall(c.X, c.Y), c.Kendall}} {
			if math.Abs(m.got-m.want) > tol {
				t.Errorf("case %d (n %d) %s: %.15g, scipy %.15g", i, len(c.X), m.name, m.got, m.want)
			}
		}
		s, p, r, k := IQA(c.X, c.Y)
		if want := math.Abs(c.Pearson) + math.Abs(c.Spearman) + math.Abs(c.Kendall); math.Abs(s-want) > 3*tol || s != p+r+k {
			t.Errorf("case %d IQA score %v, want %v", i, s, want)
		}
	}
}

func TestBalancedAccuracyMatchesSklearn(t *testing.T) {
	for i, c := range load(t).Bal {
		if got := BalancedAccuracy(c.True, c.Pred); math.Abs(got-c.Value) > tol {
			t.Errorf("case %d: %v, sklearn %v", i, got, c.Value)
		}
	}
}

func TestDegenerate(t *testing.T) {
	flat := []float64{1, 1, 1}
	if s, _, _, _ := IQA(flat, []float64{1, 2, 3}); s != 0 {
		t.Errorf("a constant prediction scores %v, want 0", s)
	}
	if !math.IsNaN(Kendall(flat, []float64{1, 2, 3})) || !math.IsNaN(Pearson([]float64{1}, []float64{2})) {
		t.Error("undefined correlations are not NaN")
	}
	if !math.IsNaN(BalancedAccuracy([]int{}, []int{})) {
		t.Error("balanced accuracy of nothing is not NaN")
	}
}
