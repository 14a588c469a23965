package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"amid/host/audit"
	"amid/host/audit/audittest"
	"amid/host/planner"
	"amid/host/run"
	"amid/host/schedule"
	"amid/plugins/protocol"
	"amid/viewer/bridge"
)

// realRunEnd bounds the wait for a real run's end once resumed: its budget (wall-clock
// time over both sessions) and as much again twice over for the final prediction,
// verification and export, which run past the budget on a loaded machine (TestExport: a
// whole run takes 18-30 s on two cores).
const realRunEnd = 3 * realRunBudget

// everyStep plans as the rules do, one lane, with the segmentation plugin reporting its
// progress after every training step (report_every): its default, every 10 steps, is more
// than a loaded two-core machine trains in the explore share of realRunBudget.
type everyStep struct{}

func (everyStep) Plan(ctx context.Context, in planner.Input) ([]planner.Lane, error) {
	lanes, err := oneNetwork{}.Plan(ctx, in)
	if err != nil {
		return nil, err
	}
	for i, l := range lanes {
		var c map[string]any
		if err := json.Unmarshal(l.Config, &c); err != nil {
			return nil, fmt.Errorf("lane %s: config: %w", l.Name, err)
		}
		if c == nil {
			c = map[string]any{}
		}
		c["report_every"] = 1
		if lanes[i].Config, err = json.Marshal(c); err != nil {
			return nil, fmt.Errorf("lane %s: config: %w", l.Name, err)
		}
	}
	return lanes, nil
}

// oneNetwork plans the rules planner's first lane without a cap on its steps: a network,
// which trains for the run's time (a forest's 64 trees take a second, too short to pause).
type oneNetwork struct{}

func (oneNetwork) Plan(ctx context.Context, in planner.Input) ([]planner.Lane, error) {
	lanes, err := planner.Rules{}.Plan(ctx, in)
	if err != nil {
		return nil, err
	}
	for _, l := range lanes {
		if l.MaxSteps == 0 {
			return []planner.Lane{l}, nil
		}
	}
	return nil, fmt.Errorf("the rules planned no lane without a cap: %d lanes", len(lanes))
}

// progressRow returns the first lane row of the monitor's view with a training step and a
// loss from the plugin, or -1.
func progressRow(m *monitorScreen) int {
	for i, r := range m.view.Rows {
		if r.Step > 0 && r.LossName != "" {
			return i
		}
	}
	return -1
}

// plotted is the number of points in the monitor's loss plot.
func plotted(m *monitorScreen) int {
	n := 0
	for _, s := range m.plot.series {
		n += len(s)
	}
	return n
}

// TestMonitorRealRun drives a real run of the demo task (newRealRun: the segmentation
// plugin, one lane reporting every step, realRunBudget) through the Monitor: started as
// the New task screen starts one (App.startRun), paused with the Pause button once the
// plugin's progress shows, resumed with the Resume button and followed to its end in the
// same run folder. A whole test takes 20-25 s on two cores.
func TestMonitorRealRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model for about 20 s")
	}
	a, q := newApp(t)
	m := a.monitor
	r := newRealRun(t, a, everyStep{}, nil)
	dir := r.Dir()
	began := time.Now()
	a.startRun(r)
	// startRun returns with the run going on its own goroutine: this one stands for the UI
	// goroutine, which must not wait for the run.
	m.mu.Lock()
	running := m.st.Running
	m.mu.Unlock()
	if !running || a.tabs.SelectedIndex() != tabMonitor || a.RunDir() != dir {
		t.Fatalf("after startRun: running %v, tab %d, run %q; want a running run of %s in the monitor", running, a.tabs.SelectedIndex(), a.RunDir(), dir)
	}
	monitorLog := func() string { return strings.Join(m.view.Log, "\n") }

	// Live progress: a lane row with steps and a loss, and a point in the loss plot, while
	// the run trains.
	q.wait(t, "the monitor's first update", func() bool { return m.view.Dir == dir })
	q.wait(t, "the plugin's progress", func() bool { return (progressRow(m) >= 0 && plotted(m) > 0) || !m.view.Running })
	row := progressRow(m)
	if !m.view.Running || row < 0 {
		t.Fatalf("the run ended before showing progress: %q\n%s", m.status.Text, monitorLog())
	}
	first := m.view.Rows[row].Step
	if step, loss := m.cell(widget.TableCellID{Row: row, Col: 4}), m.cell(widget.TableCellID{Row: row, Col: 5}); step == "" || step == "0" || loss == "" {
		t.Errorf("lane row %+v shows step %q and loss %q", m.view.Rows[row], step, loss)
	}
	// The plugins' default device setting, auto, takes the CPU on a machine without a GPU
	// (and never lavapipe).
	if d := m.cell(widget.TableCellID{Row: row, Col: 8}); d != "cpu" && !strings.HasPrefix(d, "vulkan:") {
		t.Errorf("lane row %+v shows device %q", m.view.Rows[row], d)
	}
	if m.status.Text != "Running" || m.pauseB.Disabled() || m.cancelB.Disabled() || !m.resumeB.Disabled() {
		t.Errorf("while training: status %q, pause disabled %v, cancel disabled %v, resume disabled %v",
			m.status.Text, m.pauseB.Disabled(), m.cancelB.Disabled(), m.resumeB.Disabled())
	}
	t.Logf("progress at step %d, %v after the start", first, time.Since(began).Round(100*time.Millisecond))

	// Pause: the run stops at a safe point with its state saved, to be continued.
	points := plotted(m)
	pressed := time.Now()
	test.Tap(m.pauseB)
	q.wait(t, "the pause", func() bool { return !m.view.Running })
	t.Logf("paused %v after the press", time.Since(pressed).Round(10*time.Millisecond))
	if !strings.HasPrefix(m.status.Text, "Paused") || !m.pauseB.Disabled() || !m.cancelB.Disabled() || m.resumeB.Disabled() {
		t.Fatalf("after the pause: status %q, pause disabled %v, cancel disabled %v, resume disabled %v\n%s",
			m.status.Text, m.pauseB.Disabled(), m.cancelB.Disabled(), m.resumeB.Disabled(), monitorLog())
	}
	paused, err := run.LoadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Paused while the one lane trained on fold 0: the fold stays "training" (Resume
	// continues it) and the time spent is saved, within the budget.
	if paused.Phase != run.PhaseExplore || len(paused.Lanes) != 1 || paused.Lanes[0].Folds[0].Status != run.FoldTraining ||
		paused.Spent <= 0 || paused.Spent >= paused.Budget {
		t.Fatalf("state after the pause: phase %s, %d lanes, fold 0 %+v, spent %v of %v; want explore, 1 lane training, 0 < spent < budget",
			paused.Phase, len(paused.Lanes), foldOf(paused, 0), paused.Spent, paused.Budget)
	}

	// Resume: the same run folder continues to its end. The paused session's ETAs are
	// cleared when the resumed one starts, until it reports its own. The test reads what
	// the screen shows (m.view, written on this goroutine by the bridge's flushes).
	etaBefore := m.view.LaneETA
	test.Tap(m.resumeB)
	q.wait(t, "the resumed session's start", func() bool { return m.view.Running })
	if etaBefore <= 0 || (plotted(m) == points && (m.view.LaneETA != 0 || m.view.Rows[0].ETA != 0)) {
		t.Errorf("lane ETA %v before the pause, %v (row %v) when resumed; want one, then none until the resumed session reports", etaBefore, m.view.LaneETA, m.view.Rows[0].ETA)
	}
	q.waitUpTo(t, "the run's end", realRunEnd, func() bool { return !m.view.Running && !strings.HasPrefix(m.status.Text, "Paused") })
	t.Logf("the run ended %v after the start", time.Since(began).Round(100*time.Millisecond))
	if !strings.HasPrefix(m.status.Text, "Done") {
		t.Fatalf("after resuming: %q\n%s", m.status.Text, monitorLog())
	}
	if !m.pauseB.Disabled() || !m.cancelB.Disabled() || !m.resumeB.Disabled() {
		t.Errorf("a finished run: pause disabled %v, cancel disabled %v, resume disabled %v", m.pauseB.Disabled(), m.cancelB.Disabled(), m.resumeB.Disabled())
	}
	if m.view.Dir != dir || a.RunDir() != dir || m.title.Text != "Run "+filepath.Base(dir) {
		t.Errorf("monitor shows %q (%q), the app's run is %q; want %s", m.view.Dir, m.title.Text, a.RunDir(), dir)
	}
	if plotted(m) <= points {
		t.Errorf("%d points in the loss plot after resuming, %d before; want the resumed session's added", plotted(m), points)
	}
	log := monitorLog()
	if p, d := strings.Index(log, "Paused"), strings.Index(log, "Done"); p < 0 || d < p {
		t.Errorf("the log does not record the pause, then the end:\n%s", log)
	}

	st, err := run.LoadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	chosen := foldOf(st, st.ChosenFold)
	if st.Phase != run.PhaseDone || st.Chosen == "" || chosen.Status != run.FoldDone || chosen.Checkpoint == "" || st.Spent <= paused.Spent {
		t.Errorf("final state: phase %s, chosen %q fold %d %+v, spent %v (paused at %v); want done, a trained choice, more time spent",
			st.Phase, st.Chosen, st.ChosenFold, chosen, st.Spent, paused.Spent)
	}
	want := map[string]string{}
	for _, l := range st.Lanes {
		for k, f := range l.Folds {
			want[fmt.Sprintf("%s/f%d", l.ID, k)] = f.Status
		}
	}
	if fm := st.Final; fm != nil && fm.Mode == schedule.FinalAllData {
		// The model on all the data has its row, fold -1, done once its checkpoint is.
		want[fm.Lane+"/f-1"] = fm.Mode
		if fm.Checkpoint != "" {
			want[fm.Lane+"/f-1"] = run.FoldDone
		}
	}
	for _, rw := range m.view.Rows {
		if rw.Status != want[rw.Key] {
			t.Errorf("lane row %s: %s, the run's state says %q", rw.Key, rw.Status, want[rw.Key])
		}
	}
	if _, err := os.Stat(st.Package); st.Package == "" || err != nil {
		t.Errorf("package %q: %v", st.Package, err)
	}
	runs, err := os.ReadDir(filepath.Dir(dir))
	if err != nil || len(runs) != 1 || runs[0].Name() != filepath.Base(dir) {
		names := make([]string, len(runs))
		for i, e := range runs {
			names[i] = e.Name()
		}
		t.Errorf("run folders %v (%v); want %s alone", names, err, filepath.Base(dir))
	}
	// The audit log verifies as one chain and records the resumption once, in exploration.
	resumed := 0
	for _, e := range audittest.Entries(t, filepath.Join(dir, "audit.db")) {
		if e.Action == "run.resumed" {
			resumed++
			if d := detailsOf(t, e); e.Role != audit.RoleHost || d["phase"] != run.PhaseExplore {
				t.Errorf("run.resumed entry: role %s, details %v; want the host, in %s", e.Role, d, run.PhaseExplore)
			}
		}
	}
	if resumed != 1 {
		t.Errorf("%d run.resumed entries in the audit log, want 1", resumed)
	}
}

// foldOf returns fold k of the run's chosen lane, or of its only lane when none is chosen.
func foldOf(st *run.State, k int) run.FoldState {
	for _, l := range st.Lanes {
		if l.ID == st.Chosen || (st.Chosen == "" && len(st.Lanes) == 1) {
			return l.Folds[k]
		}
	}
	return run.FoldState{}
}

// statuses lists the monitor's lane rows as key and status.
func statuses(m *monitorScreen) string {
	var b []string
	for _, r := range m.view.Rows {
		b = append(b, r.Key+" "+r.Status)
	}
	return strings.Join(b, ", ")
}

// The lanes table shows how each fold ended as the run saved it: the events say only when
// a fold starts training.
func TestMonitorRowsFollowTheState(t *testing.T) {
	a, q := newApp(t)
	m := a.monitor
	dir := filepath.Join(t.TempDir(), "r")
	state := func(folds map[int]run.FoldState) *run.State {
		return &run.State{ID: "r", Phase: run.PhaseExploit, Budget: 10 * time.Minute, Lanes: []*run.LaneState{{ID: "unet", Folds: folds}}}
	}
	writeState(t, dir, state(map[int]run.FoldState{0: {Status: run.FoldTraining}}))
	m.show(dir)
	m.event(m.gen, run.Event{Phase: run.PhaseExplore, Lane: "unet", Fold: 0, Progress: &protocol.Progress{Step: 10, Losses: map[string]float64{"loss": 1}}})
	// Fold 0 fails, then the run saves its state and starts fold 1.
	writeState(t, dir, state(map[int]run.FoldState{0: {Status: run.FoldFailed, Error: "out of memory"}, 1: {Status: run.FoldTraining}}))
	m.event(m.gen, run.Event{Phase: run.PhaseExploit, Lane: "unet", Fold: 1, Message: "training lane unet on fold 1"})
	q.drain()
	if got, want := statuses(m), "unet/f0 failed, unet/f1 training"; got != want {
		t.Errorf("rows while fold 1 trains: %s; want %s", got, want)
	}
	// The run ends with fold 1 trained for 40 steps, reported by no progress event.
	writeState(t, dir, state(map[int]run.FoldState{0: {Status: run.FoldFailed}, 1: {Status: run.FoldDone, Steps: 40}}))
	m.finished(m.gen, nil, false)
	q.drain()
	if got, want := statuses(m), "unet/f0 failed, unet/f1 done"; got != want || m.view.Rows[0].Step != 10 || m.view.Rows[1].Step != 40 {
		t.Errorf("rows at the end: %s, steps %d and %d; want %s, 10 and 40", got, m.view.Rows[0].Step, m.view.Rows[1].Step, want)
	}
}

// A fold that trains again from an earlier step (resumed without a checkpoint) starts a
// curve of its own: the old points move to "<fold> (earlier)" instead of continuing as if
// they came before the new ones.
func TestMonitorCurveRestarts(t *testing.T) {
	a, q := newApp(t)
	m := a.monitor
	dir := filepath.Join(t.TempDir(), "r")
	writeState(t, dir, &run.State{ID: "r", Phase: run.PhaseExplore, Budget: 10 * time.Minute, Lanes: []*run.LaneState{{ID: "unet", Folds: map[int]run.FoldState{0: {Status: run.FoldTraining}}}}})
	m.show(dir)
	report := func(step int64, loss float64) {
		m.event(m.gen, run.Event{Phase: run.PhaseExplore, Lane: "unet", Fold: 0, Progress: &protocol.Progress{Step: step, TotalSteps: 100, ETA: time.Minute, Losses: map[string]float64{"loss": loss}}})
	}
	report(10, 0.9)
	report(20, 0.8)
	report(10, 0.95) // the fold starts over
	report(20, 0.85)
	q.drain()
	if got, want := m.view.Order, []string{"unet/f0", "unet/f0 (earlier)"}; !slices.Equal(got, want) {
		t.Fatalf("series %v; want %v", got, want)
	}
	if got, want := m.st.Series["unet/f0"], []float64{0.95, 0.85}; !slices.Equal(got, want) {
		t.Errorf("new curve %v; want %v", got, want)
	}
	if got, want := m.st.Series["unet/f0 (earlier)"], []float64{0.9, 0.8}; !slices.Equal(got, want) {
		t.Errorf("earlier curve %v; want %v", got, want)
	}
	if m.view.LaneETA != time.Minute || m.view.Rows[0].ETA != time.Minute {
		t.Errorf("ETA %v, row ETA %v; want the last report's 1m0s", m.view.LaneETA, m.view.Rows[0].ETA)
	}
}

// Closing the window stops a running session and waits for it to save its state, since
// the process ends with the window.
func TestCloseWaitsForTheRun(t *testing.T) {
	a, q := newApp(t)
	m := a.monitor
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	m.mu.Lock()
	m.gen++
	gen := m.gen
	m.st.Dir, m.st.Running, m.cancel, m.ended = t.TempDir(), true, cancel, ended
	m.mu.Unlock()
	var saved atomic.Bool
	go func() { // a session as start runs one
		defer close(ended)
		<-ctx.Done()
		time.Sleep(50 * time.Millisecond) // the run's last save, long enough to be missed
		saved.Store(true)
		m.finished(gen, ctx.Err(), true)
	}()
	a.close()
	if !saved.Load() {
		t.Error("the window closed before the run saved its state")
	}
	q.drain()
	if !strings.HasPrefix(m.status.Text, "Paused") {
		t.Errorf("status %q after closing, want Paused", m.status.Text)
	}
}

// drainingApp builds the window with the bridge's flushes queued for the test goroutine
// and runs them; from then on it hands flushes over as Fyne does while the app shuts down,
// running each at once on the goroutine that hands it over (a timer's of the bridge), and
// calls after it. Flushes never overlap; hold runs a function of the test's between them,
// for the bookkeeping after keeps.
func drainingApp(t *testing.T, after func(*App)) (a *App, hold func(func())) {
	t.Helper()
	q := make(loop, 4096)
	var draining atomic.Bool
	var mu sync.Mutex
	a = newAppWith(t, bridge.New(func(f func()) {
		if !draining.Load() {
			q.do(f)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		f()
		after(a)
	}), q.drain)
	draining.Store(true) // after a is set: the flushes that read it come after this
	q.drain()            // a flush handed over before the switch
	return a, func(f func()) {
		mu.Lock()
		defer mu.Unlock()
		f()
	}
}

// TestFlushWhileShuttingDown: while the app shuts down fyne.Do runs its function at once on
// the caller's goroutine. A session that ends then (finished holds the Monitor's lock when
// it posts the state) must neither deadlock nor lose the final status.
func TestFlushWhileShuttingDown(t *testing.T) {
	a, _ := drainingApp(t, func(*App) {})
	m := a.monitor
	m.mu.Lock()
	m.gen++
	gen := m.gen
	m.st.Dir, m.st.Running = t.TempDir(), true
	m.mu.Unlock()
	returned := make(chan struct{})
	go func() {
		m.finished(gen, context.Canceled, true)
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(10 * time.Second): // far beyond a flush's milliseconds: a deadlock
		t.Fatal("finished did not return: the flush waited for the lock its caller holds")
	}
	// Every post before this one has been shown (or replaced by a newer one) once it runs.
	if !a.ui.PostAndWait(nil, func() {}, nil) {
		t.Fatal("the closing post did not run")
	}
	if !strings.HasPrefix(m.status.Text, "Paused") {
		t.Errorf("status %q, want Paused", m.status.Text)
	}
}

// TestMonitorNewestWins floods the Monitor with progress events from four goroutines for
// 300 ms while flushes run at once on the bridge's goroutine (as while the app shuts down):
// the screen never shows an older state after a newer one, ends on the newest, and is
// redrawn at most once per bridge.Interval. (The workaround the bridge replaced once spun
// goroutines, 34755 flushes in 200 ms, and once let a stale state overtake a newer one.)
func TestMonitorNewestWins(t *testing.T) {
	var flushes int
	var shown []int64 // the sum of the lane rows' steps on screen after each flush
	sum := func(rows []laneRow) (n int64) {
		for _, r := range rows {
			n += r.Step
		}
		return n
	}
	// The bookkeeping after each flush is held to it (drainingApp). settled closes after the
	// flush that ran settle's post, after which every earlier post is shown or replaced.
	var settled chan struct{}
	var closing bool
	a, hold := drainingApp(t, func(a *App) {
		flushes++
		shown = append(shown, sum(a.monitor.view.Rows))
		if closing {
			closing = false
			close(settled)
		}
	})
	m := a.monitor
	settle := func() {
		hold(func() { settled = make(chan struct{}) })
		a.ui.Post(nil, func() { closing = true })
		select {
		case <-settled:
		case <-time.After(10 * time.Second):
			t.Fatal("no flush within 10 s")
		}
	}
	m.mu.Lock()
	m.gen++
	gen := m.gen
	m.st.Dir, m.st.Running, m.st.Series = t.TempDir(), true, map[string][]float64{}
	m.mu.Unlock()
	settle() // the window's own posts
	hold(func() { flushes, shown = 0, nil })
	began := time.Now()
	var wg sync.WaitGroup
	var step atomic.Int64
	for fold := range 4 {
		wg.Add(1)
		go func() { // a fold's steps rise, so the sum of the rows' steps rises with the state
			defer wg.Done()
			for time.Since(began) < 300*time.Millisecond {
				p := &protocol.Progress{Step: step.Add(1), TotalSteps: 1 << 40, Losses: map[string]float64{"loss": 1}}
				m.event(gen, run.Event{Lane: "unet", Fold: fold, Progress: p})
			}
		}()
	}
	wg.Wait()
	settle()
	elapsed := time.Since(began)
	var seen []int64
	var n int
	hold(func() { seen, n = slices.Clone(shown), flushes })
	for i := 1; i < len(seen); i++ {
		if seen[i] < seen[i-1] {
			t.Fatalf("flush %d showed steps summing to %d after %d: an older state overtook a newer one", i, seen[i], seen[i-1])
		}
	}
	m.mu.Lock()
	want := sum(m.st.Rows)
	m.mu.Unlock()
	if len(seen) == 0 || seen[len(seen)-1] != want {
		t.Errorf("the screen ends on steps summing to %v, want the newest state's %d", seen[max(0, len(seen)-3):], want)
	}
	// Flush k starts at least (k-1)·Interval after the first, and all started by now.
	if limit := int(elapsed/bridge.Interval) + 1; n > limit {
		t.Errorf("%d flushes for %d events in %v, want at most %d", n, step.Load(), elapsed, limit)
	}
	t.Logf("%d events: %d flushes in %v", step.Load(), n, elapsed.Round(time.Millisecond))
}
