package metrics

import (
	"fmt"
	"math/bits"
	"runtime"
	"sync"
)

// SkeletonOrder says how the (X, Y, Z) grid maps onto the (p, r, c) axes of the C-ordered
// numpy array that skimage thins. Lee94 thinning visits borders and points in array order,
// so the skeleton depends on it.
type SkeletonOrder int

const (
	// SkeletonZYX is the array SimpleITK's GetArrayFromImage returns: p = Z, r = Y, c = X
	// (the TopCoW graders' clDice).
	SkeletonZYX SkeletonOrder = iota
	// SkeletonXYZ is that array transposed with (2, 1, 0): p = X, r = Y, c = Z (the TopBrain
	// graders' clDice).
	SkeletonXYZ
)

// Skeletonize thins a binary mask (non-zero is foreground) to its 3D skeleton exactly as
// skimage.morphology.skeletonize / skeletonize_3d (Lee94, the Arganda-Carreras port of
// ITK's BinaryThinningImageFilter3D) does on the array given by order. The result is a
// 0/1 mask on the same (X, Y, Z) grid.
func Skeletonize(mask []uint8, dims [3]int, order SkeletonOrder) ([]uint8, error) {
	pts, err := skeletonPoints(mask, dims, order, runtime.GOMAXPROCS(0))
	if err != nil {
		return nil, err
	}
	out := make([]uint8, len(mask))
	for _, i := range pts {
		out[i] = 1
	}
	return out, nil
}

// skeletonPoints is Skeletonize as the list of the skeleton's voxel indices on the
// (X, Y, Z) grid, thinning with up to workers goroutines.
func skeletonPoints(mask []uint8, dims [3]int, order SkeletonOrder, workers int) ([]int, error) {
	n := dims[0] * dims[1] * dims[2]
	if dims[0] <= 0 || dims[1] <= 0 || dims[2] <= 0 || len(mask) != n {
		return nil, fmt.Errorf("metrics: mask of %d voxels does not match dims %v", len(mask), dims)
	}
	// array extents (P, R, C) and the (X, Y, Z) stride of each array axis
	var ext [3]int
	var str [3]int
	sx, sy, sz := 1, dims[0], dims[0]*dims[1]
	// The library pads the whole array; thinning only ever looks one voxel around the
	// foreground, and the candidate order is raster order either way, so the array is cut
	// to the foreground's bounding box plus the padding. The number of border directions
	// still follows the full array (4 when it has a single plane along p).
	blo, bhi, ok := surfaceBBox(mask, mask, dims)
	if !ok {
		return nil, nil
	}
	var lo, hi [3]int
	if order == SkeletonXYZ {
		ext = [3]int{dims[0], dims[1], dims[2]}
		str = [3]int{sx, sy, sz}
		lo, hi = blo, bhi
	} else {
		ext = [3]int{dims[2], dims[1], dims[0]}
		str = [3]int{sz, sy, sx}
		lo, hi = [3]int{blo[2], blo[1], blo[0]}, [3]int{bhi[2], bhi[1], bhi[0]}
	}
	nb := 6
	if ext[0] == 1 {
		nb = 4
	}
	P, R, C := hi[0]-lo[0]+3, hi[1]-lo[1]+3, hi[2]-lo[2]+3
	img := make([]uint8, P*R*C)
	for p := lo[0]; p <= hi[0]; p++ {
		for r := lo[1]; r <= hi[1]; r++ {
			src := p*str[0] + r*str[1]
			dst := ((p-lo[0]+1)*R+r-lo[1]+1)*C + 1
			if str[2] == 1 {
				surfaceBits(mask[src+lo[2]:src+hi[2]+1], img[dst:dst+hi[2]-lo[2]+1])
				continue
			}
			for c := lo[2]; c <= hi[2]; c++ {
				if mask[src+c*str[2]] != 0 {
					img[dst+c-lo[2]] = 1
				}
			}
		}
	}
	fg := skeletonThin(img, R, C, nb, workers)
	pts := make([]int, len(fg))
	for k, i := range fg {
		p, rc := int(i)/(R*C), int(i)%(R*C)
		r, c := rc/C, rc%C
		pts[k] = (p-1+lo[0])*str[0] + (r-1+lo[1])*str[1] + (c-1+lo[2])*str[2]
	}
	return pts, nil
}

// skeletonThin is _compute_thin_image on a zero-padded 0/1 array of shape (·, R, C) with
// nb border directions. The
// library scans the whole array for candidates in every pass; this keeps the list of
// foreground voxels in raster order instead and scans only it, which visits the same
// voxels in the same order.
//
// It returns the voxels left, in raster order.
func skeletonThin(img []uint8, R, C, nb, workers int) []int32 {
	borders := [6]int{4, 3, 2, 1, 5, 6}
	var fg []int32
	for i, v := range img {
		if v != 0 {
			fg = append(fg, int32(i))
		}
	}
	if len(fg) < 1<<14 {
		workers = 1
	}
	parts := make([][]int32, workers)
	unchanged := 0
	for unchanged < nb {
		unchanged = 0
		for j := 0; j < nb; j++ {
			cur := borders[j]
			// Step 1: collect candidates (read-only, split over the list, kept in order).
			var wg sync.WaitGroup
			for w := 0; w < workers; w++ {
				lo, hi := len(fg)*w/workers, len(fg)*(w+1)/workers
				wg.Add(1)
				go func(w int, list []int32) {
					defer wg.Done()
					parts[w] = skeletonCandidates(img, R, C, list, cur, parts[w][:0])
				}(w, fg[lo:hi])
			}
			wg.Wait()
			// Step 2: sequential re-check.
			noChange := true
			for _, part := range parts {
				for _, i := range part {
					if skeletonIsSimple(skeletonNeighbourhood(img, int(i), R, C)) {
						img[i] = 0
						noChange = false
					}
				}
			}
			if noChange {
				unchanged++
				continue
			}
			k := 0
			for _, i := range fg {
				if img[i] != 0 {
					fg[k] = i
					k++
				}
			}
			fg = fg[:k]
		}
	}
	return fg
}

func skeletonCandidates(img []uint8, R, C int, list []int32, cur int, out []int32) []int32 {
	RC := R * C
	for _, i32 := range list {
		i := int(i32)
		var border bool
		switch cur {
		case 1:
			border = img[i-1] == 0
		case 2:
			border = img[i+1] == 0
		case 3:
			border = img[i+C] == 0
		case 4:
			border = img[i-C] == 0
		case 5:
			border = img[i+RC] == 0
		case 6:
			border = img[i-RC] == 0
		}
		if !border {
			continue
		}
		nbh := skeletonNeighbourhood(img, i, R, C)
		if bits.OnesCount32(nbh) == 2 || !skeletonEulerInvariant(nbh) || !skeletonIsSimple(nbh) {
			continue
		}
		out = append(out, i32)
	}
	return out
}

// skeletonNeighbourhood packs the 3×3×3 neighbourhood of i into 27 bits, bit k being the
// library's neighborhood[k] = img[p+dp, r+dr, c+dc] with k = 9(dp+1) + 3(dc+1) + (dr+1).
func skeletonNeighbourhood(img []uint8, i, R, C int) uint32 {
	RC := R * C
	var m uint32
	k := 0
	for dp := -1; dp <= 1; dp++ {
		for dc := -1; dc <= 1; dc++ {
			b := i + dp*RC + dc
			m |= uint32(img[b-C]) << k
			m |= uint32(img[b]) << (k + 1)
			m |= uint32(img[b+C]) << (k + 2)
			k += 3
		}
	}
	return m
}

// skeletonOctants lists, for each of the 8 octants, the neighbourhood indices that set
// bits 128, 64, 32, 16, 8, 4, 2 of the octant's Euler index (Lee94 Table 2 ordering).
var skeletonOctants = [8][7]uint8{
	{2, 1, 11, 10, 5, 4, 14},
	{0, 9, 3, 12, 1, 10, 4},
	{8, 7, 17, 16, 5, 4, 14},
	{6, 15, 7, 16, 3, 12, 4},
	{20, 23, 19, 22, 11, 14, 10},
	{18, 21, 9, 12, 19, 22, 10},
	{26, 23, 17, 14, 25, 22, 16},
	{24, 25, 15, 16, 21, 22, 12},
}

// skeletonEulerLUT is column δG26 of Table 2 of Lee94: the Euler characteristic change of
// an octant whose odd index is 2k+1, at position k.
var skeletonEulerLUT = [128]int8{
	1, -1, -1, 1, -3, -1, -1, 1, -1, 1, 1, -1, 3, 1, 1, -1, -3, -1,
	3, 1, 1, -1, 3, 1, -1, 1, 1, -1, 3, 1, 1, -1, -3, 3, -1, 1, 1,
	3, -1, 1, -1, 1, 1, -1, 3, 1, 1, -1, 1, 3, 3, 1, 5, 3, 3, 1,
	-1, 1, 1, -1, 3, 1, 1, -1, -7, -1, -1, 1, -3, -1, -1, 1, -1,
	1, 1, -1, 3, 1, 1, -1, -3, -1, 3, 1, 1, -1, 3, 1, -1, 1, 1,
	-1, 3, 1, 1, -1, -3, 3, -1, 1, 1, 3, -1, 1, -1, 1, 1, -1, 3,
	1, 1, -1, 1, 3, 3, 1, 5, 3, 3, 1, -1, 1, 1, -1, 3, 1, 1, -1,
}

// skeletonOctantDelta is one octant's entry of skeletonEulerLUT for the neighbourhood nbh.
func skeletonOctantDelta(oct *[7]uint8, nbh uint32) int {
	n := 1
	for b, idx := range oct {
		n |= int(nbh>>idx&1) << (7 - b)
	}
	return int(skeletonEulerLUT[n>>1])
}

// skeletonOctantGeom places each octant, a 2×2×2 cube holding the centre, in the
// neighbourhood: shift is 9 times its lower plane along p (bits 9(dp+1) … of nbh), sq the
// plane bit of its lowest (c, r) corner; its voxels are plane bits sq, sq+1, sq+3, sq+4 of
// that plane and the next.
var skeletonOctantGeom = func() (g [8][2]uint8) {
	for o, oct := range skeletonOctants {
		p0, c0, r0 := 1, 1, 1 // the centre, index 13, is in every octant
		for _, k := range oct {
			p0, c0, r0 = min(p0, int(k)/9), min(c0, int(k)/3%3), min(r0, int(k)%3)
		}
		g[o] = [2]uint8{uint8(9 * p0), uint8(3*c0 + r0)}
	}
	return g
}()

// skeletonOctantTab[o][t] is skeletonOctantDelta of octant o for the 8-bit cube t: bits
// 0–3 the octant's square in its lower plane, bits 4–7 in the upper one.
var skeletonOctantTab = func() (tab [8][256]int8) {
	for o := range skeletonOctants {
		sh, sq := uint32(skeletonOctantGeom[o][0]), uint32(skeletonOctantGeom[o][1])
		pos := [8]uint32{sq, sq + 1, sq + 3, sq + 4, 9 + sq, 9 + sq + 1, 9 + sq + 3, 9 + sq + 4}
		for t := 0; t < 256; t++ {
			var nbh uint32
			for b, p := range pos {
				nbh |= uint32(t>>b&1) << (sh + p)
			}
			tab[o][t] = int8(skeletonOctantDelta(&skeletonOctants[o], nbh))
		}
	}
	return tab
}()

// skeletonEulerInvariant reports whether removing the centre keeps the Euler
// characteristic (Lee94): the octants' changes, read from skeletonOctantTab, sum to 0.
func skeletonEulerInvariant(nbh uint32) bool {
	e := 0
	for o := range skeletonOctantGeom {
		a := nbh >> skeletonOctantGeom[o][0]
		sq := skeletonOctantGeom[o][1]
		t := a>>sq&3 | (a>>(sq+3)&3)<<2 | (a>>(sq+9)&3)<<4 | (a>>(sq+12)&3)<<6
		e += int(skeletonOctantTab[o][t])
	}
	return e == 0
}

// skeletonAdj[k] is the set of the 26 neighbours (cube positions, the neighbourhood
// without its centre) that share an octant with neighbour k, i.e. are 26-adjacent to it.
var skeletonAdj = func() [26]uint32 {
	var adj [26]uint32
	coord := func(k int) (int, int, int) { // neighbourhood index → (dp, dc, dr)
		if k >= 13 {
			k++
		}
		return k/9 - 1, k/3%3 - 1, k%3 - 1
	}
	for a := 0; a < 26; a++ {
		pa, ca, ra := coord(a)
		for b := 0; b < 26; b++ {
			pb, cb, rb := coord(b)
			if a != b && skeletonAbs(pa-pb) <= 1 && skeletonAbs(ca-cb) <= 1 && skeletonAbs(ra-rb) <= 1 {
				adj[a] |= 1 << b
			}
		}
	}
	return adj
}()

func skeletonAbs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// skeletonIsSimple is is_simple_point: the foreground of the 26 neighbours (the centre
// removed) forms at most one connected component under octant sharing.
func skeletonIsSimple(nbh uint32) bool {
	cube := nbh&(1<<13-1) | (nbh>>14)<<13
	if cube == 0 {
		return true
	}
	seed := cube & -cube
	comp, front := seed, seed
	for front != 0 {
		b := bits.TrailingZeros32(front)
		front &= front - 1
		nb := skeletonAdj[b] & cube &^ comp
		comp |= nb
		front |= nb
	}
	return comp == cube
}
