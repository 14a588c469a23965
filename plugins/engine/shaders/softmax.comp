#version 450
// Softmax over channels with cross-entropy and soft Dice (the engine's Loss; nnU-Net's
// DC_and_CE: Dice per sample, background excluded, smooth 1e-5). Passes (PASS):
//   0 per voxel: probabilities and −log p of the label
//   1 per (sample, class) row and chunk of voxels: partial Σp + Σg, Σp·g and (class 0) Σ −log p
//   2 one invocation: the loss value, and the Dice gradient's coefficients per (sample, class)
//   3 per voxel: the gradient with respect to the logits
// Partials are added in order, so runs repeat bit for bit.
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint PASS = 0;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Lab { int lab[]; };
layout(std430, binding = 2) buffer Prob { float prob[]; };
layout(std430, binding = 3) buffer CE { float ce[]; };
layout(std430, binding = 4) buffer Part { float part[]; };   // [N·C][nch][3]
layout(std430, binding = 5) buffer Coef { float coef[]; };   // [N·C][2]
layout(std430, binding = 6) buffer Scal { float scal[]; };
layout(std430, binding = 7) buffer DX { float dx[]; };
layout(push_constant) uniform P {
	uint n, c, s;
	uint xoff, xstride;
	uint chunk, nch, slot;
	float wce, wdice;
	uint acc;
} p;

const float SMOOTH = 1e-5;
shared float red[3 * 256];

void main() {
	uint step = gl_NumWorkGroups.x * 256;
	if (PASS == 0) {
		for (uint g = gl_GlobalInvocationID.x; g < p.n * p.s; g += step) {
			uint n = g / p.s, i = g - n * p.s;
			uint xb = p.xoff + n * p.xstride + i, pb = n * p.c * p.s + i;
			float m = x[xb];
			for (uint k = 1; k < p.c; k++) {
				m = max(m, x[xb + k * p.s]);
			}
			float z = 0.0;
			for (uint k = 0; k < p.c; k++) {
				float e = exp(x[xb + k * p.s] - m);
				prob[pb + k * p.s] = e;
				z += e;
			}
			for (uint k = 0; k < p.c; k++) {
				prob[pb + k * p.s] /= z;
			}
			int l = lab[g];
			ce[g] = log(z) - (x[xb + uint(l) * p.s] - m);
		}
		return;
	}
	if (PASS == 1) {
		uint row = gl_WorkGroupID.y + gl_NumWorkGroups.y * gl_WorkGroupID.z;
		uint ch = gl_WorkGroupID.x;
		if (row >= p.n * p.c) {
			return;
		}
		uint n = row / p.c, k = row - n * p.c;
		uint lo = ch * p.chunk, hi = min(p.s, lo + p.chunk);
		float sums = 0.0, inter = 0.0, cet = 0.0;
		for (uint i = lo + gl_LocalInvocationID.x; i < hi; i += 256) {
			float v = prob[(n * p.c + k) * p.s + i];
			bool is = lab[n * p.s + i] == int(k);
			sums += v + (is ? 1.0 : 0.0);
			inter += is ? v : 0.0;
			if (k == 0) {
				cet += ce[n * p.s + i];
			}
		}
		uint t = gl_LocalInvocationID.x;
		red[t] = sums;
		red[256 + t] = inter;
		red[512 + t] = cet;
		barrier();
		for (uint w = 128; w > 0; w >>= 1) {
			if (t < w) {
				red[t] += red[t + w];
				red[256 + t] += red[256 + t + w];
				red[512 + t] += red[512 + t + w];
			}
			barrier();
		}
		if (t == 0) {
			uint o = (row * p.nch + ch) * 3;
			part[o] = red[0];
			part[o + 1] = red[256];
			part[o + 2] = red[512];
		}
		return;
	}
	if (PASS == 2) {
		if (gl_GlobalInvocationID.x != 0) {
			return;
		}
		float cet = 0.0, dc = 0.0;
		float kdc = p.c > 1 ? p.wdice / float(p.n * (p.c - 1)) : 0.0;
		for (uint row = 0; row < p.n * p.c; row++) {
			float sums = 0.0, inter = 0.0;
			for (uint ch = 0; ch < p.nch; ch++) {
				uint o = (row * p.nch + ch) * 3;
				sums += part[o];
				inter += part[o + 1];
				if (row % p.c == 0) {
					cet += part[o + 2];
				}
			}
			float d = sums + SMOOTH;
			if (row % p.c != 0) {
				dc += (2.0 * inter + SMOOTH) / d;
			}
			coef[2 * row] = -kdc * 2.0 / d;
			coef[2 * row + 1] = kdc * (2.0 * inter + SMOOTH) / (d * d);
		}
		float v = p.wce * cet / float(p.n * p.s);
		if (p.c > 1) {
			v += p.wdice * (1.0 - dc / float(p.n * (p.c - 1)));
		}
		scal[p.slot] = v;
		return;
	}
	float kce = p.wce / float(p.n * p.s);
	for (uint g = gl_GlobalInvocationID.x; g < p.n * p.s; g += step) {
		uint n = g / p.s, i = g - n * p.s;
		uint l = uint(lab[g]);
		uint pb = n * p.c * p.s + i;
		float dot = 0.0;
		for (uint k = 1; k < p.c; k++) {
			float v = coef[2 * (n * p.c + k) + 1];
			if (k == l) {
				v += coef[2 * (n * p.c + k)];
			}
			dot += v * prob[pb + k * p.s];
		}
		for (uint k = 0; k < p.c; k++) {
			float dp = 0.0;
			if (k > 0) {
				dp = coef[2 * (n * p.c + k) + 1];
				if (k == l) {
					dp += coef[2 * (n * p.c + k)];
				}
			}
			float pc = prob[pb + k * p.s];
			float gr = pc * (dp - dot) + kce * pc;
			if (k == l) {
				gr -= kce;
			}
			uint o = p.xoff + n * p.xstride + k * p.s + i;
			if (p.acc != 0) {
				gr += dx[o];
			}
			dx[o] = gr;
		}
	}
}
