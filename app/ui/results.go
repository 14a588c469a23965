package ui

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"amid/host/run"
)

// resultsScreen shows a run's lanes with their per-fold scores, the chosen lane and why it
// won, the grader's verdict, and the run's report.
type resultsScreen struct {
	a      *App
	obj    fyne.CanvasObject
	title  *widget.Label
	rows   [][]string
	table  *widget.Table
	why    *widget.Label
	report *widget.RichText
}

var resultColumns = []string{"lane", "plugin", "mean", "per fold", "chosen"}

func newResultsScreen(a *App) *resultsScreen {
	s := &resultsScreen{a: a, title: widget.NewLabelWithStyle("No run", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		why: widget.NewLabel("Open a run from Home."), report: widget.NewRichTextFromMarkdown("")}
	s.why.Wrapping = fyne.TextWrapWord
	s.report.Wrapping = fyne.TextWrapWord
	s.table = widget.NewTableWithHeaders(
		func() (int, int) { return len(s.rows), len(resultColumns) },
		func() fyne.CanvasObject { return widget.NewLabel("a lane name here") },
		func(id widget.TableCellID, o fyne.CanvasObject) {
			if id.Row < len(s.rows) {
				o.(*widget.Label).SetText(s.rows[id.Row][id.Col])
			}
		})
	s.table.CreateHeader = func() fyne.CanvasObject { return widget.NewLabel("header") }
	s.table.UpdateHeader = func(id widget.TableCellID, o fyne.CanvasObject) {
		if id.Row < 0 && id.Col >= 0 {
			o.(*widget.Label).SetText(resultColumns[id.Col])
		} else {
			o.(*widget.Label).SetText("")
		}
	}
	s.table.ShowHeaderColumn = false
	s.table.SetColumnWidth(0, 240)
	s.table.SetColumnWidth(3, 320)
	tabs := container.NewAppTabs(
		container.NewTabItem("Lanes", container.NewBorder(nil, container.NewVScroll(s.why), nil, nil, s.table)),
		container.NewTabItem("Report", container.NewVScroll(s.report)),
	)
	s.obj = container.NewBorder(s.title, nil, nil, nil, tabs)
	return s
}

// resultRows are the table's rows for a state, best mean first.
func resultRows(st *run.State) [][]string {
	lanes := append([]*run.LaneState(nil), st.Lanes...)
	sort.SliceStable(lanes, func(i, j int) bool {
		mi, _ := lanes[i].Mean()
		mj, _ := lanes[j].Mean()
		if math.IsNaN(mj) {
			return !math.IsNaN(mi)
		}
		return mi > mj
	})
	var rows [][]string
	for _, l := range lanes {
		mean, per := l.MeanText(), l.FoldTexts(false)
		if mean == "undefined" {
			mean += ": " + l.Undefined() // a value with its reason, not a 0
		}
		chosen := ""
		if l.ID == st.Chosen {
			chosen = fmt.Sprintf("yes (fold %d)", st.ChosenFold)
		}
		rows = append(rows, []string{l.ID, l.Plugin, mean, strings.Join(per, ", "), chosen})
	}
	return rows
}

// load reads the run's state off the UI goroutine.
func (s *resultsScreen) load(dir string) {
	if dir == "" {
		return
	}
	go func() {
		st, err := run.LoadState(dir)
		s.a.do(func() {
			if err != nil {
				s.title.SetText(errText(err))
				return
			}
			s.show(st)
		})
	}()
}

func (s *resultsScreen) show(st *run.State) {
	s.title.SetText(fmt.Sprintf("Run %s — phase %s", st.ID, st.Phase))
	s.rows = resultRows(st)
	s.table.Refresh()
	var b strings.Builder
	if st.Chosen != "" {
		fmt.Fprintf(&b, "Chosen: %s.\n", st.Chosen)
	} else {
		b.WriteString("No lane chosen yet.\n")
	}
	for _, w := range st.Why {
		b.WriteString("• " + w + "\n")
	}
	if g := st.TestScore; g != nil {
		if g.Valid {
			fmt.Fprintf(&b, "Test set: %s = %.4f (leaderboard percentile %.3f).\n", g.Primary, g.Score, g.Percentile)
		} else {
			fmt.Fprintf(&b, "Test set: the submission is not valid: %s\n", strings.Join(g.Errors, "; "))
		}
	}
	s.why.SetText(strings.TrimSpace(b.String()))
	s.report.ParseMarkdown(run.Report(st))
}
