// Package compute says what computed a result, and how closely a re-run on other hardware
// must agree with it.
//
// # Compute identity
//
// Training and prediction in floating point give bit-identical results only when the same
// arithmetic runs in the same order: the same engine version, the same device, the same
// matrix kernels (OpenBLAS picks SGEMM kernels per CPU: SkylakeX on AVX-512, Haswell on
// AVX2, and each sums in its own order), and the same split of the work over workers
// (partial sums are added in worker order). An [Identity] names those four things. A plugin
// reports the identity it ran with in its Describe, Train and Predict responses; the host
// records it in the run, the model package's manifest and its report.
//
// # Tolerances
//
// A re-run under the same identity must reproduce a package's predictions byte for byte. A
// re-run under another identity (another CPU's kernels, a GPU) cannot, so it is compared
// with the package's predictions through the one table of tolerances below ([Table]),
// which the verifier and the GPU backend's cross-device tests both use:
//
//   - label maps: Dice ≥ 0.999 for every label in every case (a label absent from both
//     counts as equal);
//   - scores: |Δ| ≤ 1e-4 × the task's score range;
//   - images: max |Δ| ≤ 1e-3 × the image's value range;
//   - points and boxes: coordinates within 0.01 pixel, scores within 1e-4 (their range is
//     [0, 1]); categorical outputs (classes, attributes, 3D boxes in whole voxels) equal.
//
// Why these sizes, measured on an AVX-512 Xeon with OpenBLAS 0.3.21: the same weights of a
// 2D U-Net (4 levels, 16–128 filters, batch 2 of 64², 4 classes), run forward with
// SkylakeX, Haswell and Sandybridge kernels, gave logits that differ by at most 2.6e-7 of
// their range and no flipped argmax in 8192 pixels. The image and score bounds leave a
// margin of several thousand over that; a label flips only where two classes are within
// that margin of a tie, so Dice 0.999 holds on any real volume and still fails any real
// change of weights. A hundredth of a pixel is far below any grader's matching distance.
//
// Training does not carry over: 30 AdamW steps of that U-Net from the same seed ended with
// weights up to 4–6 % of the largest weight apart between the same three kernel sets (Adam
// turns tiny differences of near-zero gradients into whole steps). So a package is
// verified by re-running its prediction from its own weights, never by training again, and
// a resumed lane must continue under the identity it started with to stay bit-identical.
package compute

import (
	"fmt"
	"strconv"
	"strings"
)

// Env is the environment that asks a plugin process for id's device, kernels and worker
// split: EnvDevice ("cpu" for a CPU identity, "vulkan" for a Vulkan one, which takes the
// machine's own device, a software one when it has no GPU), GOMAXPROCS for a CPU (plugins
// split their work over that many workers) and EnvPreferCore. A machine that cannot run the
// device or the kernels uses its own, and the identity the plugin reports says so.
func Env(id Identity) []string {
	var env []string
	gpu := strings.HasPrefix(id.Device, "vulkan")
	switch {
	case id.Device == "cpu":
		env = append(env, EnvDevice+"=cpu")
	case gpu:
		env = append(env, EnvDevice+"=vulkan")
	}
	if id.Workers > 0 && !gpu { // on a GPU the host's workers do not fix the sums' order
		env = append(env, "GOMAXPROCS="+strconv.Itoa(id.Workers))
	}
	if id.Core != "" {
		env = append(env, EnvPreferCore+"="+id.Core)
	}
	return env
}

// Identity is what computed a result. Two results of the same inputs are byte-identical
// when their identities are equal.
type Identity struct {
	// Engine is the training engine's version (amid/plugins/engine.Version).
	Engine string `json:"engine"`
	// Device is where the arithmetic ran: "cpu", or a GPU named with its driver.
	Device string `json:"device"`
	// BLAS is the matrix library, e.g. "openblas 0.3.21" or "pure Go"; empty on a GPU.
	BLAS string `json:"blas,omitempty"`
	// Core is the kernel family the BLAS chose (OpenBLAS's core type, e.g. "SkylakeX").
	Core string `json:"core,omitempty"`
	// Workers is the number of parts the work is split into; partial sums are added in
	// part order, so it fixes the reduction order.
	Workers int `json:"workers"`
}

// IsZero says whether nothing was recorded (a plugin that does not report its identity,
// or a package made before identities were recorded).
func (id Identity) IsZero() bool { return id == Identity{} }

// String names the identity in one line, e.g.
// "engine 0.2.0, cpu, openblas 0.3.21 SkylakeX, 2 workers".
func (id Identity) String() string {
	if id.IsZero() {
		return "unknown"
	}
	parts := []string{"engine " + id.Engine, id.Device}
	if k := strings.TrimSpace(id.BLAS + " " + id.Core); k != "" {
		parts = append(parts, k)
	}
	parts = append(parts, strconv.Itoa(id.Workers)+" workers")
	return strings.Join(parts, ", ")
}

// Diff names what differs between two identities, for example "SkylakeX vs Haswell" or
// "2 vs 16 workers"; it is empty when they are equal.
func Diff(a, b Identity) string {
	var d []string
	pair := func(x, y, suffix string) {
		if x != y {
			d = append(d, orNone(x)+" vs "+orNone(y)+suffix)
		}
	}
	pair(a.Engine, b.Engine, " engine")
	pair(a.Device, b.Device, "")
	pair(a.BLAS, b.BLAS, "")
	pair(a.Core, b.Core, "")
	if a.Workers != b.Workers {
		d = append(d, fmt.Sprintf("%d vs %d workers", a.Workers, b.Workers))
	}
	return strings.Join(d, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
