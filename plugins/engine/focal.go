package engine

import "math"

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
