package plan

import "amid/plugins/engine"

// Planning to a device's memory (Budget.Estimate set): the estimate is the engine's
// count of what the network, its optimizer and its trainer hold on the device, block
// rounding included, so it is not affine in the batch; the batch is searched for instead.

// estimate is the budget's memory estimate of training cfg on n patches.
func (b Budget) estimate(cfg engine.UNetConfig, n int, patch [3]int) int64 {
	if b.Estimate != nil {
		return b.Estimate(cfg, n, patch)
	}
	return Estimate(cfg, n, patch)
}

// batch is the largest batch of patches that fits the budget, at most limit (a share of
// the dataset) and at least MinBatch, which the caller has checked to fit.
func (b Budget) batch(cfg engine.UNetConfig, patch [3]int, limit float64) int {
	if b.Estimate == nil {
		// Estimate is affine in the batch: E(n) = E(0) + n·(E(1) − E(0)).
		e0 := Estimate(cfg, 0, patch)
		n := (b.Bytes - e0) / (Estimate(cfg, 1, patch) - e0)
		if limit < float64(n) {
			n = int64(limit)
		}
		return max(MinBatch, int(n))
	}
	hi := maxBatch
	if limit < float64(hi) {
		hi = max(MinBatch, int(limit))
	}
	// Guess the top from the growth between MinBatch and twice that, then bisect: the
	// largest n with an estimate within the budget.
	e1, e2 := b.estimate(cfg, MinBatch, patch), b.estimate(cfg, 2*MinBatch, patch)
	if per := (e2 - e1) / MinBatch; per > 0 {
		hi = min(hi, MinBatch+int((b.Bytes-e1)/per)+1)
	}
	lo := MinBatch
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if b.estimate(cfg, mid, patch) <= b.Bytes {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// maxBatch bounds a searched batch (the configuration schema's largest).
const maxBatch = 4096
