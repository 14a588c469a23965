#version 450
// The device's float32 arithmetic peak, measured: every invocation runs 8 independent
// chains of fused multiply-adds (16 operations per step), long enough that memory does
// not count, and writes one sum so that nothing is optimised away.
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer O { float o[]; };
layout(push_constant) uniform P {
	uint iters;
	float a, b;
} p;

void main() {
	float x0 = float(gl_LocalInvocationID.x) * 1e-7, x1 = x0 + 1e-3, x2 = x0 + 2e-3, x3 = x0 + 3e-3;
	float x4 = x0 + 4e-3, x5 = x0 + 5e-3, x6 = x0 + 6e-3, x7 = x0 + 7e-3;
	for (uint i = 0; i < p.iters; i++) {
		x0 = fma(x0, p.a, p.b);
		x1 = fma(x1, p.a, p.b);
		x2 = fma(x2, p.a, p.b);
		x3 = fma(x3, p.a, p.b);
		x4 = fma(x4, p.a, p.b);
		x5 = fma(x5, p.a, p.b);
		x6 = fma(x6, p.a, p.b);
		x7 = fma(x7, p.a, p.b);
	}
	o[gl_GlobalInvocationID.x] = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
}
