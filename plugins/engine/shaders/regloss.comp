#version 450
// The regression loss (the engine's RegressionLoss): weighted mean squared error, a
// pairwise logistic ranking loss over the pairs whose targets differ, and 1 − Pearson
// correlation, on one prediction per sample. PASS 0 (one invocation; batches are small):
// the terms, the value and the gradient; PASS 1: dx from that gradient.
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint PASS = 0;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer T { float t[]; };
layout(std430, binding = 2) buffer G { float gr[]; };
layout(std430, binding = 3) buffer Scal { float scal[]; };
layout(std430, binding = 4) buffer DX { float dx[]; };
layout(push_constant) uniform P {
	uint n, xoff, xstride, slot, acc;
	float wmse, wrank, wcorr, temp;
} p;

const float CORR_EPS = 1e-6;

float softplus(float v) { return v > 30.0 ? v : log(1.0 + exp(v)); }
float sigmoid(float v) { return 1.0 / (1.0 + exp(-v)); }
float pred(uint i) { return x[p.xoff + i * p.xstride]; }

void main() {
	if (PASS == 1) {
		uint i = gl_GlobalInvocationID.x;
		if (i < p.n) {
			float v = gr[i];
			uint o = p.xoff + i * p.xstride;
			if (p.acc != 0) {
				v += dx[o];
			}
			dx[o] = v;
		}
		return;
	}
	if (gl_GlobalInvocationID.x != 0) {
		return;
	}
	float N = float(p.n);
	float mse = 0.0, rank = 0.0, corr = 0.0;
	for (uint i = 0; i < p.n; i++) {
		gr[i] = 0.0;
	}
	if (p.wmse > 0.0) {
		for (uint i = 0; i < p.n; i++) {
			float d = pred(i) - t[i];
			mse += d * d / N;
			gr[i] += p.wmse * 2.0 * d / N;
		}
	}
	if (p.wrank > 0.0) {
		uint pairs = 0;
		for (uint i = 0; i < p.n; i++) {
			for (uint j = 0; j < p.n; j++) {
				if (t[i] > t[j]) {
					pairs++;
				}
			}
		}
		for (uint i = 0; i < p.n; i++) {
			for (uint j = 0; j < p.n; j++) {
				if (t[i] > t[j]) {
					float d = (pred(i) - pred(j)) / p.temp;
					rank += softplus(-d) / float(pairs);
					float k = p.wrank * sigmoid(-d) / p.temp / float(pairs);
					gr[i] -= k;
					gr[j] += k;
				}
			}
		}
	}
	if (p.wcorr > 0.0 && p.n > 1) {
		float mp = 0.0, mt = 0.0;
		for (uint i = 0; i < p.n; i++) {
			mp += pred(i) / N;
			mt += t[i] / N;
		}
		float saa = 0.0, sbb = 0.0, sab = 0.0, tlo = t[0], thi = t[0];
		for (uint i = 0; i < p.n; i++) {
			float a = pred(i) - mp, b = t[i] - mt;
			saa += a * a;
			sbb += b * b;
			sab += a * b;
			tlo = min(tlo, t[i]);
			thi = max(thi, t[i]);
		}
		// Targets all equal: no correlation to learn from this batch (tested on the
		// targets themselves: their mean may differ from them by rounding).
		if (thi > tlo) {
			float A = sqrt(saa + CORR_EPS), B = sqrt(sbb);
			float r = sab / (A * B);
			corr = 1.0 - r;
			for (uint i = 0; i < p.n; i++) {
				float a = pred(i) - mp, b = t[i] - mt;
				gr[i] -= p.wcorr * (b / (A * B) - r * a / (A * A));
			}
		}
	}
	scal[p.slot] = p.wmse * mse + p.wrank * rank + p.wcorr * corr;
	scal[p.slot + 1] = mse;
	scal[p.slot + 2] = rank;
	scal[p.slot + 3] = corr;
}
