package sdk

import (
	"fmt"
	"time"

	"amid/plugins/protocol"
)

// ReportInterval is the longest a Reporter lets pass between progress events while steps
// keep coming (see Due): a slow step rate still shows in the host's monitor.
const ReportInterval = 15 * time.Second

// Reporter builds a training loop's progress events: the mean of each loss over the steps
// since the last event, and samples per second and the ETA over the steps the loop has run
// since it started (or resumed).
type Reporter struct {
	send                func(*protocol.Progress) error
	names               []string
	start, total, every int
	began, last         time.Time
	sum                 []float64
	n, samples          int
}

// NewReporter starts the reporter of a loop that runs steps start+1 to total (start > 0 on
// resume) and reports every every steps (Due); its losses are named names, in Add's order,
// and its events go to send.
func NewReporter(send func(*protocol.Progress) error, start, total, every int, names ...string) *Reporter {
	now := time.Now()
	return &Reporter{send: send, names: names, start: start, total: total, every: max(every, 1), began: now, last: now, sum: make([]float64, len(names))}
}

// Add records one step of samples samples and its losses, in the order of the reporter's
// names.
func (r *Reporter) Add(samples int, losses ...float64) {
	for i, v := range losses[:len(r.sum)] {
		r.sum[i] += v
	}
	r.n++
	r.samples += samples
}

// Due reports whether an event is due after step: every few steps, or when ReportInterval
// has passed since the last event. The loop also reports at each checkpoint and at its
// last step.
func (r *Reporter) Due(step int) bool {
	return step%r.every == 0 || time.Since(r.last) >= ReportInterval
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
	r.last = time.Now()
	el := r.last.Sub(r.began)
	done := max(step-r.start, 1)
	p := &protocol.Progress{
		Step: int64(step), TotalSteps: int64(r.total), Epoch: int64(epoch),
		SamplesPerSecond: float64(r.samples) / max(el.Seconds(), 1e-9),
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
