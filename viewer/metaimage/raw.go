package metaimage

// channelsLast reorders raw bytes whose slowest axis (of length t) is what the volume keeps
// as its fastest (channel) axis: the block of es bytes at (ti·n+i) moves to (i·t+ti), for
// n voxels.
func channelsLast(src []byte, es, n, t int) []byte {
	dst := make([]byte, len(src))
	for ti := 0; ti < t; ti++ {
		for i := 0; i < n; i++ {
			copy(dst[(i*t+ti)*es:(i*t+ti+1)*es], src[(ti*n+i)*es:(ti*n+i+1)*es])
		}
	}
	return dst
}
