package jpeg2000

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
)

// Image is a decoded image: one plane per component, samples as the codestream defines
// them (after the inverse multiple component transform and DC level shift), so 16-bit
// signed CT comes out exact.
type Image struct {
	Width, Height int // the image area on the reference grid (Xsiz−XOsiz, Ysiz−YOsiz)
	Components    []Component
}

// Component is one component plane.
type Component struct {
	Width, Height int // the plane's size: the image's divided by the subsampling, rounded up
	DX, DY        int // subsampling (XRsiz, YRsiz), 1 in DICOM
	Precision     int // bits per sample, 1 to 31
	Signed        bool
	Samples       []int32 // Width×Height, row-major; nil from DecodeConfig
}

// DecodeConfig reads the main header of a codestream or JP2 file: the image's size and
// its components' sizes, precision and signedness, without their samples.
func DecodeConfig(b []byte) (img *Image, err error) { return defaults.decodeConfig(b) }

func (lim limits) decodeConfig(b []byte) (img *Image, err error) {
	defer recoverInternal(&img, &err)
	cs, info, _, err := parseHeader(b, lim)
	if err != nil {
		return nil, err
	}
	return newImage(cs.siz, info, false), nil
}

// Decode decodes a JPEG 2000 codestream (starting with the SOC marker) or JP2 file.
//
// When the codestream ends before all its packets, Decode returns the image decoded
// from the packets that are there together with an error wrapping ErrTruncated; other
// errors return no image.
func Decode(b []byte) (img *Image, err error) { return defaults.decode(b) }

func (lim limits) decode(b []byte) (img *Image, err error) {
	defer recoverInternal(&img, &err)
	cs, info, body, err := parseHeader(b, lim)
	if err != nil {
		return nil, err
	}
	if err := cs.parseTileParts(body.b, body.pos); err != nil {
		return nil, err
	}
	img = newImage(cs.siz, info, true)
	trunc, err := cs.decode(img, info)
	if err != nil {
		return nil, err
	}
	if trunc != "" {
		return img, fmt.Errorf("%w: %s", ErrTruncated, trunc)
	}
	return img, nil
}

// errInternal reports a bug of this decoder met while decoding; the fuzz test fails on it.
var errInternal = errors.New("jpeg2000: internal error")

// recoverInternal turns a panic, which would be a bug of this decoder, into errInternal:
// bad data must not take the program down.
func recoverInternal(img **Image, err *error) {
	if r := recover(); r != nil {
		*img, *err = nil, fmt.Errorf("%w: %v", errInternal, r)
	}
}

// outIndex is the output component of codestream component c: a JP2 channel definition
// may reorder them.
func outIndex(info *jp2Info, c int) int {
	if info != nil && info.order != nil {
		for i, o := range info.order {
			if o == c {
				return i
			}
		}
	}
	return c
}

type bodyRef struct {
	b   []byte
	pos int
}

func parseHeader(b []byte, lim limits) (*codestream, *jp2Info, bodyRef, error) {
	c, info, err := codestreamOf(b)
	if err != nil {
		return nil, nil, bodyRef{}, err
	}
	cs, pos, err := parseMain(c, lim)
	if err != nil {
		return nil, nil, bodyRef{}, err
	}
	if info != nil && info.order != nil && len(info.order) != len(cs.siz.comps) {
		info.order = nil
	}
	return cs, info, bodyRef{c, pos}, nil
}

func newImage(siz *sizInfo, info *jp2Info, samples bool) *Image {
	img := &Image{Width: siz.x1 - siz.x0, Height: siz.y1 - siz.y0, Components: make([]Component, len(siz.comps))}
	for i := range img.Components {
		ci := siz.comps[i]
		if info != nil && info.order != nil {
			ci = siz.comps[info.order[i]]
		}
		c := &img.Components[i]
		c.DX, c.DY, c.Precision, c.Signed = ci.dx, ci.dy, ci.prec, ci.signed
		c.Width = ceilDiv(siz.x1, ci.dx) - ceilDiv(siz.x0, ci.dx)
		c.Height = ceilDiv(siz.y1, ci.dy) - ceilDiv(siz.y0, ci.dy)
		if samples {
			c.Samples = make([]int32, c.Width*c.Height)
		}
	}
	return img
}

// tileJob is a tile being decoded.
type tileJob struct {
	t     *tile
	tcs   []tileComp
	trunc string
	err   error
}

// blockJob is a code-block to decode.
type blockJob struct {
	tile *tileJob
	tc   *tileComp
	b    *band
	cb   *codeBlock
}

// decode decodes every tile into img; it returns where the data ran out, if it did.
func (cs *codestream) decode(img *Image, info *jp2Info) (string, error) {
	var jobs []*tileJob
	var truncs []string
	if cs.trunc != "" {
		truncs = append(truncs, cs.trunc)
	}
	var missing []int
	for _, t := range cs.tiles {
		if t.parts == 0 {
			missing = append(missing, t.index)
			continue
		}
		jobs = append(jobs, &tileJob{t: t})
	}
	if len(missing) > 0 {
		truncs = append(truncs, fmt.Sprintf("no data for %d of %d tiles (the first: tile %d)", len(missing), len(cs.tiles), missing[0]))
	}
	// Tiles are decoded a few at a time, so that only their structures are held.
	workers := make([]t1, maxWorkers())
	for len(jobs) > 0 {
		n := min(len(jobs), 2*len(workers))
		chunk := jobs[:n]
		jobs = jobs[n:]
		t, err := cs.decodeTiles(chunk, img, info, workers)
		if err != nil {
			return "", err
		}
		truncs = append(truncs, t...)
	}
	if len(missing) > 0 {
		cs.fillMissing(img, info, missing)
	}
	return strings.Join(truncs, "; "), nil
}

// decodeTiles decodes tiles into img: tier 2 tile by tile in parallel, then tier 1 over
// all their code-blocks in parallel, then the wavelet and component transforms. It
// returns where data ran out, if it did.
func (cs *codestream) decodeTiles(jobs []*tileJob, img *Image, info *jp2Info, workers []t1) ([]string, error) {
	parallel(len(jobs), func(_, i int) {
		j := jobs[i]
		j.tcs, j.err = buildComps(cs.siz, j.t)
		if j.err != nil {
			return
		}
		d := &t2{t: j.t, siz: cs.siz, tcs: j.tcs, data: j.t.data}
		switch {
		case cs.hasPPM:
			d.hdr, d.packed = j.t.ppm, true
		case len(j.t.ppt) > 0:
			d.hdr, d.packed = joinChunks(j.t.ppt), true
		}
		j.err = d.decodePackets()
		j.trunc = d.trunc
	})
	var truncs []string
	var blocks []blockJob
	for _, j := range jobs {
		if j.err != nil {
			return nil, j.err
		}
		if j.trunc != "" {
			truncs = append(truncs, j.trunc)
		}
		for c := range j.tcs {
			tc := &j.tcs[c]
			n := tc.w() * tc.h()
			if tc.cp.cs.reversible {
				tc.icoef = make([]int32, n)
			} else {
				tc.fcoef = make([]float32, n)
			}
			for r := range tc.res {
				res := &tc.res[r]
				for _, pr := range res.precincts {
					if pr == nil {
						continue
					}
					for bi := range res.bands {
						for k := range pr.bands[bi].cbs {
							if cb := &pr.bands[bi].cbs[k]; cb.npasses > 0 {
								blocks = append(blocks, blockJob{j, tc, &res.bands[bi], cb})
							}
						}
					}
				}
			}
		}
	}
	// Tier 1: each code-block writes its own part of the coefficients.
	parallel(len(blocks), func(w, i int) {
		bj := blocks[i]
		t := &workers[w]
		t.decode(bj.cb, bj.tile.t.data, bj.b.orient, bj.tc.cp.cs.cbStyle, bj.tc.cp.roi)
		t.store(bj.tc, bj.b, bj.cb)
	})
	for _, j := range jobs {
		for c := range j.tcs {
			j.tcs[c].idwt()
		}
		if err := cs.finish(j, img, info); err != nil {
			return nil, err
		}
		j.tcs = nil
	}
	return truncs, nil
}

// store dequantizes the decoded code-block into the tile-component's coefficients.
func (t *t1) store(tc *tileComp, b *band, cb *codeBlock) {
	stride := tc.w()
	w, h := cb.x1-cb.x0, cb.y1-cb.y0
	base := (b.offy+cb.y0-b.y0)*stride + b.offx + cb.x0 - b.x0
	if tc.icoef != nil {
		for y := range h {
			dst := tc.icoef[base+y*stride : base+y*stride+w]
			for x, v := range t.data[y*w : (y+1)*w] {
				dst[x] = v / 2
			}
		}
		return
	}
	scale := b.delta / 2
	for y := range h {
		dst := tc.fcoef[base+y*stride : base+y*stride+w]
		for x, v := range t.data[y*w : (y+1)*w] {
			dst[x] = float32(v) * scale
		}
	}
}

// finish applies the inverse component transform and DC level shift to a decoded tile and
// writes its samples into img (T.800 G.1 to G.3).
func (cs *codestream) finish(j *tileJob, img *Image, info *jp2Info) error {
	tcs := j.tcs
	if j.t.p.mct && len(tcs) >= 3 {
		a, b, c := &tcs[0], &tcs[1], &tcs[2]
		if a.w() != b.w() || a.w() != c.w() || a.h() != b.h() || a.h() != c.h() {
			return formatErr("tile %d: multiple component transform over components of different sizes", j.t.index)
		}
		switch {
		case a.icoef != nil && b.icoef != nil && c.icoef != nil:
			parallel(len(a.icoef)/4096+1, func(_, k int) {
				lo, hi := k*4096, min((k+1)*4096, len(a.icoef))
				y0, y1, y2 := a.icoef[lo:hi], b.icoef[lo:hi], c.icoef[lo:hi]
				for i := range y0 {
					g := y0[i] - (y2[i]+y1[i])>>2
					y0[i], y1[i], y2[i] = y2[i]+g, g, y1[i]+g
				}
			})
		case a.fcoef != nil && b.fcoef != nil && c.fcoef != nil:
			parallel(len(a.fcoef)/4096+1, func(_, k int) {
				lo, hi := k*4096, min((k+1)*4096, len(a.fcoef))
				y0, y1, y2 := a.fcoef[lo:hi], b.fcoef[lo:hi], c.fcoef[lo:hi]
				for i := range y0 {
					y, cb, cr := y0[i], y1[i], y2[i]
					y0[i] = y + 1.402*cr
					y1[i] = y - 0.34413*cb - 0.71414*cr
					y2[i] = y + 1.772*cb
				}
			})
		default:
			return formatErr("tile %d: multiple component transform over components with different wavelets", j.t.index)
		}
	}
	for c := range tcs {
		tc := &tcs[c]
		ci := cs.siz.comps[c]
		oc := &img.Components[outIndex(info, c)]
		cx0, cy0 := ceilDiv(cs.siz.x0, ci.dx), ceilDiv(cs.siz.y0, ci.dy)
		w, h := tc.w(), tc.h()
		var shift, lo, hi int32
		if ci.signed {
			lo, hi = -1<<(ci.prec-1), 1<<(ci.prec-1)-1
		} else {
			shift, lo, hi = 1<<(ci.prec-1), 0, int32(uint32(1)<<ci.prec-1)
		}
		parallel(h, func(_, y int) {
			dst := oc.Samples[(tc.y0-cy0+y)*oc.Width+tc.x0-cx0:][:w]
			if tc.icoef != nil {
				for x, v := range tc.icoef[y*w : (y+1)*w] {
					dst[x] = max(lo, min(hi, v+shift))
				}
				return
			}
			for x, v := range tc.fcoef[y*w : (y+1)*w] {
				f := math.RoundToEven(float64(v)) + float64(shift)
				dst[x] = int32(max(float64(lo), min(float64(hi), f)))
			}
		})
	}
	return nil
}

// fillMissing sets the samples of tiles without data to the DC level (what all-zero
// coefficients decode to).
func (cs *codestream) fillMissing(img *Image, info *jp2Info, missing []int) {
	for _, i := range missing {
		t := cs.tiles[i]
		for c, ci := range cs.siz.comps {
			if ci.signed {
				continue
			}
			oc := &img.Components[outIndex(info, c)]
			cx0, cy0 := ceilDiv(cs.siz.x0, ci.dx), ceilDiv(cs.siz.y0, ci.dy)
			x0, x1 := ceilDiv(t.x0, ci.dx)-cx0, ceilDiv(t.x1, ci.dx)-cx0
			for y := ceilDiv(t.y0, ci.dy) - cy0; y < ceilDiv(t.y1, ci.dy)-cy0; y++ {
				for x := x0; x < x1; x++ {
					oc.Samples[y*oc.Width+x] = 1 << (ci.prec - 1)
				}
			}
		}
	}
}

func maxWorkers() int { return runtime.GOMAXPROCS(0) }

// parallel calls fn(worker, i) for i in [0, n) on up to GOMAXPROCS goroutines; worker is
// in [0, maxWorkers()). Each call must write only its own part of any shared output, so
// that the result does not depend on the schedule. A panic in fn is re-raised in the
// caller, where Decode turns it into an error.
func parallel(n int, fn func(worker, i int)) {
	workers := min(maxWorkers(), n)
	if workers <= 1 {
		for i := range n {
			fn(0, i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var panicked any
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					once.Do(func() { panicked = r })
					next.Store(int64(n))
				}
			}()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(w, i)
			}
		}()
	}
	wg.Wait()
	if panicked != nil {
		panic(panicked)
	}
}
