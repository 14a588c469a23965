package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"amid/host/audit"
	"amid/host/planner"
	"amid/host/run"
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
	lanes, err := planner.Rules{MaxLanes: 1}.Plan(ctx, in)
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
	if step, loss := m.cell(widget.TableCellID{Row: row, Col: 3}), m.cell(widget.TableCellID{Row: row, Col: 4}); step == "" || step == "0" || loss == "" {
		t.Errorf("lane row %+v shows step %q and loss %q", m.view.Rows[row], step, loss)
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

	// Resume: the same run folder continues to its end.
	test.Tap(m.resumeB)
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
	for _, e := range auditEntries(t, dir) {
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
