package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/test"

	"amid/assets/fileio"
	"amid/host/audit"
	"amid/host/audit/audittest"
	"amid/host/export"
	"amid/host/planner"
	"amid/host/predict"
	"amid/host/run"
	"amid/host/synth"
	"amid/plugins/plugintest"
	"amid/viewer/edit"
	"amid/viewer/measure"
)

// The segmentation plugin, built once per test binary (plugintest.BuildPlugin: pure Go,
// offline) into a temporary folder that TestMain removes.
var (
	segOnce   sync.Once
	segBinary string
	segErr    error
	segDir    string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if segDir != "" {
		os.RemoveAll(segDir)
	}
	os.Exit(code)
}

// segmentationPlugin returns the built plugin binary.
func segmentationPlugin(t *testing.T) string {
	t.Helper()
	segOnce.Do(func() {
		if segDir, segErr = os.MkdirTemp("", "amid-ui-plugins-"); segErr != nil {
			return
		}
		segBinary, segErr = plugintest.BuildPlugin("../../plugins/segmentation", "segmentation", segDir)
	})
	if segErr != nil {
		t.Fatal(segErr)
	}
	return segBinary
}

// Sizes of the real run: the smallest the whole loop (prepare, plan, explore, final,
// verify, export) finishes with on two cores.
const (
	realRunCases  = 8                // synth.Demo: 8 training cases and 8/4 = 2 test cases
	realRunFolds  = 2                // the fewest folds a cross-validation has
	realRunBudget = 20 * time.Second // one lane on fold 0, then the test predictions
)

// newRealRun creates a real run of the demo task in the app's data folder, not started,
// with the segmentation plugin copied into the app's plugin folder and trusted in the
// app's store (the app's own run environment), planned by pl (recorded as the rules); events,
// when set, receive its events. One lane keeps it within realRunBudget.
func newRealRun(t *testing.T, a *App, pl planner.Planner, events func(run.Event)) *run.Runner {
	t.Helper()
	bin := segmentationPlugin(t)
	env, err := a.env()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(env.Catalog.User, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(env.Catalog.User, filepath.Base(bin)), b, 0o755); err != nil {
		t.Fatal(err)
	}
	e, err := env.Catalog.Find("segmentation")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Catalog.Trust(e); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	if err := synth.Demo(data, realRunCases, 1); err != nil {
		t.Fatal(err)
	}
	runs, err := a.runsDir()
	if err != nil {
		t.Fatal(err)
	}
	env.Events = events
	r, err := run.New(run.Options{Task: filepath.Join(data, "task.yaml"), Dir: filepath.Join(runs, "real"), Budget: realRunBudget,
		Folds: realRunFolds, Planner: pl, PlannerName: "rules"}, env)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// realRun trains a real run (newRealRun) of the rules planner's first network lane
// (oneNetwork) to its end on the test goroutine and returns the run folder.
func realRun(t *testing.T, a *App) string {
	t.Helper()
	var log strings.Builder
	r := newRealRun(t, a, oneNetwork{}, func(ev run.Event) {
		if ev.Progress == nil {
			log.WriteString(ev.Phase + " " + ev.Message + "\n")
		}
	})
	start := time.Now()
	if err := r.Run(context.Background()); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	t.Logf("real run finished in %v", time.Since(start).Round(time.Second))
	return r.Dir()
}

// exportThroughScreen presses Export on the Export screen for dir into dest and waits for
// the package; it returns the zip's path.
func exportThroughScreen(t *testing.T, a *App, q loop, dest string) string {
	t.Helper()
	e := a.export
	a.tabs.SelectIndex(tabExport)
	e.dir = "" // set again when the screen has read the review progress
	e.load(a.RunDir())
	q.wait(t, "export state", func() bool { return e.dir == a.RunDir() })
	e.dest.SetText(dest)
	if e.button.Disabled() {
		t.Fatalf("export disabled: %q", e.state.Text)
	}
	test.Tap(e.button)
	// The export re-runs the chosen model's prediction and verifies the package.
	q.wait(t, "export", func() bool { return !strings.HasPrefix(e.result.Text, "Exporting") })
	zip, ok := strings.CutPrefix(e.result.Text, "Package written: ")
	if !ok {
		t.Fatalf("export: %q", e.result.Text)
	}
	if zip != dest+".zip" {
		t.Errorf("zip %q, want %q", zip, dest+".zip")
	}
	for _, p := range []string{dest, zip} {
		if _, err := export.Verify(context.Background(), p, export.VerifyOptions{}); err != nil {
			t.Errorf("the exported package does not verify: %v", err)
		}
	}
	return zip
}

// detailsOf decodes an audit entry's details.
func detailsOf(t *testing.T, e audit.Entry) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Details, &m); err != nil {
		t.Fatalf("details of %s: %v", e.Action, err)
	}
	return m
}

// TestExport exports a real run from the Export screen twice. Training the run takes about
// realRunBudget plus its final prediction (18-30 s on two cores), so the test trains one run and
// its subtests share it, in order: first an export before any review, with a reason; then,
// every test case approved on the Review screen, an export without one. Each package
// verifies, and the audit log records the reason, the decisions and each export.
func TestExport(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model for about 20 s")
	}
	a, q := newApp(t)
	dir := realRun(t, a)
	a.OpenRun(dir)
	n := realRunCases / 4 // synth.Demo's test cases
	const reason = "second opinion needed before the tumour board"
	pkgs := t.TempDir()
	var dest string // the package exported after review

	t.Run("with a reason", func(t *testing.T) {
		a.tabs.SelectIndex(tabExport)
		e := a.export
		q.wait(t, "export state", func() bool { return e.dir == dir && strings.HasPrefix(e.title.Text, "Export run ") })
		if !e.button.Disabled() {
			t.Fatal("export enabled before review and without a reason")
		}
		e.reason.SetText(reason)
		exportThroughScreen(t, a, q, filepath.Join(t.TempDir(), "pkg"))
		var found int
		for _, x := range audittest.Entries(t, filepath.Join(dir, "audit.db")) {
			if x.Action == "export.unreviewed" {
				found++
				if d := detailsOf(t, x); x.Role != audit.RoleUser || d["reason"] != reason || d["unreviewed"] != float64(n) {
					t.Errorf("export.unreviewed entry: role %s, details %v; want the user, the reason and %d cases", x.Role, d, n)
				}
			}
		}
		if found != 1 {
			t.Errorf("%d export.unreviewed entries in the audit log, want 1", found)
		}
		e.reason.SetText("")
	})

	t.Run("after review", func(t *testing.T) {
		a.tabs.SelectIndex(tabReview)
		s := a.review
		q.wait(t, "review cases", func() bool { return s.data != nil })
		if len(s.data.Test) != n || s.data.Reviewed() != 0 {
			t.Fatalf("%d test cases, %d reviewed; want %d and 0", len(s.data.Test), s.data.Reviewed(), n)
		}
		// The least sure first: every test case of the segmentation has the plugin's
		// confidence (final/confidence.json).
		s.filter.SetSelected(filterLeastSure)
		for i, c := range s.shown {
			if math.IsNaN(c.Confidence) || (i > 0 && c.Confidence < s.shown[i-1].Confidence) {
				t.Errorf("case %d %s: confidence %v: want each, the least sure first", i, c.ID, c.Confidence)
			}
		}
		if len(s.shown) != n {
			t.Errorf("%d cases listed by confidence, want %d", len(s.shown), n)
		}
		s.filter.SetSelected(filterAll)
		s.list.Select(0)
		var corrected correctedCase
		var measured measure.Measurement
		for i := 0; i < n; i++ { // a decision selects the next case without one
			q.wait(t, "case view", func() bool { return s.current != nil && s.loadedID == s.current.ID && !s.approve.Disabled() })
			if i == 0 {
				measured = measureThroughScreen(t, a, q, s)
				corrected = correctThroughScreen(t, a, q, s)
			} else {
				test.Tap(s.approve)
			}
			q.wait(t, "decision", func() bool { return s.data.Reviewed() == i+1 })
		}
		checkCorrected(t, dir, corrected)
		start := time.Now()
		dest = filepath.Join(pkgs, "pkg")
		exportThroughScreen(t, a, q, dest)
		checkPackageMeasurements(t, dest, corrected.id, measured)
		t.Logf("export took %v", time.Since(start).Round(100*time.Millisecond))
		var review []export.Decision
		if b, err := os.ReadFile(filepath.Join(dest, "review.json")); err != nil || json.Unmarshal(b, &review) != nil || len(review) != n ||
			review[0].Decision != export.Corrected || review[0].Correction != corrected.file {
			t.Errorf("review.json in the package: %s %v; want %d decisions, the first the correction %s", b, err, n, corrected.file)
		}
		// The correction travels in the package (which verified), byte for byte.
		inRun, _ := fileio.PathSHA256(filepath.Join(dir, corrected.file))
		if inPkg, err := fileio.PathSHA256(filepath.Join(dest, corrected.file)); err != nil || inPkg != inRun {
			t.Errorf("the package's %s: sha256 %s (%v), the run's %s", corrected.file, inPkg, err, inRun)
		}
		decisions, exports, reasons := 0, 0, 0
		for _, e := range audittest.Entries(t, filepath.Join(dir, "audit.db")) {
			switch e.Action {
			case audit.ActionReviewDecision:
				if d := detailsOf(t, e)["decision"]; (d == run.Approved || d == export.Corrected) && e.Role == audit.RoleUser {
					decisions++
				}
			case audit.ActionExport:
				exports++
			case "export.unreviewed":
				reasons++
			}
		}
		// Exports: the run's own (its package/ folder), the one with a reason and this one;
		// the reason is the first subtest's alone.
		if decisions != n || exports != 3 || reasons != 1 {
			t.Errorf("audit log: %d approvals and corrections, %d exports, %d reasons; want %d, 3 and 1", decisions, exports, reasons, n)
		}
	})

	t.Run("use the model", func(t *testing.T) {
		if dest == "" {
			t.Fatal("no package was exported after review")
		}
		useModel(t, a, q, dir, dest)
	})

	t.Run("improve the model", func(t *testing.T) {
		if dest == "" {
			t.Fatal("no package was exported after review")
		}
		improveModel(t, a, q, dest)
	})
}

// improveModel improves the package pkg from the Use model screen as a reader would: the
// form offers the predict run just made with it, prefills the data folder the package
// names, and starts a run --from the package that the monitor follows to its end. The run
// learns from the correction the review made (the package's own), takes that case out of
// its test set, and exports a package that verifies and names pkg's manifest as its parent.
func improveModel(t *testing.T, a *App, q loop, pkg string) {
	s := a.use
	a.tabs.SelectIndex(tabUse)
	s.addPackage(pkg)
	f, err := newImproveForm(a, pkg, s.dir)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := predict.Open(pkg)
	if err != nil {
		t.Fatal(err)
	}
	if f.data.Text != pk.Model.Data || len(f.sources.Options) != 1 || f.sources.Options[0] != s.dir || len(f.sources.Selected) != 1 {
		t.Fatalf("the form: data %q (the package's %q), corrections from %v (chosen %v); want the predict run %s offered and chosen",
			f.data.Text, pk.Model.Data, f.sources.Options, f.sources.Selected, s.dir)
	}
	f.budget.SetText("nonsense")
	if err := f.start(); err == nil || !strings.Contains(err.Error(), "budget") {
		t.Errorf("a budget that is no duration: %v", err)
	}
	f.budget.SetText(realRunBudget.String())
	if err := f.start(); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	dir := a.runDir
	a.mu.Unlock()
	var st *run.State
	q.waitUpTo(t, "the improving run", 3*time.Minute, func() bool {
		a.monitor.mu.Lock()
		running := a.monitor.st.Running
		a.monitor.mu.Unlock()
		if running {
			return false
		}
		st, err = run.LoadState(dir)
		return err == nil && st.Phase == run.PhaseDone
	})
	if fr := st.From; fr == nil || len(fr.Corrected) != 1 || !fr.Corrected[0].Test {
		t.Fatalf("the improving run learned from %+v, want the review's one corrected test case", st.From)
	}
	if _, err := export.Verify(context.Background(), st.Package, export.VerifyOptions{}); err != nil {
		t.Fatal(err)
	}
	var man export.Manifest
	if err := fileio.ReadJSON(filepath.Join(st.Package, export.FileManifest), &man); err != nil {
		t.Fatal(err)
	}
	if sum, _ := fileio.PathSHA256(filepath.Join(pkg, export.FileManifest)); man.Parent == nil || man.Parent.SHA256 != sum {
		t.Errorf("the improved package's parent %+v, want %s", man.Parent, sum)
	}
}

// useModel predicts new patients with the package pkg of the run in dir as a reader
// would: Home lists the run's own package and the exported one; choosing it opens Use a
// model, which predicts the run's test images copied under new names (patient1, …). Each
// prediction has the bytes of the package's own for its image, the cases come the least
// sure first with their volumes, and an approval goes into the predict run's audit log.
func useModel(t *testing.T, a *App, q loop, dir, pkg string) {
	a.tabs.SelectIndex(tabHome)
	h := a.home
	q.wait(t, "packages on Home", func() bool { return len(h.pkgs) == 2 })
	at := -1
	for i, p := range h.pkgs {
		if p.Problem != "" {
			t.Errorf("package %s: %s", p.Dir, p.Problem)
		}
		if p.Dir == pkg {
			at = i
		}
	}
	if at < 0 || !slices.ContainsFunc(h.pkgs, func(p packageRow) bool { return p.Dir == filepath.Join(dir, "package") }) {
		t.Fatalf("Home lists %v: want the run's own package and %s", h.pkgs, pkg)
	}
	h.pkgList.Select(at)
	u := a.use
	if a.tabs.SelectedIndex() != tabUse || u.pkg.Selected != pkg {
		t.Fatalf("tab %d, package %q: want Use a model with %s", a.tabs.SelectedIndex(), u.pkg.Selected, pkg)
	}
	ds, err := run.Cases(dir)
	if err != nil {
		t.Fatal(err)
	}
	in := t.TempDir()
	names := map[string]string{}
	for k, c := range ds.Test {
		name := fmt.Sprintf("patient%d", k+1)
		copyFile(t, c.Images[0], filepath.Join(in, name+".nii.gz"))
		names[name] = c.ID
	}
	u.addInput(in)
	// Beside the package, which outlives the subtest: the next one improves the package
	// from this predict run.
	out := filepath.Join(filepath.Dir(pkg), "predicted")
	u.out.SetText(out)
	test.Tap(u.button)
	q.waitUpTo(t, "predictions", 3*time.Minute, func() bool { return len(u.cases) == len(ds.Test) || strings.HasPrefix(u.status.Text, "Predict failed") })
	t.Logf("status: %s\ncard: %s", u.status.Text, u.card.Text)
	if len(u.cases) != len(ds.Test) || !strings.HasPrefix(u.card.Text, "Intended use: ") {
		t.Fatalf("%d cases (want %d), card %q: %s", len(u.cases), len(ds.Test), u.card.Text, u.status.Text)
	}
	for i, c := range u.cases {
		if c.Confidence == nil || (i > 0 && *c.Confidence < *u.cases[i-1].Confidence) {
			t.Errorf("case %d %s: confidence %v: want each, the least sure first", i, c.ID, c.Confidence)
		}
		got, err := os.ReadFile(filepath.Join(out, c.Predictions[0]))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(pkg, "predictions", names[c.ID]+".nii.gz"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s (test case %s): the prediction differs from the package's", c.ID, names[c.ID])
		}
	}
	// The least sure case opens in the viewer with its volumes (the demo's labels in mL).
	first := u.cases[0]
	q.wait(t, "the first case's view", func() bool { return u.current == first && strings.HasPrefix(u.info.Text, first.ID+", confidence") })
	if !strings.Contains(u.info.Text, " mL") || len(u.holder.Objects) != 1 {
		t.Errorf("the case's text %q: want its volumes in mL, and the viewer", u.info.Text)
	}
	u.note.SetText("contours checked")
	test.Tap(u.approve)
	q.wait(t, "the decision", func() bool { return first.Decision == export.Approved })
	n, _, err := audit.VerifyJSONLFile(filepath.Join(out, predict.FileAudit))
	entries := audittest.Entries(t, filepath.Join(out, "audit.db"))
	last := entries[len(entries)-1]
	if err != nil || n != len(entries) || last.Action != audit.ActionReviewDecision || last.Role != audit.RoleUser || detailsOf(t, last)["note"] != "contours checked" {
		t.Errorf("the predict run's audit log (%d entries, %v) ends with %s by %s %s: want the approval", n, err, last.Action, last.Role, last.Details)
	}
	if got := a.A.Preferences().StringList(prefRecentPkgs); !slices.Contains(got, pkg) {
		t.Errorf("recent packages %v: want %s", got, pkg)
	}
}

// correctedCase is what correctThroughScreen drew: the case, its correction's file
// (relative to the run) and the changes the bar showed.
type correctedCase struct {
	id, file string
	changes  []edit.Change
}

// correctThroughScreen corrects the Review screen's current case as a reader does: Correct,
// the task's last label, a brush of 10 mm, a tap on the middle of the view, Save correction.
func correctThroughScreen(t *testing.T, a *App, q loop, s *reviewScreen) correctedCase {
	t.Helper()
	c := s.corr
	if c.toggle.Disabled() || !c.save.Disabled() {
		t.Fatal("Correct is not offered on a segmentation's test case, or Save is before any edit")
	}
	c.toggle.SetChecked(true)
	c.label.SetSelected(c.label.Options[len(c.label.Options)-1])
	c.radius.SetValue(10)
	v := s.view.Left
	at := fyne.CurrentApp().Driver().AbsolutePositionForObject(v).Add(fyne.NewPos(v.Size().Width/2, v.Size().Height/2))
	test.TapCanvas(a.W.Canvas(), at)
	q.wait(t, "the brush's edit", func() bool { return len(c.changes()) > 0 })
	got := correctedCase{id: s.current.ID, changes: c.changes()}
	// Ctrl+Z takes the dab back, Ctrl+Shift+Z makes it again.
	keys, ok := a.W.Canvas().(fyne.Shortcutable)
	if !ok {
		t.Fatal("the window's canvas takes no shortcuts")
	}
	keys.TypedShortcut(&desktop.CustomShortcut{KeyName: fyne.KeyZ, Modifier: fyne.KeyModifierShortcutDefault})
	if len(c.changes()) != 0 || !c.save.Disabled() {
		t.Errorf("after undo: changes %v, Save enabled %v", c.changes(), !c.save.Disabled())
	}
	keys.TypedShortcut(&desktop.CustomShortcut{KeyName: fyne.KeyZ, Modifier: fyne.KeyModifierShortcutDefault | fyne.KeyModifierShift})
	if !slices.Equal(c.changes(), got.changes) {
		t.Errorf("after redo: changes %v, want %v", c.changes(), got.changes)
	}
	t.Logf("correction of %s: %s", got.id, changesText(got.changes))
	test.Tap(c.save)
	got.file = filepath.Join(export.CorrectionsDir, got.id+".nii.gz")
	return got
}

// checkCorrected checks the correction kept in the run dir: its file holds the corrected
// map beside the untouched prediction, and the audit entry its sha256 and the changes.
func checkCorrected(t *testing.T, dir string, c correctedCase) {
	t.Helper()
	path := filepath.Join(dir, c.file)
	sum, err := fileio.PathSHA256(path)
	if err != nil {
		t.Fatal(err)
	}
	var last audit.Entry // the correction's entry
	for _, e := range audittest.Entries(t, filepath.Join(dir, "audit.db")) {
		if e.Action == audit.ActionReviewDecision && detailsOf(t, e)["decision"] == export.Corrected {
			last = e
		}
	}
	var det struct {
		Case, Decision, Correction string
		Changes                    []edit.Change
	}
	if err := json.Unmarshal(last.Details, &det); err != nil || det.Case != c.id || det.Decision != export.Corrected ||
		det.Correction != c.file || !slices.Equal(det.Changes, c.changes) || last.Outputs["correction"] != sum {
		t.Errorf("the correction's audit entry %s %v: want case %s, %s, changes %v, sha256 %s", last.Details, last.Outputs, c.id, c.file, c.changes, sum)
	}
}
