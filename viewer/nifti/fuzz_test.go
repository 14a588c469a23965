package nifti

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"amid/assets/realdata"
	"amid/viewer/volume"
)

// FuzzDecode feeds arbitrary bytes to Decode: it must never panic, must refuse bad input
// with one of volume's shared errors, and anything it accepts must validate. Seeds are
// small files made by the writer (all element types, NIfTI-2, big-endian, gzip, 4D,
// scaled, qform-only) and, when the cache is present, the small real files.
func FuzzDecode(f *testing.F) {
	for _, dt := range []volume.DType{volume.Uint8, volume.Int8, volume.Uint16, volume.Int16, volume.Uint32, volume.Int32, volume.Float32, volume.Float64} {
		v := testVolume(f, dt, [4]int{3, 2, 2, 1}, rot())
		f.Add(encodeAs(f, v, 1, binary.LittleEndian, nil))
	}
	v := testVolume(f, volume.Int16, [4]int{3, 3, 2, 2}, rot())
	f.Add(encodeAs(f, v, 2, binary.BigEndian, nil))
	f.Add(encodeAs(f, v, 1, binary.BigEndian, func(h *Header) { h.SformCode, h.SclSlope, h.SclInter = 0, 0.5, 3 }))
	f.Add(gz(encodeAs(f, v, 2, binary.LittleEndian, func(h *Header) { h.SformCode, h.QformCode = 0, 0 })))
	rgb := testVolume(f, volume.Uint8, [4]int{2, 2, 2, 1}, volume.Identity)
	f.Add(encodeAs(f, rgb, 1, binary.LittleEndian, func(h *Header) { h.Datatype, h.Dim[1] = dtRGB24, 1 }))
	if dir, err := realdata.Dir(); err == nil {
		for _, g := range loadGolden(f) {
			p := filepath.Join(dir, g.File)
			if st, err := os.Stat(p); err == nil && st.Size() < 100<<10 {
				if b, err := os.ReadFile(p); err == nil {
					f.Add(b)
				}
			}
		}
	}
	// Keep what a header may ask for small, so a fuzzed header cannot make the fuzzer
	// allocate gigabytes before the data turn out to be missing.
	small := how{inflate: gunzip, lim: volume.Limits{Voxels: 1 << 22, Bytes: 1 << 24}}
	shared := []error{volume.ErrTooLarge, volume.ErrTruncated, volume.ErrFormat, volume.ErrGeometry, volume.ErrDType}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, v, err := decode(bytes.NewReader(b), "fuzz.nii", int64(len(b)), true, small)
		if err != nil {
			for _, s := range shared {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("error wraps none of volume's shared errors: %v", err)
		}
		if err := v.Validate(); err != nil {
			t.Fatalf("accepted a volume that does not validate: %v", err)
		}
	})
}
