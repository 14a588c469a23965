package ui

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"amid/host/planner/llm"
	"amid/host/run"
	"amid/host/schedule"
	"amid/plugins/compute"
)

// maxLog bounds the log lines kept on screen.
const maxLog = 2000

// stopWait bounds how long closing the window waits for a running session to stop and
// save its state: a plugin gets two seconds to exit when stopped (supervisor.Process.Kill),
// and the run's last save of run.json takes far less than the rest.
const stopWait = 10 * time.Second

// laneRow is one lane on one fold in the monitor's table.
type laneRow struct {
	Key         string // lane/fold
	Lane        string
	Device      string // where the lane trains: as planned, what trained the fold once done
	Fold        int
	Status      string
	Step, Total int64
	Loss        float64
	LossName    string
	ETA         time.Duration
	// Round is the rounds of successive halving the lane has finished, Curve its
	// validation scores after each (fold 0), and Stopped why it trains no more.
	Round    int
	Curve    []float64
	Stopped  string
	reported int64 // the step of the last progress report this monitor saw, 0 before one
}

// monitorState is what the monitor shows; events change it on the run's goroutine and
// the UI goroutine copies it.
type monitorState struct {
	Dir        string
	Phase      string
	Running    bool
	Status     string // one line: running, paused, failed, done
	Rows       []laneRow
	Series     map[string][]float64 // loss per lane/fold, in step order
	Order      []string             // series keys in order of appearance
	Log        []string
	LaneETA    time.Duration
	Budget     time.Duration
	Spent      time.Duration // before this session
	Began      time.Time     // this session's start
	StopReason string
}

// monitorScreen watches a run: its lanes, a live loss plot, the log and the ETA; it
// pauses (the run saves its state and stops), resumes and cancels.
type monitorScreen struct {
	a   *App
	obj fyne.CanvasObject

	mu     sync.Mutex
	st     monitorState
	cancel context.CancelFunc
	ended  chan struct{} // closed when the last session started has returned
	gen    int           // sessions started, to ignore a finished session's late events

	// UI goroutine only.
	view    monitorState
	title   *widget.Label
	phase   *widget.Label
	eta     *widget.Label
	status  *widget.Label
	table   *widget.Table
	plot    *lossPlot
	log     *widget.List
	pauseB  *widget.Button
	resumeB *widget.Button
	cancelB *widget.Button
}

var laneColumns = []string{"lane", "fold", "status", "round", "step", "loss", "validation curve", "ETA", "device"}

func newMonitorScreen(a *App) *monitorScreen {
	m := &monitorScreen{a: a, title: widget.NewLabelWithStyle("No run", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		phase: widget.NewLabel(""), eta: widget.NewLabel(""), status: widget.NewLabel("Start a run from New task, or open one from Home."),
		plot: newLossPlot()}
	m.status.Wrapping = fyne.TextWrapWord
	m.table = widget.NewTableWithHeaders(
		func() (int, int) { return len(m.view.Rows), len(laneColumns) },
		func() fyne.CanvasObject { return widget.NewLabel("lane.long.name") },
		func(id widget.TableCellID, o fyne.CanvasObject) { o.(*widget.Label).SetText(m.cell(id)) })
	m.table.CreateHeader = func() fyne.CanvasObject { return widget.NewLabel("header") }
	m.table.UpdateHeader = func(id widget.TableCellID, o fyne.CanvasObject) {
		l := o.(*widget.Label)
		if id.Row < 0 && id.Col >= 0 {
			l.SetText(laneColumns[id.Col])
		} else {
			l.SetText("")
		}
	}
	m.table.ShowHeaderColumn = false
	// Every column shows at the smallest window (892 px wide): the lane's name gets the
	// room, the numbers what "12345/12345" and "training" need, the device its kind and
	// number ("vulkan:0 NVIDIA GeForce…" is cut).
	for i, w := range []float32{150, 40, 85, 50, 95, 60, 120, 60, 130} {
		m.table.SetColumnWidth(i, w)
	}
	m.log = widget.NewList(func() int { return len(m.view.Log) },
		func() fyne.CanvasObject { return widget.NewLabel("log") },
		func(i widget.ListItemID, o fyne.CanvasObject) { o.(*widget.Label).SetText(m.view.Log[i]) })
	m.pauseB = widget.NewButton("Pause", m.pause)
	m.resumeB = widget.NewButton("Resume", m.resume)
	m.cancelB = widget.NewButton("Cancel", func() {
		dialog.ShowConfirm("Cancel the run?", "The run stops at a safe point; its folder stays and it can be resumed from Home.", func(ok bool) {
			if ok {
				m.stopWith("cancelled")
			}
		}, a.W)
	})
	m.pauseB.Disable()
	m.resumeB.Disable()
	m.cancelB.Disable()
	top := container.NewVBox(m.title, container.NewHBox(m.phase, m.eta, m.pauseB, m.resumeB, m.cancelB), m.status)
	plotBox := container.NewBorder(widget.NewLabel("Training loss"), nil, nil, nil, m.plot)
	// The lanes table over the whole width; the loss plot beside the log beneath it.
	split := container.NewVSplit(m.table, container.NewHSplit(plotBox, m.log))
	split.Offset = 0.4
	m.obj = container.NewBorder(top, nil, nil, nil, split)
	return m
}

func (m *monitorScreen) cell(id widget.TableCellID) string {
	if id.Row >= len(m.view.Rows) {
		return ""
	}
	r := m.view.Rows[id.Row]
	switch id.Col {
	case 0:
		return r.Lane
	case 1:
		if r.Fold < 0 {
			return "all"
		}
		return fmt.Sprintf("f%d", r.Fold)
	case 2:
		if r.Stopped != "" {
			return "stopped"
		}
		return r.Status
	case 3:
		if r.Round > 0 {
			return fmt.Sprint(r.Round)
		}
	case 4:
		if r.Total > 0 {
			return fmt.Sprintf("%d/%d", r.Step, r.Total)
		}
		return fmt.Sprint(r.Step)
	case 5:
		if r.LossName == "" {
			return ""
		}
		return fmt.Sprintf("%.4g", r.Loss)
	case 6:
		parts := make([]string, len(r.Curve))
		for i, v := range r.Curve {
			parts[i] = fmt.Sprintf("%.2f", v)
		}
		return strings.Join(parts, "→")
	case 7:
		if r.ETA > 0 {
			return r.ETA.Round(time.Second).String()
		}
	case 8:
		return r.Device
	}
	return ""
}

// show makes dir the monitored run without starting it (unless it runs already).
func (m *monitorScreen) show(dir string) {
	m.mu.Lock()
	if m.st.Running {
		same := m.st.Dir == dir
		m.mu.Unlock()
		if !same {
			m.status.SetText("Another run is in progress; pause it before opening " + dir)
		}
		return
	}
	m.st = monitorState{Dir: dir, Series: map[string][]float64{}, Status: "Not running: Resume continues it."}
	if st, err := run.LoadState(dir); err == nil {
		m.st.Phase, m.st.Budget, m.st.Spent = st.Phase, st.Budget, st.Spent
		m.foldsLocked(st)
	} else {
		m.st.Status = errText(err)
	}
	m.markLocked()
	m.mu.Unlock()
}

// startRun starts r (a new run, or an opened one to resume) on its own goroutine.
func (a *App) startRun(r *run.Runner) {
	a.mu.Lock()
	a.runDir = r.Dir()
	a.mu.Unlock()
	rememberRun(a.A.Preferences(), r.Dir())
	a.monitor.start(r)
	a.tabs.SelectIndex(tabMonitor)
}

func (m *monitorScreen) start(r *run.Runner) {
	ctx, cancel := context.WithCancel(context.Background())
	st := r.State()
	m.mu.Lock()
	if m.st.Running {
		m.mu.Unlock()
		cancel()
		m.status.SetText("A run is in progress already.")
		return
	}
	m.gen++
	gen := m.gen
	keep := m.st.Dir == r.Dir()
	if !keep {
		m.st = monitorState{Series: map[string][]float64{}}
	}
	// ETAs belong to the session that reported them; a resumed one reports its own.
	m.st.LaneETA = 0
	for i := range m.st.Rows {
		m.st.Rows[i].ETA = 0
	}
	m.st.Dir, m.st.Phase, m.st.Running, m.st.StopReason = r.Dir(), st.Phase, true, ""
	m.st.Budget, m.st.Spent, m.st.Began = st.Budget, st.Spent, time.Now()
	m.st.Status = "Running"
	m.cancel = cancel
	ended := make(chan struct{})
	m.ended = ended
	m.markLocked()
	m.mu.Unlock()
	r.SetEvents(func(e run.Event) { m.event(gen, e) })
	go func() {
		defer close(ended)
		err := r.Run(ctx)
		m.finished(gen, err, ctx.Err() != nil)
	}()
}

// savedState reads the monitored run's state from its folder (nil when it cannot): the
// events say when a fold starts training, the state how each one ended.
func (m *monitorScreen) savedState() *run.State {
	m.mu.Lock()
	dir := m.st.Dir
	m.mu.Unlock()
	if dir == "" {
		return nil
	}
	st, err := run.LoadState(dir)
	if err != nil {
		return nil
	}
	return st
}

// foldsLocked sets the lane rows' statuses, and their steps where further, from the run's
// state st, adding a row for each fold it has started.
func (m *monitorScreen) foldsLocked(st *run.State) {
	for _, l := range st.Lanes {
		for _, k := range slices.Sorted(maps.Keys(l.Folds)) {
			f := l.Folds[k]
			row := m.rowLocked(fmt.Sprintf("%s/f%d", l.ID, k), l.ID, k)
			row.Status = f.Status
			row.Step = max(row.Step, f.Steps)
			row.Device = laneDevice(l.Device, f.Compute)
			if k == 0 {
				row.Round, row.Stopped = l.Schedule.Rung, l.Schedule.Stopped
				// A new slice: the snapshots on the screen share the old one's array.
				curve := make([]float64, 0, len(l.Schedule.Curve))
				for _, p := range l.Schedule.Curve {
					if !p.Undefined { // a round without a value has no point to draw
						curve = append(curve, p.Score)
					}
				}
				row.Curve = curve
			}
		}
	}
	if fm := st.Final; fm != nil && fm.Mode == schedule.FinalAllData {
		row := m.rowLocked(fm.Lane+"/f-1", fm.Lane, -1)
		row.Status, row.Step = fm.Mode, max(row.Step, fm.Steps)
		if fm.Checkpoint != "" {
			row.Status = run.FoldDone
		}
		for _, l := range st.Lanes {
			if l.ID == fm.Lane {
				row.Device = laneDevice(l.Device, fm.Compute)
			}
		}
	}
}

// event records one run event (run goroutine). An event without progress (a new phase, a
// fold started or ended) also updates the lane rows from the run's saved state.
func (m *monitorScreen) event(gen int, e run.Event) {
	var st *run.State
	if e.Progress == nil {
		st = m.savedState()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if gen != m.gen {
		return
	}
	if st != nil {
		m.foldsLocked(st)
	}
	if e.Phase != "" && e.Phase != m.st.Phase {
		m.st.Phase = e.Phase
		m.logLocked(e.Time, "phase "+e.Phase)
	}
	if e.Lane != "" {
		key := fmt.Sprintf("%s/f%d", e.Lane, e.Fold) // fold -1: the final model on all the data
		row := m.rowLocked(key, e.Lane, e.Fold)
		if row.Status == "" || row.Status == run.FoldPending {
			row.Status = run.FoldTraining
		}
		if p := e.Progress; p != nil {
			if p.Step < row.reported {
				m.restartCurveLocked(key)
			}
			row.Step, row.Total, row.ETA, row.reported = p.Step, p.TotalSteps, p.ETA, p.Step
			m.st.LaneETA = p.ETA
			if name, v, ok := mainLoss(p.Losses); ok {
				row.Loss, row.LossName = v, name
				if _, seen := m.st.Series[key]; !seen {
					m.st.Order = append(m.st.Order, key)
				}
				m.st.Series[key] = append(m.st.Series[key], v)
			}
		}
	}
	if e.Message != "" {
		where := ""
		if e.Lane != "" {
			where = fmt.Sprintf("%s f%d: ", e.Lane, e.Fold)
			if e.Fold < 0 {
				where = e.Lane + " (all data): "
			}
		}
		m.logLocked(e.Time, where+e.Message)
	}
	m.markLocked()
}

// restartCurveLocked moves the loss curve of key, a fold that trains again from an earlier
// step (resumed without a checkpoint), to a series of its own, so the new curve does not
// continue the old one as if it were later training.
func (m *monitorScreen) restartCurveLocked(key string) {
	old := m.st.Series[key]
	if len(old) == 0 {
		return
	}
	earlier := key + " (earlier)"
	if _, seen := m.st.Series[earlier]; !seen {
		m.st.Order = append(m.st.Order, earlier)
	}
	m.st.Series[earlier] = old
	m.st.Series[key] = nil
}

// mainLoss picks the loss to plot: "loss" when reported, else the first by name.
func mainLoss(ls map[string]float64) (string, float64, bool) {
	if v, ok := ls["loss"]; ok {
		return "loss", v, true
	}
	names := make([]string, 0, len(ls))
	for k := range ls {
		names = append(names, k)
	}
	if len(names) == 0 {
		return "", 0, false
	}
	sort.Strings(names)
	return names[0], ls[names[0]], true
}

func (m *monitorScreen) rowLocked(key, lane string, fold int) *laneRow {
	for i := range m.st.Rows {
		if m.st.Rows[i].Key == key {
			return &m.st.Rows[i]
		}
	}
	m.st.Rows = append(m.st.Rows, laneRow{Key: key, Lane: lane, Fold: fold})
	return &m.st.Rows[len(m.st.Rows)-1]
}

func (m *monitorScreen) logLocked(t time.Time, line string) {
	if t.IsZero() {
		t = time.Now()
	}
	m.st.Log = append(m.st.Log, t.Local().Format("15:04:05 ")+line)
	if n := len(m.st.Log); n > maxLog {
		m.st.Log = append([]string(nil), m.st.Log[n-maxLog:]...)
	}
}

// markLocked posts a snapshot of the state to the screen. Snapshots coalesce in the bridge,
// which shows the newest at most about 60 times a second. Posting under m.mu keeps them in
// the order they were taken, so an older one can never overtake a newer one; and the bridge
// never shows them on this goroutine, so showing one needs no lock.
func (m *monitorScreen) markLocked() {
	v, series := m.snapshotLocked()
	m.a.ui.Post(m, func() { m.display(v, series) })
}

// finished records the end of a session (run goroutine), the lane rows as the run saved
// them.
func (m *monitorScreen) finished(gen int, err error, stopped bool) {
	st := m.savedState()
	m.mu.Lock()
	defer m.mu.Unlock()
	if gen != m.gen {
		return
	}
	m.st.Running = false
	m.cancel = nil
	if st != nil {
		m.foldsLocked(st)
	}
	switch {
	case err == nil:
		m.st.Status = "Done: see Results, then Review and Export."
		m.st.Phase = run.PhaseDone
		for i := range m.st.Rows {
			if m.st.Rows[i].Status == run.FoldTraining {
				m.st.Rows[i].Status = run.FoldDone
			}
		}
	case stopped && m.st.StopReason == "cancelled":
		m.st.Status = "Cancelled. The run folder stays; Resume (or Home) continues it."
	case stopped || errors.Is(err, context.Canceled):
		m.st.Status = "Paused: the state is saved; Resume continues from the last checkpoint."
	default:
		m.st.Status = "Failed: " + errText(err)
	}
	m.logLocked(time.Now(), m.st.Status)
	m.markLocked()
}

// snapshotLocked copies the state to show, and its loss series.
func (m *monitorScreen) snapshotLocked() (monitorState, [][]float64) {
	v := m.st
	v.Series = nil // shown from the copy returned beside it
	v.Order = m.st.Order[:len(m.st.Order):len(m.st.Order)]
	v.Rows = append([]laneRow(nil), m.st.Rows...)
	v.Log = m.st.Log[:len(m.st.Log):len(m.st.Log)]
	series := make([][]float64, 0, len(v.Order))
	for _, k := range v.Order {
		s := m.st.Series[k]
		series = append(series, s[:len(s):len(s)])
	}
	return v, series
}

// display puts a snapshot of the state on the screen (UI goroutine).
func (m *monitorScreen) display(v monitorState, series [][]float64) {
	m.view = v
	if v.Dir == "" {
		return
	}
	m.title.SetText("Run " + filepath.Base(v.Dir))
	m.phase.SetText("Phase: " + v.Phase)
	eta := ""
	if v.Budget > 0 {
		spent := v.Spent
		if v.Running {
			spent += time.Since(v.Began)
		}
		eta = fmt.Sprintf("Budget left: %v", max(0, v.Budget-spent).Round(time.Second))
	}
	if v.Running && v.LaneETA > 0 {
		eta += fmt.Sprintf(" · lane ETA %v", v.LaneETA.Round(time.Second))
	}
	m.eta.SetText(eta)
	m.status.SetText(v.Status)
	m.table.Refresh()
	m.plot.Set(series, v.Order)
	m.log.Refresh()
	if n := len(v.Log); n > 0 {
		m.log.ScrollToBottom()
	}
	done := v.Phase == run.PhaseDone
	switch {
	case v.Running:
		m.pauseB.Enable()
		m.cancelB.Enable()
		m.resumeB.Disable()
	case done:
		m.pauseB.Disable()
		m.cancelB.Disable()
		m.resumeB.Disable()
	default:
		m.pauseB.Disable()
		m.cancelB.Disable()
		m.resumeB.Enable()
	}
}

func (m *monitorScreen) pause() { m.stopWith("paused") }

// stopWith cancels the running session, recording why.
func (m *monitorScreen) stopWith(reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cancel != nil {
		m.st.StopReason = reason
		m.st.Status = "Stopping at a safe point…"
		m.cancel()
		m.markLocked()
	}
}

// stop stops a running session as Pause does and waits, up to stopWait, for it to save
// its state: the window closes, and the process ends with it.
func (m *monitorScreen) stop() {
	m.mu.Lock()
	ended := m.ended
	m.mu.Unlock()
	m.stopWith("paused")
	if ended == nil {
		return
	}
	select {
	case <-ended:
	case <-time.After(stopWait):
	}
}

// resume reopens the monitored run and runs it again with the planner it was started
// with, its LLM endpoint as the settings give it now.
func (m *monitorScreen) resume() {
	m.mu.Lock()
	dir := m.st.Dir
	m.mu.Unlock()
	if dir == "" {
		return
	}
	m.resumeB.Disable()
	p := m.a.A.Preferences()
	cur := llm.Config{BaseURL: p.String(prefLLMURL), Model: p.String(prefLLMModel), APIKeyEnv: p.String(prefLLMKeyEnv)}
	go func() {
		env, err := m.a.env()
		var r *run.Runner
		if err == nil {
			r, err = run.Reopen(context.Background(), dir, run.ResumeOptions{LLM: cur}, env)
		}
		m.a.do(func() {
			if err != nil {
				m.status.SetText(errText(err))
				m.resumeB.Enable()
				return
			}
			m.start(r)
		})
	}()
}

// laneDevice is a lane's device in the monitor: the one it was planned for ("vulkan:0
// NAME", "cpu"), or "cpu" when a fold that was planned for a GPU trained on the CPU (its
// device lost or not to be had); "" when the plugin did not say.
func laneDevice(planned string, done compute.Identity) string {
	if done.Device == "cpu" && planned != "cpu" {
		return "cpu"
	}
	return planned
}
