#version 450
// Max-pooling with window = stride k (the size rounded down). PASS 0: each output takes
// the first largest value of its window (in kd, kh, kw order, as the CPU) and remembers
// its offset in the channel. PASS 1: each input value gathers its gradient from the one
// window that covers it (windows do not overlap): dy where it was the maximum, else 0.
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint PASS = 0;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Y { float y[]; };
layout(std430, binding = 2) buffer Idx { uint idx[]; };
layout(std430, binding = 3) readonly buffer DY { float dy[]; };
layout(std430, binding = 4) buffer DX { float dx[]; };
layout(push_constant) uniform P {
	uint n, c;
	uint in0, in1, in2, out0, out1, out2, k0, k1, k2;
	uint xoff, xstride, yoff, ystride, acc;
} p;

void main() {
	uint S = p.in0 * p.in1 * p.in2, Q = p.out0 * p.out1 * p.out2;
	uint step = gl_NumWorkGroups.x * 256;
	if (PASS == 0) {
		uint total = p.n * p.c * Q;
		for (uint g = gl_GlobalInvocationID.x; g < total; g += step) {
			uint row = g / Q, o = g - row * Q;
			uint n = row / p.c, ci = row - n * p.c;
			uint od = o / (p.out1 * p.out2), r = o - od * p.out1 * p.out2;
			uint oh = r / p.out2, ow = r - oh * p.out2;
			uint base = p.xoff + n * p.xstride + ci * S;
			float best = 0.0;
			int bi = -1;
			for (uint kd = 0; kd < p.k0; kd++) {
				for (uint kh = 0; kh < p.k1; kh++) {
					uint line = ((od * p.k0 + kd) * p.in1 + oh * p.k1 + kh) * p.in2 + ow * p.k2;
					for (uint kw = 0; kw < p.k2; kw++) {
						float v = x[base + line + kw];
						if (bi < 0 || v > best) {
							best = v;
							bi = int(line + kw);
						}
					}
				}
			}
			y[p.yoff + n * p.ystride + ci * Q + o] = best;
			idx[g] = uint(bi);
		}
		return;
	}
	uint total = p.n * p.c * S;
	for (uint g = gl_GlobalInvocationID.x; g < total; g += step) {
		uint row = g / S, i = g - row * S;
		uint n = row / p.c, ci = row - n * p.c;
		uint d = i / (p.in1 * p.in2), r = i - d * p.in1 * p.in2;
		uint h = r / p.in2, w = r - h * p.in2;
		float v = 0.0;
		uint od = d / p.k0, oh = h / p.k1, ow = w / p.k2;
		if (od < p.out0 && oh < p.out1 && ow < p.out2) {
			uint o = (od * p.out1 + oh) * p.out2 + ow;
			if (idx[row * Q + o] == i) {
				v = dy[p.yoff + n * p.ystride + ci * Q + o];
			}
		}
		uint ix = p.xoff + n * p.xstride + ci * S + i;
		if (p.acc != 0) {
			v += dx[ix];
		}
		dx[ix] = v;
	}
}
