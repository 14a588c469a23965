"""The engine's U-Net (engine.BuildUNet) in PyTorch, parameters in the engine's order.

Imported by torch_golden.py and torch_bench.py; run with Debian's /usr/bin/python3
(python3-torch 1.13).
"""
import torch
import torch.nn as nn


class UNet(nn.Module):
    """nnU-Net PlainConvUNet as engine.BuildUNet builds it: per stage `convs` times
    conv(k, padding k//2, bias) -> norm(affine, eps 1e-5) -> LeakyReLU(slope); down-sampling
    by max-pool or by a strided first conv; up by ConvTranspose(kernel = stride = pool);
    skip concatenation [up, skip]; 1x1 head."""

    def __init__(self, cin, classes, widths, kernels, pools, convs=2, maxpool=False,
                 norm="instance", slope=0.01, dims=3):
        super().__init__()
        Conv = nn.Conv3d if dims == 3 else nn.Conv2d
        ConvT = nn.ConvTranspose3d if dims == 3 else nn.ConvTranspose2d
        Norm = {"instance": nn.InstanceNorm3d if dims == 3 else nn.InstanceNorm2d,
                "batch": nn.BatchNorm3d if dims == 3 else nn.BatchNorm2d}[norm]
        Pool = nn.MaxPool3d if dims == 3 else nn.MaxPool2d

        def ax(t):  # engine triples are (D, H, W); 2D drops D
            return tuple(t) if dims == 3 else tuple(t[1:])

        self.ordered = []  # parameters in the engine's creation order

        def stage(cin_, cout, k, first_stride):
            mods = []
            for c in range(convs):
                conv = Conv(cin_ if c == 0 else cout, cout, ax(k),
                            stride=ax(first_stride) if c == 0 else 1,
                            padding=tuple(x // 2 for x in ax(k)), bias=True)
                nrm = Norm(cout, eps=1e-5, affine=True)
                self.ordered += [conv.weight, conv.bias, nrm.weight, nrm.bias]
                mods += [conv, nrm, nn.LeakyReLU(slope)]
            return nn.Sequential(*mods)

        st = len(widths)
        self.maxpool = maxpool
        self.enc = nn.ModuleList()
        self.pools = nn.ModuleList()
        prev = cin
        for s in range(st):
            first = (1, 1, 1)
            if s > 0:
                if maxpool:
                    self.pools.append(Pool(ax(pools[s - 1])))
                else:
                    first = pools[s - 1]
            self.enc.append(stage(prev, widths[s], kernels[s], first))
            prev = widths[s]
        self.ups = nn.ModuleList()
        self.dec = nn.ModuleList()
        for s in range(st - 2, -1, -1):
            up = ConvT(widths[s + 1], widths[s], ax(pools[s]), stride=ax(pools[s]), bias=True)
            self.ordered += [up.weight, up.bias]
            self.ups.append(up)
            self.dec.append(stage(2 * widths[s], widths[s], kernels[s], (1, 1, 1)))
        self.head = Conv(widths[0], classes, 1, bias=True)
        self.ordered += [self.head.weight, self.head.bias]

    def forward(self, x):
        skips = []
        for s, enc in enumerate(self.enc):
            if s > 0 and self.maxpool:
                x = self.pools[s - 1](x)
            x = enc(x)
            skips.append(x)
        for i, (up, dec) in enumerate(zip(self.ups, self.dec)):
            x = dec(torch.cat([up(x), skips[-(i + 2)]], 1))
        return self.head(x)


def dice_ce(logits, labels, w_ce=1.0, w_dice=1.0, smooth=1e-5):
    """engine.Loss: mean cross-entropy + (1 - mean soft Dice per sample and foreground
    class), softmax probabilities, smooth 1e-5."""
    ce = nn.functional.cross_entropy(logits, labels)
    p = torch.softmax(logits, 1)
    g = nn.functional.one_hot(labels, logits.shape[1]).movedim(-1, 1).to(p.dtype)
    axes = tuple(range(2, logits.dim()))
    inter = (p * g).sum(axes)
    den = p.sum(axes) + g.sum(axes)
    dc = (2 * inter + smooth) / (den + smooth)
    return w_ce * ce + w_dice * (1 - dc[:, 1:].mean())
