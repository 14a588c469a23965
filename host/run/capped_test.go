package run

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"amid/host/planner"
	"amid/host/predict"
	"amid/host/schedule"
	"amid/host/task"
	"amid/plugins/protocol/schema"
	"amid/plugins/taskspec"
)

// twentyAndTen is a dataset of 20 training and 10 test cases.
func twentyAndTen() *task.Dataset {
	return &task.Dataset{Train: make([]task.Case, 20), Test: make([]task.Case, 10)}
}

// TestCappedMembers: a winner at its cap whose 5-fold ensemble does not fit the time left
// trains the most folds that do, and the reserve then keeps their predictions alone.
func TestCappedMembers(t *testing.T) {
	// 20 training and 10 test cases, 0.5 s a predicted case and 0.2 s a plugin start, no
	// post-processing options and no checkpoint to export: schedule.Reserve keeps
	// 1.25 × (2k × 10 × 0.5 + 2k × 0.2) = 13k s for k models, and the export 0.2 s.
	// A fold of the forest at its cap of 64 steps: 64 × 0.1 + 1 = 7.4 s. k folds need
	// (k−1) × 7.4 + 13k + 0.2 s: 33.6 (k = 2), 54.0 (3), 74.4 (4), 94.8 (5).
	capped := &LaneState{ID: "forest", Schedule: schedule.Lane{ID: "forest", MaxSteps: 64, Steps: 64, StepSeconds: 0.1, Overhead: 1}}
	learning := &LaneState{ID: "2d", Schedule: schedule.Lane{ID: "2d", Steps: 64, StepSeconds: 0.1, Overhead: 1}}
	at := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		lane      *LaneState
		remaining time.Duration
		want      int
	}{
		{capped, 60 * time.Second, 3},
		{capped, 80 * time.Second, 4},
		{capped, 30 * time.Second, 0}, // not even 2 folds
		{learning, 80 * time.Second, 0},
	} {
		r := &Runner{
			st:       &State{Budget: 100 * time.Second, Folds: 5, PredictPerCase: 500 * time.Millisecond, PluginStart: 200 * time.Millisecond},
			data:     twentyAndTen(),
			task:     grades(),
			env:      Env{Now: func() time.Time { return at }},
			began:    at,
			spent0:   100*time.Second - c.remaining,
			postOpts: map[string]postChoices{},
		}
		k, d := r.cappedMembers(c.lane, 5)
		if k != c.want {
			t.Errorf("%s with %v left: %d members, want %d (%s)", c.lane.ID, c.remaining, k, c.want, d.Why)
			continue
		}
		if k == 0 {
			continue
		}
		if d.Mode != schedule.FinalEnsemble || d.Until != 64 || !strings.Contains(d.Why, "holds 3 of the 5 folds") && k == 3 {
			t.Errorf("decision %+v", d)
		}
		r.st.Final = &FinalModel{Mode: d.Mode, Members: k}
		if got := r.models(); got != k {
			t.Errorf("%d models predict the test set, want the %d members", got, k)
		}
	}
}

// TestOptionsCostNoMember: the post-processing options a capped winner's plugin offers are
// tried in the time its members' predictions leave (whileFits), so they do not take a
// member from its ensemble. With TestCappedMembers' numbers and 80 s left, 4 members need
// 74.4 s; five options on fold 0's 4 validation cases would add 1.25 × 5 × (4 × 0.5 + 0.2)
// = 13.75 s to the reserve, which would hold 3.
func TestOptionsCostNoMember(t *testing.T) {
	sc, err := schema.Compile(json.RawMessage(`{"type":"object","properties":{"postprocess":{"enum":["none","lcc","small","fill","smooth"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	capped := &LaneState{ID: "forest", Lane: planner.Lane{Plugin: "seg", Config: json.RawMessage(`{}`)},
		Schedule: schedule.Lane{ID: "forest", MaxSteps: 64, Steps: 64, StepSeconds: 0.1, Overhead: 1}}
	at := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	r := &Runner{
		st: &State{Budget: 100 * time.Second, Folds: 5, PredictPerCase: 500 * time.Millisecond, PluginStart: 200 * time.Millisecond,
			Lanes: []*LaneState{capped}, Winner: "forest"},
		data: twentyAndTen(), task: grades(), env: Env{Now: func() time.Time { return at }}, began: at,
		spent0:   20 * time.Second,
		postOpts: map[string]postChoices{"seg": {opts: []string{"none", "lcc", "small", "fill", "smooth"}, schema: sc}},
	}
	if n := r.postOptionCount(); n != 5 {
		t.Fatalf("%d options offered, want 5", n)
	}
	if k, d := r.cappedMembers(capped, 5); k != 4 {
		t.Errorf("%d members with 80 s left and 5 options offered, want 4 (%s)", k, d.Why)
	}
	// The reserve of the final phases still counts the options while exploration runs.
	if with, without := r.reserve(1), r.membersReserve(1); with-without != 13750*time.Millisecond {
		t.Errorf("the options add %v to the reserve, want 13.75 s", with-without)
	}
}

// TestReserveOfTheWinner: until a lane has won, the reserve is sized by the slowest lane's
// validation; then by the winner's own, its fold ensemble's too, unless two lanes' models
// predict (a union).
func TestReserveOfTheWinner(t *testing.T) {
	// 20 training and 10 test cases as in TestCappedMembers: schedule.Reserve keeps
	// 1.25 × (2k × 10 × p + 2k × 0.2) s for k models at p a case, and the export 0.2 s.
	forest := &LaneState{ID: "forest", PredictPerCase: 50 * time.Millisecond}
	unet := &LaneState{ID: "2d", PredictPerCase: 500 * time.Millisecond}
	r := &Runner{
		st:       &State{Budget: 100 * time.Second, Folds: 5, PredictPerCase: 500 * time.Millisecond, PluginStart: 200 * time.Millisecond, Lanes: []*LaneState{forest, unet}},
		data:     twentyAndTen(),
		postOpts: map[string]postChoices{},
	}
	secs := func(d time.Duration) float64 { return d.Seconds() }
	slowest, fast := 1.25*(2*10*0.5+2*0.2)+0.2, 1.25*(2*10*0.05+2*0.2)+0.2 // 13.2 and 2.45 s
	for _, c := range []struct {
		name   string
		winner string
		union  bool
		folds  bool // the union is the winner's fold ensemble
		want   float64
	}{
		{"no winner", "", false, false, slowest},
		{"the forest won", "forest", false, false, fast},
		{"the U-Net won", "2d", false, false, slowest},
		{"a union", "forest", true, false, slowest},
		{"the forest's fold ensemble", "forest", true, true, fast},
	} {
		r.st.Winner, r.st.Union, r.st.Vote, r.st.Final = c.winner, nil, false, nil
		if c.union {
			r.st.Union = make([]predict.Member, 2)
		}
		if c.folds {
			r.st.Vote, r.st.Final = true, &FinalModel{Mode: schedule.FinalEnsemble, Lane: c.winner, Members: 1}
		}
		if got := secs(r.reserve(1)); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: reserve %.3f s, want %.3f", c.name, got, c.want)
		}
	}
	// The time a capped leader holds for its ensemble counts its own predictions.
	if got, want := secs(r.reserveFor("forest", 5)-r.reserveFor("forest", 1)), 1.25*(8*10*0.05+8*0.2); math.Abs(got-want) > 1e-9 {
		t.Errorf("the forest's 4 more models keep %.3f s, want %.3f", got, want)
	}
}

// TestAllDataWhenTheEnsembleDoesNotFit: a winner still learning, with too little time for
// the predictions of a fold ensemble's five members but enough for one model's, trains on
// all the data rather than submitting its fold model. Before, the all-data model was
// planned only when the ensemble's reserve left it time (make bench-quality's 5-minute
// mr-rician-denoise ended at 57 % of its budget, its fold model submitted).
func TestAllDataWhenTheEnsembleDoesNotFit(t *testing.T) {
	// As in TestCappedMembers: the reserve is 13k + 0.2 s for k models; with 40 s left,
	// five members keep 65.2 s (nothing is left), one model 13.2 s (26.8 s to train: at
	// 0.1 s a step and 1 s of overhead with 0.5 s of it validation, about 260 steps).
	learning := &LaneState{ID: "2d", Schedule: schedule.Lane{ID: "2d", Steps: 64, StepSeconds: 0.1, Overhead: 1, Validation: 0.5}}
	at := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		remaining time.Duration
		want      string
	}{
		{40 * time.Second, schedule.FinalAllData},
		{10 * time.Second, schedule.FinalFold}, // not even one model's predictions fit
	} {
		r := &Runner{
			st:       &State{Budget: 100 * time.Second, Folds: 5, PredictPerCase: 500 * time.Millisecond, PluginStart: 200 * time.Millisecond, Lanes: []*LaneState{learning}, Winner: "2d"},
			data:     twentyAndTen(),
			task:     grades(),
			env:      Env{Now: func() time.Time { return at }},
			began:    at,
			spent0:   100*time.Second - c.remaining,
			postOpts: map[string]postChoices{},
		}
		d, members := r.finalDecision(learning)
		if d.Mode != c.want || members != 0 {
			t.Errorf("with %v left: %s with %d members (%s), want %s", c.remaining, d.Mode, members, d.Why, c.want)
			continue
		}
		if d.Mode == schedule.FinalAllData && (d.Until < 64+200 || d.Limit > c.remaining-13*time.Second) {
			t.Errorf("with %v left: the all-data model trains to step %d within %v, want past step 264 within the %v before one model's reserve", c.remaining, d.Until, d.Limit, c.remaining-13200*time.Millisecond)
		}
	}
}

// TestCappedFit: the time a capped leader holds before the reserve while its challenger
// explores is its folds not yet made and the predictions of its ensemble's models rather
// than one, on top of the reserve exploration keeps for one model of the slowest lane.
func TestCappedFit(t *testing.T) {
	// TestReserveOfTheWinner's world: the forest's ensemble of k models needs
	// 1.25 × (2k × 10 × 0.05 + 2k × 0.2) + 0.2 s, 1.75k + 0.2: 1.95 s for one, 3.7 for 2,
	// 5.45 for 3, 8.95 for 5. A fold of the forest at its cap: 64 × 0.1 + 1 = 7.4 s.
	forest := &LaneState{ID: "forest", PredictPerCase: 50 * time.Millisecond, Schedule: schedule.Lane{ID: "forest", MaxSteps: 64, Steps: 64, StepSeconds: 0.1, Overhead: 1}}
	unet := &LaneState{ID: "2d", PredictPerCase: 500 * time.Millisecond}
	r := &Runner{
		st:       &State{Budget: 100 * time.Second, Folds: 5, PredictPerCase: 500 * time.Millisecond, PluginStart: 200 * time.Millisecond, Lanes: []*LaneState{forest, unet}},
		data:     twentyAndTen(),
		task:     &task.Task{ID: "ldct", Kind: taskspec.IQA, Dims: 2, Metric: task.Metric{Name: "plcc_srocc_krocc"}}, // combinable across folds
		postOpts: map[string]postChoices{},
	}
	for _, c := range []struct {
		name  string
		made  int
		left  time.Duration
		k     int
		holdS float64
	}{
		{"4 folds to make", 1, 40 * time.Second, 5, 4*7.4 + 8.95 - 1.95},
		{"3 fit", 1, 25 * time.Second, 3, 2*7.4 + 5.45 - 1.95},
		{"all made", 5, 10 * time.Second, 5, 8.95 - 1.95},
		{"all made, 2 predict in time", 5, 2 * time.Second, 2, 3.7 - 1.95},
		{"none fits", 5, time.Second, 0, 0},
	} {
		forest.Schedule.Made = c.made
		k, h := r.cappedFit(&forest.Schedule, c.left)
		if k != c.k || math.Abs(h.Seconds()-c.holdS) > 1e-6 {
			t.Errorf("%s: %d folds holding %.3f s, want %d holding %.3f s", c.name, k, h.Seconds(), c.k, c.holdS)
		}
	}
}

// TestReserveOfTheContenders: while no lane has won, the reserve is sized by the slowest
// lane that may still win (explored on, at its cap, or the best so far), not by a lane
// stopped below the best.
func TestReserveOfTheContenders(t *testing.T) {
	// As in TestReserveOfTheWinner: one model at p a case keeps 1.25 × (20p + 0.4) + 0.2 s.
	curve := func(score float64) []schedule.Point { return []schedule.Point{{Step: 1, Score: score}} }
	forest := &LaneState{ID: "forest", PredictPerCase: 50 * time.Millisecond, Schedule: schedule.Lane{ID: "forest", MaxSteps: 64, Steps: 64, Stopped: "it has trained its cap", Curve: curve(0.8)}}
	unet := &LaneState{ID: "2d", PredictPerCase: 500 * time.Millisecond, Schedule: schedule.Lane{ID: "2d", Curve: curve(0.3)}}
	lowres := &LaneState{ID: "3d_lowres", PredictPerCase: 2 * time.Second, Schedule: schedule.Lane{ID: "3d_lowres", Stopped: "not promoted", Curve: curve(0.1)}}
	r := &Runner{
		st:       &State{Budget: 100 * time.Second, Folds: 5, PredictPerCase: 2 * time.Second, PluginStart: 200 * time.Millisecond, Lanes: []*LaneState{forest, unet, lowres}},
		data:     twentyAndTen(),
		postOpts: map[string]postChoices{},
	}
	one := func(p float64) float64 { return 1.25*(20*p+0.4) + 0.2 }
	for _, c := range []struct {
		name string
		set  func()
		want float64
	}{
		{"3d_lowres stopped below the best", func() {}, one(0.5)},
		{"3d_lowres the best", func() { lowres.Schedule.Curve = curve(0.9) }, one(2)},
		{"2d stopped too", func() {
			lowres.Schedule.Curve, unet.Schedule.Stopped = curve(0.1), "flattened"
		}, one(0.05)},
		{"a lane not yet timed", func() { unet.Schedule.Stopped, unet.PredictPerCase = "", 0 }, one(2)},
	} {
		c.set()
		if got := r.reserve(1).Seconds(); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: reserve %.3f s, want %.3f", c.name, got, c.want)
		}
	}
}
