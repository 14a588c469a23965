package metrics

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
)

// ClScore is the clDice helper cl_score: the fraction of the skeleton's voxels inside
// v, 0 for an empty skeleton.
func ClScore(skel, v []uint8) float64 {
	var s, in int64
	for i, k := range skel {
		if k != 0 {
			s++
			if v[i] != 0 {
				in++
			}
		}
	}
	if s == 0 {
		return 0
	}
	return float64(in) / float64(s)
}

// clScorePoints is ClScore of the skeleton given by its voxel indices.
func clScorePoints(skel []int, v []uint8) float64 {
	if len(skel) == 0 {
		return 0
	}
	in := 0
	for _, i := range skel {
		if v[i] != 0 {
			in++
		}
	}
	return float64(in) / float64(len(skel))
}

// ClDice is the centreline Dice of the TopCoW and TopBrain graders:
// Tprec = cl_score(skeleton(pred), gt), Tsens = cl_score(skeleton(gt), pred),
// clDice = 2·Tprec·Tsens/(Tprec+Tsens), 0 when both are 0. order is the array order the
// grader skeletonises in (SkeletonZYX for TopCoW, SkeletonXYZ for TopBrain).
func ClDice(pred, gt []uint8, dims [3]int, order SkeletonOrder) (float64, error) {
	if len(pred) != len(gt) {
		return 0, fmt.Errorf("metrics: masks differ in size: prediction %d voxels, ground truth %d", len(pred), len(gt))
	}
	// The two skeletons are independent: thin them side by side.
	var sp, sg []int
	var ep, eg error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sg, eg = skeletonPoints(gt, dims, order, 1)
	}()
	sp, ep = skeletonPoints(pred, dims, order, max(1, runtime.GOMAXPROCS(0)-1))
	wg.Wait()
	if ep != nil {
		return 0, ep
	}
	if eg != nil {
		return 0, eg
	}
	tprec := clScorePoints(sp, gt)
	tsens := clScorePoints(sg, pred)
	if tprec+tsens == 0 {
		return 0, nil
	}
	return 2 * tprec * tsens / (tprec + tsens), nil
}

// LabelMask returns the binary mask of one label value (1 where labels == l).
func LabelMask[T Integer](labels []T, l int64, out []uint8) []uint8 {
	if cap(out) < len(labels) {
		out = make([]uint8, len(labels))
	}
	out = out[:len(labels)]
	for i, v := range labels {
		if int64(v) == l {
			out[i] = 1
		} else {
			out[i] = 0
		}
	}
	return out
}

// Betti0Error is |B0(pred) − B0(gt)| for two binary masks, B0 being the number of
// 26-connected components (0 for an empty mask), as both TopBrain and TopCoW compute it
// per label.
func Betti0Error(pred, gt []uint8, dims [3]int) (int, error) {
	return LesionCountDiff(gt, pred, dims, Conn26)
}

// NeighbourSets returns, for every non-zero label of a label map, the set of other
// non-zero labels that touch it in the 26-neighbourhood, as TopBrain's
// get_neighbor_per_mask finds them. Index [a] lists a's neighbours ascending; labels with
// no neighbour have an empty list, absent labels none.
func NeighbourSets(labels []uint8, dims [3]int) ([256][]uint8, error) {
	var out [256][]uint8
	nx, ny, nz := dims[0], dims[1], dims[2]
	if len(labels) != nx*ny*nz {
		return out, fmt.Errorf("metrics: label map of %d voxels does not match dims %v", len(labels), dims)
	}
	var adj [256][4]uint64 // bitset of neighbours per label
	var present [4]uint64
	sy, sz := nx, nx*ny
	for z := 0; z < nz; z++ {
		for y := 0; y < ny; y++ {
			for x := 0; x < nx; x++ {
				i := z*sz + y*sy + x
				a := labels[i]
				if a == 0 {
					continue
				}
				present[a>>6] |= 1 << (a & 63)
				// the 13 forward neighbours cover every unordered pair once
				for dz := 0; dz <= 1; dz++ {
					zz := z + dz
					if zz >= nz {
						continue
					}
					for dy := -1; dy <= 1; dy++ {
						if dz == 0 && dy < 0 {
							continue
						}
						yy := y + dy
						if yy < 0 || yy >= ny {
							continue
						}
						for dx := -1; dx <= 1; dx++ {
							if dz == 0 && dy == 0 && dx <= 0 {
								continue
							}
							xx := x + dx
							if xx < 0 || xx >= nx {
								continue
							}
							b := labels[zz*sz+yy*sy+xx]
							if b != 0 && b != a {
								adj[a][b>>6] |= 1 << (b & 63)
								adj[b][a>>6] |= 1 << (a & 63)
							}
						}
					}
				}
			}
		}
	}
	for a := 1; a < 256; a++ {
		if present[a>>6]>>(a&63)&1 == 0 {
			continue
		}
		out[a] = []uint8{}
		for b := 1; b < 256; b++ {
			if adj[a][b>>6]>>(b&63)&1 != 0 {
				out[a] = append(out[a], uint8(b))
			}
		}
	}
	return out, nil
}

// InvalidNeighbours counts the neighbours of label in the prediction that the list of
// valid neighbours of that label does not allow (TopBrain's invalid_neighbors_error).
func InvalidNeighbours(pred [256][]uint8, valid map[int64][]int64, label int64) int {
	if label < 0 || label > 255 {
		return 0
	}
	n := 0
	for _, b := range pred[label] {
		if !slices.Contains(valid[label], int64(b)) {
			n++
		}
	}
	return n
}

// Detection is the verdict on one vessel label in one case: TP, FN, FP or TN.
type Detection int

// The four detection verdicts.
const (
	DetectTN Detection = iota
	DetectTP
	DetectFN
	DetectFP
)

// DetectLabel is the side-road (TopBrain) or group-2 (TopCoW) verdict for one label: if
// the ground truth has it, TP when IoU ≥ threshold (0.25) else FN; otherwise FP when the
// prediction has it, else TN.
func DetectLabel(lo LabelOverlaps, label int64, threshold float64) Detection {
	o := lo[label]
	if o.GT > 0 {
		iou := 0.0
		if o.Pred > 0 {
			iou = o.IoU()
		}
		if iou >= threshold {
			return DetectTP
		}
		return DetectFN
	}
	if o.Pred > 0 {
		return DetectFP
	}
	return DetectTN
}

// DetectionF1 pools the verdicts of every case per label (verdicts[case][k] for label
// k) and returns the mean over labels of 2TP/(2TP+FP+FN), a label with no TP, FP or FN
// scoring 0.
func DetectionF1(verdicts [][]Detection, nLabels int) float64 {
	if nLabels == 0 {
		return 0
	}
	f := make([]float64, nLabels)
	for k := 0; k < nLabels; k++ {
		var tp, fp, fn int
		for _, v := range verdicts {
			switch v[k] {
			case DetectTP:
				tp++
			case DetectFP:
				fp++
			case DetectFN:
				fn++
			}
		}
		if tp+fp+fn > 0 {
			f[k] = 2 * float64(tp) / float64(2*tp+fp+fn)
		}
	}
	return NumpyMean(f)
}

// TopologyMatch is the ReX TopCoW grader's simplified topology verdict for one region:
// every listed label present in the ground truth is matched with IoU ≥ threshold, and
// every label absent from the ground truth is absent from the prediction.
func TopologyMatch(lo LabelOverlaps, labels []int64, threshold float64) bool {
	for _, l := range labels {
		o := lo[l]
		if o.GT > 0 {
			if o.Pred == 0 || o.IoU() < threshold {
				return false
			}
		} else if o.Pred > 0 {
			return false
		}
	}
	return true
}
