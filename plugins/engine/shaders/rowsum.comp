#version 450
// Sums of rows of a tensor in two passes, so that the order of additions is fixed: pass 0
// sums chunks of CHUNK values of each row (one workgroup per chunk and row: each
// invocation adds its values in order, then a fixed tree in shared memory) into partials;
// pass 1 adds each row's partials in order, scales the sum and writes (or adds) it.
//
// The tensor has n samples of c channels of s values (sample stride xstride). A row is
// one channel of one sample (PERSAMPLE) or one channel over every sample. SQUARE sums the
// squares (a gradient norm).
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint PASS = 0;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Part { float part[]; };
layout(std430, binding = 2) buffer Out { float o[]; };
layout(push_constant) uniform P {
	uint rows, c, n, s;
	uint xoff, xstride;
	uint chunk, nchunks;
	uint ooff;
	float scale;
	uint flags;
} p;

const uint PERSAMPLE = 1, SQUARE = 2, ACC = 4;
shared float red[256];

void main() {
	if (PASS == 0) {
		uint r = gl_WorkGroupID.y + gl_NumWorkGroups.y * gl_WorkGroupID.z;
		uint ch = gl_WorkGroupID.x;
		if (r >= p.rows) {
			return;
		}
		uint n0 = 0, ns = p.n, ci = r;
		if ((p.flags & PERSAMPLE) != 0) {
			n0 = r / p.c;
			ci = r % p.c;
			ns = 1;
		}
		uint len = ns * p.s;
		uint lo = ch * p.chunk, hi = min(len, lo + p.chunk);
		float acc = 0.0;
		for (uint e = lo + gl_LocalInvocationID.x; e < hi; e += 256) {
			uint k = e / p.s;
			float v = x[p.xoff + (n0 + k) * p.xstride + ci * p.s + (e - k * p.s)];
			acc += (p.flags & SQUARE) != 0 ? v * v : v;
		}
		red[gl_LocalInvocationID.x] = acc;
		barrier();
		for (uint w = 128; w > 0; w >>= 1) {
			if (gl_LocalInvocationID.x < w) {
				red[gl_LocalInvocationID.x] += red[gl_LocalInvocationID.x + w];
			}
			barrier();
		}
		if (gl_LocalInvocationID.x == 0) {
			part[r * p.nchunks + ch] = red[0];
		}
		return;
	}
	uint step = gl_NumWorkGroups.x * 256;
	for (uint r = gl_GlobalInvocationID.x; r < p.rows; r += step) {
		float s = 0.0;
		for (uint ch = 0; ch < p.nchunks; ch++) {
			s += part[r * p.nchunks + ch];
		}
		s *= p.scale;
		if ((p.flags & ACC) != 0) {
			s += o[p.ooff + r];
		}
		o[p.ooff + r] = s;
	}
}
