#version 450
// Gradient clipping's factor, as torch.nn.utils.clip_grad_norm_: from the sum of squared
// gradients (scal[0], summed in fixed order by rowsum), the norm (scal[0]) and the factor
// min(1, maxNorm / (norm + 1e-6)) (scal[1]; 1 without clipping, maxNorm 0), which the
// optimizer applies to every gradient it reads. A norm that is not finite makes the factor
// -1: the optimizer skips the step (engine.StepResult.Skipped).
layout(local_size_x = 1) in;
layout(std430, binding = 0) readonly buffer Step { float stp[]; };
layout(std430, binding = 1) buffer Scal { float scal[]; };
layout(push_constant) uniform P {
	uint maxNormAt, normAt, factorAt, pad;
} p;

void main() {
	float norm = sqrt(scal[p.normAt]);
	float maxNorm = stp[p.maxNormAt];
	float k = 1.0;
	if (isnan(norm) || isinf(norm)) {
		k = -1.0;
	} else if (maxNorm > 0.0) {
		k = min(1.0, maxNorm / (norm + 1e-6));
	}
	scal[p.normAt] = norm;
	scal[p.factorAt] = k;
}
