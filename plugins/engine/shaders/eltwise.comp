#version 450
// z = ax·x + ay·y (+ z when accumulating), sample by sample: each of n samples has len
// values at off + sample·stride in its buffer (a tensor that is part of a channel
// concatenation has a stride larger than its sample). y is read only when useY is set.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Y { float y[]; };
layout(std430, binding = 2) buffer Z { float z[]; };
layout(push_constant) uniform P {
	uint n, len;
	uint xoff, xstride, yoff, ystride, zoff, zstride;
	float ax, ay;
	uint useY, acc;
} p;

void main() {
	uint total = p.n * p.len;
	uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
	for (uint g = gl_GlobalInvocationID.x; g < total; g += step) {
		uint s = g / p.len, i = g - s * p.len;
		float v = p.ax * x[p.xoff + s * p.xstride + i];
		if (p.useY != 0) {
			v += p.ay * y[p.yoff + s * p.ystride + i];
		}
		uint o = p.zoff + s * p.zstride + i;
		if (p.acc != 0) {
			v += z[o];
		}
		z[o] = v;
	}
}
