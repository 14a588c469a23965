"""Writes imageloss_golden.json: engine.ImageLoss's value and gradient computed by PyTorch
(torch_imageloss.py) in float64 on small random images. TestImageLossTorch compares.

    cd plugins/engine/testdata && /usr/bin/python3 torch_imageloss_golden.py
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_imageloss import image_loss  # noqa: E402

COMMAND = "cd plugins/engine/testdata && /usr/bin/python3 torch_imageloss_golden.py"

CASES = [
    dict(name="l1 + ssim 7x7", shape=[2, 1, 12, 10], cfg=dict(L1=0.16, SSIM=0.84, Window=7, Range=1.0)),
    dict(name="ssim 3x3 two channels range 2", shape=[1, 2, 6, 9], cfg=dict(L1=0.0, SSIM=1.0, Window=3, Range=2.0)),
]


def flat(t):
    return [float("%.9g" % v) for v in t.detach().reshape(-1).tolist()]


def main():
    out = {"command": COMMAND, "cases": []}
    for i, c in enumerate(CASES):
        torch.manual_seed(i + 1)
        # float32 values, so the engine sees exactly these inputs; computed in float64.
        y = torch.rand(c["shape"]).double().requires_grad_()
        t = (y.detach() + 0.2 * torch.randn(c["shape"]).float().double()).float().double()
        loss = image_loss(y, t, c["cfg"])
        loss.backward()
        out["cases"].append(dict(name=c["name"], shape=c["shape"], cfg=c["cfg"], output=flat(y),
                                 target=flat(t), loss=float(loss), grad=flat(y.grad)))
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "imageloss_golden.json"), "w") as f:
        json.dump(out, f)
        f.write("\n")


if __name__ == "__main__":
    main()
