#!/usr/bin/python3
"""Times the Python computation of the numbers that amid/plugins/metrics benchmarks (bench_test.go).

Run with Debian's python3 from this folder:

    /usr/bin/python3 bench_2d.py

Same sizes as the Go benchmarks: NeurIPS-CellSeg per-image F1 at 5 thresholds on 2048x2048
with 2,000 cells (the grader's compute_metric.py steps: boundary removal, relabel, overlap
counting, scipy linear_sum_assignment per threshold; numba is not installed here, so the
overlap count uses np.add.at), skimage SSIM on a 1024x1024 float32 pair, the USenhance LNCC
on 1024x1024 (scipy uniform_filter standing in for cv2.filter2D, which is not installed),
and scipy linear_sum_assignment on a dense 500x500 matrix. COCO AP is not timed: pycocotools
is not packaged in Debian. Prints CPU seconds (time.process_time) and wall seconds per run.
"""
import json
import time

import numpy as np
from scipy import ndimage
from scipy.optimize import linear_sum_assignment
from skimage.metrics import structural_similarity
from skimage.segmentation import relabel_sequential


def timed(f, reps=3):
    cpu, wall = [], []
    for _ in range(reps):
        c0, w0 = time.process_time(), time.perf_counter()
        f()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return {"cpu_ms": 1000 * min(cpu), "wall_ms": 1000 * min(wall)}


rng = np.random.RandomState(1)


def cells(w, h, n):
    d = np.zeros((h, w), np.int32)
    for k in range(1, n + 1):
        cx, cy = rng.randint(w), rng.randint(h)
        rx, ry = 6 + rng.randint(12), 6 + rng.randint(12)
        y0, y1, x0, x1 = max(0, cy - ry), min(h, cy + ry + 1), max(0, cx - rx), min(w, cx + rx + 1)
        yy, xx = np.mgrid[y0:y1, x0:x1]
        m = ((xx - cx) / rx) ** 2 + ((yy - cy) / ry) ** 2 <= 1
        d[y0:y1, x0:x1][m] = k
    return d


def remove_boundary_cells(mask, margin=2):
    H, W = mask.shape
    bd = np.ones((H, W))
    bd[margin:H - margin, margin:W - margin] = 0
    for i in np.unique(mask * bd)[1:]:
        mask[mask == i] = 0
    return relabel_sequential(mask)[0]


def cellseg_image(gt0, pred0):
    out = {}
    for th in [0.5, 0.6, 0.7, 0.8, 0.9]:
        gt = relabel_sequential(remove_boundary_cells(gt0.astype(np.int32)))[0]
        pred = relabel_sequential(remove_boundary_cells(pred0.astype(np.int32)))[0]
        nt, npd = int(gt.max()), int(pred.max())
        ov = np.zeros((nt + 1, npd + 1), dtype=np.uint64)
        np.add.at(ov, (gt.ravel(), pred.ravel()), 1)
        a = ov.sum(axis=0, keepdims=True)
        b = ov.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            iou = ov / (a + b - ov)
        iou[np.isnan(iou)] = 0
        iou = iou[1:, 1:]
        cost = -(iou >= th).astype(float) - iou / (2 * min(iou.shape))
        r, c = linear_sum_assignment(cost)
        out[th] = int((iou[r, c] >= th).sum())
    return out


gt = cells(2048, 2048, 2000)
pred = np.zeros_like(gt)
pred[:, 2:] = gt[:, :-2]

n = 1024
base = (np.add.outer(np.arange(n), np.arange(n)) % 256).astype(np.float32)
im1 = base + rng.randint(0, 20, (n, n)).astype(np.float32)
im2 = im1 + rng.randint(0, 30, (n, n)).astype(np.float32)
dr = float(max(im1.max(), im2.max()) - min(im1.min(), im2.min()))


def lncc(a, b, win=11):
    a = (a - a.min()) / (a.max() - a.min() + 1e-8)
    b = (b - b.min()) / (b.max() - b.min() + 1e-8)
    f = lambda z: ndimage.uniform_filter(z, size=win, mode="mirror")
    m1, m2 = f(a), f(b)
    s1 = f(a * a) - m1 * m1
    s2 = f(b * b) - m2 * m2
    s12 = f(a * b) - m1 * m2
    v = (s1 > 1e-10) & (s2 > 1e-10)
    return float(np.mean(s12[v] / np.sqrt(s1[v] * s2[v])))


cost = np.random.RandomState(8).rand(500, 500)
res = {
    "command": "/usr/bin/python3 bench_2d.py (in amid/plugins/metrics/testdata)",
    "cellseg_f1_2048_2000cells": timed(lambda: cellseg_image(gt, pred), reps=1),
    "ssim_1024_float32": timed(lambda: structural_similarity(im1, im2, data_range=dr)),
    "lncc_1024_float32": timed(lambda: lncc(im1, im2)),
    "lsa_dense_500": timed(lambda: linear_sum_assignment(cost)),
}
print(json.dumps(res, indent=1))
