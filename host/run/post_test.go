package run

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"amid/host/folds"
	"amid/host/planner"
	"amid/host/task"
)

func TestPostOptions(t *testing.T) {
	schema := json.RawMessage(`{"properties":{"postprocess":{"enum":["none","lcc"]},"lane":{"enum":["2d"]}}}`)
	if got := postOptions(schema); !slices.Equal(got, []string{"none", "lcc"}) {
		t.Errorf("options %v", got)
	}
	if got := postOptions(json.RawMessage(`{"properties":{}}`)); got != nil {
		t.Errorf("options without the property: %v", got)
	}
	cfg, err := withOption(json.RawMessage(`{"lane":"2d","postprocess":"none"}`), "postprocess", "lcc")
	if err != nil || string(cfg) != `{"lane":"2d","postprocess":"lcc"}` {
		t.Errorf("config %s %v", cfg, err)
	}
}

// TestLaneOptions: the options a lane is offered are those its plugin's schema allows for
// its configuration, as the segmentation plugin allows "smooth" for its forest lane only;
// the reserve counts the most any lane allows, and a plugin whose schema leaves one option
// offers no choice.
func TestLaneOptions(t *testing.T) {
	dir := t.TempDir()
	in := planner.Input{Plugins: []planner.Plugin{
		{Name: "seg", Schema: json.RawMessage(`{"type":"object","properties":{"lane":{"enum":["2d","forest"]},"postprocess":{"enum":["none","lcc","smooth"]}},
			"if":{"properties":{"lane":{"const":"forest"}}},"else":{"properties":{"postprocess":{"not":{"const":"smooth"}}}}}`)},
		{Name: "one", Schema: json.RawMessage(`{"properties":{"postprocess":{"enum":["none"]}}}`)},
	}}
	r := &Runner{dir: dir, st: &State{}}
	if _, err := writeJSON(r.path("planner-input.json"), in); err != nil {
		t.Fatal(err)
	}
	lane := func(id, plugin, cfg string) *LaneState {
		return &LaneState{ID: id, Lane: planner.Lane{Plugin: plugin, Config: json.RawMessage(cfg)}}
	}
	forest, unet, other := lane("forest", "seg", `{"lane":"forest","postprocess":"none"}`), lane("2d", "seg", `{"lane":"2d"}`), lane("x", "one", `{}`)
	r.st.Lanes = []*LaneState{unet, other}
	for _, c := range []struct {
		l    *LaneState
		want []string
	}{{forest, []string{"none", "lcc", "smooth"}}, {unet, []string{"none", "lcc"}}, {other, nil}} {
		if got := r.laneOptions(c.l); !slices.Equal(got, c.want) {
			t.Errorf("lane %s: options %v, want %v", c.l.ID, got, c.want)
		}
	}
	if n := r.postOptionCount(); n != 2 {
		t.Errorf("%d options reserved for a U-Net and a lane without a choice, want 2", n)
	}
	r.st.Lanes = append(r.st.Lanes, forest)
	if n := r.postOptionCount(); n != 3 {
		t.Errorf("%d options reserved with the forest among the lanes, want 3", n)
	}
}

// TestPostWhileFits: post-processing options are tried while one more and the test
// predictions after it fit the budget, each timed by the one before; the last ones are
// dropped, not the budget. The numbers are those of app/cli's TestPlainTaskOfEveryKind
// run that ended 0.3 s past its 40 s budget: 8 training cases in 2 folds (4 validation
// cases), 2 test cases, a plugin start of 0.1 s, an option's prediction and scoring of
// 0.5 s, and the final phases started with 2.9 s left. One more option and the test
// predictions then need 1.25 × ((4 + 2 × 2) × (0.5 − 0.1)/4 + 3 × 0.1) + 0.1 (the
// export's plugin start) = 1.475 s: after 3 options 1.4 s is left, and fill is dropped,
// where trying all four left 0.9 s for the test predictions and the export, which took 1.5 s.
func TestPostWhileFits(t *testing.T) {
	opts := []string{"none", "lcc", "small", "fill"}
	for _, c := range []struct {
		name      string
		remaining time.Duration
		perCase   time.Duration // the slowest validation's, before the first option
		take      time.Duration // each option's prediction and scoring
		want      int
	}{
		{"late", 2900 * time.Millisecond, 100 * time.Millisecond, 500 * time.Millisecond, 3},
		{"on time", 10 * time.Second, 100 * time.Millisecond, 500 * time.Millisecond, 4},
		// The first option is judged by the validations: 1.25 × (8 × 0.2 + 0.3) + 0.1 = 2.475 s.
		{"slow validations", 2400 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond, 0},
		// The options turn out slower than the validations: 1 s each, 0.225 s a case,
		// 1.25 × (8 × 0.225 + 0.3) + 0.1 = 2.725 s after the first.
		{"slower options", 3500 * time.Millisecond, 100 * time.Millisecond, time.Second, 1},
		// Before any prediction was timed (the reserve was its fallback) the first option
		// is tried, and times the next.
		{"untimed", time.Second, 0, 500 * time.Millisecond, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			at := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
			var logged []string
			r := &Runner{
				st:   &State{Budget: 40 * time.Second, Folds: 2, PredictPerCase: c.perCase, PluginStart: 100 * time.Millisecond},
				data: &task.Dataset{Train: make([]task.Case, 8), Test: make([]task.Case, 2)},
				env: Env{Now: func() time.Time { return at }, Events: func(e Event) {
					logged = append(logged, e.Message)
				}},
				began:  at,
				spent0: 40*time.Second - c.remaining,
			}
			var tried []string
			err := r.whileFits(opts, 4, func(o string) error {
				tried = append(tried, o)
				at = at.Add(c.take)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(tried, opts[:c.want]) {
				t.Errorf("tried %v, want %v; log %q", tried, opts[:c.want], logged)
			}
			if c.want < len(opts) && (len(logged) != 1 || !strings.Contains(logged[0], "post-processing "+strings.Join(opts[c.want:], ", ")+" is not tried")) {
				t.Errorf("log %q, want the options not tried named", logged)
			}
		})
	}
	r := &Runner{st: &State{Budget: time.Minute}, data: &task.Dataset{}}
	if err := r.whileFits(opts, 4, func(string) error { return errors.New("disk full") }); err == nil || err.Error() != "disk full" {
		t.Errorf("an option's error: %v", err)
	}
}

// TestPostFolds: the options are tried on the validation cases of every fold with a model
// when all of them fit what is left, else on the one fold's with the most cases, the
// chosen fold k on a tie. 20 training and 10 test cases in 5 folds of 4, 0.5 s a predicted
// case and 0.2 s a plugin start, 5 options, one model: schedule.Reserve keeps 1.25 × ((2 ×
// 10 + 5 × 16) × 0.5 + (2 + 5) × 0.2) = 64.25 s for the four folds with a model (16
// cases), their other plugin starts 1.25 × 5 × 3 × 0.2 = 3.75 s more, and the export
// 0.2 s: 68.2 s in all. With 22 training cases two folds hold 5, and with 10 s left the
// first of them with a model is taken over a k of 4.
func TestPostFolds(t *testing.T) {
	at := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		train     int
		remaining time.Duration
		k         int
		want      func(sizes map[int]int) []int
	}{
		{20, 69 * time.Second, 3, func(map[int]int) []int { return []int{0, 1, 3, 4} }},
		{20, 68 * time.Second, 3, func(map[int]int) []int { return []int{3} }},
		{22, 10 * time.Second, -1, func(sizes map[int]int) []int {
			for k := range 5 {
				if k != 2 && sizes[k] == 5 {
					return []int{k}
				}
			}
			return nil
		}},
	} {
		dir := t.TempDir()
		data := &task.Dataset{Train: make([]task.Case, c.train), Test: make([]task.Case, 10)}
		for i := range data.Train {
			data.Train[i] = task.Case{ID: fmt.Sprintf("c%02d", i), Patient: fmt.Sprintf("p%02d", i)}
		}
		fl, err := folds.Lock(data.Train, 5, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := fl.Save(filepath.Join(dir, "folds.json")); err != nil {
			t.Fatal(err)
		}
		forest := &LaneState{ID: "forest", PredictPerCase: 500 * time.Millisecond, Folds: map[int]FoldState{}}
		sizes := map[int]int{}
		for k := range 5 {
			_, v, err := fl.Split(data.Train, k)
			if err != nil {
				t.Fatal(err)
			}
			sizes[k] = len(v)
			if k != 2 { // fold 2 has no model
				forest.Folds[k] = FoldState{Status: FoldDone, Checkpoint: fmt.Sprintf("f%d.ckpt", k)}
			}
		}
		k := c.k
		if k < 0 { // a fold of 4 cases with a model
			for kk := range 5 {
				if kk != 2 && sizes[kk] == 4 {
					k = kk
				}
			}
		}
		r := &Runner{dir: dir, data: data, env: Env{Now: func() time.Time { return at }}, began: at, spent0: 100*time.Second - c.remaining,
			st: &State{Budget: 100 * time.Second, Folds: 5, PluginStart: 200 * time.Millisecond, Lanes: []*LaneState{forest}, Winner: "forest"}}
		got, val, err := r.postFolds(forest, k, 5)
		if err != nil {
			t.Fatal(err)
		}
		if want := c.want(sizes); !slices.Equal(got, want) || len(val) != len(got) {
			t.Errorf("%d cases, %v left, k %d (fold sizes %v): folds %v (%d case lists), want %v", c.train, c.remaining, k, sizes, got, len(val), want)
			continue
		}
		for i, kk := range got {
			if _, v, _ := fl.Split(data.Train, kk); !slices.Equal(caseIDs(val[i]), caseIDs(v)) {
				t.Errorf("fold %d's cases %v, want its validation cases %v", kk, caseIDs(val[i]), caseIDs(v))
			}
		}
	}
}
