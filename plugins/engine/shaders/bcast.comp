#version 450
// dx[n][c][s] = scale·dy[n][c] for every s (+ dx when accumulating): the gradient of a
// global average pool.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) buffer DX { float dx[]; };
layout(push_constant) uniform P {
	uint n, c, s;
	uint yoff, ystride, xoff, xstride;
	float scale;
	uint acc;
} p;

void main() {
	uint total = p.n * p.c * p.s;
	uint step = gl_NumWorkGroups.x * 256;
	for (uint g = gl_GlobalInvocationID.x; g < total; g += step) {
		uint row = g / p.s, i = g - row * p.s;
		uint n = row / p.c, ci = row - n * p.c;
		float v = dy[p.yoff + n * p.ystride + ci] * p.scale;
		uint ix = p.xoff + n * p.xstride + ci * p.s + i;
		if (p.acc != 0) {
			v += dx[ix];
		}
		dx[ix] = v;
	}
}
