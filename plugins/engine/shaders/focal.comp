#version 450
// CenterNet's focal loss (α = 2, β = 4; the engine's FocalLoss) of heatmap logits against
// target heatmaps, per sample, averaged over the samples (the engine's Focal).
//   0 per value: the loss term, whether it is a centre, and the unscaled gradient
//   1 one invocation: per sample k = 1 / max(centres, 1) (from the row sums of both maps),
//     the value
//   2 per value: dx = k·gradient / N (+ dx when accumulating)
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint PASS = 0;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer T { float t[]; };
layout(std430, binding = 2) buffer LMap { float lmap[]; };
layout(std430, binding = 3) buffer PMap { float pmap[]; };
layout(std430, binding = 4) buffer G { float g[]; };
layout(std430, binding = 5) buffer St { float st[]; }; // Σ loss [N], centres [N], k [N]
layout(std430, binding = 6) buffer Scal { float scal[]; };
layout(std430, binding = 7) buffer DX { float dx[]; };
layout(push_constant) uniform P {
	uint n, s, xoff, xstride, slot, acc;
} p;

// softplus is log(1 + e^v) without overflow.
float softplus(float v) { return v > 0.0 ? v + log(1.0 + exp(-v)) : log(1.0 + exp(v)); }

void main() {
	uint step = gl_NumWorkGroups.x * 256;
	if (PASS == 0) {
		for (uint i = gl_GlobalInvocationID.x; i < p.n * p.s; i += step) {
			uint n = i / p.s;
			float v = x[p.xoff + n * p.xstride + (i - n * p.s)], y = t[i];
			float logP = -softplus(-v), log1P = -softplus(v);
			float pr = exp(logP), q = exp(log1P);
			float l, gr;
			if (y >= 1.0) {
				l = -q * q * logP;
				gr = 2.0 * pr * q * q * logP - q * q * q;
			} else {
				float w = (1.0 - y) * (1.0 - y);
				w *= w;
				l = -w * pr * pr * log1P;
				gr = w * (pr * pr * pr - 2.0 * pr * pr * q * log1P);
			}
			lmap[i] = l;
			pmap[i] = y >= 1.0 ? 1.0 : 0.0;
			g[i] = gr;
		}
		return;
	}
	if (PASS == 1) {
		if (gl_GlobalInvocationID.x != 0) {
			return;
		}
		float v = 0.0;
		for (uint n = 0; n < p.n; n++) {
			float k = 1.0 / max(st[p.n + n], 1.0);
			st[2 * p.n + n] = k;
			v += k * st[n];
		}
		scal[p.slot] = v / float(p.n);
		return;
	}
	float inv = 1.0 / float(p.n);
	for (uint i = gl_GlobalInvocationID.x; i < p.n * p.s; i += step) {
		uint n = i / p.s;
		uint o = p.xoff + n * p.xstride + (i - n * p.s);
		float v = g[i] * st[2 * p.n + n] * inv;
		if (p.acc != 0) {
			v += dx[o];
		}
		dx[o] = v;
	}
}
