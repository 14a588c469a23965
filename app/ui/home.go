package ui

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"amid/host/run"
)

// runRow is one run on the Home screen.
type runRow struct {
	Dir, ID, Task, Phase string
	Created              time.Time
	Problem              string // why the run folder cannot be read
}

// listRuns returns the runs in the folders under runs (each holding run.json) and the
// recent ones, newest first, each once.
func listRuns(runs string, recent []string) []runRow {
	dirs := map[string]bool{}
	if ents, err := os.ReadDir(runs); err == nil {
		for _, e := range ents {
			if e.IsDir() {
				dirs[filepath.Join(runs, e.Name())] = true
			}
		}
	}
	for _, d := range recent {
		dirs[d] = true
	}
	var rows []runRow
	for d := range dirs {
		r := runRow{Dir: d, ID: filepath.Base(d)}
		st, err := run.LoadState(d)
		if err != nil {
			if _, serr := os.Stat(filepath.Join(d, "run.json")); os.IsNotExist(serr) && !contains(recent, d) {
				continue // a folder that is not a run
			}
			r.Problem = errText(err)
		} else {
			r.ID, r.Phase, r.Created = st.ID, st.Phase, st.Created
			r.Task = filepath.Base(filepath.Dir(st.Task))
			if t, err := taskTitle(st.Task); err == nil {
				r.Task = t
			}
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool {
		if !rows[i].Created.Equal(rows[j].Created) {
			return rows[i].Created.After(rows[j].Created)
		}
		return rows[i].Dir < rows[j].Dir
	})
	return rows
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func (r runRow) String() string {
	if r.Problem != "" {
		return fmt.Sprintf("%s — %s", r.Dir, r.Problem)
	}
	return fmt.Sprintf("%s — %s — %s — %s", r.ID, r.Task, r.Phase, r.Created.Local().Format("2006-01-02 15:04"))
}

// homeScreen lists the recent runs and the model packages AMID knows.
type homeScreen struct {
	a        *App
	obj      fyne.CanvasObject
	rows     []runRow
	list     *widget.List
	pkgs     []packageRow
	pkgList  *widget.List
	status   *widget.Label
	pkgState *widget.Label
}

func newHomeScreen(a *App) *homeScreen {
	h := &homeScreen{a: a, status: widget.NewLabel(""), pkgState: widget.NewLabel("")}
	h.list = rowList(&h.rows, "run", func(r runRow) {
		h.list.UnselectAll()
		a.OpenRun(r.Dir)
	})
	h.pkgList = rowList(&h.pkgs, "package", func(p packageRow) {
		h.pkgList.UnselectAll()
		if p.Problem == "" {
			a.use.usePackage(p.Dir)
		}
	})
	newTask := widget.NewButton("New task…", func() { a.tabs.SelectIndex(tabNewTask) })
	newTask.Importance = widget.HighImportance
	open := widget.NewButton("Open run folder…", func() {
		dialog.ShowFolderOpen(func(u fyne.ListableURI, err error) {
			if err == nil && u != nil {
				a.OpenRun(u.Path())
			}
		}, a.W)
	})
	title := widget.NewLabelWithStyle("AMID — autonomous medical imaging development", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	intro := widget.NewLabel("Recent runs: choose one to watch it, see its results, review its predictions or export it.")
	top := container.NewVBox(title, intro, container.NewHBox(newTask, open, widget.NewButton("Refresh", h.refresh)))
	pkgIntro := widget.NewLabel("Model packages: choose one to use it on new patients.")
	runs := container.NewBorder(nil, h.status, nil, nil, h.list)
	pkgs := container.NewBorder(pkgIntro, h.pkgState, nil, nil, h.pkgList)
	split := container.NewVSplit(runs, pkgs)
	split.Offset = 0.6
	h.obj = container.NewBorder(top, nil, nil, nil, split)
	return h
}

// refresh lists the runs again, off the UI goroutine.
func (h *homeScreen) refresh() {
	recent := h.a.A.Preferences().StringList(prefRecentRuns)
	recentPkgs := h.a.A.Preferences().StringList(prefRecentPkgs)
	go func() {
		dir, err := h.a.runsDir()
		rows := listRuns(dir, recent)
		pkgs := listPackages(dir, recentPkgs)
		h.a.do(func() {
			h.rows, h.pkgs = rows, pkgs
			h.list.Refresh()
			h.pkgList.Refresh()
			if len(pkgs) == 0 {
				h.pkgState.SetText("No packages yet: a finished run writes one, and Export another.")
			} else {
				h.pkgState.SetText(fmt.Sprintf("%d packages (the runs' own, exported and used)", len(pkgs)))
			}
			switch {
			case err != nil:
				h.status.SetText(errText(err))
			case len(rows) == 0:
				h.status.SetText(fmt.Sprintf("No runs yet in %s: start one with New task.", dir))
			default:
				h.status.SetText(fmt.Sprintf("%d runs (%s and recently opened)", len(rows), dir))
			}
		})
	}()
}
