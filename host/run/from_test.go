package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"amid/assets/fileio"
	"amid/host/audit"
	"amid/host/export"
	"amid/host/folds"
	"amid/host/planner"
	"amid/host/predict"
	"amid/host/schedule"
	"amid/host/synth"
	"amid/host/task"
	"amid/viewer/imageio"
)

// A model improves from its package and a reader's correction: a real run on the demo
// task, one of its two test cases corrected (with its true labels) and the other
// approved, the reviewed package exported, and a run --from it. The new run keeps the
// package's folds and adds the corrected case to them, takes that case out of its test
// set, scores the package's own model beside its own on the untouched test case, and
// exports a package whose manifest names its parent and whose audit log holds the
// parent's entries before its own. A correction changed after it was recorded is refused.
//
// A network lane's model continues from its weights on every training case, and learns
// from a new patient corrected in a predict run made with the package too; a forest's, at
// its cap, is trained again on every kept fold and ensembled.
func TestImproveFromPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("trains four models for about two minutes")
	}
	t.Run("network continued", func(t *testing.T) {
		improveFromPackage(t, func(l planner.Lane) bool { return l.MaxSteps == 0 }, true)
	})
	t.Run("forest retrained", func(t *testing.T) {
		improveFromPackage(t, func(l planner.Lane) bool { return l.MaxSteps > 0 }, false)
	})
}

// onePlanner plans the first lane of the rules that keep takes.
type onePlanner struct{ keep func(planner.Lane) bool }

func (p onePlanner) Plan(ctx context.Context, in planner.Input) ([]planner.Lane, error) {
	lanes, err := planner.Rules{}.Plan(ctx, in)
	if err != nil {
		return nil, err
	}
	for _, l := range lanes {
		if p.keep(l) {
			return []planner.Lane{l}, nil
		}
	}
	return nil, fmt.Errorf("the rules planned no such lane among %d", len(lanes))
}

// correctNewPatient predicts a new patient (a training case of a demo of another seed)
// with the package pkg, corrects its prediction with its true labels in the predict run,
// and returns the predict run's folder.
func correctNewPatient(t *testing.T, pkg string) string {
	t.Helper()
	other := t.TempDir()
	if err := synth.Demo(other, 4, 99); err != nil {
		t.Fatal(err)
	}
	images, _ := filepath.Glob(filepath.Join(other, "train", "*_ct.nii.gz"))
	if len(images) == 0 {
		t.Fatal("the other demo has no training image")
	}
	in := filepath.Join(t.TempDir(), "newpatient_ct.nii.gz")
	b, err := os.ReadFile(images[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "predicted")
	res, err := predict.Apply(context.Background(), pkg, []string{in}, out, predict.Options{Version: "test"})
	if err != nil || len(res.Cases) != 1 || res.Failed != 0 {
		t.Fatalf("predicting the new patient: %v %+v", err, res)
	}
	truth, err := imageio.Read(strings.Replace(images[0], "_ct.nii.gz", "_seg.nii.gz", 1))
	if err != nil {
		t.Fatal(err)
	}
	id := res.Cases[0].ID
	rel, err := export.SaveCorrection(out, id, truth)
	if err != nil {
		t.Fatal(err)
	}
	if err := predict.Review(out, export.Decision{Case: id, Decision: export.Corrected, Correction: rel, Reviewer: "test"}); err != nil {
		t.Fatal(err)
	}
	return out
}

func improveFromPackage(t *testing.T, keep func(planner.Lane) bool, newPatient bool) {
	data := t.TempDir()
	if err := synth.Demo(data, 8, 3); err != nil { // 8 training and 2 test cases
		t.Fatal(err)
	}
	e, done := env(t, t.TempDir())
	defer done()
	var log strings.Builder
	e.Events = func(ev Event) {
		if ev.Progress == nil {
			fmt.Fprintf(&log, "%s %s\n", ev.Phase, ev.Message)
		}
	}
	ctx := context.Background()
	first := filepath.Join(t.TempDir(), "first")
	answers := filepath.Join(data, "answers")
	r, err := New(Options{Task: filepath.Join(data, "task.yaml"), Dir: first, Budget: 25 * time.Second, Folds: 3, Answers: answers,
		Planner: onePlanner{keep}, PlannerName: "one lane"}, e)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(ctx); err != nil {
		t.Fatalf("first run: %v\n%s", err, log.String())
	}
	var preds map[string][]string
	if err := fileio.ReadJSON(filepath.Join(first, "final", "predictions.json"), &preds); err != nil {
		t.Fatal(err)
	}
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range preds {
			if !yield(id) {
				return
			}
		}
	})
	if len(ids) != 2 {
		t.Fatalf("test cases %v, want the demo's 2", ids)
	}
	fixed, kept := ids[0], ids[1]
	truth, err := imageio.Read(filepath.Join(answers, fixed+"_seg.nii.gz"))
	if err != nil {
		t.Fatal(err)
	}
	rel, err := export.SaveCorrection(first, fixed, truth)
	if err != nil {
		t.Fatal(err)
	}
	if err := Review(first, export.Decision{Case: fixed, Decision: export.Corrected, Correction: rel, Reviewer: "test"}); err != nil {
		t.Fatal(err)
	}
	if err := Review(first, export.Decision{Case: kept, Decision: Approved, Reviewer: "test"}); err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(t.TempDir(), "reviewed")
	if _, err := ExportTo(ctx, first, pkg, "", e); err != nil {
		t.Fatal(err)
	}

	second := filepath.Join(t.TempDir(), "second")
	log.Reset()
	var sources []string
	if newPatient {
		// A new patient predicted with the package (a case of another seed, never a test
		// case) and corrected with its true labels in the predict run.
		sources = []string{correctNewPatient(t, pkg)}
	}
	r2, err := New(Options{Task: filepath.Join(data, "task.yaml"), Dir: second, Budget: 20 * time.Second, Answers: answers, From: pkg, Corrections: sources}, e)
	if err != nil {
		t.Fatal(err)
	}
	if err := r2.Run(ctx); err != nil {
		t.Fatalf("run --from: %v\n%s", err, log.String())
	}
	st := r2.State()
	t.Logf("%s", log.String())
	fr := st.From
	if fr == nil || len(fr.Corrected) != 1+len(sources) || fr.Corrected[0].ID != fixed || !fr.Corrected[0].Test {
		t.Fatalf("corrections learned from: %+v, want test case %s and the new patients of %v", fr, fixed, sources)
	}
	for _, c := range fr.Corrected[1:] {
		if c.Test || !strings.HasPrefix(c.ID, "corrected-") || len(c.Images) != 1 {
			t.Errorf("a new patient's correction %+v: want a training case named by its correction's hash, with its image", c)
		}
	}
	// The test set lost the corrected case; both models are scored on the one left.
	var preds2 map[string][]string
	if err := fileio.ReadJSON(filepath.Join(second, "final", "predictions.json"), &preds2); err != nil {
		t.Fatal(err)
	}
	if _, ok := preds2[fixed]; ok || len(preds2[kept]) == 0 {
		t.Errorf("the new model's test predictions %v: want %s alone", preds2, kept)
	}
	if fr.Old == nil || st.TestScore == nil || len(fr.Old.PerCase) != 1 || len(st.TestScore.PerCase) != 1 {
		t.Fatalf("old %+v and new %+v test scores, want both on the 1 untouched case", fr.Old, st.TestScore)
	}
	t.Logf("test Dice on %s: package %.4f, improved %.4f", kept, fr.Old.Score, st.TestScore.Score)
	if fm := st.Final; fm == nil || fm.Error != "" {
		t.Fatalf("the improved model was not made: %+v", fm)
	} else if members := packageKept(st); fr.capped() != (fm.Mode == schedule.FinalEnsemble && (len(st.Union) == st.Folds || members)) || !fr.capped() && fm.Steps <= fr.Step {
		// A capped lane is retrained on every fold; its ensemble is the final model unless
		// the package's own fold models score higher on the folds they share, when the
		// package's ensemble stands, with as many members as the package had (its first
		// run's time may have held only some folds: 2 of 3 under the race detector).
		t.Errorf("the package's lane at step %d of cap %d made a %s (%d members, the package's own: %v) to step %d: want a capped lane retrained on every fold, another continued",
			fr.Step, fr.MaxSteps, fm.Mode, len(st.Union), members, fm.Steps)
	}

	if !strings.Contains(Report(st), "left the test set") {
		t.Error("the report does not say that the corrected test case left the test set")
	}
	// The folds: the parent's kept, the corrected case added, the parent's hash named.
	parent, err := folds.Load(filepath.Join(first, "folds.json"))
	if err != nil {
		t.Fatal(err)
	}
	fl, err := folds.Load(filepath.Join(second, "folds.json"))
	if err != nil {
		t.Fatal(err)
	}
	for id, k := range parent.Assign {
		if fl.Assign[id] != k {
			t.Errorf("case %s moved from fold %d to %d", id, k, fl.Assign[id])
		}
	}
	if _, ok := fl.Assign[fixed]; !ok || fl.Parent != parent.Hash || len(fl.Assign) != len(parent.Assign)+len(fr.Corrected) {
		t.Errorf("the new folds hold %d cases (the parent %d) and name parent %s (want %s)", len(fl.Assign), len(parent.Assign), fl.Parent, parent.Hash)
	}
	// The new package: verified, its parent named, the parent's log its first entries.
	if _, err := export.Verify(ctx, st.Package, export.VerifyOptions{}); err != nil {
		t.Fatal(err)
	}
	var man export.Manifest
	if err := fileio.ReadJSON(filepath.Join(st.Package, export.FileManifest), &man); err != nil {
		t.Fatal(err)
	}
	parentSum, _ := fileio.SHA256(filepath.Join(pkg, export.FileManifest))
	if man.Parent == nil || man.Parent.SHA256 != parentSum {
		t.Errorf("the manifest's parent %+v, want the reviewed package's manifest %s", man.Parent, parentSum)
	}
	read := func(p string) []audit.Entry {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		es, err := audit.ReadJSONL(f)
		if err != nil {
			t.Fatal(err)
		}
		return es
	}
	was, now := read(filepath.Join(pkg, export.FileAudit)), read(filepath.Join(st.Package, export.FileAudit))
	if len(now) <= len(was) || now[len(was)-1].Hash != was[len(was)-1].Hash || now[len(was)].Action != audit.ActionRunFrom {
		t.Errorf("the new log (%d entries) does not go on from the parent's (%d) with run.from", len(now), len(was))
	}
	// A forged parent link is caught: the manifest naming another parent.
	forged := filepath.Join(t.TempDir(), "forged")
	copyDir(t, st.Package, forged)
	b, _ := os.ReadFile(filepath.Join(forged, export.FileManifest))
	if err := os.WriteFile(filepath.Join(forged, export.FileManifest), []byte(strings.Replace(string(b), parentSum, strings.Repeat("0", 64), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := export.Verify(ctx, forged, export.VerifyOptions{}); err == nil || !strings.Contains(err.Error(), "parent") {
		t.Errorf("a manifest naming another parent: %v", err)
	}

	if fr.Vote {
		// A fold ensemble's own fold models were scored on the kept folds beside the
		// retrained ones, and the log says which stands.
		compared := false
		for _, e := range now[len(was):] {
			compared = compared || e.Action == "final.compared"
		}
		if !compared {
			t.Error("the package's fold ensemble was not compared with the retrained one on the kept folds")
		}
	}
	if !newPatient {
		return
	}
	// The first run's correction changed after it was recorded: refused, in a sentence.
	mid := truth.Len() / 2
	truth.SetIndex(mid, float64(1-min(int(truth.AtIndex(mid)), 1))) // background ⇄ label 1
	if err := imageio.Write(filepath.Join(first, rel), truth); err != nil {
		t.Fatal(err)
	}
	r3, err := New(Options{Task: filepath.Join(data, "task.yaml"), Dir: filepath.Join(t.TempDir(), "third"), Budget: 30 * time.Second, From: pkg, Corrections: []string{first}}, e)
	if err != nil {
		t.Fatal(err)
	}
	err = r3.Run(ctx)
	if !errors.Is(err, ErrCorrection) || !strings.Contains(err.Error(), "changed after it was recorded") {
		t.Errorf("a changed correction: %v", err)
	}
}

// A detection's corrected test case trains with its annotation JSON and leaves the test
// set; a label map cannot train that task, and a correction's copy changed since it was
// gathered is refused.
func TestApplyFromAnnotation(t *testing.T) {
	dir := t.TempDir()
	taskPath := filepath.Join(dir, "task.yaml")
	if err := os.WriteFile(taskPath, []byte(boxTask), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(taskPath)
	if err != nil {
		t.Fatal(err)
	}
	ann := filepath.Join(dir, "c1.json")
	if err := os.WriteFile(ann, []byte(`{"boxes": [{"x": 1, "y": 2, "w": 3, "h": 4, "attrs": {"diagnosis": 2}, "score": 1}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, _ := fileio.SHA256(ann)
	data := func() *task.Dataset {
		return &task.Dataset{Train: []task.Case{{ID: "c0", Label: "train/c0.json"}}, Test: []task.Case{{ID: "c1", Images: []string{"test/c1.png"}}, {ID: "c2"}}}
	}
	r := &Runner{task: tk, st: &State{From: &From{Corrected: []Corrected{{ID: "c1", Test: true, Label: ann, SHA256: sum}}}}}
	d := data()
	if err := r.applyFrom(d); err != nil {
		t.Fatal(err)
	}
	if len(d.Test) != 1 || d.Test[0].ID != "c2" || len(d.Train) != 2 || d.Train[1].ID != "c1" || d.Train[1].Label != ann || d.Train[1].Images[0] != "test/c1.png" {
		t.Fatalf("after the correction: train %+v, test %+v", d.Train, d.Test)
	}
	r.st.From.Corrected[0].Label = filepath.Join(dir, "c1.nii.gz")
	if err := r.applyFrom(data()); !errors.Is(err, ErrCorrection) {
		t.Errorf("a label map for a detection task: %v", err)
	}
	r.st.From.Corrected[0].Label = ann
	if err := os.WriteFile(ann, []byte(`{"boxes": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.applyFrom(data()); !errors.Is(err, ErrCorrection) || !strings.Contains(err.Error(), "sha256") {
		t.Errorf("a changed copy: %v", err)
	}
}

// packageKept reports whether the final model of an improving run is the package's own
// ensemble (keepBetter kept it): the union is the package's members, checkpoint for
// checkpoint.
func packageKept(st *State) bool {
	fr := st.From
	if fr == nil || len(fr.Members) == 0 || len(st.Union) != len(fr.Members) {
		return false
	}
	for i, m := range fr.Members {
		if st.Union[i].Checkpoint != m.Checkpoint {
			return false
		}
	}
	return true
}
