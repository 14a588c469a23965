package ui

import (
	"fmt"
	"image/color"
	"math"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	vwidget "amid/viewer/widget"
)

// plotPoints bounds the points drawn per series: longer series are decimated evenly.
const plotPoints = 200

// lossPlot draws loss curves, one per series, as canvas lines scaled to the common range;
// the first and last values of the range are written at the left edge. Use it on the UI
// goroutine.
type lossPlot struct {
	widget.BaseWidget
	series [][]float64
	names  []string
	colors []color.RGBA
}

func newLossPlot() *lossPlot {
	p := &lossPlot{colors: vwidget.DefaultColors()}
	p.ExtendBaseWidget(p)
	return p
}

// Set replaces the series (the plot keeps them: do not change them afterwards).
func (p *lossPlot) Set(series [][]float64, names []string) {
	p.series, p.names = series, names
	p.Refresh()
}

// bounds returns the range of every finite value, and false when there is none.
func bounds(series [][]float64) (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, v := range s {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if lo > hi {
		return 0, 0, false
	}
	if hi == lo {
		hi = lo + 1
	}
	return lo, hi, true
}

func (p *lossPlot) CreateRenderer() fyne.WidgetRenderer {
	r := &plotRenderer{p: p, frame: canvas.NewRectangle(color.Transparent),
		top: canvas.NewText("", theme.Color(theme.ColorNameForeground)), bottom: canvas.NewText("", theme.Color(theme.ColorNameForeground)),
		legend: canvas.NewText("", theme.Color(theme.ColorNameForeground))}
	r.frame.StrokeColor = theme.Color(theme.ColorNameSeparator)
	r.frame.StrokeWidth = 1
	for _, t := range []*canvas.Text{r.top, r.bottom, r.legend} {
		t.TextSize = theme.CaptionTextSize()
	}
	return r
}

type plotRenderer struct {
	p                   *lossPlot
	frame               *canvas.Rectangle
	top, bottom, legend *canvas.Text
	lines               []*canvas.Line
	used                int
}

func (r *plotRenderer) MinSize() fyne.Size { return fyne.NewSize(160, 100) }

func (r *plotRenderer) Objects() []fyne.CanvasObject {
	objs := []fyne.CanvasObject{r.frame, r.top, r.bottom, r.legend}
	for _, l := range r.lines[:r.used] {
		objs = append(objs, l)
	}
	return objs
}

func (r *plotRenderer) Destroy() {}

func (r *plotRenderer) Refresh() {
	r.Layout(r.p.Size())
	canvas.Refresh(r.p)
}

func (r *plotRenderer) Layout(size fyne.Size) {
	r.frame.Resize(size)
	r.used = 0
	lo, hi, ok := bounds(r.p.series)
	if !ok {
		r.top.Text, r.bottom.Text, r.legend.Text = "", "", "no loss reported yet"
		r.legend.Move(fyne.NewPos(4, size.Height/2))
		r.top.Refresh()
		r.bottom.Refresh()
		r.legend.Refresh()
		return
	}
	r.top.Text, r.bottom.Text = fmt.Sprintf("%.4g", hi), fmt.Sprintf("%.4g", lo)
	r.legend.Text = fmt.Sprintf("%d series", len(r.p.series))
	if len(r.p.names) == 1 {
		r.legend.Text = r.p.names[0]
	}
	r.top.Move(fyne.NewPos(4, 2))
	r.bottom.Move(fyne.NewPos(4, size.Height-r.bottom.MinSize().Height-2))
	r.legend.Move(fyne.NewPos(size.Width-r.legend.MinSize().Width-4, 2))
	pad := float32(8)
	w, h := size.Width-2*pad, size.Height-2*pad
	for i, s := range r.p.series {
		n := len(s)
		if n < 2 {
			continue
		}
		step := max(1, (n+plotPoints-1)/plotPoints)
		c := r.p.colors[1+i%(len(r.p.colors)-1)]
		var px, py float32
		first := true
		for j := 0; j < n; j += step {
			if j+step >= n {
				j = n - 1
			}
			v := s[j]
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			x := pad + w*float32(j)/float32(n-1)
			y := pad + h*float32((hi-v)/(hi-lo))
			if !first {
				l := r.line()
				l.StrokeColor = c
				l.Position1, l.Position2 = fyne.NewPos(px, py), fyne.NewPos(x, y)
				l.Refresh()
			}
			px, py, first = x, y, false
		}
	}
	for _, t := range []*canvas.Text{r.top, r.bottom, r.legend} {
		t.Refresh()
	}
}

// line returns the next unused line of the pool.
func (r *plotRenderer) line() *canvas.Line {
	if r.used == len(r.lines) {
		l := canvas.NewLine(color.White)
		l.StrokeWidth = 1.5
		r.lines = append(r.lines, l)
	}
	r.used++
	return r.lines[r.used-1]
}
