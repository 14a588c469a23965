package metrics

import "math"

// surfaceNormals128 lists, for the neighbour codes 0..127 of a 2×2×2 corner, the surface
// normals of the marching-cubes triangles that DeepMind's surface-distance library
// (lookup_tables.py, _NEIGHBOUR_CODE_TO_NORMALS, Apache-2.0, Copyright 2018 Google Inc.)
// assigns to that code. The length of a normal is its triangle's area in a unit cube. Only
// the absolute components matter for the area, so each normal is written as three digits,
// the absolute components in eighths (0.125 → 1, 0.25 → 2, 0.375 → 3, 0.5 → 4). The table
// is symmetric: code 255−c carries the same normals as code c, which surfaceAreaTable uses
// for codes 128..255. testdata/golden_volumetric.py transcribes the upper half separately,
// so the golden surface tests check the symmetry on every code the fixtures reach.
var surfaceNormals128 = [128]string{
	"000", "111", "111", "220 220", "111", "202 202", "111 111", "400 222 111",
	"111", "111 111", "202 202", "400 222 111", "220 220", "400 222 111", "400 222 111", "400 400",
	"111", "022 022", "111 111", "040 222 111", "111 111", "004 222 111", "111 111 111", "111 222 222 111",
	"111 111", "022 022 111", "202 202 111", "111 333 022 202", "111 220 220", "333 022 111 220", "400 111 222 111", "400 111 222",
	"111", "111 111", "022 022", "040 111 222", "111 111", "111 202 202", "022 022 111", "333 022 111 202",
	"111 111", "111 111 111", "004 222 111", "222 222 111 111", "111 220 220", "400 222 111 111", "022 333 111 220", "400 222 111",
	"220 220", "040 222 111", "040 111 222", "040 040", "220 220 111", "333 202 111 220", "111 040 222 111", "040 222 111",
	"111 220 220", "040 222 111 111", "333 220 111 202", "040 222 111", "220 220 220 220", "220 220 111", "111 220 220", "220 220",
	"111", "111 111", "111 111", "111 220 220", "022 022", "004 222 111", "022 022 111", "333 022 111 220",
	"111 111", "111 111 111", "111 202 202", "400 222 111 111", "040 222 111", "222 222 111 111", "202 333 022 111", "400 222 111",
	"202 202", "004 222 111", "111 202 202", "202 333 220 111", "004 222 111", "004 004", "111 111 222 004", "111 222 004",
	"202 202 111", "004 222 111 111", "202 202 202 202", "111 202 202", "202 333 220 111", "004 222 111", "111 202 202", "202 202",
	"111 111", "111 111 111", "111 022 022", "040 111 222 111", "022 022 111", "004 222 111 111", "022 022 022 022", "022 022 111",
	"111 111 111", "111 111 111 111", "004 222 111 111", "111 111 111", "040 222 111 111", "111 111 111", "022 022 111", "111 111",
	"400 222 111", "222 111 222 111", "333 022 111 202", "040 222 111", "333 220 022 111", "111 222 004", "111 022 022", "022 022",
	"400 222 111 111", "111 111 111", "202 202 111", "111 111", "220 220 111", "111 111", "111 111", "111",
}

// surfaceAreaTable is create_table_neighbour_code_to_surface_area(spacing) of the DeepMind
// library for spacing in array-axis order (a0, a1, a2): for each code, the sum over its
// normals of |(n0·s1·s2, n1·s0·s2, n2·s0·s1)|.
func surfaceAreaTable(s [3]float64) [256]float64 {
	var t [256]float64
	for code := 0; code < 128; code++ {
		sum := 0.0
		ns := surfaceNormals128[code]
		for i := 0; i+2 < len(ns); i += 4 {
			n0 := float64(ns[i]-'0') / 8 * s[1] * s[2]
			n1 := float64(ns[i+1]-'0') / 8 * s[0] * s[2]
			n2 := float64(ns[i+2]-'0') / 8 * s[0] * s[1]
			sum += math.Sqrt(float64(n0*n0) + float64(n1*n1) + float64(n2*n2))
		}
		t[code] = sum
		t[255-code] = sum
	}
	return t
}
