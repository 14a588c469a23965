package nrrd

// channelsFirst reorders raw bytes laid out as (outer, l, inner) blocks of es bytes, fastest
// last, into (outer, inner, l), so that the axis of length l becomes the fastest.
func channelsFirst(src []byte, es, inner, l, outer int) []byte {
	if inner == 1 || l == 1 {
		return src
	}
	dst := make([]byte, len(src))
	for o := 0; o < outer; o++ {
		for li := 0; li < l; li++ {
			for i := 0; i < inner; i++ {
				s := ((o*l+li)*inner + i) * es
				d := ((o*inner+i)*l + li) * es
				copy(dst[d:d+es], src[s:s+es])
			}
		}
	}
	return dst
}
