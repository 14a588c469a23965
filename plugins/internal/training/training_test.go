package training

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"amid/plugins/engine"
	"amid/plugins/engine/ckpt"
	"amid/plugins/protocol"
	"amid/plugins/sdk"
)

// arch is a 3-stage 2D U-Net that trains in milliseconds.
var arch = engine.UNetConfig{In: 1, Classes: 2, Widths: []int{4, 8, 8}, Convs: 2, Slope: 0.01}

// run is a loop over a tiny U-Net on random 16×16 batches. With stream, batch k is drawn
// from one generator step after step (its state is Loop.Data); otherwise from a generator
// seeded with (1, k).
type run struct {
	*Loop
	u      *engine.UNet
	events []*protocol.Progress
}

func newRun(t *testing.T, steps, until int, stream bool) *run {
	t.Helper()
	be := engine.NewCPU(2)
	u, err := engine.BuildUNet(be, arch, 2, [3]int{1, 16, 16}, 3)
	if err != nil {
		t.Fatal(err)
	}
	opt := engine.NewAdamW(be, u.Params(), 1e-2, 1e-4)
	tr, err := engine.NewTrainer(u.Net, opt, engine.TrainOptions{Clip: 12})
	if err != nil {
		t.Fatal(err)
	}
	r := &run{u: u}
	pcg := rand.NewPCG(1, 1)
	lab := make([]int32, len(u.Input.Data))
	r.Loop = &Loop{
		Steps: steps, Until: until, LR: 1e-2, Epoch: 2, Report: 1, Losses: []string{"dice_ce"},
		Dir: t.TempDir(), Arch: arch, Record: map[string]int{"steps": steps}, Model: u, Opt: opt,
		Send: func(p *protocol.Progress) error { r.events = append(r.events, p); return nil },
		Step: func(step int, lr float64) (int, []float64, error) {
			g := rand.New(rand.NewPCG(1, uint64(step)))
			if stream {
				g = rand.New(pcg)
			}
			for i := range u.Input.Data {
				u.Input.Data[i] = float32(g.NormFloat64())
				lab[i] = int32(g.IntN(2))
			}
			if err := u.SetLabels(lab); err != nil {
				return 0, nil, err
			}
			if _, err := tr.Step(lr); err != nil {
				return 0, nil, err
			}
			return 2, []float64{u.Value()}, nil
		},
	}
	if stream {
		r.Data = pcg
	}
	return r
}

// losses are the losses the events report, by step.
func (r *run) losses() map[int64]float64 {
	out := map[int64]float64{}
	for _, p := range r.events {
		if p.Losses != nil {
			out[p.Step] = p.Losses["dice_ce"]
		}
	}
	return out
}

// sameWeights fails unless a and b hold bit-identical parameters.
func sameWeights(t *testing.T, a, b *engine.UNet) {
	t.Helper()
	for i, p := range a.Params() {
		if !slices.Equal(p.Data, b.Params()[i].Data) {
			t.Fatalf("parameter %s differs", p.Name)
		}
	}
}

// Six steps in epochs of two: an event every step, epoch checkpoints after steps 2 and 4
// (not 6, the last, which the plugin saves as Final), and the learning rate of the poly
// schedule at each step.
func TestRun(t *testing.T) {
	r := newRun(t, 6, 0, false)
	fetched := 0
	r.Fetch = func() error { fetched++; return nil }
	var lrs []float64
	step := r.Step
	r.Step = func(s int, lr float64) (int, []float64, error) { lrs = append(lrs, lr); return step(s, lr) }
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r.At != (Point{6, 3}) || r.Stopped {
		t.Errorf("at %+v stopped %v, want step 6 epoch 3", r.At, r.Stopped)
	}
	var cks []string
	for i, p := range r.events {
		if p.Step != int64(i+1) || p.TotalSteps != 6 {
			t.Errorf("event %d: step %d of %d", i, p.Step, p.TotalSteps)
		}
		if p.Checkpoint != "" {
			cks = append(cks, filepath.Base(p.Checkpoint))
		}
	}
	if !slices.Equal(cks, []string{"epoch-0001.ckpt", "epoch-0002.ckpt"}) || fetched != 2 {
		t.Errorf("checkpoints %v, state fetched %d times; want 2 epoch checkpoints, each fetched", cks, fetched)
	}
	if filepath.Base(r.Last) != "epoch-0002.ckpt" {
		t.Errorf("the newest checkpoint is %q, want epoch-0002.ckpt", r.Last)
	}
	for i, lr := range lrs {
		// nnU-Net's poly schedule: 1e-2·(1 − i/6)^0.9.
		if want := 1e-2 * math.Pow(1-float64(i)/6, 0.9); math.Abs(lr-want) > 1e-15 {
			t.Errorf("step %d: learning rate %v, want %v", i+1, lr, want)
		}
	}
	p, err := r.Save(Final)
	if err != nil {
		t.Fatal(err)
	}
	if r.Last != p {
		t.Errorf("after saving %s the newest checkpoint is %q", p, r.Last)
	}
	m, err := ckpt.ReadManifest(p)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]int
	if err := json.Unmarshal(m.Train, &rec); err != nil || m.Step != 6 || m.Epoch != 3 || rec["steps"] != 6 {
		t.Errorf("final checkpoint at step %d epoch %d with record %s (%v); want step 6, epoch 3, the record", m.Step, m.Epoch, m.Train, err)
	}
}

// Resuming from the step-2 checkpoint gives the uninterrupted run's losses and weights bit
// for bit, with batches drawn by step and with batches drawn from a generator whose state
// travels in the checkpoint.
func TestResumeBitIdentical(t *testing.T) {
	for _, stream := range []bool{false, true} {
		whole := newRun(t, 6, 0, stream)
		if err := whole.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		again := newRun(t, 6, 0, stream)
		if err := again.Resume(filepath.Join(whole.Dir, "epoch-0001.ckpt")); err != nil {
			t.Fatal(err)
		}
		if again.At != (Point{2, 1}) {
			t.Fatalf("resumed at %+v, want step 2 epoch 1", again.At)
		}
		if err := again.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		w, a := whole.losses(), again.losses()
		if len(a) != 4 || again.events[0].Step != 3 {
			t.Errorf("stream %v: resumed run reported %v, want steps 3 to 6", stream, a)
		}
		for s := int64(3); s <= 6; s++ {
			if w[s] != a[s] {
				t.Errorf("stream %v, step %d: loss %v resumed, %v uninterrupted", stream, s, a[s], w[s])
			}
		}
		sameWeights(t, whole.u, again.u)
	}
}

// A model planned for 6 steps trained in two rounds (to step 3, then on from the first
// round's final checkpoint to step 6) ends bit-identical to one trained straight: the
// schedule is that of the 6 planned steps in both rounds.
func TestRounds(t *testing.T) {
	whole := newRun(t, 6, 0, true)
	if err := whole.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	first := newRun(t, 6, 3, true)
	if err := first.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if first.At.Step != 3 || first.events[len(first.events)-1].TotalSteps != 3 {
		t.Fatalf("first round at %+v, last event %+v", first.At, first.events[len(first.events)-1])
	}
	p, err := first.Save(Final)
	if err != nil {
		t.Fatal(err)
	}
	second := newRun(t, 6, 6, true)
	if err := second.Resume(p); err != nil {
		t.Fatal(err)
	}
	if err := second.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	sameWeights(t, whole.u, second.u)
	if second.At != whole.At {
		t.Errorf("second round ends at %+v, straight run at %+v", second.At, whole.At)
	}
}

// The time limit ends a run before a step with one event that says so; a run whose limit
// has passed before its first step sends nothing.
func TestTimeLimit(t *testing.T) {
	r := newRun(t, 6, 0, false)
	r.Report = 100
	r.Clock = sdk.NewClock(&protocol.TrainRequest{TimeLimit: time.Hour})
	step := r.Step
	r.Step = func(s int, lr float64) (int, []float64, error) {
		if s == 3 {
			r.Clock = sdk.NewClock(&protocol.TrainRequest{TimeLimit: time.Nanosecond})
		}
		return step(s, lr)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	last := r.events[len(r.events)-1]
	if !r.Stopped || r.At.Step != 3 || last.Step != 3 || last.Message != "time limit reached after step 3" || last.ETA != 0 {
		t.Errorf("stopped %v at %+v, last event %+v", r.Stopped, r.At, last)
	}
	late := newRun(t, 6, 0, false)
	late.Clock = r.Clock
	if err := late.Run(context.Background()); err != nil || !late.Stopped || late.At.Step != 0 || len(late.events) != 0 {
		t.Errorf("a run past its limit: %v, stopped %v at %+v, %d events", err, late.Stopped, late.At, len(late.events))
	}
}

// A step whose objective is not finite ends the run with ErrDiverged naming the step; a
// cancelled context ends it with the context's error.
func TestDivergedAndCancelled(t *testing.T) {
	r := newRun(t, 6, 0, false)
	r.Offset = 10
	step := r.Step
	r.Step = func(s int, lr float64) (int, []float64, error) {
		n, l, err := step(s, lr)
		if s == 2 {
			l[0] = math.NaN()
		}
		return n, l, err
	}
	if err := r.Run(context.Background()); !errors.Is(err, ErrDiverged) || err.Error() != "training diverged at step 12 (loss NaN): lower the learning rate" {
		t.Errorf("err %v, want ErrDiverged at step 12", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := newRun(t, 6, 0, false).Run(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
}
