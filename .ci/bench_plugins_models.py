"""PyTorch side of `make bench-plugins-models` (.ci/bench-plugins-models.sh).

Each built-in plugin's Go benchmark (BenchmarkTrainStep in its package) writes a JSON
description of its default model; this script builds the same model in PyTorch 1.13
(Debian python3-torch), times the same training step (forward, loss, backward, gradient
clipping, AdamW) and prints one JSON line: step time, CPU time and samples/s.

    /usr/bin/python3 .ci/bench_plugins_models.py --spec spec.json --steps 3 --threads 2

A plugin adds its row by writing a spec with its own "model" name from its benchmark and
a builder here: a function taking the spec and returning (module, loss_fn), loss_fn()
computing the loss of one batch, registered in MODELS.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "plugins", "engine", "testdata"))
# The engine's U-Net and image loss in PyTorch, each checked against the engine by a golden test.
from torch_unet import UNet, dice_ce  # noqa: E402
from torch_imageloss import image_loss  # noqa: E402


def dims_of(m):
    return 2 if m["patch"][0] == 1 else 3


def shape_of(m):
    p = m["patch"][1:] if dims_of(m) == 2 else m["patch"]
    return [m["batch"], m["in"]] + list(p)


def unet(m):
    """engine.BuildUNet ending in softmax cross-entropy + soft Dice (segmentation)."""
    net = UNet(m["in"], m["out"], m["widths"], m["kernels"], m["pools"], 2, m["maxpool"],
               m["norm"], m["slope"], dims_of(m))
    shape = shape_of(m)
    x = torch.randn(shape)
    y = torch.randint(0, m["out"], [shape[0]] + shape[2:])
    return net, lambda: dice_ce(net(x), y)


def resunet(m):
    """engine.BuildResUNet: the U-Net body, a 1×1 head added to the input, L1 + SSIM."""
    if dims_of(m) != 2:
        raise SystemExit("resunet: 2D only")
    net = UNet(m["in"], m["out"], m["widths"], m["kernels"], m["pools"], 2, m["maxpool"],
               m["norm"], m["slope"], 2)
    t = torch.rand(shape_of(m))
    x = (t * torch.empty_like(t).exponential_()).clamp(max=1)
    return net, lambda: image_loss(x + net(x), t, m["loss"])


class CNN(torch.nn.Module):
    """plugins/internal/cnn.Build: per stage `convs` times conv 3×3(×3) (padding 1, bias) →
    norm (affine) → LeakyReLU, the first conv of every stage after the first with stride 2
    on each axis longer than one voxel; global average pooling ("avg") or the map
    flattened ("flatten"); a dense layer."""

    def __init__(self, m):
        super().__init__()
        nn = torch.nn
        dims = dims_of(m)
        Conv = nn.Conv3d if dims == 3 else nn.Conv2d
        Norm = {"batch": nn.BatchNorm3d if dims == 3 else nn.BatchNorm2d,
                "instance": nn.InstanceNorm3d if dims == 3 else nn.InstanceNorm2d}[m["norm"]]
        size = list(m["patch"]) if dims == 3 else list(m["patch"][1:])
        mods, prev = [], m["in"]
        for s, w in enumerate(m["widths"]):
            for c in range(m["convs"]):
                stride = [2 if (s > 0 and c == 0 and d > 1) else 1 for d in size]
                mods += [Conv(prev, w, 3, stride=stride, padding=1, bias=True),
                         Norm(w, eps=1e-5, affine=True), nn.LeakyReLU(m["slope"])]
                size = [(d + 2 - 3) // st + 1 for d, st in zip(size, stride)]
                prev = w
        self.body = nn.Sequential(*mods)
        self.avg = m["pool"] == "avg"
        n = prev
        if not self.avg:
            for d in size:
                n *= d
        self.head = nn.Linear(n, m["out"])

    def forward(self, x):
        x = self.body(x)
        x = x.mean(tuple(range(2, x.dim()))) if self.avg else x.flatten(1)
        return self.head(x)


def cnn(m):
    """An image-level encoder with a regression ("mse") or classification heads ("heads":
    softmax cross-entropy per head, mean over heads) loss."""
    net = CNN(m)
    x = torch.randn(shape_of(m))
    if m["loss"] == "mse":
        y = torch.rand(m["batch"], 1)
        return net, lambda: torch.nn.functional.mse_loss(net(x), y)
    heads = m["heads"]
    y = [torch.randint(0, k, (m["batch"],)) for k in heads]

    def loss():
        out, off, total = net(x), 0, 0
        for k, t in zip(heads, y):
            total = total + torch.nn.functional.cross_entropy(out[:, off:off + k], t)
            off += k
        return total / len(heads)
    return net, loss


class CenterNet(torch.nn.Module):
    """plugins/detection's centernet network (engine.BuildUNetHead): the U-Net body
    without its 1×1 head (torch_unet.UNet), the `side` coordinate channels (input
    channels 1 and 2) joined to its output, a 3×3 convolution of `head_width` channels →
    instance norm (affine) → LeakyReLU, and a 1×1 convolution to `out` channels."""

    def __init__(self, m):
        super().__init__()
        nn = torch.nn
        self.body = UNet(m["in"], 1, m["widths"], m["kernels"], m["pools"], 2, m["maxpool"],
                         m["norm"], m["slope"], 2)
        self.body.head = nn.Identity()
        self.side = m["side"]
        self.hidden = nn.Sequential(
            nn.Conv2d(m["widths"][0] + m["side"], m["head_width"], 3, padding=1, bias=True),
            nn.InstanceNorm2d(m["head_width"], eps=1e-5, affine=True), nn.LeakyReLU(m["slope"]))
        self.out = nn.Conv2d(m["head_width"], m["out"], 1, bias=True)
        with torch.no_grad():
            self.out.bias[0] = -2.1972  # logit 0.1, the plugin's heatmap prior

    def forward(self, x):
        f = torch.cat([self.body(x), x[:, x.shape[1] - self.side:]], 1)
        return self.out(self.hidden(f))


def centernet(m):
    """The detection plugin's 2D-boxes lane (plugins/detection/head.go boxLoss), the same
    loss computed with tensor operations: CenterNet's penalty-reduced focal loss (α 2,
    β 4) on the heatmap channel over elliptic Gaussian targets, divided by each sample's
    centres; L1 on the offset (channels 1–2) and log size (3–4) at each centre, mean over
    objects; softmax cross-entropy of each attribute's logits over each centre's 3×3
    neighbourhood, mean over those pixels; the sum averaged over the batch. Targets are
    random tooth-sized boxes (10–40 pixels), `objects` per sample, as the Go benchmark
    draws them (another random stream: the cost, not the values, is compared)."""
    if m["maxpool"] or m["norm"] != "instance":
        raise SystemExit("centernet: strided-conv U-Net with instance norm only")
    net = CenterNet(m)
    N, (_, H, W), K, groups = m["batch"], m["patch"], m["objects"], m["groups"]
    x = torch.randn(N, m["in"], H, W)
    gy, gx = torch.meshgrid(torch.arange(H, dtype=torch.float32),
                            torch.arange(W, dtype=torch.float32), indexing="ij")
    x[:, 1], x[:, 2] = 2 * (gx + 0.5) / W - 1, 2 * (gy + 0.5) / H - 1
    bw, bh = 10 + 30 * torch.rand(N, K), 10 + 30 * torch.rand(N, K)
    cx, cy = bw / 2 + torch.rand(N, K) * (W - bw), bh / 2 + torch.rand(N, K) * (H - bh)
    ix, iy = cx.floor(), cy.floor()
    sx, sy = (0.09 * bw).clamp(min=0.8), (0.09 * bh).clamp(min=0.8)
    dx, dy = gx - ix[..., None, None], gy - iy[..., None, None]
    g = torch.exp(-dx ** 2 / (2 * sx[..., None, None] ** 2) - dy ** 2 / (2 * sy[..., None, None] ** 2))
    g = g * ((dx.abs() <= (3 * sx).ceil()[..., None, None]) & (dy.abs() <= (3 * sy).ceil()[..., None, None]))
    heat = g.amax(1)  # N, H, W; exactly 1 at each centre
    cell = (iy * W + ix).long()  # N, K
    reg = torch.stack([cx - ix, cy - iy, (bw / 25).log(), (bh / 25).log()], 1)  # N, 4, K
    nbr = torch.stack([((iy + j).clamp(0, H - 1) * W + (ix + i).clamp(0, W - 1)).long()
                       for j in (-1, 0, 1) for i in (-1, 0, 1)], 2).flatten(1)  # N, 9K
    attrs = [torch.randint(0, k, (N, K)).repeat_interleave(9, 1) for k in groups]

    def loss():
        out = net(x).flatten(2)  # N, C, H·W
        logp, log1p = -torch.nn.functional.softplus(-out[:, 0]), -torch.nn.functional.softplus(out[:, 0])
        p, y = logp.exp(), heat.flatten(1)
        pos = y >= 1
        focal = torch.where(pos, -(1 - p) ** 2 * logp, -(1 - y) ** 4 * p ** 2 * log1p)
        total = focal.sum(1) / pos.sum(1).clamp(min=1)
        at = out[:, 1:5].gather(2, cell[:, None].expand(-1, 4, -1))
        total = total + (at - reg).abs().sum((1, 2)) / K
        ch = 5
        for k, t in zip(groups, attrs):
            lg = out[:, ch:ch + k].gather(2, nbr[:, None].expand(-1, k, -1))  # N, k, 9K
            total = total + torch.nn.functional.cross_entropy(lg, t, reduction="none").mean(1)
            ch += k
        return total.mean()
    return net, loss


MODELS = {"unet": unet, "resunet": resunet, "cnn": cnn, "centernet": centernet}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", required=True, help="JSON file written by a BenchmarkTrainStep")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    with open(a.spec) as f:
        m = json.load(f)
    if m["model"] not in MODELS:
        print(json.dumps({"error": "no PyTorch builder for model %r" % m["model"]}))
        return
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    net, loss_fn = MODELS[m["model"]](m)
    opt = torch.optim.AdamW(net.parameters(), m["lr"], weight_decay=m["weight_decay"])
    times, cpus = [], []
    for i in range(a.steps + 1):  # the first step warms up
        t, c = time.perf_counter(), time.process_time()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), m["clip"])
        opt.step()
        if i > 0:
            times.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
    med = statistics.median(times)
    print(json.dumps({"step_ms": 1000 * med, "cpu_ms": 1000 * statistics.median(cpus),
                      "samples_per_s": m["batch"] / med,
                      "backend": "torch %s, %d threads" % (torch.__version__, torch.get_num_threads())}))


if __name__ == "__main__":
    main()
