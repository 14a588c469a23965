package run

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"amid/host/audit"
	"amid/host/export"
	"amid/host/planner"
	"amid/host/schedule"
	"amid/host/task"
)

// firstLane plans the rules' first lane only, and nothing after the first round.
type firstLane struct{}

func (firstLane) Plan(ctx context.Context, in planner.Input) ([]planner.Lane, error) {
	if len(in.Results) > 0 {
		return nil, nil
	}
	lanes, err := planner.Rules{}.Plan(ctx, in)
	if err != nil || len(lanes) == 0 {
		return nil, fmt.Errorf("the rules planned no lane: %w", err)
	}
	return lanes[:1], nil
}

// finalRun runs the demo (6 training cases, 1 test case) with one lane trained 3 steps in
// its first round, over 2 folds, with the final model mode asked for, and returns the run,
// its audit entries and its log.
func finalRun(t *testing.T, mode string, budget time.Duration) (*Runner, []audit.Entry, string) {
	t.Helper()
	return finalRunWith(t, mode, budget, firstLane{})
}

// finalRunWith is finalRun with the lanes planner pl plans.
func finalRunWith(t *testing.T, mode string, budget time.Duration, pl planner.Planner) (*Runner, []audit.Entry, string) {
	t.Helper()
	data := demo(t)
	e, done := env(t, t.TempDir())
	defer done()
	var log bytes.Buffer
	e.Events = func(ev Event) {
		if ev.Progress == nil {
			fmt.Fprintf(&log, "%s %s\n", ev.Phase, ev.Message)
		}
	}
	r, err := New(Options{Task: filepath.Join(data, "task.yaml"), Dir: filepath.Join(t.TempDir(), "run"), Budget: budget,
		Folds: 2, Steps: 3, Final: mode, Planner: pl, PlannerName: fmt.Sprintf("%T", pl)}, e)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	f, err := os.Open(filepath.Join(r.State().Package, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, err := audit.ReadJSONL(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := audit.Verify(entries); err != nil {
		t.Fatal(err)
	}
	if _, err := export.Verify(context.Background(), r.State().Package, export.VerifyOptions{}); err != nil {
		t.Errorf("the package does not verify: %v", err)
	}
	return r, entries, log.String()
}

// details decodes an entry's details.
func details(t *testing.T, e audit.Entry) map[string]any {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal(e.Details, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// find returns the entries of action whose details' lane is lane ("" any).
func find(t *testing.T, entries []audit.Entry, action, lane string) []audit.Entry {
	t.Helper()
	var out []audit.Entry
	for _, e := range entries {
		if e.Action == action && (lane == "" || details(t, e)["lane"] == lane) {
			out = append(out, e)
		}
	}
	return out
}

func caseIDs(cs []task.Case) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

// TestFinalFoldEnsemble makes the fold ensemble through real plugin processes: every fold
// trains to the planned step on its own training cases, none of its validation cases
// among them, the ensemble's members are those fold models, and the audit log holds the
// plan, each fold's training and the ensemble.
func TestFinalFoldEnsemble(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the demo's lane on two folds")
	}
	r, entries, log := finalRun(t, schedule.FinalEnsemble, 45*time.Second)
	st := r.State()
	fm := st.Final
	if fm == nil || fm.Mode != schedule.FinalEnsemble || fm.Rule != schedule.FinalRule || !strings.Contains(fm.Why, "asked for") {
		t.Fatalf("final model %+v, want the fold ensemble asked for\n%s", fm, log)
	}
	planned := find(t, entries, "final.planned", "")
	if len(planned) != 1 || details(t, planned[0])["mode"] != schedule.FinalEnsemble || details(t, planned[0])["rule"] != schedule.FinalRule {
		t.Errorf("final.planned entries %v", planned)
	}
	fl, err := r.folds()
	if err != nil {
		t.Fatal(err)
	}
	w := st.lane(fm.Lane)
	if len(st.Union) != fl.K || fl.K != 2 {
		t.Fatalf("%d ensemble members for %d folds", len(st.Union), fl.K)
	}
	for k := range fl.K {
		train, val, err := fl.Split(r.data.Train, k)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range val {
			if slices.Contains(caseIDs(train), v.ID) {
				t.Errorf("fold %d: validation case %s is among its training cases", k, v.ID)
			}
		}
		name := fmt.Sprintf("%s.f%d", w.ID, k)
		trained := find(t, entries, audit.ActionLaneTrained, name)
		if len(trained) == 0 {
			t.Fatalf("no lane.trained entry of %s", name)
		}
		last := trained[len(trained)-1]
		d := details(t, last)
		if last.Inputs["train_ids"] != idsHash(caseIDs(train)) || last.Inputs["validation_ids"] != idsHash(caseIDs(val)) {
			t.Errorf("%s trained on other cases than fold %d's", name, k)
		}
		if int64(d["steps"].(float64)) != fm.Until {
			t.Errorf("%s trained to step %v, want the planned %d", name, d["steps"], fm.Until)
		}
		if m := st.Union[k]; m.Lane != name || m.SHA256 != last.Outputs["checkpoint"] || w.Folds[k].SHA256 != m.SHA256 {
			t.Errorf("member %d %+v is not %s's checkpoint %s", k, m, name, last.Outputs["checkpoint"])
		}
	}
	made := find(t, entries, "final.made", w.ID)
	if len(made) != 1 || details(t, made[0])["mode"] != schedule.FinalEnsemble || details(t, made[0])["folds"] != float64(fl.K) {
		t.Errorf("final.made entries %v", made)
	}
	if len(find(t, entries, "final.extended", "")) != 0 {
		t.Error("an ensemble was extended")
	}
}

// TestFinalAllDataExtended makes the model on all the data through a real plugin process:
// it continues the winner's fold-0 checkpoint on every training case (none held out) to
// the planned step, and, reaching it with time left before the reserve, trains on from its
// checkpoint (the extension); the audit log holds the plan, both trainings and the
// extension, and the package holds the extended model.
func TestFinalAllDataExtended(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the demo's lane on all its data")
	}
	// 3 more steps (Forced under fixed steps) take a few seconds of the 60 s budget: time
	// is left before the reserve for the extension.
	r, entries, log := finalRun(t, schedule.FinalAllData, 60*time.Second)
	st := r.State()
	fm := st.Final
	if fm == nil || fm.Mode != schedule.FinalAllData || fm.Checkpoint == "" || !strings.Contains(fm.Why, "asked for") {
		t.Fatalf("final model %+v, want the all-data model asked for\n%s", fm, log)
	}
	w := st.lane(fm.Lane)
	name := w.ID + ".all"
	trained := find(t, entries, audit.ActionLaneTrained, name)
	if len(trained) != 2 {
		t.Fatalf("%d lane.trained entries of %s, want the all-data training and its extension\n%s", len(trained), name, log)
	}
	all := idsHash(caseIDs(r.data.Train))
	for i, e := range trained {
		if e.Inputs["train_ids"] != all || e.Inputs["validation_ids"] != idsHash(nil) {
			t.Errorf("%s training %d did not train on all %d training cases alone", name, i, len(r.data.Train))
		}
		if d := details(t, e); d["fold"] != float64(-1) {
			t.Errorf("%s training %d: fold %v", name, i, d["fold"])
		}
	}
	first, second := details(t, trained[0]), details(t, trained[1])
	if first["resumed_from"] != fm.From || fm.FromStep != w.Folds[0].Steps && !slices.ContainsFunc(w.Folds[0].Rounds, func(rd Round) bool { return rd.Steps == fm.FromStep }) {
		t.Errorf("the all-data model started from %v at step %d, not a checkpoint of fold 0", first["resumed_from"], fm.FromStep)
	}
	made := find(t, entries, "final.made", w.ID)
	if len(made) != 1 || details(t, made[0])["cases"] != float64(len(r.data.Train)) || made[0].Outputs["checkpoint"] != trained[0].Outputs["checkpoint"] {
		t.Fatalf("final.made entries %v", made)
	}
	ext := find(t, entries, "final.extended", w.ID)
	if len(ext) != 1 {
		t.Fatalf("%d final.extended entries\n%s", len(ext), log)
	}
	de := details(t, ext[0])
	if ext[0].Inputs["from"] != made[0].Outputs["checkpoint"] || ext[0].Outputs["checkpoint"] != fm.SHA256 ||
		int64(de["steps"].(float64)) != fm.Steps || de["from_step"].(float64) >= de["steps"].(float64) {
		t.Errorf("final.extended %v does not continue the all-data model to the submitted one (%s at step %d)", ext[0], fm.SHA256, fm.Steps)
	}
	if second["resumed_from"] == "" || int64(second["steps"].(float64)) != fm.Steps {
		t.Errorf("the extension's training %v", second)
	}
	if len(st.Union) != 0 {
		t.Errorf("an all-data model with %d ensemble members", len(st.Union))
	}
}
