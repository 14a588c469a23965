package cli

import (
	"fmt"
	"io"
	"math"
	"os"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"

	hostrun "amid/host/run"
)

// display shows a run's events: on a terminal a live bar per lane and fold (steps, loss,
// ETA) with messages above it; otherwise plain lines, progress at most every 10 seconds.
// Progress bars come from schollz/progressbar, a well-kept library: terminal drawing is not
// AMID's core.
type display struct {
	mu       sync.Mutex
	w        io.Writer
	tty      bool
	bar      *progressbar.ProgressBar
	barKey   string
	lastLine time.Time
}

func newDisplay(w io.Writer) *display {
	d := &display{w: w}
	if f, ok := w.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		d.tty = true
	}
	return d
}

func (d *display) event(e hostrun.Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e.Progress == nil {
		d.line(e, e.Message)
		return
	}
	p := e.Progress
	key := fmt.Sprintf("%s fold %d", e.Lane, e.Fold)
	if e.Fold < 0 {
		key = e.Lane + " on all the data"
	}
	// A round planned by time alone (its lane's step time not yet known) runs to a
	// sentinel step it never reaches: the line shows the step, not a total of billions.
	total := p.TotalSteps
	if total >= math.MaxInt32 {
		total = 0
	}
	at := fmt.Sprintf("step %d/%d", p.Step, total)
	if total <= 0 {
		at = fmt.Sprintf("step %d", p.Step)
	}
	if p.Message != "" { // a plugin's message: a line of its own, never throttled
		d.line(e, key+": "+p.Message)
		if p.Losses == nil && p.Validation == nil {
			return // a message at the step reached (a cluster job's state): the line is all
		}
	}
	loss := ""
	for k, v := range p.Losses {
		loss = fmt.Sprintf(", %s %.4f", k, v)
		break
	}
	if !d.tty {
		if time.Since(d.lastLine) >= 10*time.Second || p.Step == p.TotalSteps {
			d.lastLine = time.Now()
			fmt.Fprintf(d.w, "%s  %-8s %s: %s%s, %.1f samples/s, ETA %v\n", e.Time.Format("15:04:05"), e.Phase, key, at, loss, p.SamplesPerSecond, p.ETA.Round(time.Second))
		}
		return
	}
	if d.bar == nil || d.barKey != key {
		if d.bar != nil {
			_ = d.bar.Finish()
			fmt.Fprintln(d.w)
		}
		n := int64(-1) // a spinner: no total to fill
		if total > 0 {
			n = total
		}
		d.bar = progressbar.NewOptions64(n,
			progressbar.OptionSetWriter(d.w), progressbar.OptionSetDescription(key),
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
		d.barKey = key
	}
	d.bar.Describe(key + loss)
	_ = d.bar.Set64(p.Step)
}

// line writes one log line of e's time and phase, above the progress bar if one is shown.
func (d *display) line(e hostrun.Event, text string) {
	if d.bar != nil {
		_ = d.bar.Clear()
	}
	fmt.Fprintf(d.w, "%s  %-8s %s\n", e.Time.Format("15:04:05"), e.Phase, text)
	if d.bar != nil {
		_ = d.bar.RenderBlank()
	}
}

func (d *display) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.bar != nil {
		_ = d.bar.Finish()
		d.bar = nil
	}
}
