#version 450
// Tiled matrix product C = A·B for the engine's convolutions (as implicit GEMM: the
// column matrix is gathered from the image while loading the tiles, never written) and
// dense layers. A workgroup computes a BM×BN tile of C with (BM/TM)·(BN/TN) invocations,
// each TM×TN values in registers, stepping through K by BK with both tiles in shared
// memory. Every value of C is summed by one invocation in a fixed order, so results are
// the same run to run (no atomics).
//
// MODE (specialization constant 6):
//   0 FWD   convolution: A = weight (M = cout, K = cin·k³), B = im2col(x) gathered, columns
//           N = samples × output voxels; C = y (+ bias per row).
//   1 DGRAD input gradient of a convolution (and forward of a transposed one): A = weight
//           seen as (cin) × (cout·k³), B gathers dy at the output voxel each kernel
//           offset maps an input voxel to (none where the stride does not divide), columns
//           = samples × input voxels; C = dx (+ dx when accumulating).
//   2 WGRAD weight gradient: A = dy (M = cout, reduction over samples × output voxels),
//           B = im2col(x)ᵀ, N = cin·k³; workgroup z sums one chunk of the reduction into
//           its own partial (flag SPLIT) for a second, fixed-order pass (sumparts).
//   3 UPS   transposed convolution whose kernel equals its stride (no overlap): workgroup z
//           is one kernel offset; A = its weight slice (cout × cin), B = x, C scattered to
//           the output voxels of that offset (+ bias).
//   4 PLAIN strided matrices: A[m][k] = a[aoff + m·ars + k·acs], B[k][j] = b[boff + k·brs +
//           j·bcs], C[m][j] = c[coff + m·crs + j·ccs] (+ bias per column).
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 16;
layout(constant_id = 4) const uint TM = 4;
layout(constant_id = 5) const uint TN = 4;
layout(constant_id = 6) const uint MODE = 0;

const uint FWD = 0, DGRAD = 1, WGRAD = 2, UPS = 3, PLAIN = 4;
const uint ACC = 1, BIAS = 2, SPLIT = 4;

layout(std430, binding = 0) readonly buffer ABuf { float a[]; };
layout(std430, binding = 1) readonly buffer BBuf { float b[]; };
layout(std430, binding = 2) buffer CBuf { float c[]; };
layout(std430, binding = 3) readonly buffer Bias { float bias[]; };
// Per kernel row k of a convolution: (offset into the gathered tensor, kd | kh<<10 | kw<<20,
// offset into the weight for DGRAD, unused).
layout(std430, binding = 4) readonly buffer KTab { uvec4 ktab[]; };

layout(push_constant) uniform P {
	uint M, N, K, flags;
	uint aoff, ars, acs;  // FWD/DGRAD/UPS: weight offset; WGRAD: dy offset and sample stride
	uint boff, brs, bcs;  // conv modes: gathered tensor offset and sample stride
	uint coff, crs, ccs;  // conv modes: output offset and sample stride
	uint in0, in1, in2;   // the gathered tensor's spatial size
	uint out0, out1, out2; // the column grid (output voxels per sample)
	uint s0, s1, s2;
	int p0, p1, p2;
	uint chunk;           // WGRAD: reduction values per workgroup z
	uint cspat;           // UPS: voxels per output channel
	uint kk;              // kernel voxels
} p;

const uint WG = (BM / TM) * (BN / TN);
// Rows of the tiles in shared memory are padded by one value, so that invocations storing
// along the reduction (consecutive k, a row apart) hit different banks.
const uint AST = BM + 1, BST = BN + 1;
shared float As[BK * AST];
shared float Bs[BK * BST];

// Column geometry of one column of a gathered matrix: where the window of column j starts
// (may be negative) and the tensor base of its sample.
struct Col {
	int base;
	int d, h, w;
	bool ok;
};

Col column(uint j) {
	Col c;
	uint P = p.out0 * p.out1 * p.out2;
	uint n = j / P, q = j - n * P;
	uint od = q / (p.out1 * p.out2);
	uint r = q - od * p.out1 * p.out2;
	uint oh = r / p.out2, ow = r - oh * p.out2;
	c.ok = j < p.N || MODE == WGRAD;
	if (MODE == DGRAD) {
		// Output voxel that input voxel (od, oh, ow) reaches through offset k: (i + p − k)/s.
		c.d = int(od) + p.p0;
		c.h = int(oh) + p.p1;
		c.w = int(ow) + p.p2;
	} else {
		c.d = int(od * p.s0) - p.p0;
		c.h = int(oh * p.s1) - p.p1;
		c.w = int(ow * p.s2) - p.p2;
	}
	c.base = int(p.boff + n * p.brs);
	return c;
}

// im2col value of kernel row k at a column.
float gatherIm2col(Col c, uint k) {
	uvec4 t = ktab[k];
	int d = c.d + int(t.y & 1023u), h = c.h + int((t.y >> 10) & 1023u), w = c.w + int(t.y >> 20);
	if (d < 0 || h < 0 || w < 0 || d >= int(p.in0) || h >= int(p.in1) || w >= int(p.in2)) {
		return 0.0;
	}
	return b[c.base + int(t.x) + (d * int(p.in1) + h) * int(p.in2) + w];
}

// dy value that kernel row k (cout, offset) sends to an input voxel's column.
float gatherDgrad(Col c, uint k) {
	uvec4 t = ktab[k];
	int d = c.d - int(t.y & 1023u), h = c.h - int((t.y >> 10) & 1023u), w = c.w - int(t.y >> 20);
	if (d < 0 || h < 0 || w < 0) {
		return 0.0;
	}
	if (p.s0 != 1 || p.s1 != 1 || p.s2 != 1) {
		if (d % int(p.s0) != 0 || h % int(p.s1) != 0 || w % int(p.s2) != 0) {
			return 0.0;
		}
		d /= int(p.s0);
		h /= int(p.s1);
		w /= int(p.s2);
	}
	if (d >= int(p.in0) || h >= int(p.in1) || w >= int(p.in2)) {
		return 0.0;
	}
	return b[c.base + int(t.x) + (d * int(p.in1) + h) * int(p.in2) + w];
}

void main() {
	uint tid = gl_LocalInvocationID.x;
	uint mTiles = (p.M + BM - 1) / BM;
	uint tile = gl_WorkGroupID.x + gl_NumWorkGroups.x * gl_WorkGroupID.y;
	uint nTiles = (p.N + BN - 1) / BN;
	if (tile >= mTiles * nTiles) {
		return;
	}
	uint m0 = (tile % mTiles) * BM, n0 = (tile / mTiles) * BN;
	uint z = gl_WorkGroupID.z;
	uint tr = tid / (BN / TN), tc = tid % (BN / TN);

	// The reduction range of this workgroup.
	uint k0 = 0, k1 = p.K;
	if (MODE == WGRAD) {
		k0 = z * p.chunk;
		k1 = min(p.K, k0 + p.chunk);
	}

	// Columns loaded by this invocation: for FWD and DGRAD the B tile is read with the
	// column fastest, so each invocation always loads the same columns of the tile.
	const uint BPER = (BK * BN) / WG; // B values per invocation per step
	Col bcol[BPER];
	if (MODE == FWD || MODE == DGRAD) {
		for (uint l = 0; l < BPER; l++) {
			uint e = tid + l * WG;
			bcol[l] = column(n0 + e % BN);
		}
	}

	float acc[TM * TN];
	for (uint i = 0; i < TM * TN; i++) {
		acc[i] = 0.0;
	}

	uint upsOut = 0;
	for (uint kb = k0; kb < k1; kb += BK) {
		// A tile: BM×BK, k fastest.
		for (uint e = tid; e < BM * BK; e += WG) {
			uint mi = e / BK, ki = e % BK;
			uint m = m0 + mi, k = kb + ki;
			float v = 0.0;
			if (m < p.M && k < k1) {
				if (MODE == FWD) {
					v = a[p.aoff + m * p.K + k];
				} else if (MODE == DGRAD) {
					v = a[p.aoff + ktab[k].z + m * p.kk];
				} else if (MODE == WGRAD) {
					uint P = p.out0 * p.out1 * p.out2;
					uint n = k / P;
					v = a[p.aoff + n * p.ars + m * P + (k - n * P)];
				} else if (MODE == UPS) {
					v = a[p.aoff + (k * p.M + m) * p.kk + z];
				} else {
					v = a[p.aoff + m * p.ars + k * p.acs];
				}
			}
			As[ki * AST + mi] = v;
		}
		// B tile: BK×BN.
		if (MODE == FWD || MODE == DGRAD) {
			for (uint l = 0; l < BPER; l++) {
				uint e = tid + l * WG;
				uint ki = e / BN, ni = e % BN;
				uint k = kb + ki;
				float v = 0.0;
				if (k < k1 && bcol[l].ok) {
					v = MODE == FWD ? gatherIm2col(bcol[l], k) : gatherDgrad(bcol[l], k);
				}
				Bs[ki * BST + ni] = v;
			}
		} else if (MODE == WGRAD) {
			// B[r][c] = im2col(x) at reduction index r (a column of the convolution) and
			// kernel row c; r fastest, as consecutive r are consecutive voxels.
			for (uint e = tid; e < BK * BN; e += WG) {
				uint ni = e / BK, ki = e % BK;
				uint r = kb + ki, cidx = n0 + ni;
				float v = 0.0;
				if (r < k1 && cidx < p.N) {
					v = gatherIm2col(column(r), cidx);
				}
				Bs[ki * BST + ni] = v;
			}
		} else {
			for (uint e = tid; e < BK * BN; e += WG) {
				uint ki = e / BN, ni = e % BN;
				uint k = kb + ki, j = n0 + ni;
				float v = 0.0;
				if (k < k1 && j < p.N) {
					if (MODE == UPS) {
						uint P = p.out0 * p.out1 * p.out2;
						uint n = j / P;
						v = b[p.boff + n * p.brs + k * P + (j - n * P)];
					} else {
						v = b[p.boff + k * p.brs + j * p.bcs];
					}
				}
				Bs[ki * BST + ni] = v;
			}
		}
		barrier();
		for (uint ki = 0; ki < BK; ki++) {
			float av[TM], bv[TN];
			for (uint i = 0; i < TM; i++) {
				av[i] = As[ki * AST + tr + i * (BM / TM)];
			}
			for (uint j = 0; j < TN; j++) {
				bv[j] = Bs[ki * BST + tc + j * (BN / TN)];
			}
			for (uint i = 0; i < TM; i++) {
				for (uint j = 0; j < TN; j++) {
					acc[i * TN + j] += av[i] * bv[j];
				}
			}
		}
		barrier();
	}

	for (uint i = 0; i < TM; i++) {
		uint m = m0 + tr + i * (BM / TM);
		if (m >= p.M) {
			continue;
		}
		for (uint j = 0; j < TN; j++) {
			uint col = n0 + tc + j * (BN / TN);
			if (col >= p.N) {
				continue;
			}
			float v = acc[i * TN + j];
			uint o;
			if (MODE == FWD || MODE == DGRAD) {
				uint P = p.out0 * p.out1 * p.out2;
				uint n = col / P;
				o = p.coff + n * p.crs + m * P + (col - n * P);
			} else if (MODE == WGRAD) {
				o = p.coff + m * p.N + col;
				if ((p.flags & SPLIT) != 0) {
					o += z * p.M * p.N;
				}
			} else if (MODE == UPS) {
				// Input voxel (d, h, w) with kernel offset z = (a, b, c) lands on
				// (d·s0 + a, h·s1 + b, w·s2 + c) of the output grid (in0, in1, in2).
				uint P = p.out0 * p.out1 * p.out2;
				uint n = col / P, q = col - n * P;
				uint d = q / (p.out1 * p.out2), r = q - d * p.out1 * p.out2;
				uint h = r / p.out2, w = r - h * p.out2;
				uint ka = z / (p.s1 * p.s2), kr = z - ka * p.s1 * p.s2;
				uint kb2 = kr / p.s2, kc = kr - kb2 * p.s2;
				uint pos = ((d * p.s0 + ka) * p.in1 + h * p.s1 + kb2) * p.in2 + w * p.s2 + kc;
				o = p.coff + n * p.crs + m * p.cspat + pos;
			} else {
				o = p.coff + m * p.crs + col * p.ccs;
			}
			if ((p.flags & BIAS) != 0) {
				v += bias[MODE == PLAIN ? col : m];
			}
			if ((p.flags & ACC) != 0) {
				v += c[o];
			}
			c[o] = v;
		}
	}
}
