#version 450
// SGD with momentum as torch.optim.SGD (dampening 0, Nesterov optional) over a range of
// the parameter arena; the momentum buffer starts at the first gradient (step value 3 is
// 1 on the first step).
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer Param { float w[]; };
layout(std430, binding = 1) readonly buffer Grad { float gr[]; };
layout(std430, binding = 2) buffer Buf { float buf[]; };
layout(std430, binding = 3) readonly buffer Step { float stp[]; };
layout(std430, binding = 4) readonly buffer Scal { float scal[]; };
layout(push_constant) uniform P {
	uint off, n;
	float wd, mu;
	uint nesterov;
} p;

void main() {
	float lr = stp[0];
	bool first = stp[3] != 0.0;
	float k = scal[1];
	if (k < 0.0) {
		return; // gradients not finite: the step is skipped (clip.comp)
	}
	uint stride = gl_NumWorkGroups.x * 256;
	for (uint i = p.off + gl_GlobalInvocationID.x; i < p.off + p.n; i += stride) {
		float g = gr[i];
		if (k < 1.0) {
			g *= k;
		}
		float d = g + p.wd * w[i];
		if (p.mu != 0.0) {
			buf[i] = first ? d : p.mu * buf[i] + d;
			if (p.nesterov != 0) {
				d += p.mu * buf[i];
			} else {
				d = buf[i];
			}
		}
		w[i] -= lr * d;
	}
}
