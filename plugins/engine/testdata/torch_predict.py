"""Sliding-window prediction of a whole volume by the engine's U-Net in PyTorch, written as
nnU-Net v2's predict_sliding_window_return_logits does it, for cmd/benchpredict: the
Gaussian importance map (scaled to 10, stored in the sums' type), each window's output
(its mirrored passes averaged) multiplied by it and added into the class sums, the map
added into the weight sums, one in-place division, argmax. Prints one JSON line: seconds,
CPU seconds and peak resident memory of this process.

    /usr/bin/python3 torch_predict.py --spec JSON --weights FILE --input FILE --output FILE

The spec (from cmd/benchpredict) gives the network (refnets.Model), the volume's dims
(X, Y, Z), the window starts per axis (infer.Steps: nnU-Net's formula; the engine rounds
halves away from zero where NumPy rounds them to even, so the starts are passed to use the
same windows), whether to mirror (all 8 flips of the three axes) and the sums' type
("half", nnU-Net's, or "float32"). The network's weights are the engine's, raw float32 in
the engine's parameter order (torch_unet.UNet.ordered); the input is the engine's
normalised image, raw float32, X fastest; the output is the class of every voxel, uint8.

As the engine's segmentation plugin does, the scores summed are softmax probabilities
(nnU-Net sums logits; the softmax of a window costs little beside the network).
"""
import argparse
import itertools
import json
import math
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_unet import UNet  # noqa: E402


def status_mib(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) / 1024
    return 0.0


def gaussian(patch, dtype):
    """infer.Gaussian (centre (p-1)/2, sigma p/8, maximum 1) times nnU-Net's
    value_scaling_factor 10, in dtype, zeros raised to the smallest value as nnU-Net does.
    patch is (D, H, W)."""
    axes = []
    for p in patch:
        c, s = (p - 1) / 2, p / 8
        a = np.array([math.exp(-(i - c) ** 2 / (2 * s * s)) for i in range(p)])
        axes.append(a / a.max())
    g = axes[0][:, None, None] * axes[1][None, :, None] * axes[2][None, None, :]
    g = torch.from_numpy(g.astype(np.float32) * 10).to(dtype)
    g[g == 0] = g[g != 0].min()
    return g


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    s = json.loads(a.spec)
    m = s["model"]
    torch.set_num_threads(a.threads)

    net = UNet(1, m["classes"], m["widths"], m["kernels"], m["pools"], 2, m["maxpool"],
               "instance", 0.01, 3)
    w = np.fromfile(a.weights, dtype="<f4")
    off = 0
    with torch.no_grad():
        for p in net.ordered:
            n = p.numel()
            p.copy_(torch.from_numpy(w[off:off + n]).view(p.shape))
            off += n
    if off != len(w):
        sys.exit("torch_predict.py: %d weights for %d parameters" % (len(w), off))
    net.eval()
    base = status_mib("VmRSS:")

    X, Y, Z = s["dims"]
    data = torch.from_numpy(np.fromfile(a.input, dtype="<f4").reshape(1, Z, Y, X))
    K = m["classes"]
    patch = tuple(m["patch"])  # D, H, W
    sx, sy, sz = s["steps"]
    dtype = {"half": torch.half, "float32": torch.float32}[s["sums"]]
    axes = [c for i in range(3) for c in itertools.combinations((2, 3, 4), i + 1)] if s["mirror"] else []

    t0, c0 = time.perf_counter(), time.process_time()
    with torch.inference_mode():
        predicted = torch.zeros((K, Z, Y, X), dtype=dtype)
        n_predictions = torch.zeros((Z, Y, X), dtype=dtype)
        g = gaussian(patch, dtype)
        for z in sz:
            for y in sy:
                for x in sx:
                    sl = (slice(z, z + patch[0]), slice(y, y + patch[1]), slice(x, x + patch[2]))
                    work = data[(slice(None),) + sl][None]
                    pred = torch.softmax(net(work), 1)
                    for ax in axes:
                        pred += torch.flip(torch.softmax(net(torch.flip(work, ax)), 1), ax)
                    if axes:
                        pred /= len(axes) + 1
                    pred = pred[0]
                    pred *= g
                    predicted[(slice(None),) + sl] += pred
                    n_predictions[sl] += g
        torch.div(predicted, n_predictions, out=predicted)
        if torch.any(torch.isinf(predicted)):
            sys.exit("torch_predict.py: infinite scores: the sums overflowed")
        seg = predicted.argmax(0)
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    seg.to(torch.uint8).numpy().tofile(a.output)
    print(json.dumps({"impl": "pytorch", "seconds": secs, "cpu_seconds": cpu,
                      "peak_mib": status_mib("VmHWM:"), "base_mib": base,
                      "backend": "torch %s, %d threads, %s sums" % (torch.__version__, torch.get_num_threads(), s["sums"])}))


if __name__ == "__main__":
    main()
