#version 450
// Sliding-window inference on the device (the engine's Windows): the image stays in
// device memory, each batch of windows is cut out of it (flipped for test-time
// augmentation), run through the network, and its outputs are flipped back, weighted and
// summed into the image's sums there. PASS (specialization constant):
//   0 cut: input sample b = the window of job b (origin lo, flip bits), zero outside the
//     image and for an unused slot (job flag 0)
//   1 add: slot `slot`'s outputs, flipped back, times its voxel's weight and 1/flips,
//     into num (K planes of the image) and den (one); slots are added one dispatch after
//     another, so the sums have a fixed order
//   2 finish: num / den
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint PASS = 0;
layout(std430, binding = 0) readonly buffer Img { float img[]; };
layout(std430, binding = 1) readonly buffer Jobs { ivec4 jobs[]; }; // lo x, y, z; flip | used << 8
layout(std430, binding = 2) buffer In { float inp[]; };
layout(std430, binding = 3) readonly buffer Out { float outp[]; };
layout(std430, binding = 4) readonly buffer W { float wt[]; };
layout(std430, binding = 5) buffer Num { float num[]; };
layout(std430, binding = 6) buffer Den { float den[]; };
layout(push_constant) uniform P {
	int X, Y, Z;
	int P0, P1, P2;
	uint c, k, b;
	uint inoff, instride, outoff, outstride;
	uint slot;
	float inv;
} p;

// flipped maps patch voxel (x, y, z) to the voxel it is read from under flip bits f.
ivec3 flipped(ivec3 v, int f) {
	if ((f & 1) != 0) v.x = p.P0 - 1 - v.x;
	if ((f & 2) != 0) v.y = p.P1 - 1 - v.y;
	if ((f & 4) != 0) v.z = p.P2 - 1 - v.z;
	return v;
}

void main() {
	uint PN = uint(p.P0 * p.P1 * p.P2), N = uint(p.X * p.Y * p.Z);
	uint step = gl_NumWorkGroups.x * 256;
	if (PASS == 0) {
		for (uint g = gl_GlobalInvocationID.x; g < p.b * p.c * PN; g += step) {
			uint row = g / PN, i = g - row * PN;
			uint s = row / p.c, ci = row - s * p.c;
			ivec4 j = jobs[s];
			float v = 0.0;
			if ((j.w >> 8) != 0) {
				ivec3 q = ivec3(int(i) % p.P0, (int(i) / p.P0) % p.P1, int(i) / (p.P0 * p.P1));
				ivec3 a = j.xyz + flipped(q, j.w & 255);
				if (a.x >= 0 && a.y >= 0 && a.z >= 0 && a.x < p.X && a.y < p.Y && a.z < p.Z) {
					v = img[ci * N + uint((a.z * p.Y + a.y) * p.X + a.x)];
				}
			}
			inp[p.inoff + s * p.instride + ci * PN + i] = v;
		}
		return;
	}
	if (PASS == 1) {
		ivec4 j = jobs[p.slot];
		if ((j.w >> 8) == 0) {
			return;
		}
		for (uint i = gl_GlobalInvocationID.x; i < PN; i += step) {
			ivec3 q = ivec3(int(i) % p.P0, (int(i) / p.P0) % p.P1, int(i) / (p.P0 * p.P1));
			ivec3 a = j.xyz + q;
			if (a.x < 0 || a.y < 0 || a.z < 0 || a.x >= p.X || a.y >= p.Y || a.z >= p.Z) {
				continue;
			}
			ivec3 f = flipped(q, j.w & 255);
			uint src = uint((f.z * p.P1 + f.y) * p.P0 + f.x);
			uint v = uint((a.z * p.Y + a.y) * p.X + a.x);
			float w = wt[i] * p.inv;
			for (uint k = 0; k < p.k; k++) {
				num[k * N + v] += w * outp[p.outoff + p.slot * p.outstride + k * PN + src];
			}
			den[v] += w;
		}
		return;
	}
	for (uint g = gl_GlobalInvocationID.x; g < p.k * N; g += step) {
		num[g] /= den[g % N];
	}
}
