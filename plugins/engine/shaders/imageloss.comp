#version 450
// The image loss (the engine's ImageLoss): L1·mean|y − t| + SSIM·(1 − mean SSIM), SSIM
// per plane (channel and slice of a vals) with a k×k box window, vals covariances and
// the mean over the window positions wholly inside the plane, as skimage computes it.
//   0 per window position: SSIM and the coefficients A, B, C of its gradient (moments
//     summed directly over the window, of values shifted by the window's first pixel, so
//     that variances do not cancel in float32)
//   1 per pixel: |y − t|
//   2 one invocation: the value and its parts from the sums of both maps
//   3 per pixel: the gradient, gathering the coefficients of every window that covers it
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint PASS = 0;
layout(std430, binding = 0) readonly buffer Y { float y[]; };
layout(std430, binding = 1) readonly buffer T { float t[]; };
layout(std430, binding = 2) buffer Coef { float coef[]; };  // per plane: A, B, C over P positions
layout(std430, binding = 3) buffer SMap { float smap[]; };  // SSIM per position
layout(std430, binding = 4) buffer AMap { float amap[]; };  // |y − t| per pixel
layout(std430, binding = 5) buffer Scal { float scal[]; };  // value, l1, ssim, Σ ssim, Σ |y − t|
layout(std430, binding = 6) buffer DX { float dx[]; };
layout(push_constant) uniform P {
	uint n, planes, h, w, k;
	uint yoff, ystride, slot;
	float c1, c2, wl1, wssim;
	uint acc;
} p;

void main() {
	uint hp = p.h - p.k + 1, wp = p.w - p.k + 1, P = hp * wp, HW = p.h * p.w;
	uint vals = p.planes * HW;
	uint step = gl_NumWorkGroups.x * 256;
	if (PASS == 0) {
		float nn = float(p.k * p.k), cn = nn / (nn - 1.0);
		for (uint g = gl_GlobalInvocationID.x; g < p.n * p.planes * P; g += step) {
			uint pl = g / P, i = g - pl * P;
			uint s = pl / p.planes, q = pl - s * p.planes;
			uint r0 = i / wp, x0 = i - r0 * wp;
			uint yb = p.yoff + s * p.ystride + q * HW, tb = s * vals + q * HW;
			float ys = y[yb + r0 * p.w + x0], ts = t[tb + r0 * p.w + x0];
			float m0 = 0.0, m1 = 0.0, m2 = 0.0, m3 = 0.0, m4 = 0.0;
			for (uint r = r0; r < r0 + p.k; r++) {
				for (uint x = x0; x < x0 + p.k; x++) {
					float a = y[yb + r * p.w + x] - ys, b = t[tb + r * p.w + x] - ts;
					m0 += a;
					m1 += b;
					m2 += a * a;
					m3 += b * b;
					m4 += a * b;
				}
			}
			float dx0 = m0 / nn, dt0 = m1 / nn;
			float mx = ys + dx0, mt = ts + dt0;
			float vx = cn * (m2 / nn - dx0 * dx0);
			float vt = cn * (m3 / nn - dt0 * dt0);
			float vxt = cn * (m4 / nn - dx0 * dt0);
			float a1 = 2.0 * mx * mt + p.c1, a2 = 2.0 * vxt + p.c2;
			float b1 = mx * mx + mt * mt + p.c1, b2 = vx + vt + p.c2;
			float S = a1 * a2 / (b1 * b2);
			float dmx = 2.0 * mt * a2 / (b1 * b2) - S * 2.0 * mx / b1;
			float dvx = -S / b2;
			float dvxt = 2.0 * a1 / (b1 * b2);
			uint cb = pl * 3 * P + i;
			coef[cb] = dmx - 2.0 * cn * mx * dvx - cn * mt * dvxt;
			coef[cb + P] = 2.0 * cn * dvx;
			coef[cb + 2 * P] = cn * dvxt;
			smap[g] = S;
		}
		return;
	}
	if (PASS == 1) {
		for (uint g = gl_GlobalInvocationID.x; g < p.n * vals; g += step) {
			uint s = g / vals;
			amap[g] = abs(y[p.yoff + s * p.ystride + (g - s * vals)] - t[g]);
		}
		return;
	}
	if (PASS == 2) {
		if (gl_GlobalInvocationID.x == 0) {
			float l1 = scal[p.slot + 4] / float(p.n * vals);
			float sim = scal[p.slot + 3] / float(p.n * p.planes * P);
			scal[p.slot] = p.wl1 * l1 + p.wssim * (1.0 - sim);
			scal[p.slot + 1] = l1;
			scal[p.slot + 2] = sim;
		}
		return;
	}
	float kl1 = p.wl1 / float(p.n * vals);
	float ks = -p.wssim / (float(p.n * p.planes * P) * float(p.k * p.k));
	for (uint g = gl_GlobalInvocationID.x; g < p.n * vals; g += step) {
		uint s = g / vals, o = g - s * vals;
		uint q = o / HW, i = o - q * HW;
		uint r = i / p.w, x = i - r * p.w;
		uint pl = s * p.planes + q;
		uint rlo = r + 1 >= p.k ? r + 1 - p.k : 0, rhi = min(r, hp - 1);
		uint xlo = x + 1 >= p.k ? x + 1 - p.k : 0, xhi = min(x, wp - 1);
		float mA = 0.0, mB = 0.0, mC = 0.0;
		for (uint rr = rlo; rr <= rhi && rr < hp; rr++) {
			for (uint xx = xlo; xx <= xhi && xx < wp; xx++) {
				uint cb = pl * 3 * P + rr * wp + xx;
				mA += coef[cb];
				mB += coef[cb + P];
				mC += coef[cb + 2 * P];
			}
		}
		uint iy = p.yoff + s * p.ystride + o;
		float a = y[iy], b = t[g];
		float gr = ks * (mA + a * mB + b * mC);
		if (a > b) {
			gr += kl1;
		} else if (a < b) {
			gr -= kl1;
		}
		if (p.acc != 0) {
			gr += dx[iy];
		}
		dx[iy] = gr;
	}
}
