package widget

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
)

// RuneTaker is a Painter that takes typed runes while it is set (SetPainter): the number
// keys that choose its label or class. A rune it takes (true) goes no further: while a
// correcting tool is set, 1–9 choose the label; without one, 1–5 stay the window presets.
type RuneTaker interface {
	TakeRune(r rune) bool
}

// Sizer is a Painter whose tool has a size that the wheel changes while Shift or Alt is
// held (Control and the wheel still zoom): Grow is called with +1 for a notch up, −1
// for a notch down.
type Sizer interface {
	Grow(steps int)
}

// painterNow is the painter set, nil when none.
func (v *SliceView) painterNow() Painter {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.painter
}

// tookRune offers r to the painter, if it takes runes.
func (v *SliceView) tookRune(r rune) bool {
	t, ok := v.painterNow().(RuneTaker)
	return ok && t.TakeRune(r)
}

// sized hands a wheel notch to the painter's Grow while Shift or Alt is held, and says
// whether it did. A wheel turned with Shift may come as a horizontal scroll.
func (v *SliceView) sized(ev *fyne.ScrollEvent) bool {
	s, ok := v.painterNow().(Sizer)
	if !ok || !v.sizeHeld() {
		return false
	}
	d := ev.Scrolled.DY
	if d == 0 {
		d = ev.Scrolled.DX
	}
	switch {
	case d > 0:
		s.Grow(1)
	case d < 0:
		s.Grow(-1)
	}
	return true
}

// sizeHeld reports whether Shift or Alt is held.
func (v *SliceView) sizeHeld() bool {
	v.mu.Lock()
	held := v.shift || v.alt
	v.mu.Unlock()
	if held {
		return true
	}
	if a := fyne.CurrentApp(); a != nil {
		if d, ok := a.Driver().(desktop.Driver); ok {
			return d.CurrentKeyModifiers()&(fyne.KeyModifierShift|fyne.KeyModifierAlt) != 0
		}
	}
	return false
}
