package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"amid/plugins/protocol"
	"amid/viewer/volume"
)

// qualityTime is the training time of TestQuality; zero skips it. It is a quality run, not a
// unit test: go test -run TestQuality ./plugins/enhancement -quality 10m (the flag after the
// package, so that go test hands it to the test binary)
var qualityTime = flag.Duration("quality", 0, "train the planned base lane this long in TestQuality (0: skip)")

// TestQuality plans a USenhance-like task (40 generated 8-bit pairs of 224 to 287 pixels a
// side, speckle of 4 looks on a blurred clean image), trains the planned base lane for
// -quality of wall time (the host's time limit) and reports LNCC, SSIM and PSNR on 10
// held-out pairs beside the low-quality inputs'.
func TestQuality(t *testing.T) {
	if *qualityTime <= 0 {
		t.Skip("quality run: set -quality to a training time")
	}
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(21, 21))
	var cases []protocol.Case
	for i := range 50 {
		w, h := 224+r.IntN(64), 224+r.IntN(64)
		clean, low := usPair(r, w, h, 255)
		id := fmt.Sprintf("kidney_%03d", i)
		c := protocol.Case{ID: id, Images: []string{filepath.Join(dir, id+"_low.png")}, Label: filepath.Join(dir, id+"_high.png")}
		writeImage(t, c.Images[0], low, w, h, volume.Uint8)
		writeImage(t, c.Label, clean, w, h, volume.Uint8)
		cases = append(cases, c)
	}
	p := enh{}
	plan, err := p.Plan(context.Background(), &protocol.PlanRequest{Fingerprint: fingerprintJSON(40, 256, 256), Task: task()})
	if err != nil {
		t.Fatal(err)
	}
	cand := plan.Candidates[0]
	t.Logf("lane %s: %s", cand.Name, cand.Rationale)
	var last *protocol.Progress
	res, err := p.Train(context.Background(), &protocol.TrainRequest{
		LaneID: "quality", Task: task(), Config: cand.Config, Train: cases[:40], Validation: cases[40:],
		WorkDir: t.TempDir(), Seed: 1, TimeLimit: *qualityTime,
	}, func(pr *protocol.Progress) error { last = pr; return nil })
	if err != nil {
		t.Fatal(err)
	}
	v := res.Validation
	if last != nil {
		t.Logf("%d steps in %v, %.2f samples/s, last losses %v", res.Steps, *qualityTime, last.SamplesPerSecond, last.Losses)
	}
	fmt.Fprintf(os.Stderr, "enhancement quality after %v (%d steps): LNCC %.4f (input %.4f), SSIM %.4f (input %.4f), PSNR %.2f dB (input %.2f)\n",
		*qualityTime, res.Steps, v["lncc"], v["lncc_input"], v["ssim"], v["ssim_input"], v["psnr"], v["psnr_input"])
}
