package main

import (
	"testing"

	"amid/plugins/engine/vk/vktest"
	"amid/plugins/plugintest"
	"amid/plugins/protocol"
)

// binary is the plugin built once for the tests that start it.
var binary string

func TestMain(m *testing.M) {
	vktest.Pin() // lavapipe's vector width, before any Vulkan instance exists
	plugintest.Main(m, "detection", &binary)
}

// TestConformance runs the protocol's conformance suite on the built binary in each mode,
// with 3 generated cases, a few training steps and a long configuration for the cancel
// and time-limit checks.
func TestConformance(t *testing.T) {
	fp := []byte(`{"cases":[{"dims":[1,128,256],"spacing":[1,1,1]}],"modality":"XR","channels":1}`)
	for _, m := range []struct {
		name                string
		task                protocol.Task
		cases               []protocol.Case
		cfg, cancel, rounds string
	}{
		// rounds: every step reported, a checkpoint at step 2 of 4.
		{"boxes", task(t, boxSpec()), gen(t, 3, 4, panCase), boxesConfig(4, 2, 2), boxesConfig(100000, 2, 1), boxesConfig(4, 2, 1)},
		{"points", task(t, pointSpec()), gen(t, 3, 5, tileCase), pointsConfig(4, 2, 2), pointsConfig(100000, 2, 1), pointsConfig(4, 2, 1)},
		{"box3d", task(t, box3DSpec()), gen(t, 3, 6, volCase), seg3DConfig(4, 2, 2), seg3DConfig(100000, 2, 1), seg3DConfig(4, 2, 1)},
	} {
		t.Run(m.name, func(t *testing.T) {
			plugintest.Run(t, binary, &plugintest.Options{
				Task: &m.task, Fingerprint: fp, Cases: m.cases, TrainConfig: []byte(m.cfg), CancelConfig: []byte(m.cancel),
				RoundsConfig: []byte(m.rounds),
			})
		})
	}
}
