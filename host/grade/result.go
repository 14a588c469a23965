package grade

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Value is a metric value. In JSON it is a number, null for NaN (undefined, e.g. a rank
// against an undefined metric), or the strings "Infinity" / "-Infinity" (PSNR of identical
// images), since JSON has no non-finite numbers.
type Value float64

// MarshalJSON implements json.Marshaler.
func (v Value) MarshalJSON() ([]byte, error) {
	f := float64(v)
	switch {
	case math.IsNaN(f):
		return []byte("null"), nil
	case math.IsInf(f, 1):
		return []byte(`"Infinity"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-Infinity"`), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (v *Value) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "null":
		*v = Value(math.NaN())
		return nil
	case `"Infinity"`:
		*v = Value(math.Inf(1))
		return nil
	case `"-Infinity"`:
		*v = Value(math.Inf(-1))
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("metric value %s: %w", b, err)
	}
	*v = Value(f)
	return nil
}

// Metric is a named value.
type Metric struct {
	Name  string `json:"name"`
	Value Value  `json:"value"`
}

// Medals, compared as ReX-MLE's grade_csv does (rexmle.md §3).
const (
	MedalGold        = "gold"
	MedalSilver      = "silver"
	MedalBronze      = "bronze"
	MedalAboveMedian = "above_median" // no medal, but mean_position ≤ the median row's
	MedalNone        = "none"
)

// Result is the outcome of grading one submission.
type Result struct {
	Valid  bool     `json:"valid"`
	Errors []string `json:"errors"`
	// Primary is the challenge's headline metric (rexmle.md §4).
	Primary Metric `json:"primary"`
	// Metrics holds every metric the grader computes, with the leaderboard's column names,
	// plus "<metric>_position" for each ranked metric, as the ReX grader returns them.
	Metrics      map[string]Value `json:"metrics"`
	MeanPosition Value            `json:"mean_position"`
	Percentile   Value            `json:"percentile"`
	Medal        string           `json:"medal"`
}

// Invalid is the Result of a submission that breaks the rules in errs.
func Invalid(errs []string) *Result {
	if len(errs) == 0 {
		errs = []string{"submission is invalid"}
	}
	return &Result{
		Errors:       errs,
		Metrics:      map[string]Value{},
		Primary:      Metric{Value: Value(math.NaN())},
		MeanPosition: Value(math.NaN()),
		Percentile:   Value(math.NaN()),
		Medal:        MedalNone,
	}
}

// Finish builds the valid Result of challenge id from its metrics (leaderboard column names)
// and the name of its primary metric, and ranks it against the embedded leaderboard.
func Finish(id, primary string, metrics map[string]float64) (*Result, error) {
	pv, ok := metrics[primary]
	if !ok {
		return nil, fmt.Errorf("grade: %s: primary metric %q not computed", id, primary)
	}
	lb, err := LoadLeaderboard(id)
	if err != nil {
		return nil, err
	}
	rk := lb.Rank(metrics)
	r := &Result{
		Valid:        true,
		Errors:       []string{},
		Primary:      Metric{Name: primary, Value: Value(pv)},
		Metrics:      make(map[string]Value, len(metrics)+len(rk.Positions)),
		MeanPosition: Value(rk.MeanPosition),
		Percentile:   Value(rk.Percentile),
		Medal:        rk.Medal,
	}
	for k, v := range metrics {
		r.Metrics[k] = Value(v)
	}
	for k, v := range rk.Positions {
		r.Metrics[k+"_position"] = Value(v)
	}
	return r, nil
}
