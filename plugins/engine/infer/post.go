package infer

// components labels the connected components of the voxels where in(i) is true: comp[i]
// is the component number from 1 (0 outside), sizes[j-1] the size of component j, border
// [j-1] whether it touches the volume's border. Neighbours are the 26 around a voxel, or
// the 6 face neighbours when conn26 is false.
func components(dims [3]int, in func(i int) bool, conn26 bool) (comp []int32, sizes []int, border []bool) {
	X, Y, Z := dims[0], dims[1], dims[2]
	comp = make([]int32, X*Y*Z)
	var queue []int32
	for s := range comp {
		if comp[s] != 0 || !in(s) {
			continue
		}
		id := int32(len(sizes) + 1)
		comp[s] = id
		queue = append(queue[:0], int32(s))
		n, touch := 0, false
		for len(queue) > 0 {
			v := int(queue[len(queue)-1])
			queue = queue[:len(queue)-1]
			n++
			x, y, z := v%X, v/X%Y, v/(X*Y)
			if x == 0 || y == 0 || z == 0 || x == X-1 || y == Y-1 || z == Z-1 {
				touch = true
			}
			for dz := -1; dz <= 1; dz++ {
				for dy := -1; dy <= 1; dy++ {
					for dx := -1; dx <= 1; dx++ {
						d := abs(dx) + abs(dy) + abs(dz)
						if d == 0 || (!conn26 && d > 1) {
							continue
						}
						nx, ny, nz := x+dx, y+dy, z+dz
						if nx < 0 || ny < 0 || nz < 0 || nx >= X || ny >= Y || nz >= Z {
							continue
						}
						u := (nz*Y+ny)*X + nx
						if comp[u] == 0 && in(u) {
							comp[u] = id
							queue = append(queue, int32(u))
						}
					}
				}
			}
		}
		sizes = append(sizes, n)
		border = append(border, touch)
	}
	return comp, sizes, border
}

func abs(a int) int {
	if a < 0 {
		return -a
	}
	return a
}

// classes lists the foreground classes (> 0) present in lab, ascending.
func classes(lab []int32) []int32 {
	seen := map[int32]bool{}
	var out []int32
	for _, l := range lab {
		if l > 0 && !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// KeepLargest keeps, for every foreground class of the X·Y·Z map lab, only its largest
// 26-connected component (the first in scan order on ties); the rest become 0.
func KeepLargest(lab []int32, dims [3]int) {
	for _, c := range classes(lab) {
		comp, sizes, _ := components(dims, func(i int) bool { return lab[i] == c }, true)
		best := 0
		for j, n := range sizes {
			if n > sizes[best] {
				best = j
			}
		}
		for i, id := range comp {
			if id != 0 && int(id) != best+1 {
				lab[i] = 0
			}
		}
	}
}

// RemoveSmall sets to 0 every 26-connected component of a foreground class with fewer
// than minVoxels voxels.
func RemoveSmall(lab []int32, dims [3]int, minVoxels int) {
	for _, c := range classes(lab) {
		comp, sizes, _ := components(dims, func(i int) bool { return lab[i] == c }, true)
		for i, id := range comp {
			if id != 0 && sizes[id-1] < minVoxels {
				lab[i] = 0
			}
		}
	}
}

// FillHoles fills every background component (6-connected, the complement of 26-connected
// foreground) that does not touch the volume's border with the class most common among
// its face neighbours (the lowest class on ties).
func FillHoles(lab []int32, dims [3]int) {
	X, Y := dims[0], dims[0]*dims[1]
	comp, _, border := components(dims, func(i int) bool { return lab[i] == 0 }, false)
	votes := make([]map[int32]int, len(border))
	for i, id := range comp {
		if id == 0 || border[id-1] {
			continue
		}
		// A hole does not touch the border, so all six face neighbours exist.
		for _, d := range [6]int{-1, 1, -X, X, -Y, Y} {
			if l := lab[i+d]; l > 0 {
				if votes[id-1] == nil {
					votes[id-1] = map[int32]int{}
				}
				votes[id-1][l]++
			}
		}
	}
	fill := make([]int32, len(votes))
	for j, v := range votes {
		best, bn := int32(0), 0
		for c, n := range v {
			if n > bn || (n == bn && c < best) {
				best, bn = c, n
			}
		}
		fill[j] = best
	}
	for i, id := range comp {
		if id != 0 && !border[id-1] {
			lab[i] = fill[id-1]
		}
	}
}
