package infer

import (
	"errors"
	"fmt"
	"math"

	"amid/viewer/volume"
)

// Predict runs the network on patches: in holds C planes of each patch, out receives K
// planes (probabilities or any scores to be averaged) of each. With [Options.Batch] b > 1
// the b patches lie one after another, patch j's plane c at values (j·C+c)·V … (j·C+c+1)·V
// of in (V the patch's voxels) and its plane k at (j·K+k)·V of out: a network of batch b's
// input and output layout. Otherwise in and out hold one patch.
type Predict func(in, out []float32)

// Options configure [Window].
type Options struct {
	Patch    [3]int // X, Y, Z; Z = 1 for a 2D network run slice by slice
	Channels int    // C
	Classes  int    // K
	// Overlap is the fraction of a patch shared by neighbouring windows (0.5 when zero,
	// nnU-Net's step size 0.5).
	Overlap float64
	// Mirror averages the predictions over every combination of flips of the patch axes
	// longer than one voxel (8 in 3D, 4 in 2D), each flipped back before averaging.
	Mirror bool
	// Slices, when above 1, makes the network a 2.5D one: Patch has Z = 1 and the network
	// takes Channels·Slices planes, channel c's slices z−Slices/2 … z+Slices/2 at planes
	// c·Slices … c·Slices+Slices−1 (data.Sampler's Stack layout), and predicts slice z.
	// Slices beyond the image are filled with the channel's minimum, as in training.
	Slices int
	// Batch is the number of patches each call of the predictor takes (1 when zero): the
	// windows and their flips in the order one patch per call visits them (across the
	// slices of a 2.5D network). The last call is filled up with zero patches whose outputs
	// are ignored. Each output is summed as with one patch per call, so a predictor whose
	// result for a patch does not depend on the other patches of its call gives the same
	// result for every Batch.
	Batch int
}

// Gaussian returns the importance weights of a patch: a product over axes of
// exp(-d²/2σ²) with d the distance from the patch centre ((p-1)/2, so the map is
// symmetric) and σ = p/8, scaled so that its maximum is 1. nnU-Net centres on p/2, which is
// off by half a voxel for even p.
func Gaussian(p [3]int) []float32 {
	var ax [3][]float64
	for a := range 3 {
		ax[a] = make([]float64, p[a])
		c, s := float64(p[a]-1)/2, float64(p[a])/8
		top := 0.0
		for i := range ax[a] {
			d := float64(i) - c
			ax[a][i] = math.Exp(-d * d / (2 * s * s))
			top = max(top, ax[a][i])
		}
		for i := range ax[a] {
			ax[a][i] /= top
		}
	}
	w := make([]float32, 0, p[0]*p[1]*p[2])
	for z := range p[2] {
		for y := range p[1] {
			for x := range p[0] {
				w = append(w, float32(ax[0][x]*ax[1][y]*ax[2][z]))
			}
		}
	}
	return w
}

// Steps returns the first voxels of the windows along an axis of n voxels for patch p: as
// nnU-Net, ceil((n-p)/(p·step))+1 windows spread evenly from 0 to n-p and rounded
// (duplicates removed). When n < p the single window starts at -(p-n)/2, centring the
// image in it.
func Steps(n, p int, overlap float64) []int {
	if n <= p {
		return []int{-(p - n) / 2}
	}
	target := float64(p) * (1 - overlap)
	k := int(math.Ceil(float64(n-p)/target)) + 1
	step := float64(n-p) / float64(k-1)
	var out []int
	for i := range k {
		s := int(math.Round(step * float64(i)))
		if len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	}
	return out
}

// Sink receives the result of sliding windows slice by slice, in increasing z, as soon as
// no window still to come covers it: the K planes of slice z, plane k at k·X·Y … (k+1)·X·Y
// of slice. slice is reused after Sink returns.
type Sink func(z int, slice []float32)

// Window predicts every voxel of img (C planes of dims X·Y·Z) with windows of opt.Patch
// and returns K planes: at each voxel, the average of the windows' outputs weighted by
// [Gaussian]. It is [WindowTo] collecting the slices: besides the K float32 planes it
// returns (4 bytes per voxel and class) it holds the float64 sums of a band of
// Patch[2] planes. Voxels of a window outside the image are fed as 0.
func Window(img []float32, dims [3]int, opt Options, pred Predict) ([]float32, error) {
	if dims[0] <= 0 || dims[1] <= 0 || dims[2] <= 0 || opt.Classes <= 0 {
		return nil, fmt.Errorf("infer: dims %v and classes %d must be positive", dims, opt.Classes)
	}
	if err := volume.CheckSize([4]int{dims[0], dims[1], dims[2], opt.Classes}, volume.Float32); err != nil {
		return nil, fmt.Errorf("infer: %d classes of %v voxels: %w", opt.Classes, dims, err)
	}
	var res []float32
	err := WindowTo(img, dims, opt, pred, collect(&res, dims, opt.Classes))
	if err != nil {
		return nil, err
	}
	return res, nil
}

// collect is a Sink that copies each slice into K planes of dims, allocated into *res at
// the first slice.
func collect(res *[]float32, dims [3]int, K int) Sink {
	XY, N := dims[0]*dims[1], dims[0]*dims[1]*dims[2]
	return func(z int, slice []float32) {
		if *res == nil {
			*res = make([]float32, K*N)
		}
		for k := range K {
			copy((*res)[k*N+z*XY:k*N+(z+1)*XY], slice[k*XY:(k+1)*XY])
		}
	}
}

// WindowTo is [Window] with the result handed to sink slice by slice rather than
// returned: the same values, in increasing z. The windows run with z outermost, so once
// the windows starting at plane z0 begin, every plane below z0 is final: the sums of the
// weighted outputs are float64 (a predictor that returns a constant gives exactly that
// constant), but held for a band of Patch[2] planes (the image's Z if fewer) rather than
// for the whole image, 8·K bytes per voxel of the band; the sums of the weights, which
// depend on the windows alone, are made for one plane as it finishes, in the order the
// outputs were added, so every value is the one whole-image sums give, bit for bit. A
// caller that keeps only what it derives from each slice (a label map, see [Classes])
// never holds the class scores of the whole image.
func WindowTo(img []float32, dims [3]int, opt Options, pred Predict, sink Sink) error {
	if opt.Slices > 1 {
		return stacked(img, dims, opt, pred, sink)
	}
	r, err := newRunner(opt, pred)
	if err != nil {
		return err
	}
	if err := r.check(img, dims); err != nil {
		return err
	}
	r.image(img, dims, sink)
	r.flush()
	return nil
}

// runner feeds the predictor batches of patches and adds each output to the sums of the
// image it came from, in the order the patches were queued.
type runner struct {
	P           [3]int
	C, K, PN, B int
	ov          float64
	w           []float32 // Gaussian weights of a patch
	flips       []int     // bit masks of axes to flip
	pred        Predict
	in, out     []float32 // B patches of C and of K planes
	queue       []job     // the patches in in, in order
	patch       []float32 // the current window's C planes, when flipped copies are made
	acc         []float64 // the current window's outputs summed over its flips
	inv         float64   // 1 / len(flips)
}

// job is a queued patch: a window of an image's sums and the flip it was fed with.
type job struct {
	s           *sums
	lo          [3]int
	flip        int
	first, last bool // the window's first and last flip
}

// sums are an image's weighted sums of window outputs over a band of R planes: plane z
// in slot z mod R (K planes of X·Y per slot), planes below next finished. The sums of the
// weights depend on the windows alone: den holds them for the plane being finished.
type sums struct {
	dims     [3]int
	steps    [3][]int // the windows' first voxels along each axis
	R, next  int
	num, den []float64
	out      []float32 // a finished slice's K planes
	left     int       // windows whose outputs are still to come
	sink     Sink
}

func newRunner(opt Options, pred Predict) (*runner, error) {
	P, C, K, B := opt.Patch, opt.Channels, opt.Classes, max(opt.Batch, 1)
	if C <= 0 || K <= 0 || P[0] <= 0 || P[1] <= 0 || P[2] <= 0 || opt.Batch < 0 {
		return nil, fmt.Errorf("infer: channels %d, classes %d, patch %v and batch %d must be positive", C, K, P, opt.Batch)
	}
	ov := opt.Overlap
	if ov == 0 {
		ov = 0.5
	}
	if !(ov > 0 && ov < 1) {
		return nil, errors.New("infer: overlap must be in (0, 1)")
	}
	if err := volume.CheckSize([4]int{P[0], P[1], P[2], B * (C + K)}, volume.Float32); err != nil {
		return nil, fmt.Errorf("infer: %d patches %v of %d channels and %d classes: %w", B, P, C, K, err)
	}
	PN := P[0] * P[1] * P[2]
	r := &runner{P: P, C: C, K: K, PN: PN, B: B, ov: ov, w: Gaussian(P), pred: pred,
		in: make([]float32, B*C*PN), out: make([]float32, B*K*PN), acc: make([]float64, K*PN)}
	for m := range 8 {
		ok := true
		for a := range 3 {
			if m&(1<<a) != 0 && P[a] == 1 {
				ok = false
			}
		}
		if ok && (opt.Mirror || m == 0) {
			r.flips = append(r.flips, m)
		}
	}
	r.inv = 1 / float64(len(r.flips)) // a power of two: exact
	if len(r.flips) > 1 {
		r.patch = make([]float32, C*PN)
	}
	return r, nil
}

// check validates an image of C planes of dims for the runner.
func (r *runner) check(img []float32, dims [3]int) error {
	if dims[0] <= 0 || dims[1] <= 0 || dims[2] <= 0 {
		return fmt.Errorf("infer: dims %v must be positive", dims)
	}
	if err := volume.CheckSize([4]int{dims[0], dims[1], r.band(dims), r.K}, volume.Float64); err != nil {
		return fmt.Errorf("infer: sums for %d classes of %v voxels: %w", r.K, dims, err)
	}
	if len(img) != r.C*dims[0]*dims[1]*dims[2] {
		return fmt.Errorf("infer: image of %d values for %d channels of %v voxels", len(img), r.C, dims)
	}
	return nil
}

// band is the number of planes an image's sums hold: the patch's Z, or the image's if fewer.
func (r *runner) band(dims [3]int) int { return min(r.P[2], dims[2]) }

// image queues every window of img (checked) and its flips; sink receives each slice of
// the result once no window still to come covers it, during this or a later flush.
func (r *runner) image(img []float32, dims [3]int, sink Sink) {
	var steps [3][]int
	for a := range 3 {
		steps[a] = Steps(dims[a], r.P[a], r.ov)
	}
	XY, R := dims[0]*dims[1], r.band(dims)
	s := &sums{dims: dims, steps: steps, R: R, num: make([]float64, r.K*XY*R), den: make([]float64, XY),
		out: make([]float32, r.K*XY), left: len(steps[0]) * len(steps[1]) * len(steps[2]), sink: sink}
	CP := r.C * r.PN
	for _, z0 := range steps[2] {
		for _, y0 := range steps[1] {
			for _, x0 := range steps[0] {
				lo := [3]int{x0, y0, z0}
				if r.patch != nil {
					extract(img, dims, r.C, lo, r.P, r.patch)
				}
				for i, m := range r.flips {
					j := len(r.queue)
					slot := r.in[j*CP : (j+1)*CP]
					if r.patch == nil {
						extract(img, dims, r.C, lo, r.P, slot)
					} else {
						copy(slot, r.patch)
						flipAxes(slot, r.P, r.C, m)
					}
					r.queue = append(r.queue, job{s: s, lo: lo, flip: m, first: i == 0, last: i == len(r.flips)-1})
					if len(r.queue) == r.B {
						r.flush()
					}
				}
			}
		}
	}
}

// flush runs the predictor on the queued patches, zero patches filling the batch, and
// sums their outputs.
func (r *runner) flush() {
	if len(r.queue) == 0 {
		return
	}
	KP := r.K * r.PN
	clear(r.in[len(r.queue)*r.C*r.PN:])
	clear(r.out)
	r.pred(r.in, r.out)
	for j, jb := range r.queue {
		o := r.out[j*KP : (j+1)*KP]
		flipAxes(o, r.P, r.K, jb.flip)
		if jb.first {
			clear(r.acc)
		}
		for i, v := range o {
			r.acc[i] += float64(v)
		}
		if jb.last {
			r.add(jb.s, jb.lo)
		}
	}
	clear(r.queue) // drop the references to finished sums
	r.queue = r.queue[:0]
}

// add sums the current window's averaged outputs, weighted, into s, after finishing the
// planes below the window (no later window covers them), and finishes s after its last
// window.
func (r *runner) add(s *sums, lo [3]int) {
	P, K, PN, dims := r.P, r.K, r.PN, s.dims
	x0, y0, z0 := lo[0], lo[1], lo[2]
	r.finish(s, z0)
	XY := dims[0] * dims[1]
	xa, xb := max(0, -x0), min(P[0], dims[0]-x0)
	for z := max(0, -z0); z < min(P[2], dims[2]-z0); z++ {
		slot := (z0 + z) % s.R
		for y := max(0, -y0); y < min(P[1], dims[1]-y0); y++ {
			pr := (z*P[1] + y) * P[0]
			vr := (y0+y)*dims[0] + x0
			wr := r.w[pr+xa : pr+xb]
			for k := range K {
				a := r.acc[k*PN+pr+xa : k*PN+pr+xb]
				o := (slot*K+k)*XY + vr
				nm := s.num[o+xa : o+xb]
				for i, wv := range wr {
					nm[i] += float64(wv) * (a[i] * r.inv)
				}
			}
		}
	}
	if s.left--; s.left > 0 {
		return
	}
	r.finish(s, dims[2])
	s.num, s.den, s.out = nil, nil, nil
}

// finish divides the sums of the planes from s.next up to (not including) z, hands each
// to s.sink and clears its slot for the planes to come.
func (r *runner) finish(s *sums, z int) {
	K, XY := r.K, s.dims[0]*s.dims[1]
	for ; s.next < min(z, s.dims[2]); s.next++ {
		slot := s.next % s.R
		den := r.weights(s, s.next)
		for k := range K {
			num := s.num[(slot*K+k)*XY : (slot*K+k+1)*XY]
			out := s.out[k*XY : (k+1)*XY]
			for i, d := range den {
				out[i] = float32(num[i] / d)
			}
			clear(num)
		}
		s.sink(s.next, s.out)
	}
}

// weights returns the sums of the windows' weights at plane z of s (in s.den), added
// window by window in the order the windows' outputs are, so that each equals the sum
// add would have made beside the outputs'.
func (r *runner) weights(s *sums, z int) []float64 {
	P, dims, den := r.P, s.dims, s.den
	clear(den)
	for _, z0 := range s.steps[2] {
		if z < z0 || z >= z0+P[2] {
			continue
		}
		for _, y0 := range s.steps[1] {
			for _, x0 := range s.steps[0] {
				xa, xb := max(0, -x0), min(P[0], dims[0]-x0)
				for y := max(0, -y0); y < min(P[1], dims[1]-y0); y++ {
					pr := ((z-z0)*P[1] + y) * P[0]
					d := den[(y0+y)*dims[0]+x0+xa : (y0+y)*dims[0]+x0+xb]
					for i, wv := range r.w[pr+xa : pr+xb] {
						d[i] += float64(wv)
					}
				}
			}
		}
	}
	return den
}

// extract copies the window starting at lo into in, zero outside the image.
func extract(img []float32, dims [3]int, C int, lo, P [3]int, in []float32) {
	N, PN := dims[0]*dims[1]*dims[2], P[0]*P[1]*P[2]
	x0, x1 := max(0, -lo[0]), min(P[0], dims[0]-lo[0])
	for c := range C {
		src, dst := img[c*N:(c+1)*N], in[c*PN:(c+1)*PN]
		for z := range P[2] {
			for y := range P[1] {
				row := dst[(z*P[1]+y)*P[0] : (z*P[1]+y+1)*P[0]]
				sz, sy := lo[2]+z, lo[1]+y
				if sz < 0 || sz >= dims[2] || sy < 0 || sy >= dims[1] || x0 >= x1 {
					clear(row)
					continue
				}
				clear(row[:x0])
				o := (sz*dims[1]+sy)*dims[0] + lo[0]
				copy(row[x0:x1], src[o+x0:o+x1])
				clear(row[x1:])
			}
		}
	}
}

// flipAxes reverses each of n planes of patch shape p along the axes in mask (bit a: axis a).
func flipAxes(s []float32, p [3]int, n, mask int) {
	PN := p[0] * p[1] * p[2]
	for c := range n {
		pl := s[c*PN : (c+1)*PN]
		if mask&1 != 0 {
			for r := 0; r < PN; r += p[0] {
				row := pl[r : r+p[0]]
				for i, j := 0, len(row)-1; i < j; i, j = i+1, j-1 {
					row[i], row[j] = row[j], row[i]
				}
			}
		}
		if mask&2 != 0 {
			for z := range p[2] {
				q := pl[z*p[0]*p[1] : (z+1)*p[0]*p[1]]
				for i, j := 0, p[1]-1; i < j; i, j = i+1, j-1 {
					for x := range p[0] {
						q[i*p[0]+x], q[j*p[0]+x] = q[j*p[0]+x], q[i*p[0]+x]
					}
				}
			}
		}
		if mask&4 != 0 {
			q := p[0] * p[1]
			for i, j := 0, p[2]-1; i < j; i, j = i+1, j-1 {
				for x := range q {
					pl[i*q+x], pl[j*q+x] = pl[j*q+x], pl[i*q+x]
				}
			}
		}
	}
}

// stacked runs a 2.5D network slice by slice: each slice's stack of neighbours is a 2D
// image of Channels·Slices planes whose windows are predicted as [Window] does, the
// batches running on across slices; sink receives each slice's K planes.
func stacked(img []float32, dims [3]int, opt Options, pred Predict, sink Sink) error {
	C, K, S := opt.Channels, opt.Classes, opt.Slices
	if C <= 0 || K <= 0 || opt.Patch[2] != 1 || dims[0] <= 0 || dims[1] <= 0 || dims[2] <= 0 {
		return fmt.Errorf("infer: a 2.5D network needs positive channels %d, classes %d and dims %v, and a patch %v with Z = 1", C, K, dims, opt.Patch)
	}
	if err := volume.CheckSize([4]int{dims[0], dims[1], dims[2], C}, volume.Float32); err != nil {
		return fmt.Errorf("infer: %d channels of %v voxels: %w", C, dims, err)
	}
	XY, N := dims[0]*dims[1], dims[0]*dims[1]*dims[2]
	if len(img) != C*N {
		return fmt.Errorf("infer: image of %d values for %d channels of %v voxels", len(img), C, dims)
	}
	in2 := opt
	in2.Slices, in2.Channels = 0, C*S
	r, err := newRunner(in2, pred)
	if err != nil {
		return err
	}
	plane := [3]int{dims[0], dims[1], 1}
	stack := make([]float32, C*S*XY)
	if err := r.check(stack, plane); err != nil {
		return err
	}
	low := make([]float32, C)
	for c := range C {
		low[c] = float32(math.Inf(1))
		for _, v := range img[c*N : (c+1)*N] {
			low[c] = min(low[c], v)
		}
	}
	for z := range dims[2] {
		for c := range C {
			for j := range S {
				dst := stack[(c*S+j)*XY : (c*S+j+1)*XY]
				if sz := z - S/2 + j; sz >= 0 && sz < dims[2] {
					copy(dst, img[c*N+sz*XY:c*N+(sz+1)*XY])
				} else {
					fill(dst, low[c])
				}
			}
		}
		// The windows are copied out of stack as they are queued, so the next slice may
		// reuse it.
		r.image(stack, plane, func(_ int, out []float32) { sink(z, out) })
	}
	r.flush()
	return nil
}

func fill(s []float32, v float32) {
	for i := range s {
		s[i] = v
	}
}
