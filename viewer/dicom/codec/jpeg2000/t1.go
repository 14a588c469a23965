package jpeg2000

// Tier-1: the EBCOT code-block decoder (T.800 Annex D).

// Per-sample state flags, each kept with a one-sample border around the code-block.
const (
	fN = 1 << iota // the neighbour above is significant
	fS             // below
	fW             // left
	fE             // right
	fNW
	fNE
	fSW
	fSE
	fNneg // the neighbour above is negative
	fSneg
	fWneg
	fEneg
	fSig     // the sample is significant
	fVisit   // coded in this bit-plane's significance propagation pass
	fRefined // refined at least once

	fNeighbours = fN | fS | fW | fE | fNW | fNE | fSW | fSE
)

// Context indices (T.800 Tables D.1 to D.4).
const (
	ctxZC  = 0  // 9 zero-coding contexts
	ctxSC  = 9  // 5 sign contexts
	ctxMR  = 14 // 3 magnitude refinement contexts
	ctxRL  = 17 // run-length
	ctxUNI = 18 // uniform
	nCtx   = 19
)

// zcLUT gives the zero-coding context per sub-band orientation and neighbourhood (T.800
// Table D.1).
var zcLUT = func() (t [4][256]uint8) {
	for o := range 4 {
		for f := range 256 {
			h := f&fW/fW + f&fE/fE
			v := f&fN/fN + f&fS/fS
			d := f&fNW/fNW + f&fNE/fNE + f&fSW/fSW + f&fSE/fSE
			if o == bandHL {
				h, v = v, h
			}
			var n int
			if o == bandHH {
				switch hv := h + v; {
				case d >= 3:
					n = 8
				case d == 2:
					n = 6 + min(hv, 1)
				case d == 1:
					n = 3 + min(hv, 2)
				default:
					n = min(hv, 2)
				}
			} else {
				switch {
				case h == 2:
					n = 8
				case h == 1:
					switch {
					case v >= 1:
						n = 7
					case d >= 1:
						n = 6
					default:
						n = 5
					}
				case v == 2:
					n = 4
				case v == 1:
					n = 3
				default:
					n = min(d, 2)
				}
			}
			t[o][f] = uint8(ctxZC + n)
		}
	}
	return t
}()

// scLUT gives the sign context times two plus the XOR bit (T.800 Table D.3), indexed by
// the significance of the N, S, W, E neighbours (bits 0-3) and their signs (bits 4-7).
var scLUT = func() (t [256]uint8) {
	for i := range 256 {
		contrib := func(sig, neg int) int {
			if i&sig == 0 {
				return 0
			}
			if i&neg != 0 {
				return -1
			}
			return 1
		}
		clamp := func(v int) int { return max(-1, min(1, v)) }
		v := clamp(contrib(1, 16) + contrib(2, 32))
		h := clamp(contrib(4, 64) + contrib(8, 128))
		var ctx, xor int
		switch {
		case h == 0 && v == 0:
			ctx = 9
		case h == 0:
			ctx, xor = 10, b2i(v < 0)
		default:
			ctx, xor = 12+v*h, b2i(h < 0)
		}
		t[i] = uint8(ctx<<1 | xor)
	}
	return t
}()

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// t1 decodes code-blocks; each worker has its own.
type t1 struct {
	w, h, fs int
	// flags has a border of one sample around the code-block, (w+2)×(h+2) entries; data
	// holds its w×h coefficients in half units (magnitude·2 plus the midpoint bit). A
	// code-block has at most 4096 samples and sides of at most 1024 (T.800 A.6.1), so
	// both fit fixed arrays, indexed with a mask that spares the bounds checks.
	flags [flagsLen]uint16
	data  [dataLen]int32
	// cols summarizes each stripe column (4 rows of one column), cw = w+2 entries a stripe
	// with a border column each side: whether a sample is significant, has a significant
	// neighbour, or was visited in this bit-plane (the OR of its samples' fSig, fNeighbours
	// and fVisit), so that the passes skip empty columns with one load.
	cols [colsLen]uint8
	ctx  [nCtx]uint8
	mq   mqDecoder
	raw  rawDecoder
	buf  []byte
}

const (
	flagsLen  = 8192 // ≥ (1024+2)·(4+2) and (64+2)·(64+2)
	flagsMask = flagsLen - 1
	dataLen   = 4096
	dataMask  = dataLen - 1
	colsLen   = 2048 // ≥ (⌈1024/4⌉+1)·(4+2) and (1+1)·(1024+2): a spare stripe below
	colsMask  = colsLen - 1
)

// Stripe-column summary bits.
const (
	cSig   = 1 // a sample is significant
	cNB    = 2 // a sample has a significant neighbour
	cVisit = 4 // a sample was visited by this bit-plane's significance propagation
)

func (t *t1) resetContexts() {
	t.ctx = [nCtx]uint8{}
	t.ctx[ctxZC] = 4 << 1
	t.ctx[ctxRL] = 3 << 1
	t.ctx[ctxUNI] = 46 << 1
}

// decode decodes cb's passes into t.data (w×h, row-major).
func (t *t1) decode(cb *codeBlock, tdata []byte, orient, style, roi int) {
	w, h := cb.x1-cb.x0, cb.y1-cb.y0
	t.w, t.h, t.fs = w, h, w+2
	clear(t.flags[:(w+2)*(h+2)])
	clear(t.data[:w*h])
	clear(t.cols[:((h+3)/4+1)*(w+2)])
	t.resetContexts()
	zc := &zcLUT[orient]
	causal := style&cbCausal != 0
	top := cb.numbps + roi - 1
	k := 0
passes:
	for si := range cb.segs {
		s := &cb.segs[si]
		t.buf = t.buf[:0]
		for _, c := range s.chunks {
			t.buf = append(t.buf, tdata[c.off:c.off+c.n]...)
		}
		t.buf = append(t.buf, 0xFF, 0xFF)
		raw := style&cbBypass != 0 && k >= 10 && k%3 != 0
		if raw {
			t.raw.init(t.buf)
		} else {
			t.mq.init(t.buf)
		}
		for range s.passes {
			p := top - (k+2)/3
			if p < 0 {
				break passes // passes beyond the last bit-plane are ignored
			}
			switch k % 3 {
			case 0:
				t.cleanup(p, zc, causal)
				if style&cbSegSym != 0 {
					for range 4 {
						t.mq.decode(&t.ctx[ctxUNI])
					}
				}
			case 1:
				if raw {
					t.sigPropRaw(p, causal)
				} else {
					t.sigProp(p, zc, causal)
				}
			case 2:
				if raw {
					t.refineRaw(p)
				} else {
					t.refine(p)
				}
			}
			if style&cbReset != 0 {
				t.resetContexts()
			}
			k++
		}
	}
	if roi > 0 {
		thr := int32(1) << (roi + 1)
		for i, v := range t.data[:w*h] {
			if v >= thr {
				t.data[i] = v>>roi | 1
			} else if -v >= thr {
				t.data[i] = -(-v>>roi | 1)
			}
		}
	}
}

// setSig makes the sample at flag index i, stripe column ci, row y, significant and tells
// its neighbours (their flags and their stripe columns' summaries). In the vertically
// causal mode the first row of a stripe does not tell the row above (the last row of the
// previous stripe, whose context ignores the stripe below).
func (t *t1) setSig(i, ci, y int, neg, causal bool) {
	f, fs := t.flags[:], t.fs
	cols, cw := &t.cols, t.fs
	j := y & 3
	if !causal || j != 0 {
		f[i-fs-1] |= fSE
		f[i-fs+1] |= fSW
		if neg {
			f[i-fs] |= fS | fSneg
		} else {
			f[i-fs] |= fS
		}
		if j == 0 && y > 0 {
			cols[(ci-cw-1)&colsMask] |= cNB
			cols[(ci-cw)&colsMask] |= cNB
			cols[(ci-cw+1)&colsMask] |= cNB
		}
	}
	f[i+fs-1] |= fNE
	f[i+fs+1] |= fNW
	f[i] |= fSig
	if neg {
		f[i-1] |= fE | fEneg
		f[i+1] |= fW | fWneg
		f[i+fs] |= fN | fNneg
	} else {
		f[i-1] |= fE
		f[i+1] |= fW
		f[i+fs] |= fN
	}
	cols[(ci-1)&colsMask] |= cNB
	cols[ci&colsMask] |= cSig | cNB
	cols[(ci+1)&colsMask] |= cNB
	if j == 3 && y+1 < t.h {
		cols[(ci+cw-1)&colsMask] |= cNB
		cols[(ci+cw)&colsMask] |= cNB
		cols[(ci+cw+1)&colsMask] |= cNB
	}
}

// sign decodes a newly significant sample's sign (T.800 D.3.2): true for negative.
func (t *t1) sign(f uint16) bool {
	e := scLUT[f&0xF|f>>4&0xF0]
	return t.mq.decode(&t.ctx[e>>1])^uint32(e&1) != 0
}

// The coding passes below keep the MQ decoder's A and C registers in locals and write
// decode's fast path out where it matters most (zero coding and refinement): Go does not
// inline decode, and a call per symbol costs a fifth of the decoding time. Around every
// other use of the decoder (slow path, sign, run-length) the registers go back to t.mq.

func (t *t1) sigProp(p int, zc *[256]uint8, causal bool) {
	w, h, fs := t.w, t.h, t.fs
	flags, data, ctx, mq := &t.flags, &t.data, &t.ctx, &t.mq
	a, c := mq.a, mq.c
	v := int32(3) << p // the bit and the midpoint below it, in half units
	for y0 := 0; y0 < h; y0 += 4 {
		ye := min(y0+4, h)
		for x := range w {
			i, di, ci := (y0+1)*fs+x+1, y0*w+x, y0/4*fs+x+1
			if t.cols[ci&colsMask]&cNB == 0 {
				continue
			}
			for y := y0; y < ye; y, i, di = y+1, i+fs, di+w {
				f := flags[i&flagsMask]
				if f&fSig != 0 || f&fNeighbours == 0 {
					continue
				}
				cx := &ctx[zc[f&0xFF]]
				st := *cx
				qe := mqQe[st]
				var bit uint32
				if a2 := a - qe; a2&0x8000 != 0 && c>>16 >= qe {
					a, c, bit = a2, c-qe<<16, uint32(st&1)
				} else {
					mq.a, mq.c = a, c
					bit = mq.decodeSlow(cx, a2)
					a, c = mq.a, mq.c
				}
				if bit != 0 {
					e := scLUT[f&0xF|f>>4&0xF0]
					cx := &ctx[e>>1]
					st := *cx
					qe := mqQe[st]
					if a2 := a - qe; a2&0x8000 != 0 && c>>16 >= qe {
						a, c, bit = a2, c-qe<<16, uint32(st&1)
					} else {
						mq.a, mq.c = a, c
						bit = mq.decodeSlow(cx, a2)
						a, c = mq.a, mq.c
					}
					neg := bit != uint32(e&1)
					data[di&dataMask] = signed(v, neg)
					t.setSig(i, ci, y, neg, causal)
				}
				flags[i&flagsMask] |= fVisit
				t.cols[ci&colsMask] |= cVisit
			}
		}
	}
	mq.a, mq.c = a, c
}

func (t *t1) sigPropRaw(p int, causal bool) {
	w, h, fs := t.w, t.h, t.fs
	flags, data := t.flags[:], t.data[:]
	v := int32(3) << p
	for y0 := 0; y0 < h; y0 += 4 {
		ye := min(y0+4, h)
		for x := range w {
			i, di, ci := (y0+1)*fs+x+1, y0*w+x, y0/4*fs+x+1
			for y := y0; y < ye; y, i, di = y+1, i+fs, di+w {
				f := flags[i]
				if f&fSig != 0 || f&fNeighbours == 0 {
					continue
				}
				if t.raw.bit() != 0 {
					neg := t.raw.bit() != 0
					data[di] = signed(v, neg)
					t.setSig(i, ci, y, neg, causal)
				}
				flags[i] |= fVisit
				t.cols[ci&colsMask] |= cVisit
			}
		}
	}
}

func (t *t1) refine(p int) {
	w, h, fs := t.w, t.h, t.fs
	flags, data, ctx, mq := &t.flags, &t.data, &t.ctx, &t.mq
	a, c := mq.a, mq.c
	half := int32(1) << p
	for y0 := 0; y0 < h; y0 += 4 {
		ye := min(y0+4, h)
		for x := range w {
			i, di, ci := (y0+1)*fs+x+1, y0*w+x, y0/4*fs+x+1
			if t.cols[ci&colsMask]&cSig == 0 {
				continue
			}
			for y := y0; y < ye; y, i, di = y+1, i+fs, di+w {
				f := flags[i&flagsMask]
				if f&(fSig|fVisit) != fSig {
					continue
				}
				k := ctxMR
				switch {
				case f&fRefined != 0:
					k += 2
				case f&fNeighbours != 0:
					k++
				}
				cx := &ctx[k]
				st := *cx
				qe := mqQe[st]
				var bit uint32
				if a2 := a - qe; a2&0x8000 != 0 && c>>16 >= qe {
					a, c, bit = a2, c-qe<<16, uint32(st&1)
				} else {
					mq.a, mq.c = a, c
					bit = mq.decodeSlow(cx, a2)
					a, c = mq.a, mq.c
				}
				data[di&dataMask] = refined(data[di&dataMask], half, bit)
				flags[i&flagsMask] = f | fRefined
			}
		}
	}
	mq.a, mq.c = a, c
}

func (t *t1) refineRaw(p int) {
	w, h, fs := t.w, t.h, t.fs
	flags, data := t.flags[:], t.data[:]
	half := int32(1) << p
	for y0 := 0; y0 < h; y0 += 4 {
		ye := min(y0+4, h)
		for x := range w {
			i, di := (y0+1)*fs+x+1, y0*w+x
			for y := y0; y < ye; y, i, di = y+1, i+fs, di+w {
				f := flags[i]
				if f&(fSig|fVisit) != fSig {
					continue
				}
				data[di] = refined(data[di], half, t.raw.bit())
				flags[i] = f | fRefined
			}
		}
	}
}

func (t *t1) cleanup(p int, zc *[256]uint8, causal bool) {
	w, h, fs := t.w, t.h, t.fs
	flags, data, ctx, mq := &t.flags, &t.data, &t.ctx, &t.mq
	a, c := mq.a, mq.c
	v := int32(3) << p
	for y0 := 0; y0 < h; y0 += 4 {
		ye := min(y0+4, h)
		for x := range w {
			i, di, ci := (y0+1)*fs+x+1, y0*w+x, y0/4*fs+x+1
			y := y0
			if ye-y0 == 4 && t.cols[ci&colsMask] == 0 {
				// Run-length mode (T.800 D.3.4).
				mq.a, mq.c = a, c
				if mq.decode(&ctx[ctxRL]) == 0 {
					a, c = mq.a, mq.c
					continue
				}
				r := int(mq.decode(&ctx[ctxUNI]))<<1 | int(mq.decode(&ctx[ctxUNI]))
				i, di, y = i+r*fs, di+r*w, y+r
				neg := t.sign(flags[i&flagsMask])
				a, c = mq.a, mq.c
				data[di&dataMask] = signed(v, neg)
				t.setSig(i, ci, y, neg, causal)
				i, di, y = i+fs, di+w, y+1
			}
			for ; y < ye; y, i, di = y+1, i+fs, di+w {
				f := flags[i&flagsMask]
				if f&(fSig|fVisit) == 0 {
					cx := &ctx[zc[f&0xFF]]
					st := *cx
					qe := mqQe[st]
					var bit uint32
					if a2 := a - qe; a2&0x8000 != 0 && c>>16 >= qe {
						a, c, bit = a2, c-qe<<16, uint32(st&1)
					} else {
						mq.a, mq.c = a, c
						bit = mq.decodeSlow(cx, a2)
						a, c = mq.a, mq.c
					}
					if bit != 0 {
						e := scLUT[f&0xF|f>>4&0xF0]
						cx := &ctx[e>>1]
						st := *cx
						qe := mqQe[st]
						if a2 := a - qe; a2&0x8000 != 0 && c>>16 >= qe {
							a, c, bit = a2, c-qe<<16, uint32(st&1)
						} else {
							mq.a, mq.c = a, c
							bit = mq.decodeSlow(cx, a2)
							a, c = mq.a, mq.c
						}
						neg := bit != uint32(e&1)
						data[di&dataMask] = signed(v, neg)
						t.setSig(i, ci, y, neg, causal)
					}
				}
				flags[i&flagsMask] &^= fVisit
			}
			t.cols[ci&colsMask] &^= cVisit
		}
	}
	mq.a, mq.c = a, c
}

func signed(v int32, neg bool) int32 {
	if neg {
		return -v
	}
	return v
}

// refined applies a refinement bit to a half-unit coefficient: the previous midpoint bit
// becomes the decoded bit and a new midpoint is set half a step below.
func refined(c, half int32, bit uint32) int32 {
	d := half
	if bit == 0 {
		d = -half
	}
	if c < 0 {
		return c - d
	}
	return c + d
}
