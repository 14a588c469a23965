package ui

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
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
	"amid/plugins/protocol"
)

// goldenSize is the window size of the screen goldens: small PNGs, just above the window's
// minimum width (892 in the test theme, set by the Review screen's row of controls).
var goldenSize = fyne.NewSize(900, 600)

// TestScreensGolden renders each screen in the test theme at goldenSize and compares it
// with testdata/<screen>.png. A missing or different image fails the test and is written to
// testdata/failed/, to be inspected and copied over the golden when the change is meant.
// What varies between runs is fixed in the test: times are UTC and come from the state
// written here, and temporary folders are shown as placeholders (see stablePaths).
func TestScreensGolden(t *testing.T) {
	local := time.Local
	time.Local = time.UTC // run times and log lines are shown in local time
	t.Cleanup(func() { time.Local = local })
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

	for _, c := range []struct {
		name string
		// setup shows the screen's content and returns the paths to replace.
		setup func(t *testing.T, a *App, q loop) map[string]string
	}{
		{"home", func(t *testing.T, a *App, q loop) map[string]string {
			runs, _ := a.runsDir()
			writeState(t, filepath.Join(runs, "liver-1"), &run.State{ID: "liver-1", Task: "/data/liver/task.yaml", Phase: run.PhaseExplore, Created: t0})
			writeState(t, filepath.Join(runs, "head-2"), &run.State{ID: "head-2", Task: "/data/head/task.yaml", Phase: run.PhaseDone, Created: t0.Add(time.Hour)})
			a.home.refresh()
			q.wait(t, "home rows", func() bool { return len(a.home.rows) == 2 })
			return map[string]string{runs: "$AMID_HOME/runs"}
		}},
		{"newtask", func(t *testing.T, a *App, q loop) map[string]string {
			a.tabs.SelectIndex(tabNewTask)
			dir := rexFolder(t)
			a.newTask.source.SetText(dir)
			a.newTask.detect(dir)
			q.wait(t, "detection", func() bool { return a.newTask.det != nil })
			return map[string]string{dir: "/data/dentex"}
		}},
		{"monitor", func(t *testing.T, a *App, q loop) map[string]string {
			m := a.monitor
			dir := filepath.Join(t.TempDir(), "r")
			writeState(t, dir, &run.State{ID: "r", Phase: run.PhaseExplore, Budget: 10 * time.Minute, Spent: 4 * time.Minute, Lanes: []*run.LaneState{
				{ID: "unet", Lane: planner.Lane{Device: "vulkan:0 GPU"}, Folds: map[int]run.FoldState{0: {Status: run.FoldDone, Steps: 50}},
					Schedule: schedule.Lane{Rung: 2, Curve: []schedule.Point{{Step: 20, Score: 0.41}, {Step: 50, Score: 0.63}}}},
				{ID: "nnunet", Lane: planner.Lane{Device: "cpu"}, Folds: map[int]run.FoldState{0: {Status: run.FoldDone, Steps: 20}},
					Schedule: schedule.Lane{Rung: 1, Curve: []schedule.Point{{Step: 20, Score: 0.22}}, Stopped: "not promoted after 1 round(s)"}},
			}})
			m.show(dir)
			a.tabs.SelectIndex(tabMonitor)
			for i := 1; i <= 5; i++ {
				m.event(m.gen, run.Event{Time: t0.Add(time.Duration(i) * time.Second), Phase: run.PhaseExplore, Lane: "unet", Fold: 0, Progress: &protocol.Progress{
					Step: int64(10 * i), TotalSteps: 50, Losses: map[string]float64{"loss": 1 / float64(i)}, ETA: time.Duration(5-i) * time.Second}})
			}
			m.event(m.gen, run.Event{Time: t0.Add(6 * time.Second), Phase: run.PhaseExplore, Lane: "nnunet", Fold: 0, Progress: &protocol.Progress{Step: 1, TotalSteps: 50, Losses: map[string]float64{"ce": 0.9}}})
			m.event(m.gen, run.Event{Time: t0.Add(7 * time.Second), Phase: run.PhaseExploit, Message: "finalists: unet"})
			return nil
		}},
		{"results", func(t *testing.T, a *App, q loop) map[string]string {
			dir := filepath.Join(t.TempDir(), "r")
			writeState(t, dir, &run.State{ID: "r", Phase: run.PhaseDone, Chosen: "b", ChosenFold: 1,
				Why: []string{"b has the best mean validation dice (0.85 over 2 folds)", "a lost: mean 0.70"},
				Lanes: []*run.LaneState{
					{ID: "a", Folds: map[int]run.FoldState{0: {Status: run.FoldDone, Score: 0.7}}},
					{ID: "b", Folds: map[int]run.FoldState{0: {Status: run.FoldDone, Score: 0.8}, 1: {Status: run.FoldDone, Score: 0.9}}},
				}})
			a.OpenRun(dir)
			q.wait(t, "results", func() bool { return len(a.results.rows) == 2 })
			return nil
		}},
		{"review", func(t *testing.T, a *App, q loop) map[string]string {
			dir := finishedRun(t)
			a.OpenRun(dir)
			a.tabs.SelectIndex(tabReview)
			s := a.review
			q.wait(t, "review cases", func() bool { return s.data != nil && len(s.shown) == 1 })
			s.list.Select(0)
			q.wait(t, "case view", func() bool { return s.loadedID == "head005" })
			return nil
		}},
		{"export", func(t *testing.T, a *App, q loop) map[string]string {
			dir := finishedRun(t)
			a.OpenRun(dir)
			a.tabs.SelectIndex(tabExport)
			q.wait(t, "export state", func() bool { return a.export.dir == dir })
			a.export.dest.SetText("/data/exports/run-package") // the default names the time
			return nil
		}},
		{"use", func(t *testing.T, a *App, q loop) map[string]string {
			a.tabs.SelectIndex(tabUse)
			q.drain() // the package list, read when the tab is shown (none here)
			a.use.addPackage("/data/exports/head-package")
			a.use.addInput("/data/incoming/Mr_Smith_study")
			a.use.out.SetText("/data/predicted/2026-03-01")
			return nil
		}},
		{"plugins", func(t *testing.T, a *App, q loop) map[string]string {
			pdir := os.Getenv(config.EnvPluginDir)
			if err := os.MkdirAll(pdir, 0o755); err != nil {
				t.Fatal(err)
			}
			script := []byte("#!/bin/sh\nexit 3\n")
			if err := os.WriteFile(filepath.Join(pdir, "amid-plugin-fake"), script, 0o755); err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(script)
			a.tabs.SelectIndex(tabPlugins)
			q.wait(t, "plugin list", func() bool { return len(a.plugins.entries) == 1 })
			a.plugins.list.Select(0)
			q.wait(t, "details", func() bool { return strings.Contains(a.plugins.details.Text, hex.EncodeToString(sum[:])) })
			env, err := a.env()
			if err != nil {
				t.Fatal(err)
			}
			return map[string]string{env.Catalog.Builtin: "/opt/amid/plugins", pdir: "$AMID_HOME/plugins"}
		}},
		{"settings", func(t *testing.T, a *App, q loop) map[string]string {
			a.tabs.SelectIndex(tabSettings)
			return map[string]string{os.Getenv(config.EnvPluginDir): "$AMID_HOME/plugins", os.Getenv(config.EnvHome): "$AMID_HOME"}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, q := newApp(t)
			a.W.Resize(goldenSize)
			paths := c.setup(t, a, q)
			q.drain()
			stablePaths(a.tabs.Selected().Content, paths)
			q.drain()
			relayout(a.W.Content())
			if m := a.W.Content().MinSize(); m.Width > goldenSize.Width || m.Height > goldenSize.Height {
				t.Errorf("the window needs %v, more than the golden size %v", m, goldenSize)
			}
			test.AssertImageMatches(t, c.name+".png", a.W.Canvas().Capture())
		})
	}
}

// stablePaths replaces each temporary folder (a key of paths) by its placeholder in the
// labels and entries of o, longest folder first.
func stablePaths(o fyne.CanvasObject, paths map[string]string) {
	if len(paths) == 0 {
		return
	}
	keys := make([]string, 0, len(paths))
	for k := range paths {
		keys = append(keys, k)
	}
	// Longest first, so that a folder inside another is replaced whole.
	slices.SortFunc(keys, func(x, y string) int { return len(y) - len(x) })
	fix := func(s string) string {
		for _, k := range keys {
			s = strings.ReplaceAll(s, k, paths[k])
		}
		return s
	}
	for _, x := range test.LaidOutObjects(o) {
		switch w := x.(type) {
		case *widget.Label:
			if f := fix(w.Text); f != w.Text {
				w.SetText(f)
			}
		case *widget.Entry:
			if f := fix(w.Text); f != w.Text {
				w.SetText(f)
			}
		}
	}
}

// relayout lays out every container under o again, parents first. The desktop driver does
// so for a container whose content's minimum size changed (a label given a longer text);
// the test driver does not, which would leave such rows overlapping in the capture.
func relayout(o fyne.CanvasObject) {
	for _, x := range test.LaidOutObjects(o) {
		if c, ok := x.(*fyne.Container); ok && c.Layout != nil {
			c.Layout.Layout(c.Objects, c.Size())
		}
	}
}
