package sdk

import (
	"fmt"
	"time"

	"amid/plugins/protocol"
)

// Reporter builds a training loop's progress events: the mean of each loss over the steps
// since the last event, and samples per second and the ETA over the steps the loop has run
// since it started (or resumed).
type Reporter struct {
	send                func(*protocol.Progress) error
	names               []string
	start, total, batch int
	began               time.Time
	sum                 []float64
	n                   int
}

// NewReporter starts the reporter of a loop that runs steps start+1 to total (start > 0 on
// resume) with batch samples per step; its losses are named names, in Add's order, and
// its events go to send.
func NewReporter(send func(*protocol.Progress) error, start, total, batch int, names ...string) *Reporter {
	return &Reporter{send: send, names: names, start: start, total: total, batch: batch, began: time.Now(), sum: make([]float64, len(names))}
}

// Add records one step's losses, in the order of the reporter's names.
func (r *Reporter) Add(losses ...float64) {
	for i, v := range losses[:len(r.sum)] {
		r.sum[i] += v
	}
	r.n++
}

// Report sends the progress at step, in epoch, naming checkpoint ck when one was just
// written.
func (r *Reporter) Report(step, epoch int, ck string) error {
	p := r.progress(step, epoch)
	p.Checkpoint = ck
	return r.send(p)
}

// Stopped sends the last event of a loop that its time limit (Clock) stopped after step:
// no ETA, and a message saying so. A loop stopped before its first step sends nothing.
func (r *Reporter) Stopped(step, epoch int) error {
	if step <= r.start {
		return nil
	}
	p := r.progress(step, epoch)
	p.ETA, p.Message = 0, fmt.Sprintf("time limit reached after step %d", step)
	return r.send(p)
}

// progress is the event at step, with the mean losses of the steps added since the last
// event (none when there were none), which it then forgets.
func (r *Reporter) progress(step, epoch int) *protocol.Progress {
	el := time.Since(r.began)
	done := max(step-r.start, 1)
	p := &protocol.Progress{
		Step: int64(step), TotalSteps: int64(r.total), Epoch: int64(epoch),
		SamplesPerSecond: float64(done*r.batch) / max(el.Seconds(), 1e-9),
		ETA:              time.Duration(float64(el) / float64(done) * float64(r.total-step)),
	}
	if r.n > 0 {
		p.Losses = make(map[string]float64, len(r.names))
		for i, name := range r.names {
			p.Losses[name] = r.sum[i] / float64(r.n)
			r.sum[i] = 0
		}
		r.n = 0
	}
	return p
}
