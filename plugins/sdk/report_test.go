package sdk

import (
	"testing"
	"time"

	"amid/plugins/protocol"
)

// A loop resumed after step 10 of 100, batch 4, reporting every 5 steps: the losses average over the steps since
// the last event, an event with no step since has no losses, and the time limit's event
// has no ETA and says why it is the last.
func TestReporter(t *testing.T) {
	var got []*protocol.Progress
	r := NewReporter(func(p *protocol.Progress) error { got = append(got, p); return nil }, 10, 100, 5, "loss", "l1")
	if r.Due(11) || !r.Due(15) {
		t.Errorf("due at step 11 %v, at step 15 %v; want every 5th step", r.Due(11), r.Due(15))
	}
	if err := r.Stopped(10, 0); err != nil || len(got) != 0 {
		t.Fatalf("stopped before a step: %v, %d events; want none", err, len(got))
	}
	r.Add(4, 1, 0.5)
	r.Add(4, 3, 1.5)
	time.Sleep(10 * time.Millisecond) // so that the rates below are finite and positive
	if err := r.Report(12, 1, "/w/epoch-0001.ckpt"); err != nil {
		t.Fatal(err)
	}
	if err := r.Report(12, 1, ""); err != nil {
		t.Fatal(err)
	}
	r.Add(4, 5, 2)
	if err := r.Stopped(13, 1); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d events, want 3", len(got))
	}
	a, b, c := got[0], got[1], got[2]
	if a.Step != 12 || a.TotalSteps != 100 || a.Epoch != 1 || a.Checkpoint != "/w/epoch-0001.ckpt" ||
		a.Losses["loss"] != 2 || a.Losses["l1"] != 1 || a.SamplesPerSecond <= 0 || a.ETA <= 0 || a.Message != "" {
		t.Errorf("first event %+v; want step 12 of 100, the checkpoint, loss 2 and l1 1 (means of 2 steps), a rate and an ETA", a)
	}
	if b.Losses != nil {
		t.Errorf("an event with no step since the last has losses %v", b.Losses)
	}
	if c.Step != 13 || c.Losses["loss"] != 5 || c.Losses["l1"] != 2 || c.ETA != 0 || c.Message != "time limit reached after step 13" {
		t.Errorf("time-limit event %+v; want step 13, loss 5, l1 2, no ETA and the message", c)
	}
}

// Steps slower than ReportInterval make every step's event due.
func TestReporterInterval(t *testing.T) {
	r := NewReporter(func(*protocol.Progress) error { return nil }, 0, 100, 10)
	r.last = r.last.Add(-ReportInterval)
	if !r.Due(3) {
		t.Error("no event due after ReportInterval")
	}
	if err := r.Report(3, 0, ""); err != nil {
		t.Fatal(err)
	}
	if r.Due(4) {
		t.Error("an event due right after the last one, off the 10-step grid")
	}
}
