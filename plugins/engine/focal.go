package engine

import (
	"fmt"
	"math"
)

// focalBeta is CenterNet's β, which weighs down the negatives near an object's centre.
const focalBeta = 4

// FocalLoss is CenterNet's penalty-reduced pixel-wise focal loss (Zhou et al., "Objects
// as Points", 2019; α = 2, β = 4) of heatmap logits x against a target heatmap in [0, 1]
// whose object centres are exactly 1: with p = sigmoid(x), a centre costs
// −(1−p)^α·log p, any other voxel −(1−y)^β·p^α·log(1−p), and the sum is divided by the
// number of centres (at least 1). It writes the gradient with respect to x into dx
// (overwriting) and returns the loss. x, target and dx have the same length.
func FocalLoss(x, target, dx []float32) float64 {
	pos := 0
	for _, y := range target {
		if y >= 1 {
			pos++
		}
	}
	k := 1 / float64(max(pos, 1))
	var loss float64
	for i, v := range x {
		xv, y := float64(v), float64(target[i])
		logP, log1P := -softplus(-xv), -softplus(xv) // log p, log(1−p)
		p := math.Exp(logP)
		q := math.Exp(log1P) // 1 − p without cancellation
		var l, g float64
		if y >= 1 {
			// d/dx of −q^α·log p, with dp/dx = p·q.
			l = -q * q * logP
			g = 2*p*q*q*logP - q*q*q
		} else {
			w := math.Pow(1-y, focalBeta)
			l = -w * p * p * log1P
			g = w * (p*p*p - 2*p*p*q*log1P)
		}
		loss += l
		dx[i] = float32(k * g)
	}
	return k * loss
}

// Focal is the loss of heatmap logits whose every channel is a heatmap: per sample
// [FocalLoss] over all its values against the target heatmaps the caller sets, averaged
// over the samples. It is exactly an [Objective] whose function is FocalLoss (the
// detection plugin's points head), but on a Vulkan device it runs there, with no round
// trip to the host. It is the last layer of a network.
type Focal struct {
	*Objective
	target []float32
	dv     *focalDev
}

// Focal adds the focal loss on x.
func (b *Builder) Focal(x *Tensor) *Focal {
	l := &Focal{target: make([]float32, x.Shape.Len())}
	S := x.Shape.Sample()
	l.Objective = b.newObjective(x, func(n int, x, dx []float32) float64 {
		return FocalLoss(x, l.target[n*S:(n+1)*S], dx)
	})
	b.layers = append(b.layers, l)
	return l
}

// SetTarget copies the target heatmaps (x's layout, N × C·D·H·W sample-major), each value
// in [0, 1], object centres exactly 1.
func (l *Focal) SetTarget(t []float32) error {
	if len(t) != len(l.target) {
		return fmt.Errorf("engine: %d target values for %d heatmap values", len(t), len(l.target))
	}
	for i, v := range t {
		if !(v >= 0 && v <= 1) {
			return fmt.Errorf("engine: heatmap target %v at %d outside [0, 1]", v, i)
		}
	}
	copy(l.target, t)
	return nil
}
