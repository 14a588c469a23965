package main

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"amid/plugins/engine"
	"amid/plugins/protocol"
	"amid/plugins/taskspec"
)

// plan3D plans a 3-D task of 4 volumes of 48×192×192 at 1 mm with the host's time figures
// and a calibration of rate operations a second (under this process's identity, so that
// Plan uses it rather than measuring).
func plan3D(t *testing.T, laneSeconds float64, minSteps int, rate float64) *protocol.PlanResponse {
	t.Helper()
	fp := `{"modality":"MR","channels":1,"classes":3,"cases":[`
	for i := range 4 {
		if i > 0 {
			fp += ","
		}
		fp += `{"dims":[48,192,192],"spacing":[1,1,1]}`
	}
	fp += "]}"
	sp, _ := json.Marshal(taskspec.Spec{Kind: "segmentation", Dims: 3, LaneSeconds: laneSeconds, TrainSeconds: 10 * laneSeconds, MinSteps: map[string]int{"": minSteps}})
	calib, _ := json.Marshal(calibration{Compute: engine.CPUIdentity(runtime.GOMAXPROCS(0)),
		Rate: map[string]float64{"2d": rate, "3d": rate}, Overhead: map[string]float64{"2d": 0, "3d": 0}})
	resp, err := seg{}.Plan(context.Background(), &protocol.PlanRequest{Fingerprint: []byte(fp), Task: protocol.Task{Kind: "segmentation", Dims: 3, Spec: sp}, Calibration: calib})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestPlanFitsTime: every candidate's minimum steps fit 70 % of its first round at the
// calibrated speed (a made-up 50 GFLOP/s), its planned total fits the winner's time (or is
// the lane's cap: the forest's trees), the
// host's calibration is used rather than measured again, and nnU-Net's 3d_lowres lane is
// offered. At a tenth of that speed the 3D lanes cannot fit and the response says why.
func TestPlanFitsTime(t *testing.T) {
	resp := plan3D(t, 120, 300, 50e9)
	if len(resp.Calibration) != 0 {
		t.Error("the plugin measured again despite a calibration of its own identity")
	}
	names := map[string]bool{}
	for _, c := range resp.Candidates {
		names[c.Name] = true
		var cfg config
		if err := json.Unmarshal(c.Config, &cfg); err != nil {
			t.Fatal(err)
		}
		if 300*c.StepSeconds > 0.7*120 || c.StepSeconds <= 0 || c.MemoryBytes <= 0 {
			t.Errorf("%s: %.3g s a step, %d bytes: 300 steps do not fit 84 s", c.Name, c.StepSeconds, c.MemoryBytes)
		}
		want := int(1200 / c.StepSeconds)
		if c.MaxSteps > 0 { // the forest's trees
			want = min(want, int(c.MaxSteps))
		}
		if cfg.Steps != want {
			t.Errorf("%s: planned %d steps, want %d (1200 s at %.3g s)", c.Name, cfg.Steps, want, c.StepSeconds)
		}
		t.Logf("%s: %s", c.Name, c.Rationale)
	}
	if !names["3d_lowres"] || !names["2d"] {
		t.Errorf("candidates %v", names)
	}
	slow := plan3D(t, 120, 300, 5e9)
	skipped := strings.Join(slow.Skipped, "\n")
	if !strings.Contains(skipped, "3d_fullres") || !strings.Contains(skipped, "minimum of 300 steps") {
		t.Errorf("at 5 GFLOP/s: skipped %q", skipped)
	}
}
