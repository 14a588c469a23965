#version 450
// Softmax cross-entropy over classification heads that share one output vector per
// sample (the engine's HeadLoss): head h owns channels [off_h, off_h + K_h); each head's
// loss is weighted cross-entropy with mean reduction over the samples whose label is not
// −1, the value the mean over heads with a labelled sample of positive weight.
// PASS 0 (one invocation; N·C is small): probabilities, each head's weight sum, the
// value. PASS 1: the gradient, one invocation per logit.
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint PASS = 0;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Lab { int lab[]; };     // [N][H]
layout(std430, binding = 2) readonly buffer W { float w[]; };       // class weights [C]
layout(std430, binding = 3) readonly buffer Info { uvec4 info[]; }; // per channel: head, offset, classes
layout(std430, binding = 4) buffer Prob { float prob[]; };
layout(std430, binding = 5) buffer St { float st[]; };              // weight sum per head, heads used
layout(std430, binding = 6) buffer Scal { float scal[]; };
layout(std430, binding = 7) buffer DX { float dx[]; };
layout(push_constant) uniform P {
	uint n, c, h;
	uint xoff, xstride;
	uint slot, acc;
} p;

void main() {
	if (PASS == 0) {
		if (gl_GlobalInvocationID.x != 0) {
			return;
		}
		float value = 0.0;
		uint used = 0;
		for (uint hd = 0, o = 0; hd < p.h; hd++) {
			uint k = info[o].z;
			float ce = 0.0, den = 0.0;
			for (uint n = 0; n < p.n; n++) {
				uint xb = p.xoff + n * p.xstride + o;
				float m = x[xb];
				for (uint j = 1; j < k; j++) {
					m = max(m, x[xb + j]);
				}
				float z = 0.0;
				for (uint j = 0; j < k; j++) {
					z += exp(x[xb + j] - m);
				}
				for (uint j = 0; j < k; j++) {
					prob[n * p.c + o + j] = exp(x[xb + j] - m) / z;
				}
				int y = lab[n * p.h + hd];
				if (y >= 0) {
					float wy = w[o + uint(y)];
					ce += wy * (log(z) - (x[xb + uint(y)] - m));
					den += wy;
				}
			}
			st[hd] = den;
			if (den > 0.0) {
				value += ce / den;
				used++;
			}
			o += k;
		}
		st[p.h] = float(used);
		scal[p.slot] = used > 0 ? value / float(used) : 0.0;
		return;
	}
	uint g = gl_GlobalInvocationID.x;
	if (g >= p.n * p.c) {
		return;
	}
	uint n = g / p.c, ci = g - n * p.c;
	uvec4 inf = info[ci];
	int y = lab[n * p.h + inf.x];
	float s = 0.0;
	float den = st[inf.x], used = st[p.h];
	if (y >= 0 && den > 0.0) {
		s = w[inf.y + uint(y)] / den / used;
	}
	float gr = s * prob[g];
	if (int(ci - inf.y) == y) {
		gr -= s;
	}
	uint o = p.xoff + n * p.xstride + ci;
	if (p.acc != 0) {
		gr += dx[o];
	}
	dx[o] = gr;
}
