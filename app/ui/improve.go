package ui

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"amid/assets/fileio"
	"amid/host/export"
	"amid/host/predict"
	"amid/host/run"
)

// improveForm is "Improve the model": a run that continues a model package on its task's
// training cases and the cases readers corrected (amid run --from). The package's own
// corrections always count; the form offers the corrections of its run folder and of the
// predict run on screen, when they were made with it.
type improveForm struct {
	a       *App
	pkg     string
	data    *widget.Entry
	budget  *widget.Entry
	sources *widget.CheckGroup
	items   []*widget.FormItem
}

// newImproveForm reads the package folder pkg (a zip must be unpacked first: its data
// folder and budget are read from its files) and offers the predict run dir, if any.
func newImproveForm(a *App, pkg, predicted string) (*improveForm, error) {
	st, err := os.Stat(pkg)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is a zip: choose the package's folder to improve it (a zip is unpacked by amid run --from)", pkg)
	}
	pk, err := predict.Open(pkg)
	if err != nil {
		return nil, fmt.Errorf("the package %s: %w", pkg, err)
	}
	f := &improveForm{a: a, pkg: pkg, data: widget.NewEntry(), budget: widget.NewEntry()}
	f.data.SetText(pk.Model.Data)
	f.data.SetPlaceHolder("the task's data folder")
	budget := time.Duration(pk.Task.Budget)
	if budget <= 0 {
		budget = run.DefaultBudget
	}
	f.budget.SetText(budget.String())
	var offered []string
	if runDir := filepath.Dir(filepath.Clean(pkg)); fileio.ReadJSON(filepath.Join(runDir, "run.json"), &struct{}{}) == nil {
		offered = append(offered, runDir)
	}
	if predicted != "" {
		var res predict.Result
		man, _ := fileio.PathSHA256(filepath.Join(pkg, export.FileManifest))
		if fileio.ReadJSON(filepath.Join(predicted, predict.FileResults), &res) == nil && res.ManifestSHA256 == man {
			offered = append(offered, predicted)
		}
	}
	f.sources = widget.NewCheckGroup(offered, nil)
	f.sources.SetSelected(offered)
	f.items = []*widget.FormItem{
		widget.NewFormItem("Package", widget.NewLabel(pkg)),
		widget.NewFormItem("Data folder", f.data),
		widget.NewFormItem("Budget", f.budget),
		widget.NewFormItem("Corrections also from", f.sources),
	}
	f.items[3].HintText = "the package's own corrections always count"
	return f, nil
}

// start creates the improving run and shows it in the monitor (UI goroutine).
func (f *improveForm) start() error {
	budget, err := time.ParseDuration(strings.TrimSpace(f.budget.Text))
	if err != nil || budget <= 0 {
		return fmt.Errorf("the budget %q is not a duration such as 20m", f.budget.Text)
	}
	runs, err := f.a.runsDir()
	if err != nil {
		return err
	}
	pk, err := predict.Open(f.pkg)
	if err != nil {
		return err
	}
	env, err := f.a.env()
	if err != nil {
		return err
	}
	out := filepath.Join(runs, fmt.Sprintf("%s-improved-%s", pk.Task.ID, time.Now().Format("20060102-150405")))
	r, err := run.New(run.Options{Task: filepath.Join(f.pkg, export.FileTask), Data: strings.TrimSpace(f.data.Text), Dir: out,
		Budget: budget, From: f.pkg, Corrections: f.sources.Selected}, env)
	if err != nil {
		return err
	}
	f.a.startRun(r)
	return nil
}

// improve asks how to improve the chosen package and starts the run (UI goroutine).
func (s *useScreen) improve() {
	pkg := s.pkg.Selected
	if pkg == "" {
		s.status.SetText("Choose the package to improve first.")
		return
	}
	f, err := newImproveForm(s.a, pkg, s.dir)
	if err != nil {
		s.status.SetText(errText(err))
		return
	}
	d := dialog.NewForm("Improve the model", "Start", "Cancel", f.items, func(ok bool) {
		if !ok {
			return
		}
		if err := f.start(); err != nil {
			s.status.SetText(errText(err))
		}
	}, s.a.W)
	d.Resize(fyne.NewSize(640, 0))
	d.Show()
}
