package jpeg2000

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"amid/assets/ci"

	"github.com/suyashkumar/dicom"
	"github.com/suyashkumar/dicom/pkg/tag"
)

// The reference tools the tests compare against, with the Debian package of each (the
// Makefile's APT_PKGS installs them). In CI (ci.On) a missing tool fails the test.
var tools = map[string]string{
	"opj_decompress":   "libopenjp2-tools",
	"opj_compress":     "libopenjp2-tools",
	"gdcmconv":         "libgdcm-tools",
	"/usr/bin/python3": "python3-gdcm",
}

// needTool returns the path of a reference tool, or skips the test (fails it under CI).
func needTool(tb testing.TB, name string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	if err == nil && name == "/usr/bin/python3" {
		err = exec.Command(p, "-c", "import gdcm").Run()
	}
	if err != nil {
		msg := fmt.Sprintf("%s is not available (Debian: %s)", name, tools[name])
		ci.Missing(tb, msg)
	}
	return p
}

func run(tb testing.TB, name string, args ...string) []byte {
	tb.Helper()
	out, err := exec.Command(needTool(tb, name), args...).CombinedOutput()
	if err != nil {
		tb.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// dicomFrames returns the JPEG 2000 frames of a DICOM file's encapsulated pixel data:
// its fragments, joined until one starts a new codestream (SOC) or JP2 file.
func dicomFrames(tb testing.TB, path string) [][]byte {
	tb.Helper()
	ds, err := dicom.ParseFile(path, nil)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	e, err := ds.FindElementByTag(tag.PixelData)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	info := dicom.MustGetPixelDataInfo(e.Value)
	if !info.IsEncapsulated {
		tb.Fatalf("%s: pixel data is not encapsulated", path)
	}
	var frames [][]byte
	for _, f := range info.Frames {
		d := f.EncapsulatedData.Data
		if len(frames) == 0 || bytes.HasPrefix(d, []byte{0xFF, 0x4F, 0xFF, 0x51}) || bytes.HasPrefix(d, jp2Signature) {
			frames = append(frames, nil)
		}
		frames[len(frames)-1] = append(frames[len(frames)-1], d...)
	}
	return frames
}

// plane is a component plane from a reference decoder.
type plane struct {
	width, height, prec int
	signed              bool
	samples             []int32
}

// opjDecode decodes a codestream or JP2 file with OpenJPEG's opj_decompress into PGX
// files, one per component, whose headers carry their own size, precision and sign.
// Extra arguments go to opj_decompress (such as -l N, the layers to decode).
func opjDecode(tb testing.TB, data []byte, args ...string) []plane {
	tb.Helper()
	dir := tb.TempDir()
	ext := ".j2k"
	if bytes.HasPrefix(data, jp2Signature) {
		ext = ".jp2"
	}
	in := filepath.Join(dir, "in"+ext)
	if err := os.WriteFile(in, data, 0o644); err != nil {
		tb.Fatal(err)
	}
	run(tb, "opj_decompress", append([]string{"-quiet", "-i", in, "-o", filepath.Join(dir, "out.pgx")}, args...)...)
	var planes []plane
	for c := 0; ; c++ {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("out_%d.pgx", c)))
		if os.IsNotExist(err) && c > 0 {
			break
		}
		if err != nil {
			tb.Fatal(err)
		}
		planes = append(planes, readPGX(tb, b))
	}
	return planes
}

// readPGX reads a PGX file as OpenJPEG writes it: "PG ML|LM +|- depth width height\n",
// then samples of 1, 2 or 4 bytes.
func readPGX(tb testing.TB, b []byte) plane {
	tb.Helper()
	nl := bytes.IndexByte(b, '\n')
	f := strings.Fields(string(b[:max(nl, 0)]))
	if nl < 0 || len(f) != 6 || f[0] != "PG" {
		tb.Fatalf("not a PGX header: %q", b[:min(len(b), 40)])
	}
	p := plane{signed: f[2] == "-"}
	p.prec, _ = strconv.Atoi(f[3])
	p.width, _ = strconv.Atoi(f[4])
	p.height, _ = strconv.Atoi(f[5])
	size := 1
	switch {
	case p.prec > 16:
		size = 4
	case p.prec > 8:
		size = 2
	}
	var order binary.ByteOrder = binary.BigEndian
	if f[1] == "LM" {
		order = binary.LittleEndian
	}
	d := b[nl+1:]
	n := p.width * p.height
	if len(d) != n*size {
		tb.Fatalf("PGX of %d×%d×%d bytes holds %d bytes", p.width, p.height, size, len(d))
	}
	p.samples = make([]int32, n)
	for i := range p.samples {
		p.samples[i] = sample(d[i*size:], size, p.signed, order)
	}
	return p
}

func sample(b []byte, size int, signed bool, order binary.ByteOrder) int32 {
	switch {
	case size == 1 && signed:
		return int32(int8(b[0]))
	case size == 1:
		return int32(b[0])
	case size == 2 && signed:
		return int32(int16(order.Uint16(b)))
	case size == 2:
		return int32(order.Uint16(b))
	}
	return int32(order.Uint32(b))
}

// gdcmLayout is what testdata/gdcm_decode.py prints.
type gdcmLayout struct {
	Columns, Rows, Frames int
	BitsAllocated         int  `json:"bits_allocated"`
	BitsStored            int  `json:"bits_stored"`
	Signed                bool `json:"signed"`
	SamplesPerPixel       int  `json:"samples_per_pixel"`
	PlanarConfiguration   int  `json:"planar_configuration"`
	Photometric           string
}

// gdcmDecode decodes a DICOM file with GDCM (python3-gdcm): per frame, one plane per
// sample. ok is false when GDCM refuses the file.
func gdcmDecode(tb testing.TB, path string) (frames [][]plane, ok bool) {
	tb.Helper()
	out := filepath.Join(tb.TempDir(), "gdcm.raw")
	cmd := exec.Command(needTool(tb, "/usr/bin/python3"), "testdata/gdcm_decode.py", path, out)
	js, err := cmd.Output()
	if err != nil {
		if ee, isExit := err.(*exec.ExitError); isExit && ee.ExitCode() == 2 {
			return nil, false
		}
		tb.Fatalf("gdcm_decode.py %s: %v", path, err)
	}
	var l gdcmLayout
	if err := json.Unmarshal(js, &l); err != nil {
		tb.Fatalf("gdcm_decode.py %s: %v: %s", path, err, js)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	size := l.BitsAllocated / 8
	spp, n := l.SamplesPerPixel, l.Columns*l.Rows
	if len(raw) != l.Frames*n*spp*size {
		tb.Fatalf("GDCM gave %d bytes for %d frames of %d×%d×%d×%d", len(raw), l.Frames, l.Columns, l.Rows, spp, size)
	}
	for f := range l.Frames {
		var ps []plane
		for s := range spp {
			p := plane{width: l.Columns, height: l.Rows, prec: l.BitsStored, signed: l.Signed, samples: make([]int32, n)}
			for i := range n {
				k := i*spp + s // interleaved
				if l.PlanarConfiguration == 1 {
					k = s*n + i
				}
				p.samples[i] = sample(raw[(f*n*spp+k)*size:], size, l.Signed, binary.LittleEndian)
			}
			ps = append(ps, p)
		}
		frames = append(frames, ps)
	}
	return frames, true
}

// diff compares a decoded image with reference planes: the largest absolute difference
// and the number of samples that differ. Sizes must agree.
func diff(tb testing.TB, img *Image, ref []plane) (maxd int32, n int) {
	tb.Helper()
	if len(img.Components) != len(ref) {
		tb.Fatalf("%d components, the reference has %d", len(img.Components), len(ref))
	}
	for c, p := range ref {
		got := img.Components[c]
		if got.Width != p.width || got.Height != p.height {
			tb.Fatalf("component %d is %d×%d, the reference %d×%d", c, got.Width, got.Height, p.width, p.height)
		}
		for i, v := range got.Samples {
			d := v - p.samples[i]
			if d < 0 {
				d = -d
			}
			if d != 0 {
				n++
			}
			maxd = max(maxd, d)
		}
	}
	return maxd, n
}

// meanAbsError is the mean absolute difference between img and the reference planes.
func meanAbsError(img *Image, ref []plane) float64 {
	var sum float64
	var n int
	for c, p := range ref {
		for i, v := range img.Components[c].Samples {
			sum += abs(float64(v) - float64(p.samples[i]))
			n++
		}
	}
	return sum / float64(n)
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// asImage turns reference planes into an Image, to compare two references.
func asImage(ps []plane) *Image {
	img := &Image{Width: ps[0].width, Height: ps[0].height}
	for _, p := range ps {
		img.Components = append(img.Components, Component{Width: p.width, Height: p.height, DX: 1, DY: 1, Precision: p.prec, Signed: p.signed, Samples: p.samples})
	}
	return img
}
