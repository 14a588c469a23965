"""engine.ImageLoss in PyTorch: L1·mean|y − t| + SSIM·(1 − mean SSIM(y, t)).

Imported by torch_imageloss_golden.py (checked against the engine by TestImageLossTorch)
and by .ci/bench_plugins_models.py; run with Debian's /usr/bin/python3 (python3-torch 1.13).
"""
import torch.nn.functional as F


def ssim_valid(y, t, k, rng):
    """SSIM as skimage computes it with a k×k box window (sample covariances, constants
    (0.01·rng)² and (0.03·rng)²), averaged over the window positions wholly inside each
    image, of every sample and channel of N×C×H×W tensors."""
    n = k * k
    cn = n / (n - 1)

    def pool(z):
        return F.avg_pool2d(z, k, stride=1)

    mx, mt = pool(y), pool(t)
    vx = cn * (pool(y * y) - mx * mx)
    vt = cn * (pool(t * t) - mt * mt)
    vxt = cn * (pool(y * t) - mx * mt)
    c1, c2 = (0.01 * rng) ** 2, (0.03 * rng) ** 2
    s = (2 * mx * mt + c1) * (2 * vxt + c2) / ((mx * mx + mt * mt + c1) * (vx + vt + c2))
    return s.mean()


def image_loss(y, t, cfg):
    """cfg has engine.ImageLossConfig's fields: L1, SSIM, Window, Range."""
    loss = cfg["L1"] * (y - t).abs().mean()
    if cfg["SSIM"] > 0:
        loss = loss + cfg["SSIM"] * (1 - ssim_valid(y, t, cfg["Window"], cfg["Range"]))
    return loss
