package plan

import (
	"errors"
	"strings"
	"testing"

	"amid/plugins/engine"
)

// TestFlopsMatchesEngine: the analytic count of a training step's operations agrees with
// the engine's count of the U-Net it builds, in 2D and 3D.
func TestFlopsMatchesEngine(t *testing.T) {
	for _, f := range []Fingerprint{
		{Cases: cases(4, [3]int{1, 48, 64}, [3]float64{3, 0.8, 0.8}), Channels: 1, Classes: 2},
		{Cases: cases(4, [3]int{12, 32, 40}, [3]float64{2.5, 1, 1}), Channels: 2, Classes: 3},
	} {
		cs, err := Plan(f, Budget{Bytes: 256 << 20})
		if err != nil {
			t.Fatal(err)
		}
		c := cs[len(cs)-1]
		u, err := engine.BuildUNet(engine.NewCPU(1), c.Net, c.Batch, c.Patch, 1)
		if err != nil {
			t.Fatal(err)
		}
		got, want := Flops(c.Net, c.Batch, c.Patch), u.Flops()
		t.Logf("%s patch %v batch %d: %.4g flops, engine %.4g, ratio %.3f", c.Lane, c.Patch, c.Batch, got, want, got/want)
		// The engine skips the input gradient of the first convolution and counts no 1×1
		// head; both are a few per cent of a step.
		if r := got / want; r < 0.95 || r > 1.1 {
			t.Errorf("%s: %.4g flops is %.3f× the engine's %.4g", c.Lane, got, r, want)
		}
	}
}

// TestFitTime: a lane too slow for its share is shrunk (batch, then widths, then patch)
// until its minimum fits, and gets the planned total that fits the winner's time; a lane
// that cannot fit at its smallest sensible size says so.
func TestFitTime(t *testing.T) {
	f := Fingerprint{Cases: cases(4, [3]int{40, 160, 160}, [3]float64{1, 1, 1}), Channels: 1, Classes: 3}
	cs, err := Plan(f, Budget{Bytes: 4 << 30})
	if err != nil {
		t.Fatal(err)
	}
	c := cs[len(cs)-1]
	// A made-up machine at 200 GFLOP/s: what matters is that the arithmetic follows it.
	rate := func(cfg engine.UNetConfig, n int, p [3]int) float64 { return Flops(cfg, n, p) / 200e9 }
	before := rate(c.Net, c.Batch, c.Patch)
	tm := Time{Lane: 60, MinSteps: 100, Train: 600, StepSeconds: rate}
	if err := FitTime(&c, tm); err != nil {
		t.Fatal(err)
	}
	step := rate(c.Net, c.Batch, c.Patch)
	if 100*step > StepShare*60 || step >= before {
		t.Errorf("step %.3g s (was %.3g): 100 steps do not fit 70%% of 60 s", step, before)
	}
	if c.Steps != int(600/step) || c.StepSeconds != step {
		t.Errorf("planned %d steps at %.3g s, want %d", c.Steps, c.StepSeconds, int(600/step))
	}
	t.Logf("%s: batch %d widths %v patch %v, %.3g s a step; %s", c.Lane, c.Batch, c.Net.Widths, c.Patch, step, c.Rationale[len(c.Rationale)-2])
	slow := func(cfg engine.UNetConfig, n int, p [3]int) float64 { return 10 }
	c = cs[len(cs)-1]
	err = FitTime(&c, Time{Lane: 60, MinSteps: 100, Train: 600, StepSeconds: slow})
	if !errors.Is(err, ErrTime) || !strings.Contains(err.Error(), "minimum of 100 steps takes about 1000 s") {
		t.Errorf("a lane that cannot fit: %v", err)
	}
}
