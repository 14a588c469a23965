#version 450
// Adam and AdamW with PyTorch's update over a range of the parameter arena (one weight
// decay for the range): the learning rate and bias corrections come from the step values
// the host uploads with each step, the clipping factor from the scalars.
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer Param { float w[]; };
layout(std430, binding = 1) readonly buffer Grad { float gr[]; };
layout(std430, binding = 2) buffer M { float m[]; };
layout(std430, binding = 3) buffer V { float v[]; };
layout(std430, binding = 4) readonly buffer Step { float stp[]; };   // lr, c1, c2, …
layout(std430, binding = 5) readonly buffer Scal { float scal[]; };  // norm, factor, …
layout(push_constant) uniform P {
	uint off, n;
	float wd;
	uint decoupled;
	float b1, b2, eps;
} p;

void main() {
	float lr = stp[0], c1 = stp[1], c2 = stp[2];
	float k = scal[1];
	if (k < 0.0) {
		return; // gradients not finite: the step is skipped (clip.comp)
	}
	float step = lr / c1;
	uint stride = gl_NumWorkGroups.x * 256;
	for (uint i = p.off + gl_GlobalInvocationID.x; i < p.off + p.n; i += stride) {
		float g = gr[i];
		if (k < 1.0) {
			g *= k;
		}
		if (p.decoupled != 0) {
			w[i] *= 1.0 - lr * p.wd;
		} else {
			g += p.wd * w[i];
		}
		m[i] = p.b1 * m[i] + (1.0 - p.b1) * g;
		v[i] = p.b2 * v[i] + (1.0 - p.b2) * g * g;
		w[i] -= step * m[i] / (sqrt(v[i]) / c2 + p.eps);
	}
}
