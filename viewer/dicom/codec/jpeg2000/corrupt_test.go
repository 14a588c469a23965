package jpeg2000

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"amid/assets/ci"
	"amid/assets/realdata"
)

// mrCodestream is pydicom's MR_small_jp2klossless.dcm codestream: 64×64, 16 bits signed,
// one tile, made by an encoder other than the ones these tests run. Its main header is
// SOC at 0, SIZ at 2 (Xsiz at 8, XTsiz at 24, Csiz at 40, Ssiz at 42, XRsiz at 43), then
// COD at 45 (progression order at 50, levels at 54, code-block width at 55, style at 57,
// transform at 58).
func mrCodestream(tb testing.TB) []byte {
	tb.Helper()
	cs := dicomFrames(tb, realdata.Path(tb, realdata.Pydicom+"/MR_small_jp2klossless.dcm"))[0]
	if binary.BigEndian.Uint16(cs[2:]) != mSIZ || binary.BigEndian.Uint16(cs[45:]) != mCOD {
		tb.Fatalf("MR_small_jp2klossless.dcm's main header is not laid out as this test expects: % x", cs[:60])
	}
	return cs
}

// TestCorruptHeaders edits single fields of a real codestream: each error must say what
// is wrong and where.
func TestCorruptHeaders(t *testing.T) {
	mr := mrCodestream(t)
	sot := bytes.Index(mr, []byte{0xFF, 0x90, 0, 10})
	edit := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(mr)) }
	put16 := func(off, v int) []byte {
		return edit(func(b []byte) []byte { binary.BigEndian.PutUint16(b[off:], uint16(v)); return b })
	}
	put32 := func(off, v int) []byte {
		return edit(func(b []byte) []byte { binary.BigEndian.PutUint32(b[off:], uint32(v)); return b })
	}
	put8 := func(off, v int) []byte { return edit(func(b []byte) []byte { b[off] = byte(v); return b }) }
	jp2 := func(boxes ...[]byte) []byte { return bytes.Join(append([][]byte{jp2Signature}, boxes...), nil) }
	box := func(typ string, data []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(8+len(data))), append([]byte(typ), data...)...)
	}
	cases := []struct {
		name string
		data []byte
		want error
		msg  string // a part of the message
	}{
		{"empty", nil, ErrFormat, "neither a codestream"},
		{"text", []byte("hello, world"), ErrFormat, "neither a codestream"},
		{"SOC only", mr[:2], ErrTruncated, "marker segment at byte 2"},
		{"SIZ cut", mr[:30], ErrTruncated, "SIZ marker at byte 2"},
		{"no SIZ", append([]byte{0xFF, 0x4F}, mr[45:]...), ErrFormat, "expected SIZ after SOC, found COD"},
		{"no components", put16(40, 0), ErrFormat, "SIZ marker at byte 2: 0 components"},
		{"empty image", put32(8, 0), ErrFormat, "empty image area"},
		{"no tile size", put32(24, 0), ErrFormat, "tile size 0×"},
		{"zero subsampling", put8(43, 0), ErrFormat, "subsampling 0×1"},
		{"39-bit samples", put8(42, 38), ErrFormat, "precision 39"},
		{"32-bit samples", put8(42, 31), ErrUnsupported, "32-bit samples"},
		{"too many tiles", edit(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[8:], 1<<20)
			binary.BigEndian.PutUint32(b[24:], 1)
			return b
		}), ErrFormat, "1048576×1 tiles of 1×64"},
		{"too large", edit(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[8:], 1<<20)
			binary.BigEndian.PutUint32(b[12:], 1<<20)
			binary.BigEndian.PutUint32(b[24:], 1<<20)
			binary.BigEndian.PutUint32(b[28:], 1<<20)
			return b
		}), ErrTooLarge, "1048576×1048576"},
		{"progression order", put8(50, 7), ErrFormat, "COD marker at byte 45: progression order 7"},
		{"decomposition levels", put8(54, 40), ErrFormat, "40 decomposition levels"},
		{"code-block size", put8(55, 9), ErrFormat, "code-block size 2^11"},
		{"HT code-blocks", put8(57, 0x40), ErrUnsupported, "COD marker at byte 45: High-Throughput"},
		{"wavelet", put8(58, 2), ErrFormat, "wavelet transform 2"},
		{"tile index", put16(sot+4, 9), ErrFormat, "tile 9 of 1"},
		{"tile-part length", put32(sot+6, 5), ErrFormat, "tile-part length 5"},
		{"marker instead of EOC", put16(len(mr)-2, 0xFF64), ErrFormat, "expected SOT or EOC at byte 4312, found COM"},
		{"no tile-parts", append(bytes.Clone(mr[:sot]), 0xFF, 0xD9), ErrTruncated, "no data for 1 of 1 tiles"},
		{"JP2 palette", jp2(box("jp2h", box("pclr", []byte{0, 2, 1, 7})), box("jp2c", mr)), ErrUnsupported, "JP2 palette"},
		{"JP2 without codestream", jp2(box("jp2h", box("ihdr", make([]byte, 14)))), ErrFormat, "no codestream box"},
		{"JP2 box too long", jp2(append(binary.BigEndian.AppendUint32(nil, 100), []byte("jp2h")...)), ErrTruncated, "declares 100 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.data)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want %v mentioning %q", err, tc.want, tc.msg)
			}
			t.Log(err)
		})
	}
}

// TestCorruptData mutates real codestreams at random (a fixed seed; 1500 rounds, 200
// under the race detector): bytes flipped, cut, or marker bytes written in. Decode must return every time, quickly, with no error or one
// of the package's errors, never a recovered panic.
func TestCorruptData(t *testing.T) {
	// The seeds hold at most 30000 samples; a mutated SIZ may declare many more, which
	// would only make the test slow.
	lim := limits{samples: 1 << 17}
	seeds := [][]byte{mrCodestream(t)}
	ct := srcCTSmall.load(t)
	seeds = append(seeds,
		compress(t, ct, "-I -r 20,5,2 -t 64,64 -p RPCL -SOP -EPH"),
		compress(t, ct, "-M 63 -c [32,32] -p PCRL -r 4,1 -n 4"),
		packHeaders(t, compress(t, ct, "-t 64,128 -r 10,1"), false),
		packHeaders(t, compress(t, ct, "-r 10,1 -n 3"), true),
		compress(t, srcRGB.load(t), "-t 50,50 -p CPRL"),
	)
	rng := rand.New(rand.NewPCG(1, 2))
	counts := map[string]int{}
	rounds := 1500
	if ci.Race {
		// the race detector slows decoding about tenfold
		rounds = 200
	}
	for i := range rounds {
		b := bytes.Clone(seeds[i%len(seeds)])
		switch rng.IntN(4) {
		case 0: // flip a few bytes
			for range 1 + rng.IntN(4) {
				b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
			}
		case 1: // cut
			b = b[:rng.IntN(len(b))]
		case 2: // write a marker
			k := rng.IntN(len(b) - 1)
			b[k], b[k+1] = 0xFF, []byte{0x90, 0x93, 0xD9, 0x52, 0x5C, 0x61, 0x91}[rng.IntN(7)]
		case 3: // set a byte to an extreme
			b[rng.IntN(len(b))] = []byte{0, 0xFF}[rng.IntN(2)]
		}
		start := time.Now()
		_, err := lim.decode(b)
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("mutation %d took %v", i, d)
		}
		kind := "ok"
		for _, e := range []error{ErrFormat, ErrTruncated, ErrUnsupported, ErrTooLarge} {
			if errors.Is(err, e) {
				kind = e.Error()
			}
		}
		if err != nil && kind == "ok" {
			t.Fatalf("mutation %d: %v", i, err)
		}
		counts[kind]++
	}
	t.Logf("%d mutations: %v", rounds, counts)
	runtime.GC()
}
