package widget

import (
	"errors"
	"image"
	"image/color"
	"image/draw"
	"math"
	"strings"
	"sync"

	"fyne.io/fyne/v2/theme"
	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

// ErrNoImage means a view has no image to capture.
var ErrNoImage = errors.New("the view shows no image")

// captureSide is the longer side, in pixels, of the capture of a view not yet laid out.
const captureSide = 512

// Capture renders what the view shows into a new image, for a report: the slice under its
// zoom, pan and window, the overlay and marks, the Drawing (measurements) with the texts
// beside them, and the patient directions at the edges; at the view's size and the
// screen's scale (a view not laid out: the fitted slice, 512 pixels on its longer side).
// It writes no name or other patient detail: only what the planes themselves show. The
// crosshair is left out. Call it from any goroutine.
func (v *SliceView) Capture() (*image.RGBA, error) {
	v.mu.Lock()
	vol, p, l := v.vol, v.p, v.layout
	view, marks, thr, area, scale, drawing := v.view, v.marks, v.threshold, v.area, v.scale, v.drawing
	if !v.labelsOn {
		p.Overlay.Labels, marks = nil, nil
	}
	v.mu.Unlock()
	if vol == nil {
		return nil, ErrNoImage
	}
	w, h := float64(area.Width), float64(area.Height)
	k := float64(max(scale, 1))
	if !(w >= 1 && h >= 1) {
		mw, mh := float64(l.W)*l.PixelW, float64(l.H)*l.PixelH
		f := captureSide / math.Max(mw, mh)
		w, h, k, view = math.Max(1, math.Round(mw*f)), math.Max(1, math.Round(mh*f)), 1, View{}
	}
	var r Renderer
	v.data.RLock()
	img, err := r.Render(vol, &p)
	v.data.RUnlock()
	if err != nil {
		return nil, err
	}
	g := NewGeometry(&l, view, w, h).Scaled(k)
	var c Composer
	out := c.Compose(img, &l, p.Slice, g, int(math.Round(g.W)), int(math.Round(g.H)), marks, thr, int(math.Round(k)))
	placed := append([]Placed(nil), c.Placed...)
	if drawing != nil && drawing.On(&l, p.Slice) {
		placed = drawOver(drawing, out, &l, p.Slice, g, k, placed)
	}
	face := captionFace(k)
	for _, t := range placed {
		// As placeTexts places them: above the point, inside the image.
		tw, th := textSize(face, t.Text)
		x := math.Min(math.Max(t.X, 0), float64(out.Rect.Dx())-tw)
		y := t.Y - th
		if y < 0 {
			y = t.Y
		}
		drawText(out, face, t.Text, x, y, t.Color)
	}
	edge := color.RGBA{255, 220, 0, 255}
	pad := float64(theme.Padding()) * k
	W, H := float64(out.Rect.Dx()), float64(out.Rect.Dy())
	for i, s := range []string{l.Left, l.Right, l.Top, l.Bottom} {
		tw, th := textSize(face, s)
		x, y := pad, (H-th)/2
		switch i {
		case 1:
			x = W - tw - pad
		case 2:
			x, y = (W-tw)/2, pad
		case 3:
			x, y = (W-tw)/2, H-th-pad
		}
		drawText(out, face, s, x, y, edge)
	}
	return out, nil
}

// Capture renders the three planes as the view shows them (SliceView.Capture), axial and
// coronal on top, sagittal below left, the window and level in the fourth cell.
func (o *OrthoView) Capture() (*image.RGBA, error) {
	var imgs [3]*image.RGBA
	cw, ch := 0, 0
	for i, v := range o.Views {
		img, err := v.Capture()
		if err != nil {
			return nil, err
		}
		imgs[i] = img
		cw, ch = max(cw, img.Rect.Dx()), max(ch, img.Rect.Dy())
	}
	out := image.NewRGBA(image.Rect(0, 0, 2*cw, 2*ch))
	draw.Draw(out, out.Rect, image.NewUniform(color.Black), image.Point{}, draw.Src)
	for i, img := range imgs {
		at := image.Pt(i%2*cw, i/2*ch)
		draw.Draw(out, img.Rect.Add(at), img, image.Point{}, draw.Src)
	}
	k := float64(ch) / math.Max(1, float64(o.Views[0].Size().Height))
	face := captionFace(math.Max(1, k))
	_, th := textSize(face, "W")
	drawText(out, face, o.WindowText(), float64(cw)+2*th, float64(ch)+th, color.RGBA{255, 255, 255, 255})
	return out, nil
}

// captionFont is the theme's text font, parsed once; nil when it cannot be.
var captionFont = sync.OnceValue(func() *opentype.Font {
	f, err := opentype.Parse(theme.DefaultTextFont().Content())
	if err != nil {
		return nil
	}
	return f
})

// captionFace is the theme's caption text at k pixels per unit (a fixed 7×13 face when
// the theme's font cannot be read).
func captionFace(k float64) font.Face {
	if f := captionFont(); f != nil {
		face, err := opentype.NewFace(f, &opentype.FaceOptions{Size: float64(theme.CaptionTextSize()) * k, DPI: 72, Hinting: font.HintingFull})
		if err == nil {
			return face
		}
	}
	return basicfont.Face7x13
}

// printable is s in the glyphs the theme's font holds: its minus sign (U+2212) becomes a
// hyphen-minus.
var printable = strings.NewReplacer("−", "-")

// textSize is the width and height of s in face.
func textSize(face font.Face, s string) (float64, float64) {
	m := face.Metrics()
	return float64(font.MeasureString(face, printable.Replace(s))) / 64, float64(m.Height) / 64
}

// drawText draws s with its top left at (x, y), over a shadow one pixel down and right so
// that it reads on bright tissue too.
func drawText(dst *image.RGBA, face font.Face, s string, x, y float64, c color.RGBA) {
	s = printable.Replace(s)
	for i, col := range []color.RGBA{{0, 0, 0, 255}, c} {
		d := font.Drawer{Dst: dst, Src: image.NewUniform(col), Face: face,
			Dot: fixed.Point26_6{X: fixed.Int26_6((x + float64(1-i)) * 64), Y: fixed.Int26_6((y+float64(1-i))*64) + face.Metrics().Ascent}}
		d.DrawString(s)
	}
}
