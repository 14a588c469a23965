package export

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"amid/plugins/compute"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

const segTask = `id: demo-seg
kind: segmentation
dims: 3
labels: [{value: 0, name: background}, {value: 1, name: organ}, {value: 2, name: lesion}]
data:
  train:
    images: ["train/{id}.nii.gz"]
    label: {path: "train/{id}_seg.nii.gz"}
  test:
    images: ["test/{id}.nii.gz"]
metric: {name: dice, direction: max}
submission:
  columns: [case_id, mask]
  id_column: case_id
  file_column: mask
  path: "predictions/{id}.nii.gz"
`

const iqaTask = `id: demo-iqa
kind: iqa
dims: 2
score: {min: 0, max: 4}
data:
  train:
    images: ["train/{id}.png"]
    label: {path: "train/{id}.json", format: annotation}
  test:
    images: ["test/{id}.png"]
metric: {name: score, direction: max}
submission:
  columns: [image_id, quality_score]
  id_column: image_id
  value_column: quality_score
`

// organ is a 20³ label map: label 1 on the cube [2,16)³ but for label 2 on [5,10)³ inside
// it (14³ − 5³ = 2619 and 125 voxels).
func organ() *volume.Volume {
	v, _ := volume.New(volume.Uint8, [4]int{20, 20, 20, 1})
	d := v.Data.([]uint8)
	for z := 2; z < 16; z++ {
		for y := 2; y < 16; y++ {
			for x := 2; x < 16; x++ {
				l := uint8(1)
				if x >= 5 && x < 10 && y >= 5 && y < 10 && z >= 5 && z < 10 {
					l = 2
				}
				d[v.Index(x, y, z, 0)] = l
			}
		}
	}
	return v
}

// flip sets n voxels of label 1 on the cube's last plane (z = 15) to background.
func flip(v *volume.Volume, n int) *volume.Volume {
	d := v.Data.([]uint8)
	for i := range n {
		d[v.Index(2+i%14, 2+i/14, 15, 0)] = 0
	}
	return v
}

// segPackage writes a package whose two predictions are organ() label maps, computed with
// the given identity.
func segPackage(t *testing.T, id compute.Identity) string {
	t.Helper()
	f := newFixture(t)
	pred := filepath.Join(f.dir, "segpred")
	if err := os.MkdirAll(pred, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"case_001.nii.gz", "case_002.nii.gz"} {
		if err := imageio.Write(filepath.Join(pred, n), organ()); err != nil {
			t.Fatal(err)
		}
	}
	f.c.Task, f.c.Predictions, f.c.Compute = []byte(segTask), pred, id
	return f.write(t)
}

// rerunWith is a reproduce hook that reports identity id and writes the package's
// predictions, with those named in change replaced by the volumes given.
func rerunWith(id compute.Identity, change map[string]*volume.Volume) func(ctx context.Context, pkg, out string) (compute.Identity, error) {
	return func(ctx context.Context, pkg, out string) (compute.Identity, error) {
		if _, err := copyPredictions(nil)(ctx, pkg, out); err != nil {
			return id, err
		}
		for n, v := range change {
			if err := imageio.Write(filepath.Join(out, DirPredictions, n), v); err != nil {
				return id, err
			}
		}
		return id, nil
	}
}

var (
	haswell  = compute.Identity{Engine: "0.2.0", Device: "cpu", BLAS: "openblas 0.3.21", Core: "Haswell", Workers: 2}
	skylakeX = compute.Identity{Engine: "0.2.0", Device: "cpu", BLAS: "openblas 0.3.21", Core: "SkylakeX", Workers: 2}
)

func TestReproducedByteForByte(t *testing.T) {
	pkg := segPackage(t, haswell)
	v := verify(t, pkg, VerifyOptions{Reproduce: rerunWith(haswell, nil)})
	if !v.Reproduced || !v.Exact || v.ReproduceNote != "reproduced byte for byte under the same compute identity" {
		t.Fatalf("same identity: %+v", v)
	}
	v = verify(t, pkg, VerifyOptions{Reproduce: rerunWith(skylakeX, nil)})
	if !v.Reproduced || !v.Exact || v.ReproduceNote != "reproduced byte for byte on different hardware (Haswell vs SkylakeX)" {
		t.Fatalf("other identity, same bytes: %q", v.ReproduceNote)
	}
}

// TestReproducedWithinTolerance: one voxel of 2619 flipped on other hardware is a Dice of
// 2·2618/(2619+2618) = 0.999809, above the table's 0.999, and the verdict says so with both
// identities; under the same identity the same difference fails.
func TestReproducedWithinTolerance(t *testing.T) {
	pkg := segPackage(t, haswell)
	change := map[string]*volume.Volume{"case_002.nii.gz": flip(organ(), 1)}
	v := verify(t, pkg, VerifyOptions{Reproduce: rerunWith(skylakeX, change)})
	want := "reproduced within tolerance on different hardware (Haswell vs SkylakeX): worst label Dice 0.999809 (predictions/case_002.nii.gz, label 1); 1 of 2 files byte for byte"
	if !v.Reproduced || v.Exact || v.ReproduceNote != want {
		t.Fatalf("note %q, problems %q; want %q", v.ReproduceNote, v.Problems, want)
	}
	if v.Compute != haswell || v.Rerun != skylakeX || v.Compared != 2 {
		t.Errorf("identities %v / %v, compared %d", v.Compute, v.Rerun, v.Compared)
	}
	v = verify(t, pkg, VerifyOptions{Reproduce: rerunWith(haswell, change)})
	if v.Reproduced || len(v.Problems) != 1 || !strings.Contains(v.Problems[0], "predictions/case_002.nii.gz: the re-run wrote different bytes under the same compute identity") {
		t.Fatalf("same identity, other bytes: %q", v.Problems)
	}
}

// TestBeyondTolerance: 28 flipped voxels (two rows of the last plane) give Dice
// 2·2591/(2619+2591) = 0.994626 < 0.999: a re-run on other hardware fails, naming the file,
// the label and the Dice.
func TestBeyondTolerance(t *testing.T) {
	pkg := segPackage(t, haswell)
	v := verify(t, pkg, VerifyOptions{Reproduce: rerunWith(skylakeX, map[string]*volume.Volume{"case_001.nii.gz": flip(organ(), 28)})})
	if v.Reproduced || len(v.Problems) != 1 || !strings.Contains(v.Problems[0], "the re-run on different hardware (Haswell vs SkylakeX) is beyond tolerance: predictions/case_001.nii.gz, label 1: Dice 0.994626") {
		t.Fatalf("problems %q", v.Problems)
	}
}

// TestUnknownIdentity: a package that records no identity (a plugin that does not report
// one) passes only byte for byte.
func TestUnknownIdentity(t *testing.T) {
	if got := identities(haswell, compute.Identity{Engine: "0.2.0", Device: "cpu", BLAS: "openblas 0.3.21", Core: "Haswell", Workers: 16}); got != "under a different compute identity (2 vs 16 workers)" {
		t.Errorf("workers only: %q", got)
	}
	pkg := segPackage(t, compute.Identity{})
	v := verify(t, pkg, VerifyOptions{Reproduce: rerunWith(skylakeX, map[string]*volume.Volume{"case_001.nii.gz": flip(organ(), 1)})})
	if v.Reproduced || len(v.Problems) != 1 || !strings.Contains(v.Problems[0], "the re-run wrote different bytes with an unknown compute identity (package: unknown, re-run: engine 0.2.0, cpu, openblas 0.3.21 SkylakeX, 2 workers), so no tolerance applies") {
		t.Fatalf("problems %q", v.Problems)
	}
}

// TestScoreTolerance: an IQA score on a range of 4 may move by 4e-4 (1e-4 of the range).
func TestScoreTolerance(t *testing.T) {
	f := newFixture(t)
	pred := filepath.Join(f.dir, "iqapred")
	put(t, pred, "case_001.json", `{"score": 2.5}`, 0o644)
	put(t, pred, "case_002.json", `{"score": 1.25}`, 0o644)
	f.c.Task, f.c.Predictions, f.c.Compute = []byte(iqaTask), pred, haswell
	pkg := f.write(t)
	score := func(s float64) func(ctx context.Context, pkg, out string) (compute.Identity, error) {
		return func(ctx context.Context, pkg, out string) (compute.Identity, error) {
			if _, err := copyPredictions(nil)(ctx, pkg, out); err != nil {
				return skylakeX, err
			}
			b, _ := json.Marshal(map[string]float64{"score": s})
			return skylakeX, os.WriteFile(filepath.Join(out, DirPredictions, "case_001.json"), b, 0o644)
		}
	}
	if v := verify(t, pkg, VerifyOptions{Reproduce: score(2.5003)}); !v.Reproduced || !strings.Contains(v.ReproduceNote, "largest score difference 7.5e-05 of the range (predictions/case_001.json)") {
		t.Fatalf("Δ 3e-4: %q %q", v.ReproduceNote, v.Problems)
	}
	if v := verify(t, pkg, VerifyOptions{Reproduce: score(2.502)}); v.Reproduced || !strings.Contains(strings.Join(v.Problems, " "), "differs from the original 2.5 by 0.0005 of the score range") {
		t.Fatalf("Δ 2e-3: %q", v.Problems)
	}
}
