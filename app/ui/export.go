package ui

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"amid/host/run"
)

// exportScreen writes the reviewed model package. It is refused while a test case has no
// decision unless the user records a reason, which goes into the run's audit log.
type exportScreen struct {
	a      *App
	obj    fyne.CanvasObject
	dir    string
	left   int // test cases without a decision
	title  *widget.Label
	state  *widget.Label
	reason *widget.Entry
	dest   *widget.Entry
	button *widget.Button
	result *widget.Label
}

func newExportScreen(a *App) *exportScreen {
	s := &exportScreen{a: a, title: widget.NewLabelWithStyle("No run", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		state: widget.NewLabel("Open a finished run from Home."), reason: widget.NewMultiLineEntry(), dest: widget.NewEntry(), result: widget.NewLabel("")}
	s.state.Wrapping = fyne.TextWrapWord
	s.result.Wrapping = fyne.TextWrapWord
	s.reason.SetPlaceHolder("Why export before every case is reviewed (recorded in the audit log)")
	s.reason.OnChanged = func(string) { s.gate() }
	s.dest.SetPlaceHolder("destination folder (must not exist)")
	browse := widget.NewButton("Folder…", func() {
		dialog.ShowFolderOpen(func(u fyne.ListableURI, err error) {
			if err == nil && u != nil {
				a.A.Preferences().SetString(prefExportFolder, u.Path())
				s.dest.SetText(filepath.Join(u.Path(), filepath.Base(s.dir)+"-package"))
			}
		}, a.W)
	})
	s.button = widget.NewButton("Export", s.run)
	s.button.Importance = widget.HighImportance
	s.button.Disable()
	form := widget.NewForm(
		widget.NewFormItem("Destination", container.NewBorder(nil, nil, nil, browse, s.dest)),
		widget.NewFormItem("Reason", s.reason),
	)
	s.obj = container.NewVBox(s.title, s.state, form, container.NewHBox(s.button), s.result)
	return s
}

// load reads the run's review progress off the UI goroutine.
func (s *exportScreen) load(dir string) {
	if dir == "" {
		return
	}
	go func() {
		d, err := loadReview(dir)
		s.a.do(func() {
			s.dir = dir
			if err != nil {
				s.title.SetText("Export")
				s.state.SetText(errText(err))
				s.left = -1
				s.gate()
				return
			}
			s.title.SetText("Export run " + d.State.ID)
			s.left = len(d.Test) - d.Reviewed()
			if s.left == 0 {
				s.state.SetText(fmt.Sprintf("All %d test cases are reviewed.", len(d.Test)))
			} else {
				s.state.SetText(fmt.Sprintf("%d of %d test cases have no decision: review them, or give a reason to export anyway.", s.left, len(d.Test)))
			}
			if s.dest.Text == "" {
				base := s.a.A.Preferences().StringWithFallback(prefExportFolder, dir)
				s.dest.SetText(filepath.Join(base, "export-"+time.Now().Format("20060102-150405")))
			}
			s.gate()
		})
	}()
}

// gate enables Export when the review is complete or a reason is given.
func (s *exportScreen) gate() {
	if s.left < 0 || s.dir == "" || (s.left > 0 && strings.TrimSpace(s.reason.Text) == "") {
		s.button.Disable()
		return
	}
	s.button.Enable()
}

func (s *exportScreen) run() {
	dir, dest, reason := s.dir, strings.TrimSpace(s.dest.Text), strings.TrimSpace(s.reason.Text)
	if dest == "" {
		s.result.SetText("Choose a destination folder.")
		return
	}
	s.button.Disable()
	s.result.SetText("Exporting (the package is re-run and verified)…")
	go func() {
		env, err := s.a.env()
		zip := ""
		if err == nil {
			zip, err = run.ExportTo(context.Background(), dir, dest, reason, env)
		}
		s.a.do(func() {
			s.gate()
			switch {
			case errors.Is(err, run.ErrReview):
				s.result.SetText("Refused: " + errText(err))
			case err != nil:
				s.result.SetText("Export failed: " + errText(err))
			default:
				s.a.A.Preferences().SetString(prefExportFolder, filepath.Dir(dest))
				remember(s.a.A.Preferences(), prefRecentPkgs, dest)
				s.result.SetText("Package written: " + zip)
			}
		})
	}()
}
