package run

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"time"

	"amid/assets/fileio"
	"amid/host/finite"
	"amid/host/planner"
	"amid/host/predict"
	"amid/host/schedule"
	"amid/plugins/compute"
)

// Phases of a run, in order. A resumed run starts at the first phase not done.
const (
	PhasePrepare  = "prepare" // task, data, labels, fingerprint, contract, folds
	PhasePlan     = "plan"    // plugins' candidates, the planner's lanes
	PhaseExplore  = "explore" // every lane on the first fold
	PhaseExploit  = "exploit" // the finalists on the other folds
	PhaseFinal    = "final"   // the chosen lane predicts the test set; the submission
	PhaseVerify   = "verify"  // the contract, the grader, reproducibility
	PhaseExport   = "export"  // the model package
	PhaseDone     = "done"
	stateVersion  = 1
	stateFileName = "run.json"
)

var phases = []string{PhasePrepare, PhasePlan, PhaseExplore, PhaseExploit, PhaseFinal, PhaseVerify, PhaseExport, PhaseDone}

func phaseIndex(p string) int {
	for i, q := range phases {
		if q == p {
			return i
		}
	}
	return -1
}

// Fold states.
const (
	FoldPending  = "pending"
	FoldTraining = "training"
	FoldDone     = "done"
	FoldFailed   = "failed"
)

// FoldState is one lane trained on one fold.
type FoldState struct {
	Status     string `json:"status"`
	Checkpoint string `json:"checkpoint,omitempty"`
	// LastCheckpoint is the newest checkpoint the plugin reported while training, which a
	// resumed run continues from.
	LastCheckpoint string             `json:"last_checkpoint,omitempty"`
	SHA256         string             `json:"sha256,omitempty"`
	Steps          int64              `json:"steps,omitempty"`
	Score          float64            `json:"score"`
	Extra          map[string]float64 `json:"extra,omitempty"`
	// Undefined says why Score has no value (evaluate.Score.Undefined); Score is then 0.
	Undefined string `json:"undefined,omitempty"`
	// PerCase are the validation cases' values (Round.PerCase) of the fold's model.
	PerCase map[string]float64 `json:"per_case,omitempty"`
	Plugin  map[string]float64 `json:"plugin_validation,omitempty"` // what the plugin said, for the record only
	Error   string             `json:"error,omitempty"`
	Took    time.Duration      `json:"took"`
	Compute compute.Identity   `json:"compute,omitzero"` // what trained the checkpoint
	// Lacks are the classes that the training cases hold and the fold's validation cases
	// do not (amid/host/folds Folds.Lacks): the fold's score is not trusted to rank models.
	Lacks []string `json:"lacks,omitempty"`
	// Rounds are the fold's rounds of successive halving, each continuing the last from its
	// checkpoint; Checkpoint and Score above are the best round's.
	Rounds []Round `json:"rounds,omitempty"`
}

// MarshalJSON writes the fold's score as null when it is undefined (its reason beside it).
func (f FoldState) MarshalJSON() ([]byte, error) {
	type plain FoldState
	return json.Marshal(struct {
		plain
		Score *float64 `json:"score"`
	}{plain(f), finite.Maybe(f.Score, f.Undefined != "")})
}

// MarshalJSON writes the round's score as null when it is undefined (its reason beside it).
func (r Round) MarshalJSON() ([]byte, error) {
	type plain Round
	return json.Marshal(struct {
		plain
		Score *float64 `json:"score"`
	}{plain(r), finite.Maybe(r.Score, r.Undefined != "")})
}

// Round is one round of a lane-fold: trained to step Steps (it was asked for Until) in
// Took on Place, its checkpoint and the host's validation score of it.
type Round struct {
	Until     int64              `json:"until"`
	Steps     int64              `json:"steps"`
	Score     float64            `json:"score"`
	Extra     map[string]float64 `json:"extra,omitempty"`
	Undefined string             `json:"undefined,omitempty"` // why Score has no value
	// PerCase are the validation cases' values where the metric is a mean over cases (the
	// model card's confidence interval).
	PerCase    map[string]float64 `json:"per_case,omitempty"`
	Checkpoint string             `json:"checkpoint"`
	SHA256     string             `json:"sha256"`
	Took       time.Duration      `json:"took"`
	Place      string             `json:"place"`
}

// LaneState is one lane of the run.
type LaneState struct {
	planner.Lane
	ID    string            `json:"id"` // file-safe name
	Folds map[int]FoldState `json:"folds"`
	// Schedule is the lane as the schedule sees it: step time, minimum steps, the steps
	// reached on fold 0, its validation curve, where it trains, and why it stopped.
	Schedule schedule.Lane `json:"schedule"`
	// PredictPerCase is the longest time per case of the lane's validations but its first
	// (its only one, when it has one), each measured as the run's PredictPerCase: it sizes
	// the reserve once the lane has won. PredictTimes are those times, in order.
	PredictPerCase time.Duration   `json:"predict_per_case,omitempty"`
	PredictTimes   []time.Duration `json:"predict_times,omitempty"`
}

// Mean is the lane's mean validation score over its finished folds and their count (NaN
// when none finished). A fold whose validation cases lack classes ([FoldState.Lacks]) does
// not count while the lane has a finished fold that holds every class: on a fold of one
// class, a model that always predicts that class scores a perfect balanced accuracy.
func (l *LaneState) Mean() (float64, int) {
	trusted := false
	for _, f := range l.Folds {
		trusted = trusted || f.scored() && len(f.Lacks) == 0
	}
	var s float64
	n := 0
	for _, f := range l.Folds {
		if f.scored() && (!trusted || len(f.Lacks) == 0) {
			s += f.Score
			n++
		}
	}
	if n == 0 {
		return math.NaN(), 0
	}
	return s / float64(n), n
}

// scored reports whether the fold is done with a validation score that has a value.
func (f FoldState) scored() bool {
	return f.Status == FoldDone && !math.IsNaN(f.Score) && f.Undefined == ""
}

// Undefined says why the lane has no mean validation score though it finished folds:
// every one's metric was undefined (the first such fold's reason); "" otherwise.
func (l *LaneState) Undefined() string {
	if _, n := l.Mean(); n > 0 {
		return ""
	}
	why, first := "", -1
	for k, f := range l.Folds {
		if f.Status == FoldDone && f.Undefined != "" && (first < 0 || k < first) {
			why, first = f.Undefined, k
		}
	}
	return why
}

// MeanText is the lane's mean validation score as the report and the desktop show it: four
// decimals, or "—" before any fold is done.
func (l *LaneState) MeanText() string {
	if m, n := l.Mean(); n > 0 {
		return fmt.Sprintf("%.4f", m)
	}
	if l.Undefined() != "" {
		return "undefined"
	}
	return "—"
}

// FoldTexts are the lane's folds in order, each as "f0 0.7512" (with detail, its steps and
// time too), "f1 failed: why" or "f2 running".
func (l *LaneState) FoldTexts(detail bool) []string {
	ks := make([]int, 0, len(l.Folds))
	for k := range l.Folds {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	per := make([]string, 0, len(ks))
	for _, k := range ks {
		f := l.Folds[k]
		switch {
		case f.Status == FoldDone && f.Undefined != "" && detail:
			per = append(per, fmt.Sprintf("f%d undefined: %s (%d steps, %v)", k, f.Undefined, f.Steps, f.Took.Round(time.Second)))
		case f.Status == FoldDone && f.Undefined != "":
			per = append(per, fmt.Sprintf("f%d undefined", k))
		case f.Status == FoldDone && detail:
			per = append(per, fmt.Sprintf("f%d %.4f (%d steps, %v)%s", k, f.Score, f.Steps, f.Took.Round(time.Second), lacksText(f.Lacks)))
		case f.Status == FoldDone:
			per = append(per, fmt.Sprintf("f%d %.4f%s", k, f.Score, lacksText(f.Lacks)))
		case f.Status == FoldFailed:
			per = append(per, fmt.Sprintf("f%d failed: %s", k, oneLine(f.Error)))
		default:
			per = append(per, fmt.Sprintf("f%d %s", k, f.Status))
		}
	}
	return per
}

// State is a run's durable state, run.json in the run folder, rewritten atomically after
// every change so that a killed host resumes where it stopped.
type State struct {
	Version int           `json:"version"`
	ID      string        `json:"id"`
	Task    string        `json:"task"` // the copy in the run folder
	Data    string        `json:"data"`
	Answers string        `json:"answers,omitempty"`
	Budget  time.Duration `json:"budget"`
	Spent   time.Duration `json:"spent"`   // over every session of the run
	Planner string        `json:"planner"` // its name: rules, llm:<model>
	// PlannerSpec is the planner to rebuild on resuming; nil in states written before it
	// was recorded, which resume with the rules.
	PlannerSpec *PlannerSpec `json:"planner_spec,omitempty"`
	Seed        int64        `json:"seed"`
	Folds       int          `json:"folds"`
	Finalists   int          `json:"finalists"`
	Created     time.Time    `json:"created"`
	Phase       string       `json:"phase"`
	Lanes       []*LaneState `json:"lanes,omitempty"`
	Chosen      string       `json:"chosen,omitempty"` // lane id
	ChosenFold  int          `json:"chosen_fold"`
	Why         []string     `json:"why,omitempty"` // why the chosen lane won and the others lost
	TestScore   *Grade       `json:"test_score,omitempty"`
	Package     string       `json:"package,omitempty"`
	Notes       []string     `json:"notes,omitempty"`
	// Limits say, a sentence each, what the data allows, as prepare found it (fewer folds
	// than asked, a single test case, a class in one training case, labels or images all
	// alike): the report and the package's report state them.
	Limits []string `json:"limits,omitempty"`
	// PredictPerCase is the longest time a lane's validation took per case (its
	// prediction and scoring, less the plugin's start), which sizes the reserve for the
	// final phases until a lane has won (then the winner's own, LaneState's).
	PredictPerCase time.Duration `json:"predict_per_case,omitempty"`
	// Union, when set, is the ensemble chosen instead of the single lane: the fold-0
	// models of the chosen lane and the next best, their predictions combined.
	Union []predict.Member `json:"union,omitempty"`
	// Vote: the members are a fold ensemble whose label maps are combined by a vote (the
	// union's are combined by their union).
	Vote bool `json:"vote,omitempty"`
	// Compute is what computed the test predictions.
	Compute compute.Identity `json:"compute,omitzero"`
	// Deidentify: the run is pseudonymous (Options.Deidentify).
	Deidentify bool `json:"deidentify,omitempty"`
	// Ended is, for each phase that ended, the budget spent when it did; Kept is the
	// reserve kept for the final phases when they began. The reports say from them why a
	// run left part of its budget unused (budgetUnused).
	Ended map[string]time.Duration `json:"ended,omitempty"`
	Kept  time.Duration            `json:"kept,omitempty"`
	// ExploreEnd is the mark of Spent at which exploration's share of the budget is spent.
	ExploreEnd time.Duration `json:"explore_end,omitempty"`
	// Rounds are exploration's rounds in order: which lanes trained, which stopped and why.
	Rounds []RoundLog `json:"rounds,omitempty"`
	// Refined reports that the planner has seen the first round's results.
	Refined bool `json:"refined,omitempty"`
	// Winner is the lane exploration chose and WinnerWhy why.
	Winner    string `json:"winner,omitempty"`
	WinnerWhy string `json:"winner_why,omitempty"`
	// Final is how the final model was made.
	Final *FinalModel `json:"final,omitempty"`
	// PluginStart is the longest time a plugin took to start and describe itself, which the
	// reserve counts for each prediction of the final phases.
	PluginStart time.Duration `json:"plugin_start,omitempty"`
	// PluginBytes is the size of the largest plugin binary that handles the task, which the
	// package holds and the reserve counts for the export ([Runner.exportTime]).
	PluginBytes int64 `json:"plugin_bytes,omitempty"`
	// Device is the device setting the local places pass to the plugins ([DevicePlaces]):
	// the host's (compute.EnvDevice) when a plugin found that device at planning, else cpu.
	Device string `json:"device,omitempty"`
	// Steps, when positive, fixes exploration's rounds by step counts (Options.Steps).
	Steps int `json:"steps,omitempty"`
	// FinalChoice is the final model the user asked for (Options.Final); empty: the rule's.
	FinalChoice string `json:"final_choice,omitempty"`
	// FromRequest is the package to improve and the folders of corrections the user gave
	// (Options.From, Options.Corrections); From what the run took from them (from.go).
	FromRequest *FromRequest `json:"from_request,omitempty"`
	From        *From        `json:"from,omitempty"`
}

// FromRequest is the package a run improves and the folders whose corrections it learns
// from besides the package's own.
type FromRequest struct {
	Package     string   `json:"package"`
	Corrections []string `json:"corrections,omitempty"`
}

// RoundLog is one round of exploration as the run records it.
type RoundLog struct {
	Rung    int           `json:"rung"`
	Jobs    []string      `json:"jobs"`    // "lane: steps from → until on place"
	Stopped []string      `json:"stopped"` // "lane: why"
	Spent   time.Duration `json:"spent"`   // the budget spent when the round was decided
}

// FinalModel is the model the run submits: the winner continued on all the data, or its
// fold models ensembled.
type FinalModel struct {
	Mode string `json:"mode"` // schedule.FinalAllData or schedule.FinalEnsemble
	Lane string `json:"lane"`
	Rule string `json:"rule"` // the rule written in the plan
	Why  string `json:"why"`  // how the rule applied
	// From is the checkpoint the all-data model continued from, at step FromStep.
	From     string `json:"from,omitempty"`
	FromStep int64  `json:"from_step,omitempty"`
	// Until is the planned last step, Steps the step reached, Config the configuration it
	// trained with (its steps set to Until).
	Until      int64           `json:"until,omitempty"`
	Steps      int64           `json:"steps,omitempty"`
	Config     json.RawMessage `json:"config,omitempty"`
	Checkpoint string          `json:"checkpoint,omitempty"`
	SHA256     string          `json:"sha256,omitempty"`
	// Last is the newest checkpoint reported while it trained, which a resumed run
	// continues from.
	Last    string           `json:"last,omitempty"`
	Took    time.Duration    `json:"took,omitempty"`
	Compute compute.Identity `json:"compute,omitzero"`
	// Members is how many fold models a fold ensemble has, folds 0 to Members−1: the
	// run's folds when the time held them all, fewer when it held only those (a lane at its
	// cap; [Runner.cappedMembers]); 0 is every fold (runs recorded before it was kept).
	Members int `json:"members,omitempty"`
	// Folds is the ensemble's out-of-fold validation score (mean over its folds).
	OutOfFold float64 `json:"out_of_fold,omitempty"`
	// Error says why the final model could not be made; the best fold model is submitted.
	Error string `json:"error,omitempty"`
}

// Grade is the grader's verdict on the submission, when answers were given.
type Grade struct {
	Valid   bool    `json:"valid"`
	Primary string  `json:"primary"`
	Score   float64 `json:"score"`
	// Percentile is the rank among the challenge's leaderboard (meaningful on real data only).
	Percentile float64            `json:"percentile"`
	Metrics    map[string]float64 `json:"metrics,omitempty"`
	Errors     []string           `json:"errors,omitempty"`
	// PerCase are the test cases' values where the host scores the test set against its
	// answers and the metric is a mean over cases (the model card's confidence interval).
	PerCase map[string]float64 `json:"per_case,omitempty"`
}

// laneNamed is the lane the planner named name (nil for none or "").
func (s *State) laneNamed(name string) *LaneState {
	for _, l := range s.Lanes {
		if name != "" && l.Name == name {
			return l
		}
	}
	return nil
}

func (s *State) lane(id string) *LaneState {
	for _, l := range s.Lanes {
		if l.ID == id {
			return l
		}
	}
	return nil
}

// save writes the state atomically.
func (s *State) save(dir string) error {
	b, err := encode(stateFileName, s, true)
	if err != nil {
		return err
	}
	if err := fileio.Write(filepath.Join(dir, stateFileName), b); err != nil {
		return fmt.Errorf("run state: %w", err)
	}
	return nil
}

// LoadState reads the state of the run in dir.
func LoadState(dir string) (*State, error) {
	b, err := os.ReadFile(filepath.Join(dir, stateFileName))
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", dir, err)
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("run %s: %s: %w", dir, stateFileName, err)
	}
	if s.Version != stateVersion {
		return nil, fmt.Errorf("run %s: state version %d, this program reads %d", dir, s.Version, stateVersion)
	}
	return &s, nil
}
