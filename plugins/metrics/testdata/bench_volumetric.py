#!/usr/bin/python3
"""Times scipy/skimage on the shapes of the Go benchmarks in package amid/plugins/metrics.

    /usr/bin/python3 plugins/metrics/testdata/bench_volumetric.py

Prints wall and CPU seconds per operation for each benchmark (CPU time is the fairer
figure on a shared machine; the Go benchmarks report it as cpu-s/op), to set beside `go test -bench` output:
EDT256 (scipy distance_transform_edt with sampling), Label256 (scipy.ndimage.label, 26
connectivity), HD95SurfaceDice256 (DeepMind compute_surface_distances as the library
computes it, then HD95, surface Dice at 5 mm and MASD) and CLDice128 (skimage skeletonize
twice plus the clDice sums). The shapes use the integer formulas of the Go benchmarks.
"""
import os
import sys
import time

import numpy as np
from scipy import ndimage
from skimage.morphology import skeletonize

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_volumetric import cldice, deepmind, robust_hd, sdice, avg  # noqa: E402


def grid(n):
    return np.meshgrid(np.arange(n), np.arange(n), np.arange(n), indexing="ij")  # z, y, x


def ellipsoid(n, c, r):
    z, y, x = grid(n)
    rx, ry, rz = r
    return ((ry * rz * (x - c[0])) ** 2 + (rx * rz * (y - c[1])) ** 2 + (rx * ry * (z - c[2])) ** 2) <= (rx * ry * rz) ** 2


def pattern(n):
    z, y, x = grid(n)
    return (x * x + 3 * y * y + 5 * z * z + x * y) % 11 < 4


def tubes(n, off):
    z, y, x = grid(n)
    h = n // 2
    return (((y - h - off) ** 2 + (z - h) ** 2 <= 16) & (x >= 8) & (x < n - 8) |
            ((x - h // 2) ** 2 + (z - h) ** 2 <= 9) & (y >= 8) & (y < n - 8) |
            ((x - h - h // 2 + off) ** 2 + (z - h) ** 2 <= 9) & (y >= 16) & (y < n - 16) |
            ((x - h) ** 2 + (y - h // 2) ** 2 <= 4) & (z >= 8) & (z < n - 8))


def timeit(name, f, reps=3):
    runs = [_once(f) for _ in range(reps)]
    wall = min(r[0] for r in runs)
    cpu = min(r[1] for r in runs)
    print(f"{name}\t{wall:.3f} s/op wall\t{cpu:.3f} cpu-s/op")


def _once(f):
    t, c = time.perf_counter(), time.process_time()
    f()
    return time.perf_counter() - t, time.process_time() - c


def main():
    sp = (1.5, 0.8, 0.8)  # (z, y, x) = Go spacing (0.8, 0.8, 1.5)
    m = ellipsoid(256, (128, 128, 128), (100, 90, 80))
    timeit("EDT256", lambda: ndimage.distance_transform_edt(m, sampling=sp))
    p = pattern(256)
    st = ndimage.generate_binary_structure(3, 3)
    timeit("Label256", lambda: ndimage.label(p, structure=st))
    gt = ellipsoid(256, (128, 128, 128), (90, 80, 70))
    pr = ellipsoid(256, (132, 126, 130), (85, 84, 66))

    def surf():
        sd = deepmind(gt, pr, sp)
        robust_hd(sd, 95), sdice(sd, 5), (avg(sd["d_gt"], sd["a_gt"]) + avg(sd["d_pred"], sd["a_pred"])) / 2

    timeit("HD95SurfaceDice256", surf, reps=1)
    g, q = tubes(128, 0), tubes(128, 1)
    timeit("CLDice128", lambda: cldice(q, g), reps=1)


if __name__ == "__main__":
    main()
