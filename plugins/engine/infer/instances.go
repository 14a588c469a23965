package infer

// Instances turns a map of three classes over an X·Y·Z grid (0 background, 1 the interior of
// an object, 2 its boundary) into instance ids: every face-connected component of interior
// voxels with at least minSeed voxels is a seed, numbered from 1 in scan order; the seeds
// then grow breadth-first through the foreground (interior and boundary voxels, face
// neighbours), each foreground voxel taking the id of a seed nearest to it in face steps
// through the foreground (ties go to the front queued first), a watershed on the geodesic
// distance. Foreground that no seed reaches stays 0. Classes other than 1 and 2 count as
// background.
func Instances(cls []int32, dims [3]int, minSeed int) []int32 {
	comp, sizes, _ := components(dims, func(i int) bool { return cls[i] == 1 }, false)
	ids := make([]int32, len(sizes))
	var next int32
	for j, n := range sizes {
		if n >= minSeed {
			next++
			ids[j] = next
		}
	}
	out := make([]int32, len(cls))
	var queue []int32
	for i, c := range comp {
		if c != 0 && ids[c-1] != 0 {
			out[i] = ids[c-1]
			queue = append(queue, int32(i))
		}
	}
	X, XY := dims[0], dims[0]*dims[1]
	for h := 0; h < len(queue); h++ {
		v := int(queue[h])
		x, y, z := v%X, v/X%dims[1], v/XY
		for _, n := range [6]struct {
			ok bool
			d  int
		}{
			{x > 0, -1}, {x < X-1, 1}, {y > 0, -X}, {y < dims[1]-1, X}, {z > 0, -XY}, {z < dims[2]-1, XY},
		} {
			if !n.ok {
				continue
			}
			u := v + n.d
			if out[u] == 0 && (cls[u] == 1 || cls[u] == 2) {
				out[u] = out[v]
				queue = append(queue, int32(u))
			}
		}
	}
	return out
}

// InstanceClasses is the training target of [Instances] for an instance map (0
// background, other values object ids) over an X·Y·Z grid: 0 for background, 2 for an
// object voxel with a face neighbour inside the grid of another value (background or
// another object), 1 for the other object voxels.
func InstanceClasses(ids []int32, dims [3]int) []int32 {
	X, XY := dims[0], dims[0]*dims[1]
	out := make([]int32, len(ids))
	for v, id := range ids {
		if id == 0 {
			continue
		}
		x, y, z := v%X, v/X%dims[1], v/XY
		out[v] = 1
		if (x > 0 && ids[v-1] != id) || (x < X-1 && ids[v+1] != id) ||
			(y > 0 && ids[v-X] != id) || (y < dims[1]-1 && ids[v+X] != id) ||
			(z > 0 && ids[v-XY] != id) || (z < dims[2]-1 && ids[v+XY] != id) {
			out[v] = 2
		}
	}
	return out
}
