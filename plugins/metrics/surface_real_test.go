package metrics

import (
	"fmt"
	"os"
	"testing"

	"amid/assets/realdata"
)

// loadInVesalius reads an InVesalius mask file: uint8 [109][257][257] (Z, Y, X) whose
// first plane, row and column are flags; the mask proper is the rest, 255 = inside.
func loadInVesalius(t testing.TB, name string) []uint8 {
	t.Helper()
	b, err := os.ReadFile(realdata.Path(t, realdata.InVesalius+"/"+name))
	if err != nil {
		t.Fatal(err)
	}
	const Z, Y, X = 109, 257, 257
	if len(b) != Z*Y*X {
		t.Fatalf("%s: %d bytes, want %d", name, len(b), Z*Y*X)
	}
	out := make([]uint8, 108*256*256)
	for z := 1; z < Z; z++ {
		for y := 1; y < Y; y++ {
			for x := 1; x < X; x++ {
				if b[(z*Y+y)*X+x] == 255 {
					out[((z-1)*256+y-1)*256+x-1] = 1
				}
			}
		}
	}
	return out
}

func TestRealInVesalius(t *testing.T) {
	if testing.Short() {
		t.Skip("real-data surface metrics take seconds")
	}
	g := loadVolGolden(t)
	gt, pred := loadInVesalius(t, "mask_0.dat"), loadInVesalius(t, "mask_1.dat")
	if g.Real == nil {
		t.Fatal("golden_volumetric.json has no real-data entry: rerun the script with the cache present")
	}
	w, dims, sp := g.Real.Want, g.Real.Dims, g.Real.Spacing
	o, err := BinaryOverlap(gt, pred)
	if err != nil {
		t.Fatal(err)
	}
	check(t, w, "gt_voxels", float64(o.GT))
	check(t, w, "pred_voxels", float64(o.Pred))
	check(t, w, "inter", float64(o.Inter))
	check(t, w, "dice_isles", o.Dice(1))
	for _, conn := range []Connectivity{Conn6, Conn18, Conn26} {
		n, _ := CountComponents(gt, dims, conn)
		check(t, w, fmt.Sprintf("cc%d_gt", conn), float64(n))
		n, _ = CountComponents(pred, dims, conn)
		check(t, w, fmt.Sprintf("cc%d_pred", conn), float64(n))
	}
	l, _, _ := Label(gt, dims, Conn26)
	if sha32(l) != w["label26_gt_sha256"] {
		t.Error("26-connected labels of mask_0 differ from scipy")
	}
	f1, _ := LesionF1(gt, pred, dims, Conn26, 1)
	check(t, w, "lesion_f1", f1)
	check(t, w, "abs_volume_diff_ml", AbsVolumeDiff(o, ISLESVoxelML(sp)))
	edtCheck(t, EDT(gt, dims, sp, nil), w["edt_gt"].(map[string]any))
	surfaceCheckCase(t, gt, pred, dims, sp, w)

	// skeleton and clDice on a 64×64×32 crop at (x, y, z) = (100, 60, 40)
	lo := [3]int{100, 60, 40}
	cd := [3]int{64, 64, 32}
	cg := surfaceCrop(gt, dims, lo, cd)
	cp := surfaceCrop(pred, dims, lo, cd)
	cw := w["crop"].(map[string]any)
	skeletonCheckCase(t, cg, cp, cd, cw)
	surfaceCheckCase(t, cg, cp, cd, sp, cw)
}
