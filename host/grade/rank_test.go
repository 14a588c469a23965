package grade

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
)

// rexmle.md §3 item 5: LDCT-IQA score 2.609 is position 6 on the 6-row board, so
// percentile = 1 − 5/6.
func TestRankLDCTExample(t *testing.T) {
	lb, err := LoadLeaderboard("ldct-iqa")
	if err != nil {
		t.Fatal(err)
	}
	rk := lb.Rank(map[string]float64{"score": 2.609, "plcc": 0.9})
	if rk.Positions["score"] != 6 || len(rk.Positions) != 1 {
		t.Fatalf("positions %v, want score 6 only (plcc is not a leaderboard column)", rk.Positions)
	}
	if math.Abs(rk.Percentile-(1-5.0/6)) > 1e-12 || rk.Medal != MedalNone {
		t.Errorf("percentile %v medal %q", rk.Percentile, rk.Medal)
	}
	// Better than every row: position 1, percentile 1, gold.
	rk = lb.Rank(map[string]float64{"score": 3})
	if rk.MeanPosition != 1 || rk.Percentile != 1 || rk.Medal != MedalGold {
		t.Errorf("best: %+v", rk)
	}
	// Worse than every row: position N+1 = 7, percentile 0.
	rk = lb.Rank(map[string]float64{"score": 0})
	if rk.MeanPosition != 7 || rk.Percentile != 0 {
		t.Errorf("worst: %+v", rk)
	}
	// NaN metric: pandas gives a NaN position.
	rk = lb.Rank(map[string]float64{"score": math.NaN()})
	if !math.IsNaN(rk.MeanPosition) || !math.IsNaN(rk.Percentile) || rk.Medal != MedalNone {
		t.Errorf("nan: %+v", rk)
	}
}

// A submission equal to a leaderboard row ties with it; rank(method='min') then gives the
// row's own position, so re-ranking each row must reproduce the board's published
// mean_position (rounded to 2 decimals in the files) on every one of the 183 rows of the 20
// boards (row counts from rexmle.md §4: fifteen of 10, 8, 7 and three of 6).
func TestRankReproducesLeaderboardPositions(t *testing.T) {
	exact, total := 0, 0
	for _, id := range ChallengeIDs {
		lb, err := LoadLeaderboard(id)
		if err != nil {
			t.Fatal(err)
		}
		total += lb.N()
		for i := 0; i < lb.N(); i++ {
			m := map[string]float64{}
			for _, c := range lb.Metrics {
				m[c] = lb.Values[c][i]
			}
			rk := lb.Rank(m)
			for c, p := range rk.Positions {
				if p < 1 || p > float64(lb.N()) {
					t.Errorf("%s row %d %s: position %v outside 1..%d", id, i, c, p, lb.N())
				}
			}
			if math.Abs(rk.MeanPosition-lb.MeanPos[i]) < 0.006 {
				exact++
			} else {
				t.Errorf("%s row %d: mean_position %v, published %v", id, i, rk.MeanPosition, lb.MeanPos[i])
			}
		}
	}
	if total != 183 || exact != total {
		t.Errorf("%d of %d rows reproduce their mean_position, want 183 of 183", exact, total)
	}
}

func TestValueJSON(t *testing.T) {
	in := map[string]Value{"a": 1.5, "b": Value(math.NaN()), "c": Value(math.Inf(1)), "d": Value(math.Inf(-1))}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"a":1.5,"b":null,"c":"Infinity","d":"-Infinity"}` {
		t.Fatalf("got %s", b)
	}
	var out map[string]Value
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out["a"] != 1.5 || !math.IsNaN(float64(out["b"])) || !math.IsInf(float64(out["c"]), 1) || !math.IsInf(float64(out["d"]), -1) {
		t.Errorf("round trip %v", out)
	}
}

func TestPandasStrings(t *testing.T) {
	cases := []struct{ in, want []string }{
		{[]string{"001", "2"}, []string{"1", "2"}},
		{[]string{"1", "2.5"}, []string{"1.0", "2.5"}},
		{[]string{"1", ""}, []string{"1.0", "nan"}},
		{[]string{"a", "", "003"}, []string{"a", "nan", "003"}},
		{[]string{"1e16", "0.00001"}, []string{"1e+16", "1e-05"}},
	}
	for _, c := range cases {
		got := pandasStrings(c.in)
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%q → %q, want %q", c.in, got, c.want)
				break
			}
		}
	}
}

func TestRegistry(t *testing.T) {
	if len(ChallengeIDs) != 20 {
		t.Fatalf("%d ids", len(ChallengeIDs))
	}
	if _, err := Lookup("ravir"); err == nil {
		t.Error("ravir accepted")
	}
	for _, id := range ChallengeIDs {
		if _, err := LoadLeaderboard(id); err != nil {
			t.Error(err)
		}
	}
}

// The LDCT-IQA board has 6 rows; a score of 2.7 beats every row but the first (2.7427).
func ExampleLeaderboard_Rank() {
	lb, _ := LoadLeaderboard("ldct-iqa")
	rk := lb.Rank(map[string]float64{"score": 2.7})
	fmt.Printf("position %v of %d, percentile %.3f, %s\n", rk.MeanPosition, lb.N(), rk.Percentile, rk.Medal)
	// Output: position 2 of 6, percentile 0.833, silver
}
