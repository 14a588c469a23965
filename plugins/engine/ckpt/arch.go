package ckpt

import (
	"fmt"

	"amid/plugins/engine"
)

// SameArch returns nil when a checkpoint made for architecture got fits a model of
// architecture want, else an ErrMismatch error naming the first difference, e.g.
// "checkpoint has 32 base filters, model has 16". Kernels and pools are compared as
// given: an empty list (the engine's default) differs from an explicit one.
func SameArch(got, want engine.UNetConfig) error {
	diff := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrMismatch}, args...)...)
	}
	switch {
	case got.In != want.In:
		return diff("checkpoint has %d input channels, model has %d", got.In, want.In)
	case got.Classes != want.Classes:
		return diff("checkpoint has %d classes, model has %d", got.Classes, want.Classes)
	case len(got.Widths) != len(want.Widths):
		return diff("checkpoint has %d stages, model has %d", len(got.Widths), len(want.Widths))
	}
	for i := range got.Widths {
		if got.Widths[i] != want.Widths[i] {
			if i == 0 {
				return diff("checkpoint has %d base filters, model has %d", got.Widths[0], want.Widths[0])
			}
			return diff("checkpoint has %d filters at stage %d, model has %d", got.Widths[i], i, want.Widths[i])
		}
	}
	if err := sameList("kernels", got.Kernels, want.Kernels); err != nil {
		return err
	}
	if err := sameList("pools", got.Pools, want.Pools); err != nil {
		return err
	}
	switch {
	case got.Convs != want.Convs:
		return diff("checkpoint has %d convolutions per stage, model has %d", got.Convs, want.Convs)
	case got.MaxPool != want.MaxPool:
		return diff("checkpoint down-samples with %s, model with %s", down(got.MaxPool), down(want.MaxPool))
	case got.Norm != want.Norm:
		return diff("checkpoint uses %s norm, model uses %s norm", normName(got.Norm), normName(want.Norm))
	case got.Slope != want.Slope:
		return diff("checkpoint has LeakyReLU slope %g, model has %g", got.Slope, want.Slope)
	case got.DeepSupervision != want.DeepSupervision:
		return diff("checkpoint has deep supervision %v, model has %v", got.DeepSupervision, want.DeepSupervision)
	}
	return nil
}

func sameList(what string, got, want [][3]int) error {
	if len(got) != len(want) {
		return fmt.Errorf("%w: checkpoint lists %d %s, model lists %d", ErrMismatch, len(got), what, len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Errorf("%w: checkpoint has %s %v at stage %d, model has %v", ErrMismatch, what, got[i], i, want[i])
		}
	}
	return nil
}

func down(maxPool bool) string {
	if maxPool {
		return "max-pooling"
	}
	return "strided convolutions"
}

func normName(k engine.NormKind) string {
	switch k {
	case engine.Instance:
		return "instance"
	case engine.Batch:
		return "batch"
	}
	return fmt.Sprintf("kind-%d", int(k))
}
