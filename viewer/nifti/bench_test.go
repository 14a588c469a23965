package nifti

import (
	"compress/gzip"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	kgzip "github.com/klauspost/compress/gzip"
	"github.com/okieraised/gonii"

	"amid/assets/measure"
	"amid/viewer/volume"
)

// phantom makes an n³ head-like test image: for int16 a CT (air -1000 ± 3, soft tissue
// 40 ± 20 HU, a skull shell at 1000 ± 100), for float32 a skull-stripped MR-like image
// (zero background, a smooth intensity with float noise inside). With the writer they
// compress to 15.8 MB (2.1:1) and 18.9 MB (3.5:1).
func phantom(tb testing.TB, dt volume.DType, n int) *volume.Volume {
	tb.Helper()
	v, err := volume.New(dt, [4]int{n, n, n, 1})
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	c := float64(n-1) / 2
	i := 0
	for z := 0; z < n; z++ {
		for y := 0; y < n; y++ {
			for x := 0; x < n; x++ {
				dx, dy, dz := (float64(x)-c)/c, (float64(y)-c)/c, (float64(z)-c)/c
				r := math.Sqrt(dx*dx + dy*dy + dz*dz)
				var f float64
				switch {
				case dt == volume.Float32 && r < 0.85:
					f = 300*(1-r*r) + 10*rng.NormFloat64()
				case dt == volume.Float32:
					f = 0
				case r < 0.8:
					f = 40 + math.Round(20*rng.NormFloat64())
				case r < 0.9:
					f = 1000 + math.Round(100*rng.NormFloat64())
				default:
					f = -1000 + math.Round(3*rng.NormFloat64())
				}
				v.SetIndex(i, f)
				i++
			}
		}
	}
	return v
}

// BenchmarkRead reads a generated 256³ .nii.gz (int16 and float32) with this reader over
// the standard library's gzip and over klauspost/compress's, and with gonii v0.9.0;
// "plain" reads the same image uncompressed (the reader's cost without inflating),
// "gonii" is gonii's Parse (raw bytes in memory), "gonii-voxels" adds GetVoxels, its way to
// typed values (float64). The numbers are in the package documentation.
func BenchmarkRead(b *testing.B) {
	const n = 256
	std := func(r io.Reader) (io.ReadCloser, error) { return gzip.NewReader(r) }
	kp := func(r io.Reader) (io.ReadCloser, error) { return kgzip.NewReader(r) }
	for _, dt := range []volume.DType{volume.Int16, volume.Float32} {
		ph := phantom(b, dt, n)
		path := filepath.Join(b.TempDir(), dt.String()+".nii.gz")
		plain := filepath.Join(b.TempDir(), dt.String()+".nii")
		if err := Write(path, ph); err != nil {
			b.Fatal(err)
		}
		if err := Write(plain, ph); err != nil {
			b.Fatal(err)
		}
		decoded := int64(n * n * n * dt.Size())
		// The same image uncompressed: what the reader costs without inflating.
		b.Run(dt.String()+"/plain", func(b *testing.B) {
			b.SetBytes(decoded)
			b.ReportAllocs()
			cpu := measure.CPU()
			for b.Loop() {
				if _, err := Read(plain); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu)
		})
		for _, impl := range []struct {
			name string
			open func(io.Reader) (io.ReadCloser, error)
		}{{"stdlib", std}, {"klauspost", kp}} {
			b.Run(dt.String()+"/"+impl.name, func(b *testing.B) {
				b.SetBytes(decoded)
				b.ReportAllocs()
				cpu := measure.CPU()
				for b.Loop() {
					if err := readWith(path, impl.open); err != nil {
						b.Fatal(err)
					}
				}
				reportCPU(b, cpu)
			})
		}
		for _, voxels := range []bool{false, true} {
			name := "gonii"
			if voxels {
				name = "gonii-voxels"
			}
			b.Run(dt.String()+"/"+name, func(b *testing.B) {
				b.SetBytes(decoded)
				b.ReportAllocs()
				cpu := measure.CPU()
				for b.Loop() {
					rd, err := gonii.NewNiiReader(gonii.WithReadImageFile(path))
					if err != nil {
						b.Fatal(err)
					}
					if err := rd.Parse(); err != nil {
						b.Fatal(err)
					}
					if voxels {
						rd.GetNiiData().GetVoxels()
					}
				}
				reportCPU(b, cpu)
			})
		}
	}
}

// reportCPU adds the CPU time per operation since start (all threads: gonii's parallel
// gzip counts in full), in ms.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(measure.CPU()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// readWith reads the image at path as Read does, inflating with inflate.
func readWith(path string, inflate func(io.Reader) (io.ReadCloser, error)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, _, err = decode(f, path, -1, true, how{inflate: inflate, lim: volume.DefaultLimits()})
	return err
}
