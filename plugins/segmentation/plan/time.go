package plan

import (
	"errors"
	"fmt"

	"amid/plugins/engine"
)

// ErrTime reports a lane that cannot make its minimum steps in its share of the time even
// at its smallest sensible size.
var ErrTime = errors.New("plan: too slow for its share of the time")

// The smallest sensible lane: nnU-Net's batch floor, a first stage of MinBaseWidth
// channels (a U-Net narrower than that learns little on any real image), and a patch of
// at least half the median shape on each axis, but no less than MinPatchEdge voxels where
// the median is larger (a patch smaller than that sees too little of any structure).
const (
	MinBaseWidth = 8
	MinPatchEdge = 32
)

// Time is what a lane's size is fitted to.
type Time struct {
	// Lane is the time a lane trains in its first round, and MinSteps the steps it must
	// make in it.
	Lane     float64
	MinSteps int
	// Train is about how long the winning lane trains in all; the planned total of steps
	// (which the learning-rate schedule spans) is what fits in it.
	Train float64
	// StepSeconds is a training step's time on this machine for a U-Net on n patches
	// (the engine's cost model calibrated here: Flops over a measured rate).
	StepSeconds func(cfg engine.UNetConfig, n int, patch [3]int) float64
}

// StepShare is the part of a lane's first round its minimum steps may take: the rest is
// for starting the plugin, loading the cases and the validation prediction, which the
// host measures as the round's overhead.
const StepShare = 0.7

// FitTime makes c fit its time: while its minimum steps would take longer than StepShare
// of t.Lane it halves the batch (to MinBatch), then the widths (to MinBaseWidth), then
// shrinks the patch (to half the median shape, at least MinPatchEdge) as fit does; it sets
// c.Steps, the planned total, to what fits t.Train. A lane that does not fit at its
// smallest sensible size is an error wrapping ErrTime that says how long its minimum
// would take, with c at that size (its StepSeconds and Steps set). The memory estimate
// only falls as the lane shrinks.
func FitTime(c *Config, t Time) error {
	if t.Lane <= 0 || t.StepSeconds == nil || t.MinSteps < 1 {
		c.Steps = 0
		return nil
	}
	budget := StepShare * t.Lane
	cost := func() float64 { return t.StepSeconds(c.Net, c.Batch, c.Patch) }
	var why []string // the shrinking steps taken
	shrink := func(what string) { why = append(why, what) }
	for float64(t.MinSteps)*cost() > budget {
		switch {
		case c.Batch > MinBatch:
			c.Batch = max(MinBatch, c.Batch/2)
			shrink(fmt.Sprintf("batch %d", c.Batch))
		case c.Net.Widths[0] > MinBaseWidth:
			for i := range c.Net.Widths {
				c.Net.Widths[i] = max(c.Net.Widths[i]/2, MinBaseWidth)
			}
			shrink(fmt.Sprintf("widths %v", c.Net.Widths))
		default:
			if !c.shrinkPatch() {
				c.StepSeconds = cost()
				c.Steps = max(1, int(t.Train/c.StepSeconds))
				c.Bytes = Estimate(c.Net, c.Batch, c.Patch)
				return fmt.Errorf("%w: lane %s at its smallest sensible size (batch %d, widths %v, patch %v) takes about %.3g s a step, so its minimum of %d steps takes about %.0f s, more than %.0f%% of the %.0f s a lane trains in the first round",
					ErrTime, c.Lane, c.Batch, c.Net.Widths, c.Patch, cost(), t.MinSteps, float64(t.MinSteps)*cost(), 100*StepShare, t.Lane)
			}
			shrink(fmt.Sprintf("patch %v", c.Patch))
		}
	}
	step := cost()
	c.StepSeconds = step
	c.Steps = max(t.MinSteps, int(t.Train/step))
	c.Bytes = Estimate(c.Net, c.Batch, c.Patch)
	msg := fmt.Sprintf("time: %d steps (the minimum) at about %.3g s a step fit %.0f%% of the %.0f s of the first round", t.MinSteps, step, 100*StepShare, t.Lane)
	if len(why) > 0 {
		msg += fmt.Sprintf(", after %d shrinking step(s) to batch %d, widths %v, patch %v", len(why), c.Batch, c.Net.Widths, c.Patch)
	}
	c.Rationale = append(c.Rationale, msg, fmt.Sprintf("planned total: %d steps (the learning rate decays over them), what fits the %.0f s the winning lane trains", c.Steps, t.Train))
	return nil
}

// shrinkPatch shrinks the patch axis largest relative to the median shape by its pooling
// divisor, keeping each axis at least half the median (and MinPatchEdge where the median
// is larger), and recomputes the topology; false when no axis can shrink.
func (c *Config) shrinkPatch() bool {
	_, pools := Topology(c.Patch, c.Spacing)
	d := divisor(pools)
	axis, best := -1, 0.0
	for a := range 3 {
		floor := max(c.MedianShape[a]/2, min(MinPatchEdge, c.MedianShape[a]))
		if c.Patch[a]-d[a] < max(floor, 1) {
			continue
		}
		if r := float64(c.Patch[a]) / float64(c.MedianShape[a]); r > best {
			axis, best = a, r
		}
	}
	if axis < 0 {
		return false
	}
	c.Patch[axis] -= d[axis]
	_, pools = Topology(c.Patch, c.Spacing)
	d = divisor(pools)
	for a := range 3 {
		c.Patch[a] = max(d[a], c.Patch[a]/d[a]*d[a])
	}
	kernels, pools := Topology(c.Patch, c.Spacing)
	w := c.Net.Widths[0]
	c.Net.Kernels, c.Net.Pools = kernels, pools
	limit := MaxWidth3D
	if c.Patch[0] == 1 {
		limit = MaxWidth2D
	}
	c.Net.Widths = make([]int, len(kernels))
	for i := range c.Net.Widths {
		c.Net.Widths[i] = min(w<<i, limit*w/BaseWidth)
	}
	return true
}

// Flops is the floating-point operations of one training step of the U-Net cfg on n
// patches: the multiply-adds of every convolution and transposed convolution (forward,
// weight gradient and input gradient, as engine.Net.Flops counts them) and the 1×1 heads.
func Flops(cfg engine.UNetConfig, n int, patch [3]int) float64 {
	st := len(cfg.Widths)
	pools := append([][3]int{{1, 1, 1}}, cfg.Pools...)
	size := patch
	var macs float64
	prev := cfg.In
	vox := make([]float64, st)
	for s := range st {
		for a := range 3 {
			size[a] = max(size[a]/pools[s][a], 1)
		}
		v := float64(size[0] * size[1] * size[2])
		vox[s] = v
		k := float64(3 * 3 * 3)
		if len(cfg.Kernels) > s {
			k = float64(cfg.Kernels[s][0] * cfg.Kernels[s][1] * cfg.Kernels[s][2])
		}
		w := float64(cfg.Widths[s])
		convs := float64(cfg.Convs)
		macs += v * k * (float64(prev)*w + (convs-1)*w*w) // encoder
		if s < st-1 {
			macs += v * k * (2*w*w + (convs-1)*w*w) // decoder after the skip's concatenation
		}
		if s > 0 {
			macs += vox[s-1] * w * float64(cfg.Widths[s-1]) // transposed convolution up to s-1
		}
		prev = cfg.Widths[s]
	}
	macs += vox[0] * float64(cfg.Widths[0]*cfg.Classes)
	return 3 * 2 * macs * float64(n)
}
