#version 450
// out[i] = Σ_z parts[z·len + i] for z = 0 … parts−1 in order (the second pass of a split
// reduction, e.g. a weight gradient summed in chunks), written or added (acc).
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Parts { float part[]; };
layout(std430, binding = 1) buffer Out { float o[]; };
layout(push_constant) uniform P {
	uint len, parts, off, acc;
} p;

void main() {
	uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
	for (uint i = gl_GlobalInvocationID.x; i < p.len; i += step) {
		float s = 0.0;
		for (uint z = 0; z < p.parts; z++) {
			s += part[z * p.len + i];
		}
		if (p.acc != 0) {
			s += o[p.off + i];
		}
		o[p.off + i] = s;
	}
}
