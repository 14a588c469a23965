package synth

import "math"

// GaussianKernel is the normalised 1D Gaussian of standard deviation sigma samples,
// truncated at 3σ (2⌈3σ⌉+1 taps): the blur of the generators and the benchmarks' filters.
func GaussianKernel(sigma float64) []float64 {
	r := int(math.Ceil(3 * sigma))
	k := make([]float64, 2*r+1)
	var sum float64
	for i := range k {
		d := float64(i - r)
		k[i] = math.Exp(-d * d / (2 * sigma * sigma))
		sum += k[i]
	}
	for i := range k {
		k[i] /= sum
	}
	return k
}
