"""Writes unet_golden.json: small 2D and 3D U-Nets (engine.BuildUNet's architecture) with
PyTorch's initial weights, their input, labels, logits, loss, gradients and the weights
after one AdamW step. The engine's TestTorchGolden loads the weights and compares.

    cd plugins/engine/testdata && /usr/bin/python3 torch_golden.py
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_unet import UNet, dice_ce  # noqa: E402

COMMAND = "cd plugins/engine/testdata && /usr/bin/python3 torch_golden.py"

CASES = [
    # nnU-Net's default: strided convolutions down, instance norm; two input channels.
    dict(name="2d strided instance norm", cin=2, classes=3, widths=[4, 8, 16],
         kernels=[[1, 3, 3]] * 3, pools=[[1, 2, 2]] * 2, maxpool=False, norm="instance",
         batch=2, patch=[1, 16, 12]),
    # Anisotropic 3D: 1x3x3 kernels and 1x2x2 pooling first, max-pool, batch norm.
    dict(name="3d anisotropic max-pool batch norm", cin=1, classes=2, widths=[4, 6, 8],
         kernels=[[1, 3, 3], [3, 3, 3], [3, 3, 3]], pools=[[1, 2, 2], [2, 2, 2]],
         maxpool=True, norm="batch", batch=2, patch=[4, 8, 8]),
]

LR, WD = 1e-2, 1e-1


def flat(t):
    return [float("%.8g" % v) for v in t.detach().reshape(-1).tolist()]


def run(c):
    torch.manual_seed(len(c["name"]))
    dims = 2 if c["patch"][0] == 1 else 3
    net = UNet(c["cin"], c["classes"], c["widths"], c["kernels"], c["pools"], 2,
               c["maxpool"], c["norm"], 0.01, dims)
    with torch.no_grad():  # move norm scales and all biases off 1 and 0
        for p in net.ordered:
            if p.dim() == 1:
                p.add_(0.3 * torch.randn_like(p))
    assert len(net.ordered) == len(list(net.parameters()))
    sp = c["patch"][1:] if dims == 2 else c["patch"]
    x = torch.randn([c["batch"], c["cin"]] + sp)
    y = torch.randint(0, c["classes"], [c["batch"]] + sp)
    params = [flat(p) for p in net.ordered]
    shapes = [list(p.shape) for p in net.ordered]
    logits = net(x)
    loss = dice_ce(logits, y)
    loss.backward()
    grads = [flat(p.grad) for p in net.ordered]
    # As the engine: weight decay on weights, none on biases and norm parameters.
    opt = torch.optim.AdamW([
        {"params": [p for p in net.ordered if p.dim() > 1], "weight_decay": WD},
        {"params": [p for p in net.ordered if p.dim() == 1], "weight_decay": 0.0}], LR)
    opt.step()
    out = dict(c)
    out.update(input=flat(x), labels=y.reshape(-1).tolist(), param_shapes=shapes,
               params=params, logits=flat(logits), loss=loss.item(), grads=grads,
               after_adamw=[flat(p) for p in net.ordered], lr=LR, weight_decay=WD)
    return out


def main():
    torch.set_num_threads(1)
    doc = {"command": COMMAND, "torch": torch.__version__, "cases": [run(c) for c in CASES]}
    with open("unet_golden.json", "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
