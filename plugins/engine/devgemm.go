package engine

import (
	"math"

	"amid/plugins/engine/vk"
)

// GEMM modes of shaders/gemm.comp.
const (
	gemmFwd = iota
	gemmDgrad
	gemmWgrad
	gemmUps
	gemmPlain
)

// GEMM flags.
const (
	gemmAcc   = 1
	gemmBias  = 2
	gemmSplit = 4
)

// gemmCfg is a tile shape: BM×BN outputs per workgroup, BK of the reduction per step,
// TM×TN per invocation.
type gemmCfg struct{ BM, BN, BK, TM, TN int }

func (c gemmCfg) wg() int { return (c.BM / c.TM) * (c.BN / c.TN) }

// Tile shapes, each of 256 invocations: few output rows (the full-resolution
// convolutions of a U-Net have 16–32 output channels) get wide tiles, many rows and
// columns large ones.
var (
	gemmS  = gemmCfg{16, 128, 16, 2, 4}
	gemmM  = gemmCfg{32, 64, 16, 2, 4}
	gemmL  = gemmCfg{64, 64, 16, 4, 4}
	gemmXL = gemmCfg{128, 128, 8, 8, 8}
)

// chooseGemm picks the tile shape for an M×N product.
func chooseGemm(M, N int) gemmCfg {
	switch {
	case M <= 16:
		return gemmS
	case M <= 32:
		return gemmM
	case M < 128 || N < 4096:
		return gemmL
	}
	return gemmXL
}

// gemmArgs are the push constants of gemm.comp (see the shader).
type gemmArgs struct {
	M, N, K, flags   int
	aoff, ars, acs   int
	boff, brs, bcs   int
	coff, crs, ccs   int
	in, out, s, p    [3]int
	chunk, cspat, kk int
}

func (g gemmArgs) push() []uint32 {
	w := []uint32{u32(g.M), u32(g.N), u32(g.K), u32(g.flags), u32(g.aoff), u32(g.ars), u32(g.acs),
		u32(g.boff), u32(g.brs), u32(g.bcs), u32(g.coff), u32(g.crs), u32(g.ccs)}
	for _, v := range [][3]int{g.in, g.out, g.s, g.p} {
		w = append(w, u32(v[0]), u32(v[1]), u32(v[2]))
	}
	return append(w, u32(g.chunk), u32(g.cspat), u32(g.kk))
}

// gemm records one product of mode with z workgroups along z (split chunks or kernel
// offsets). bias and ktab may be nil.
func (r *rec) gemm(mode int, cfg gemmCfg, g gemmArgs, z int, a, b, c, bias, ktab vk.Binding) {
	if bias.Buf == nil {
		bias = vk.R(r.dn.dummy)
	}
	if ktab.Buf == nil {
		ktab = vk.R(r.dn.dummy)
	}
	t := ((g.M + cfg.BM - 1) / cfg.BM) * ((g.N + cfg.BN - 1) / cfg.BN)
	spec := []uint32{u32(cfg.wg()), u32(cfg.BM), u32(cfg.BN), u32(cfg.BK), u32(cfg.TM), u32(cfg.TN), u32(mode)}
	r.run(kGemm, spec, tiles(t, z), g.push(), a, b, c, bias, ktab)
}

// ktabIm2col is the table of gemm.comp's gather of a geometry's column matrix: row k =
// (channel, kd, kh, kw) → (channel offset, packed offsets, 0, 0).
func ktabIm2col(g *geom) []uint32 {
	inS := g.inS()
	t := make([]uint32, 0, 4*g.rows())
	for c := range g.c {
		for kd := range g.k[0] {
			for kh := range g.k[1] {
				for kw := range g.k[2] {
					t = append(t, u32(c*inS), u32(kd|kh<<10|kw<<20), 0, 0)
				}
			}
		}
	}
	return t
}

// ktabDgrad is the table of the input-gradient gather: row k = (co, kd, kh, kw) of a
// weight (co, ci, k³) over ci channels → (co·P, packed offsets, co·ci·k³ + offset, 0), P
// the gathered tensor's voxels per channel.
func ktabDgrad(co, ci int, k [3]int, P int) []uint32 {
	kk := k[0] * k[1] * k[2]
	t := make([]uint32, 0, 4*co*kk)
	for o := range co {
		for kd := range k[0] {
			for kh := range k[1] {
				for kw := range k[2] {
					i := (kd*k[1]+kh)*k[2] + kw
					t = append(t, u32(o*P), u32(kd|kh<<10|kw<<20), u32(o*ci*kk+i), 0)
				}
			}
		}
	}
	return t
}

// table allocates a device buffer holding a constant table, uploaded when the network
// is first set up.
func (dn *devNet) table(t []uint32) (*vk.Buffer, error) {
	b, err := dn.alloc(len(t))
	if err != nil {
		return nil, err
	}
	host := make([]float32, len(t))
	for i, v := range t {
		host[i] = math.Float32frombits(v)
	}
	dn.consts = append(dn.consts, copyJob{host, vk.Binding{Buf: b, Size: int64(4 * len(t)), Write: true}})
	return b, nil
}

// splitK chooses the chunks of a weight gradient's reduction of R values for an M×N
// output: enough workgroups to fill a large GPU, partials at most 16 Mi values.
func splitK(M, N, R int, cfg gemmCfg) (parts, chunk int) {
	t := ((M + cfg.BM - 1) / cfg.BM) * ((N + cfg.BN - 1) / cfg.BN)
	parts = max(1, min((512+t-1)/t, R/(cfg.BK*16), (16<<20)/max(M*N, 1)))
	chunk = (R + parts - 1) / parts
	chunk = (chunk + cfg.BK - 1) / cfg.BK * cfg.BK
	parts = (R + chunk - 1) / chunk
	return parts, chunk
}

// rowSumChunk is the values per workgroup of rowsum.comp's first pass.
const rowSumChunk = 4096

// rowSumScratch is the workspace of rowSums over rows rows of length values.
func rowSumScratch(rows, length int) int { return rows * max((length+rowSumChunk-1)/rowSumChunk, 1) }

// Flags of rowsum.comp.
const (
	rsPerSample = 1
	rsSquare    = 2
	rsAcc       = 4
)

// rowSums records out[ooff + r] = scale·Σ row r (+ out when rsAcc) over the tensor of n
// samples of c channels of s values at xoff with sample stride xstride; a row is a
// channel of one sample (rsPerSample) or of all samples.
func (r *rec) rowSums(x vk.Binding, xoff, xstride, n, c, s int, out vk.Binding, ooff int, scale float32, flags int) {
	rows, length := c, n*s
	if flags&rsPerSample != 0 {
		rows, length = n*c, s
	}
	nch := max((length+rowSumChunk-1)/rowSumChunk, 1)
	part := r.scratch(rows * nch)
	push := []uint32{u32(rows), u32(c), u32(n), u32(s), u32(xoff), u32(xstride), rowSumChunk, u32(nch), u32(ooff), f32(scale), u32(flags)}
	y := min(rows, 65535)
	r.run(kRowSum, []uint32{0}, [3]int{nch, y, (rows + y - 1) / y}, push, x, part, out)
	r.run(kRowSum, []uint32{1}, groups1(rows, 256), push, x, part, out)
}
