package ui

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"amid/host/config"
	"amid/host/planner"
	"amid/host/run"
	"amid/host/schedule"
	"amid/host/synth"
	"amid/plugins/compute"
	"amid/plugins/metrics"
	"amid/plugins/protocol"
	"amid/viewer/bridge"
	"amid/viewer/imageio"
	"amid/viewer/volume"
	vwidget "amid/viewer/widget"
)

// loop stands in for the UI goroutine: Fyne's test driver has none (it runs fyne.Do on
// the caller's goroutine), so the app's bridge queues its flushes, which carry the screens'
// changes and the viewers' frames, and wait runs them on the test goroutine.
type loop chan func()

func (q loop) do(f func()) { q <- f }

// wait runs queued UI functions until cond holds, failing after 30 s.
func (q loop) wait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	q.waitUpTo(t, what, 30*time.Second, cond)
}

// waitUpTo runs queued UI functions until cond holds, failing after limit.
func (q loop) waitUpTo(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.After(limit)
	for !cond() {
		select {
		case f := <-q:
			f()
		case <-time.After(5 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%s: still waiting after %v", what, limit)
		}
	}
}

// drain runs what is queued now and for a short while after.
func (q loop) drain() {
	for {
		select {
		case f := <-q:
			f()
		case <-time.After(50 * time.Millisecond):
			return
		}
	}
}

// newApp builds the window in a fresh data folder (AMID_HOME) with an empty plugin folder.
func newApp(t *testing.T) (*App, loop) {
	t.Helper()
	q := make(loop, 4096)
	return newAppWith(t, bridge.New(q.do), q.drain), q
}

// newAppWith is newApp with the bridge b; settle runs what b has handed over, if anything
// has to (after the window is built, and when the test ends).
func newAppWith(t *testing.T, b *bridge.Bridge, settle func()) *App {
	t.Helper()
	home := t.TempDir()
	t.Setenv(config.EnvHome, home)
	t.Setenv(config.EnvPluginDir, filepath.Join(home, "plugins"))
	fa := test.NewTempApp(t)
	a, err := New(fa, Options{bridge: b})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.W.Close()
		settle()
	})
	a.W.Resize(fyne.NewSize(1100, 760))
	settle()
	return a
}

// texts returns every label and text shown in o.
func texts(o fyne.CanvasObject) string {
	var b strings.Builder
	for _, x := range test.LaidOutObjects(o) {
		switch w := x.(type) {
		case *widget.Label:
			b.WriteString(w.Text + "\n")
		case *widget.Button:
			b.WriteString("[" + w.Text + "]\n")
		}
	}
	return b.String()
}

func TestViewerShowsSample(t *testing.T) {
	a, q := newApp(t)
	a.tabs.SelectIndex(tabViewer)
	q.drain()
	// The summary names the sample's grid: 96×96×40 voxels of 2.4×2.4×4 mm (synth.SampleStudy).
	const want = "head CT 96×96×40, 2.4×2.4×4.0 mm"
	if s := texts(a.viewer.obj); !strings.Contains(s, want) {
		t.Errorf("viewer says %q, want %q in it", s, want)
	}
	views := 0
	for _, o := range test.LaidOutObjects(a.viewer.obj) {
		if _, ok := o.(*vwidget.OrthoView); ok {
			views++
		}
	}
	if views != 1 {
		t.Errorf("%d three-plane viewers, want 1", views)
	}
}

// writeState writes a run folder's run.json as the run package does.
func writeState(t *testing.T, dir string, st *run.State) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	st.Version = 1 // the state version run.LoadState reads
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "run.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestHomeListsRuns(t *testing.T) {
	a, q := newApp(t)
	runs, _ := a.runsDir()
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	writeState(t, filepath.Join(runs, "old"), &run.State{ID: "old", Phase: run.PhaseExplore, Created: t0})
	writeState(t, filepath.Join(runs, "new"), &run.State{ID: "new", Phase: run.PhaseDone, Created: t0.Add(time.Hour),
		Lanes: []*run.LaneState{{ID: "unet", Folds: map[int]run.FoldState{0: {Status: run.FoldDone, Score: 0.8}}}}, Chosen: "unet"})
	if err := os.MkdirAll(filepath.Join(runs, "not-a-run"), 0o755); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(t.TempDir(), "elsewhere")
	writeState(t, elsewhere, &run.State{ID: "elsewhere", Phase: run.PhasePlan, Created: t0.Add(2 * time.Hour)})
	rememberRun(a.A.Preferences(), elsewhere)
	a.home.refresh()
	q.wait(t, "home rows", func() bool { return len(a.home.rows) == 3 })
	var ids []string
	for _, r := range a.home.rows {
		ids = append(ids, r.ID)
	}
	if strings.Join(ids, ",") != "elsewhere,new,old" {
		t.Errorf("runs %v, want the three runs newest first (the empty folder is not one)", ids)
	}
	// Opening the finished run shows its results.
	a.home.list.Select(1)
	q.wait(t, "results", func() bool { return len(a.results.rows) == 1 })
	if a.tabs.SelectedIndex() != tabResults || a.RunDir() != filepath.Join(runs, "new") {
		t.Errorf("tab %d run %q after opening a finished run", a.tabs.SelectedIndex(), a.RunDir())
	}
	if got := a.A.Preferences().StringList(prefRecentRuns); len(got) != 2 || got[0] != filepath.Join(runs, "new") {
		t.Errorf("recent runs %v, want the opened run first", got)
	}
	// An unfinished run opens in the monitor, ready to resume.
	a.home.list.Select(2)
	q.drain()
	if a.tabs.SelectedIndex() != tabMonitor || a.monitor.resumeB.Disabled() {
		t.Errorf("unfinished run: tab %d, resume disabled %v", a.tabs.SelectedIndex(), a.monitor.resumeB.Disabled())
	}
}

// rexFolder lays out the files of a prepared DENTEX folder (assets/tasks/rexmle/dentex.yaml:
// train/images/{id}.png, the COCO table, test/images/{id}.png) with empty contents: only
// their names are examined.
func rexFolder(t *testing.T) string {
	dir := t.TempDir()
	for _, f := range []string{"train/images/a.png", "train/images/b.png", "train/train_quadrant_enumeration_disease.json", "test/images/c.png"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestDetect(t *testing.T) {
	d, err := Detect(rexFolder(t))
	if err != nil {
		t.Fatal(err)
	}
	if d.Builtin != "dentex" || d.Train != 2 || d.Test != 1 || d.Parsed.Kind != "detection" {
		t.Errorf("detected %s with %d train, %d test, kind %s; want dentex 2 1 detection", d.Builtin, d.Train, d.Test, d.Parsed.Kind)
	}
	if _, err := Detect(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a prepared ReX-MLE folder") {
		t.Errorf("empty folder: %v", err)
	}
	b, err := withKind(d.Task, "classification")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\nkind: classification\n") || strings.Contains(string(b), "kind: detection") {
		t.Errorf("kind not replaced")
	}
	if _, err := withKind([]byte("id: x\n"), "iqa"); err == nil {
		t.Error("a definition without a kind line was changed")
	}
}

// The New task screen recognises a ReX-MLE folder, and Test connection pings an
// OpenAI-compatible endpoint on loopback.
func TestNewTaskScreen(t *testing.T) {
	a, q := newApp(t)
	s := a.newTask
	dir := rexFolder(t)
	s.source.SetText(dir)
	s.detect(dir)
	q.wait(t, "detection", func() bool { return s.det != nil })
	if s.kind.Selected != "detection" || s.data.Text != dir || s.budget.Text != "20m0s" {
		t.Errorf("kind %q data %q budget %q; want detection, the folder and DENTEX's 20m", s.kind.Selected, s.data.Text, s.budget.Text)
	}
	if !strings.Contains(s.found.Text, "built-in ReX-MLE task dentex") || !strings.Contains(s.found.Text, "2 training and 1 test cases") {
		t.Errorf("found: %q", s.found.Text)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"tiny","object":"model"}]}`))
	}))
	defer srv.Close()
	s.planner.SetSelected("llm")
	s.llmURL.SetText(srv.URL + "/v1")
	s.llmModel.SetText("tiny")
	s.testConnection()
	q.wait(t, "ping", func() bool { return s.ping.Text != "testing…" })
	if !strings.Contains(s.ping.Text, "answers with model tiny") {
		t.Errorf("ping: %q", s.ping.Text)
	}
	s.llmModel.SetText("other")
	s.testConnection()
	q.wait(t, "ping", func() bool { return s.ping.Text != "testing…" })
	if !strings.Contains(s.ping.Text, `does not offer model "other"`) {
		t.Errorf("ping of a missing model: %q", s.ping.Text)
	}
}

// Starting the demo task with no plugin trusted creates the run folder, and the monitor
// shows the run's phases and its failure.
func TestStartRunWithoutPlugins(t *testing.T) {
	a, q := newApp(t)
	data := t.TempDir()
	if err := synth.Demo(data, 2, 1); err != nil {
		t.Fatal(err)
	}
	s := a.newTask
	s.detect(filepath.Join(data, "task.yaml"))
	q.wait(t, "detection", func() bool { return s.det != nil })
	s.budget.SetText("1m")
	s.startRun()
	m := a.monitor
	q.wait(t, "the run's end", func() bool { return strings.HasPrefix(m.status.Text, "Failed") })
	if a.tabs.SelectedIndex() != tabMonitor {
		t.Errorf("tab %d, want the monitor", a.tabs.SelectedIndex())
	}
	st, err := run.LoadState(a.RunDir())
	if err != nil {
		t.Fatal(err)
	}
	if st.Budget != time.Minute {
		t.Errorf("run budget %v, want the 1m asked for", st.Budget)
	}
	if !strings.Contains(strings.Join(m.view.Log, "\n"), "phase ") || m.resumeB.Disabled() {
		t.Errorf("log %q, resume disabled %v", m.view.Log, m.resumeB.Disabled())
	}
}

// Events fill the lanes table, the loss plot and the log; a pause leaves the run resumable.
func TestMonitorEvents(t *testing.T) {
	a, q := newApp(t)
	m := a.monitor
	dir := filepath.Join(t.TempDir(), "r")
	writeState(t, dir, &run.State{ID: "r", Phase: run.PhaseExplore, Budget: 10 * time.Minute})
	m.show(dir)
	for i := 1; i <= 5; i++ {
		m.event(m.gen, run.Event{Phase: run.PhaseExplore, Lane: "unet", Fold: 0, Progress: &protocol.Progress{
			Step: int64(10 * i), TotalSteps: 50, Losses: map[string]float64{"loss": 1 / float64(i), "dice": 0.1}, ETA: time.Duration(5-i) * time.Second}})
	}
	m.event(m.gen, run.Event{Phase: run.PhaseExplore, Lane: "nnunet", Fold: 0, Progress: &protocol.Progress{Step: 1, Losses: map[string]float64{"ce": 2}}})
	m.event(m.gen, run.Event{Phase: run.PhaseExploit, Message: "finalists: unet"})
	q.drain()
	if len(m.view.Rows) != 2 || m.cell(widget.TableCellID{Row: 0, Col: 4}) != "50/50" || m.cell(widget.TableCellID{Row: 0, Col: 5}) != "0.2" {
		t.Errorf("rows %+v", m.view.Rows)
	}
	// The "loss" series of unet and the first-named loss of nnunet.
	if len(m.plot.series) != 2 || len(m.plot.series[0]) != 5 || m.plot.series[1][0] != 2 {
		t.Errorf("plot series %v", m.plot.series)
	}
	r := test.WidgetRenderer(m.plot).(*plotRenderer)
	r.Layout(fyne.NewSize(200, 100))
	if r.used != 4 { // five points of unet → 4 segments; nnunet's single point draws none
		t.Errorf("%d plot segments, want 4", r.used)
	}
	log := strings.Join(m.view.Log, "\n")
	if !strings.Contains(log, "phase exploit") || !strings.Contains(log, "finalists: unet") {
		t.Errorf("log %q", log)
	}
	m.st.Running = true // as if started; pause, then the run returns context.Canceled
	m.cancel = func() {}
	m.pause()
	m.finished(m.gen, context.Canceled, true)
	q.drain()
	if !strings.HasPrefix(m.status.Text, "Paused") || m.resumeB.Disabled() || !m.pauseB.Disabled() {
		t.Errorf("after pause: %q, resume disabled %v, pause disabled %v", m.status.Text, m.resumeB.Disabled(), m.pauseB.Disabled())
	}
}

func TestResultsScreen(t *testing.T) {
	a, q := newApp(t)
	dir := filepath.Join(t.TempDir(), "r")
	writeState(t, dir, &run.State{ID: "r", Phase: run.PhaseDone, Chosen: "b", ChosenFold: 1,
		Why: []string{"b has the best mean validation dice (0.85 over 2 folds)", "a lost: mean 0.70"},
		Lanes: []*run.LaneState{
			{ID: "a", Folds: map[int]run.FoldState{0: {Status: run.FoldDone, Score: 0.7}}},
			{ID: "b", Folds: map[int]run.FoldState{0: {Status: run.FoldDone, Score: 0.8}, 1: {Status: run.FoldDone, Score: 0.9}}},
			{ID: "c", Folds: map[int]run.FoldState{0: {Status: run.FoldFailed, Error: "out of memory"}}},
		}})
	a.results.load(dir)
	q.wait(t, "results", func() bool { return len(a.results.rows) == 3 })
	rows := a.results.rows
	// Best mean first: b (0.85), a (0.70), then c with no finished fold.
	if rows[0][0] != "b" || rows[0][2] != "0.8500" || rows[0][3] != "f0 0.8000, f1 0.9000" || rows[0][4] != "yes (fold 1)" {
		t.Errorf("row 0 = %v", rows[0])
	}
	if rows[1][0] != "a" || rows[2][0] != "c" || rows[2][3] != "f0 failed: out of memory" {
		t.Errorf("rows = %v", rows)
	}
	if !strings.Contains(a.results.why.Text, "a lost: mean 0.70") {
		t.Errorf("why: %q", a.results.why.Text)
	}
}

// finishedRun fabricates a finished segmentation run on the demo task: its test
// predictions are the answers, and the chosen lane's validation predictions of fold 0 are
// one perfect and one empty.
func finishedRun(t *testing.T) string {
	t.Helper()
	data := t.TempDir()
	if err := synth.Demo(data, 4, 1); err != nil { // 4 train cases, 1 test case
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	writeState(t, dir, &run.State{ID: "run", Phase: run.PhaseDone, Task: filepath.Join(data, "task.yaml"), Data: data, Chosen: "unet", ChosenFold: 0})
	preds := map[string][]string{"head005": {filepath.Join(data, "answers", "head005_seg.nii.gz")}}
	b, _ := json.Marshal(preds)
	if err := os.MkdirAll(filepath.Join(dir, "final"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "final", "predictions.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	val := filepath.Join(dir, "lanes", "unet", "f0", "val")
	if err := os.MkdirAll(val, 0o755); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{}
	for _, id := range []string{"head001", "head002"} {
		labels[id] = filepath.Join(data, "train", id+"_seg.nii.gz")
	}
	copyFile(t, labels["head001"], filepath.Join(val, "head001.nii.gz"))
	writeEmptyLike(t, labels["head002"], filepath.Join(val, "head002.nii.gz"))
	b, _ = json.Marshal(labels)
	if err := os.WriteFile(filepath.Join(dir, "labels.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestReviewAndExport(t *testing.T) {
	a, q := newApp(t)
	dir := finishedRun(t)
	a.OpenRun(dir)
	a.tabs.SelectIndex(tabReview)
	s := a.review
	q.wait(t, "review cases", func() bool { return s.data != nil && len(s.shown) == 1 })
	if !strings.Contains(s.title.Text, "0 of 1 test cases reviewed") {
		t.Errorf("title %q", s.title.Text)
	}
	s.list.Select(0)
	q.wait(t, "case view", func() bool { return s.loadedID == "head005" })
	if s.view == nil || s.view.Left.Err() != nil || !s.mode.Disabled() {
		t.Fatalf("viewer not shown, or compare modes enabled without truth")
	}
	// Export is refused while the case has no decision, unless a reason is given.
	a.tabs.SelectIndex(tabExport)
	e := a.export
	q.wait(t, "export state", func() bool { return e.dir == dir })
	if !e.button.Disabled() || !strings.Contains(e.state.Text, "1 of 1 test cases have no decision") {
		t.Errorf("export enabled before review: %q", e.state.Text)
	}
	e.reason.SetText("urgent second opinion")
	if e.button.Disabled() {
		t.Error("export still disabled with a reason")
	}
	e.reason.SetText("")
	e.dest.SetText(filepath.Join(t.TempDir(), "pkg"))
	e.run() // as if the gate were bypassed: the host refuses too
	q.wait(t, "export refusal", func() bool { return strings.HasPrefix(e.result.Text, "Refused") })

	reload := func() {
		s.data, s.loadedID = nil, ""
		s.load(dir)
		q.wait(t, "review reload", func() bool { return s.data != nil })
	}
	reload()
	s.list.Select(0)
	q.wait(t, "case view", func() bool { return s.loadedID == "head005" })
	s.note.SetText("borders fine")
	s.decide(run.Approved)
	q.wait(t, "decision", func() bool { return s.shown[0].Decision == run.Approved })
	ds, err := run.Decisions(dir)
	if err != nil || len(ds) != 1 || ds[0].Case != "head005" || ds[0].Decision != run.Approved || ds[0].Note != "borders fine" {
		t.Fatalf("decisions %+v, %v", ds, err)
	}
	e.load(dir)
	q.wait(t, "export state", func() bool { return strings.Contains(e.state.Text, "All 1 test cases are reviewed") })
	if e.button.Disabled() {
		t.Error("export disabled after a complete review")
	}

	// Validation cases of the chosen lane, worst Dice first: the empty prediction scores 0.
	reload()
	if s.data.Reviewed() != 1 {
		t.Errorf("%d cases reviewed after reloading, want 1", s.data.Reviewed())
	}
	s.filter.SetSelected(filterWorstDice)
	q.wait(t, "Dice", func() bool { return len(s.shown) == 2 })
	if s.shown[0].ID != "head002" || s.shown[0].Dice != 0 || s.shown[1].Dice != 1 {
		t.Errorf("worst first: %s %v, %s %v; want head002 0 then head001 1", s.shown[0].ID, s.shown[0].Dice, s.shown[1].ID, s.shown[1].Dice)
	}
	s.list.Select(0)
	q.wait(t, "validation view", func() bool { return s.loadedID == "head002" })
	if s.mode.Disabled() || !s.approve.Disabled() {
		t.Error("a validation case: modes should be enabled, decisions not")
	}
	s.mode.SetSelected("Difference")
	q.drain()
	if s.view.Mode() != vwidget.ShowDifference {
		t.Errorf("mode %v, want difference", s.view.Mode())
	}
}

func TestDice(t *testing.T) {
	p, tr := labelVol(t, []uint8{0, 1, 1, 2}), labelVol(t, []uint8{0, 1, 2, 2})
	// Label 1: 1 voxel shared of 2 + 1, Dice 2/3; label 2: 1 shared of 1 + 2, Dice 2/3.
	if d, err := dice(p, tr, metrics.DiceUnion); err != nil || math.Abs(d-4.0/6) > 1e-12 {
		t.Errorf("dice = %v, %v; want 2/3", d, err)
	}
	z := labelVol(t, []uint8{0, 0, 0, 0})
	if d, _ := dice(z, z, metrics.DiceUnion); d != 1 {
		t.Errorf("two empty images: %v, want 1", d)
	}
}

func TestPluginsScreen(t *testing.T) {
	a, q := newApp(t)
	pdir := os.Getenv(config.EnvPluginDir)
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	// A program that is no plugin: it exits at once, so it cannot describe itself.
	script := []byte("#!/bin/sh\nexit 3\n")
	if err := os.WriteFile(filepath.Join(pdir, "amid-plugin-fake"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(script)
	s := a.plugins
	a.tabs.SelectIndex(tabPlugins)
	q.wait(t, "plugin list", func() bool { return len(s.entries) == 1 })
	s.list.Select(0)
	if !strings.Contains(s.details.Text, hex.EncodeToString(sum[:])) || s.trust.Disabled() {
		t.Errorf("details %q do not show the sha256, or trust is disabled", s.details.Text)
	}
	s.trustEntry(s.entries[0])
	q.wait(t, "trust", func() bool { return strings.Contains(s.status.Text, "not trusted") })
	q.wait(t, "rescan", func() bool { return len(s.entries) == 1 })
	if st := s.entries[0].State; st == "trusted" {
		t.Errorf("a plugin that cannot describe itself is %s", st)
	}
}

func TestSettingsSave(t *testing.T) {
	a, _ := newApp(t)
	s := a.settings
	s.llmURL.SetText("http://127.0.0.1:9/v1")
	s.llmModel.SetText("m")
	s.home.SetText("/data/amid")
	s.save()
	p := a.A.Preferences()
	if p.String(prefLLMURL) != "http://127.0.0.1:9/v1" || p.String(prefLLMModel) != "m" || p.String(prefHome) != "/data/amid" {
		t.Errorf("preferences not saved")
	}
	if !strings.HasPrefix(s.status.Text, "Saved.") {
		t.Errorf("status %q", s.status.Text)
	}
}

// The executor chosen in the Settings screen is saved, and the runs started from then on
// train there (the open host's executor), the environment's keys taking precedence; a
// field that is not a number is refused with a sentence, and nothing is saved.
func TestSettingsExecutor(t *testing.T) {
	for _, k := range []string{config.EnvExecutor, config.EnvSlurmPartition, config.EnvSlurmAccount, config.EnvSlurmJobs, config.EnvSlurmCPUs, config.EnvSlurmGPUs} {
		t.Setenv(k, "")
	}
	a, _ := newApp(t)
	if _, err := a.env(); err != nil {
		t.Fatal(err)
	}
	s := a.settings
	if s.executor.Selected != config.ExecutorLocal || !s.partition.Disabled() {
		t.Errorf("a fresh Settings screen shows executor %q (partition enabled: %v), want local with the Slurm fields off", s.executor.Selected, !s.partition.Disabled())
	}
	s.executor.SetSelected(config.ExecutorSlurm)
	if s.partition.Disabled() || s.gpus.Disabled() {
		t.Error("the Slurm fields stay disabled with the Slurm executor chosen")
	}
	s.jobs.SetText("many")
	s.save()
	if p := a.A.Preferences(); !strings.Contains(s.status.Text, `"many"`) || p.String(prefExecutor) != "" {
		t.Errorf("a job count of %q: status %q, executor saved %q", s.jobs.Text, s.status.Text, p.String(prefExecutor))
	}
	s.partition.SetText(" gpu ")
	s.account.SetText("radiology")
	s.jobs.SetText("8")
	s.cpus.SetText("")
	s.gpus.SetText("2")
	t.Setenv(config.EnvSlurmAccount, "overridden")
	s.save()
	want := config.Executor{Kind: config.ExecutorSlurm, Partition: "gpu", Account: "radiology", Jobs: 8, GPUs: 2}
	if got := savedExecutor(a.A.Preferences()); got != want {
		t.Errorf("saved %+v, want %+v", got, want)
	}
	want.Account = "overridden"
	if a.host.Executor != want || a.folders.Executor != want {
		t.Errorf("new runs train on %+v (window: %+v), want %+v", a.host.Executor, a.folders.Executor, want)
	}
	again := newSettingsScreen(a)
	if again.executor.Selected != config.ExecutorSlurm || again.partition.Text != "gpu" || again.jobs.Text != "8" || again.cpus.Text != "" {
		t.Errorf("the screen shows the saved executor as %q, partition %q, jobs %q, cores %q", again.executor.Selected, again.partition.Text, again.jobs.Text, again.cpus.Text)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeEmptyLike writes a label image on the grid of the one at from with no label at all.
func writeEmptyLike(t *testing.T, from, to string) {
	t.Helper()
	v, err := imageio.Read(from)
	if err != nil {
		t.Fatal(err)
	}
	z := v.Clone()
	for i := 0; i < z.Len(); i++ {
		z.SetIndex(i, 0)
	}
	if err := imageio.Write(to, z); err != nil {
		t.Fatal(err)
	}
}

func labelVol(t *testing.T, vals []uint8) *volume.Volume {
	t.Helper()
	v, err := volume.New(volume.Uint8, [4]int{len(vals), 1, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	copy(v.Data.([]uint8), vals)
	return v
}

// The folders saved in the Settings screen reach the host as values: the window opens the
// store in the saved data folder and scans the saved plugin folder, and the process's
// environment stays as it was; where the environment names a folder, it wins.
func TestSavedFolders(t *testing.T) {
	t.Setenv(config.EnvHome, "")
	t.Setenv(config.EnvPluginDir, "")
	saved := t.TempDir()
	fa := test.NewTempApp(t)
	fa.Preferences().SetString(prefHome, saved)
	fa.Preferences().SetString(prefPluginDir, filepath.Join(saved, "mine"))
	q := make(loop, 4096)
	a, err := New(fa, Options{bridge: bridge.New(q.do)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.W.Close()
		q.drain()
	})
	env, err := a.env()
	if err != nil {
		t.Fatal(err)
	}
	if p := a.host.Paths; p.Store != filepath.Join(saved, "amid.db") || env.Catalog.User != filepath.Join(saved, "mine") {
		t.Errorf("opened %+v, want the saved folders under %s", p, saved)
	}
	if h, d := os.Getenv(config.EnvHome), os.Getenv(config.EnvPluginDir); h != "" || d != "" {
		t.Errorf("the window set $%s=%q, $%s=%q", config.EnvHome, h, config.EnvPluginDir, d)
	}

	other := t.TempDir()
	t.Setenv(config.EnvHome, other)
	b, err := New(fa, Options{bridge: bridge.New(q.do)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.W.Close() })
	if runs, _ := b.runsDir(); runs != filepath.Join(other, "runs") {
		t.Errorf("with $%s set, runs go to %s, want %s", config.EnvHome, runs, filepath.Join(other, "runs"))
	}
}

// The lanes table shows each lane's rounds, its validation curve, that it stopped and its
// device (the one planned, or the CPU where a fold planned for a GPU trained there), and
// the final model on all the data as its own row.
func TestMonitorRounds(t *testing.T) {
	a, q := newApp(t)
	m := a.monitor
	dir := filepath.Join(t.TempDir(), "r")
	writeState(t, dir, &run.State{ID: "r", Phase: run.PhaseExploit, Budget: 10 * time.Minute, Lanes: []*run.LaneState{
		{ID: "a", Lane: planner.Lane{Device: "vulkan:0 GPU"}, Folds: map[int]run.FoldState{0: {Status: run.FoldDone, Steps: 300, Compute: compute.Identity{Device: "vulkan:0 GPU (driver 1)"}}},
			Schedule: schedule.Lane{Rung: 2, Curve: []schedule.Point{{Step: 100, Score: 0.4}, {Step: 300, Score: 0.61}}}},
		{ID: "b", Lane: planner.Lane{Device: "vulkan:0 GPU"}, Folds: map[int]run.FoldState{0: {Status: run.FoldDone, Steps: 100, Compute: compute.Identity{Device: "cpu"}}},
			Schedule: schedule.Lane{Rung: 1, Curve: []schedule.Point{{Step: 100, Score: 0.3}}, Stopped: "not promoted"}},
	}, Final: &run.FinalModel{Mode: schedule.FinalAllData, Lane: "a", Steps: 900, Checkpoint: "/x/final.ckpt"}})
	m.show(dir)
	q.drain()
	cells := func(row int) []string {
		var out []string
		for c := range laneColumns {
			out = append(out, m.cell(widget.TableCellID{Row: row, Col: c}))
		}
		return out
	}
	if len(m.view.Rows) != 3 {
		t.Fatalf("rows %+v", m.view.Rows)
	}
	if got := strings.Join(cells(0), "|"); got != "a|f0|done|2|300||0.40→0.61||vulkan:0 GPU" {
		t.Errorf("lane a: %s", got)
	}
	if got := strings.Join(cells(1), "|"); got != "b|f0|stopped|1|100||0.30||cpu" {
		t.Errorf("lane b: %s", got)
	}
	if got := strings.Join(cells(2), "|"); got != "a|all|done||900||||vulkan:0 GPU" {
		t.Errorf("final model: %s", got)
	}
}
