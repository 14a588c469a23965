package compute

import (
	"slices"
	"testing"
)

// Env asks a re-run for the identity's device and, on the CPU, its kernels and workers.
func TestEnv(t *testing.T) {
	for _, tc := range []struct {
		id   Identity
		want []string
	}{
		{Identity{Engine: "0.2.0", Device: "cpu", BLAS: "openblas 0.3.21", Core: "Haswell", Workers: 2},
			[]string{"AMID_DEVICE=cpu", "GOMAXPROCS=2", "AMID_OPENBLAS_PREFER=Haswell"}},
		{Identity{Engine: "0.2.0", Device: "vulkan NVIDIA GeForce RTX 4090 (NVIDIA 550.54)", Workers: 1},
			[]string{"AMID_DEVICE=vulkan"}},
		{Identity{}, nil},
	} {
		if got := Env(tc.id); !slices.Equal(got, tc.want) {
			t.Errorf("%v: %q, want %q", tc.id, got, tc.want)
		}
	}
}
