#version 450
// Instance or batch normalisation fused with LeakyReLU, forward and backward, in passes
// (specialization constant PASS) whose reductions have a fixed order: each workgroup
// sums one chunk of one row (invocations in order, then a fixed tree) into partials, and
// later passes add a row's partials in order, so every workgroup of a row sees the same
// statistics and runs repeat bit for bit.
//
// A row is one channel of one sample (instance norm: R = N·C rows of S values) or one
// channel of the whole batch (batch norm: R = C rows of N·S values).
//   0 partial Σx              1 partial Σ(x − mean)²     2 y = act(γ·(x − mean)·istd + β),
//                                                           the row statistics and, for
//                                                           batch norm in training, the
//                                                           running statistics
//   3 partial Σd, Σd·(x − mean) with d = dy·act'(y)
//   4 dx and the row's parts of the γ and β gradients    5 γ and β gradients per channel
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint PASS = 0;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Y { float y[]; };
layout(std430, binding = 2) readonly buffer DY { float dy[]; };
layout(std430, binding = 3) buffer DX { float dx[]; };
layout(std430, binding = 4) readonly buffer Gamma { float gamma[]; };
layout(std430, binding = 5) readonly buffer Beta { float beta[]; };
layout(std430, binding = 6) buffer Stats { float stats[]; };  // mean[R], istd[R]
layout(std430, binding = 7) buffer Part { float part[]; };    // [R][nch][2]
layout(std430, binding = 8) buffer Run { float run[]; };      // running mean[C], var[C]
layout(std430, binding = 9) buffer DGB { float dgb[]; };      // dg[R], db[R]
layout(std430, binding = 10) buffer GGamma { float ggamma[]; };
layout(std430, binding = 11) buffer GBeta { float gbeta[]; };
layout(push_constant) uniform P {
	uint n, c, s, rows;
	uint xoff, xstride, yoff, ystride;
	uint chunk, nch, flags;
	float k1, eps;
} p;

const uint INSTANCE = 1, TRAINING = 2, ACCX = 4, NEEDX = 8;
shared float red[2 * 256];

// value index e of row r.
uint at(uint r, uint e, uint off, uint stride) {
	uint n0 = 0, ci = r;
	if ((p.flags & INSTANCE) != 0) {
		n0 = r / p.c;
		ci = r % p.c;
	}
	uint k = e / p.s;
	return off + (n0 + k) * stride + ci * p.s + (e - k * p.s);
}

uint rowLen() { return (p.flags & INSTANCE) != 0 ? p.s : p.n * p.s; }

// leaky is the activation's slope at y: k1 + 1 where y's sign bit is set, else 1.
float leaky(float v) { return 1.0 + p.k1 * float(floatBitsToUint(v) >> 31); }

// total adds row r's partials j (0 or 1) in order.
float total(uint r, uint j) {
	float t = 0.0;
	for (uint ch = 0; ch < p.nch; ch++) {
		t += part[(r * p.nch + ch) * 2 + j];
	}
	return t;
}

// reduce2 sums a and b over the workgroup; the sums are in red[0] and red[256].
void reduce2(float a, float b) {
	uint t = gl_LocalInvocationID.x;
	red[t] = a;
	red[256 + t] = b;
	barrier();
	for (uint w = 128; w > 0; w >>= 1) {
		if (t < w) {
			red[t] += red[t + w];
			red[256 + t] += red[256 + t + w];
		}
		barrier();
	}
}

void main() {
	if (PASS == 5) {
		uint step = gl_NumWorkGroups.x * 256;
		for (uint ci = gl_GlobalInvocationID.x; ci < p.c; ci += step) {
			float g = 0.0, b = 0.0;
			for (uint r = ci; r < p.rows; r += p.c) {
				g += dgb[r];
				b += dgb[p.rows + r];
			}
			ggamma[ci] = g;
			gbeta[ci] = b;
		}
		return;
	}
	uint r = gl_WorkGroupID.y + gl_NumWorkGroups.y * gl_WorkGroupID.z;
	uint ch = gl_WorkGroupID.x;
	if (r >= p.rows) {
		return;
	}
	uint L = rowLen();
	uint lo = ch * p.chunk, hi = min(L, lo + p.chunk);
	uint ci = (p.flags & INSTANCE) != 0 ? r % p.c : r;
	uint t = gl_LocalInvocationID.x;
	float m = float(L);

	if (PASS == 0 || PASS == 1) {
		float mean = PASS == 1 ? total(r, 0) / m : 0.0;
		float a = 0.0;
		for (uint e = lo + t; e < hi; e += 256) {
			float v = x[at(r, e, p.xoff, p.xstride)];
			if (PASS == 1) {
				v -= mean;
				v *= v;
			}
			a += v;
		}
		reduce2(a, 0.0);
		if (t == 0) {
			part[(r * p.nch + ch) * 2 + PASS] = red[0];
		}
		return;
	}
	if (PASS == 2) {
		float mean, istd;
		bool stat = (p.flags & (INSTANCE | TRAINING)) != 0;
		if (stat) {
			mean = total(r, 0) / m;
			float q = total(r, 1);
			istd = 1.0 / sqrt(q / m + p.eps);
			if (ch == 0 && t == 0) {
				stats[r] = mean;
				stats[p.rows + r] = istd;
				if ((p.flags & INSTANCE) == 0) {
					// PyTorch: momentum 0.1, unbiased running variance.
					run[ci] = 0.9 * run[ci] + 0.1 * mean;
					run[p.c + ci] = 0.9 * run[p.c + ci] + 0.1 * (q / max(m - 1.0, 1.0));
				}
			}
		} else {
			mean = run[ci];
			istd = 1.0 / sqrt(run[p.c + ci] + p.eps);
		}
		float g = gamma[ci] * istd, bt = beta[ci];
		for (uint e = lo + t; e < hi; e += 256) {
			float o = (x[at(r, e, p.xoff, p.xstride)] - mean) * g + bt;
			y[at(r, e, p.yoff, p.ystride)] = o * leaky(o);
		}
		return;
	}
	float mean = stats[r], istd = stats[p.rows + r];
	if (PASS == 3) {
		float a = 0.0, b = 0.0;
		for (uint e = lo + t; e < hi; e += 256) {
			uint iy = at(r, e, p.yoff, p.ystride);
			float d = dy[iy] * leaky(y[iy]);
			a += d;
			b += d * (x[at(r, e, p.xoff, p.xstride)] - mean);
		}
		reduce2(a, b);
		if (t == 0) {
			part[(r * p.nch + ch) * 2] = red[0];
			part[(r * p.nch + ch) * 2 + 1] = red[256];
		}
		return;
	}
	// PASS 4
	float sd = total(r, 0), sdx = total(r, 1) * istd;
	if (ch == 0 && t == 0) {
		dgb[r] = sdx;
		dgb[p.rows + r] = sd;
	}
	if ((p.flags & NEEDX) == 0) {
		return;
	}
	float k = gamma[ci] * istd, a = sd / m, bb = sdx / m;
	for (uint e = lo + t; e < hi; e += 256) {
		uint iy = at(r, e, p.yoff, p.ystride), ix = at(r, e, p.xoff, p.xstride);
		float g = k * (dy[iy] * leaky(y[iy]) - a - (x[ix] - mean) * istd * bb);
		if ((p.flags & ACCX) != 0) {
			g += dx[ix];
		}
		dx[ix] = g;
	}
}
