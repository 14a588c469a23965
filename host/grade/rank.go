package grade

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"amid/assets/leaderboards"
)

// Leaderboard is a challenge's ReX-MLE leaderboard: the top rows of the original board.
type Leaderboard struct {
	ID      string
	Metrics []string             // ranked metric columns, in file order
	Lower   map[string]bool      // true where lower is better (metric_config.json)
	Values  map[string][]float64 // per metric, one value per row (NaN where empty)
	Ranks   []float64            // the rank column
	MeanPos []float64            // the mean_position column
}

// LoadLeaderboard parses the embedded leaderboard of challenge id.
func LoadLeaderboard(id string) (*Leaderboard, error) {
	raw, cfg, err := leaderboards.Files(id)
	if err != nil {
		return nil, fmt.Errorf("grade: %w", err)
	}
	return parseLeaderboard(id, raw, cfg)
}

func parseLeaderboard(id string, raw, cfg []byte) (*Leaderboard, error) {
	var mc struct {
		Directions map[string]string `json:"metric_directions"`
	}
	if err := json.Unmarshal(cfg, &mc); err != nil {
		return nil, fmt.Errorf("grade: %s metric_config.json: %w", id, err)
	}
	rows, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
	if err != nil || len(rows) < 2 {
		return nil, fmt.Errorf("grade: %s leaderboard.csv is not a table: %w", id, err)
	}
	lb := &Leaderboard{ID: id, Lower: map[string]bool{}, Values: map[string][]float64{}}
	head := rows[0]
	num := func(s string) float64 {
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return math.NaN()
		}
		return f
	}
	for j, col := range head {
		vals := make([]float64, len(rows)-1)
		for i, r := range rows[1:] {
			if j < len(r) {
				vals[i] = num(r[j])
			} else {
				vals[i] = math.NaN()
			}
		}
		switch {
		case col == "rank":
			lb.Ranks = vals
		case col == "mean_position":
			lb.MeanPos = vals
		case col == "team" || strings.HasSuffix(col, "_position"):
		default:
			lb.Metrics = append(lb.Metrics, col)
			lb.Values[col] = vals
			lb.Lower[col] = mc.Directions[col] == "lower_better"
		}
	}
	if lb.MeanPos == nil {
		return nil, fmt.Errorf("grade: %s leaderboard.csv has no mean_position column", id)
	}
	return lb, nil
}

// N is the number of leaderboard rows.
func (lb *Leaderboard) N() int { return len(lb.MeanPos) }

// Ranking is where a submission falls on a leaderboard.
type Ranking struct {
	Positions    map[string]float64 // per ranked metric
	MeanPosition float64
	Percentile   float64
	Medal        string
}

// Rank places a submission's metrics on the leaderboard as the ReX graders do: every
// leaderboard metric the submission has is ranked with pandas rank(method='min') (position
// = 1 + number of rows strictly better; NaN rows take no part; a NaN submission value gets
// a NaN position, so mean_position and percentile are NaN too, as in pandas).
func (lb *Leaderboard) Rank(m map[string]float64) Ranking {
	rk := Ranking{Positions: map[string]float64{}, Medal: MedalNone}
	sum := 0.0
	for _, col := range lb.Metrics {
		v, ok := m[col]
		if !ok {
			continue
		}
		pos := math.NaN()
		if !math.IsNaN(v) {
			better := 0
			for _, x := range lb.Values[col] {
				if math.IsNaN(x) {
					continue
				}
				if (lb.Lower[col] && x < v) || (!lb.Lower[col] && x > v) {
					better++
				}
			}
			pos = float64(1 + better)
		}
		rk.Positions[col] = pos
		sum += pos
	}
	if len(rk.Positions) == 0 {
		rk.MeanPosition, rk.Percentile = math.NaN(), math.NaN()
		return rk
	}
	mp := sum / float64(len(rk.Positions))
	rk.MeanPosition = mp
	rk.Percentile = 1 - (mp-1)/float64(lb.N())
	rk.Medal = lb.medal(mp)
	return rk
}

// medal compares mean_position with the leaderboard sorted by rank: rows 1, 2, 3 give gold,
// silver, bronze when mp ≤ theirs; the row at index N/2 gives above_median.
func (lb *Leaderboard) medal(mp float64) string {
	n := lb.N()
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	if lb.Ranks != nil {
		sort.SliceStable(idx, func(a, b int) bool { return lb.Ranks[idx[a]] < lb.Ranks[idx[b]] })
	}
	th := func(k int) (float64, bool) {
		if k < n {
			return lb.MeanPos[idx[k]], true
		}
		return 0, false
	}
	if t, ok := th(0); ok && mp <= t {
		return MedalGold
	}
	if t, ok := th(1); ok && mp <= t {
		return MedalSilver
	}
	if t, ok := th(2); ok && mp <= t {
		return MedalBronze
	}
	if t, ok := th(n / 2); ok && mp <= t {
		return MedalAboveMedian
	}
	return MedalNone
}
