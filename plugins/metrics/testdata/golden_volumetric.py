#!/usr/bin/python3
"""Reference values for the volumetric metrics of package amid/plugins/metrics.

Run from the module root with Debian's python (numpy, scipy, skimage):

    /usr/bin/python3 plugins/metrics/testdata/golden_volumetric.py [realdata-dir]

It writes plugins/metrics/testdata/golden_volumetric.json. Generated fixtures are described
by shape specs that the Go test rebuilds with the same integer formulas; the real fixture
is the InVesalius Cranium pair of CT masks from the real-data cache (skipped when absent).

Each metric is computed the way the ReX-MLE grader that uses it computes it, re-written
here on numpy/scipy/skimage because the graders' own dependencies (surface-distance,
MONAI, cc3d, SimpleITK) are not installed: DeepMind's compute_surface_distances and its
metrics, MONAI's get_mask_edges/get_surface_distance without and with spacing, the
ISLES'22 lesion functions with scipy's 26-connected labelling standing in for cc3d, the
TopBrain/TopCoW per-label functions, and skimage.morphology.skeletonize for clDice.
"""
import hashlib
import json
import math
import os
import sys

import numpy as np
import scipy
import skimage
from scipy import ndimage
from skimage.morphology import skeletonize

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden_volumetric.json")

# ---------------------------------------------------------------- shapes (integer maths)


def paint(dims, shapes):
    """Label volume (Z, Y, X) from shape specs painted in order."""
    X, Y, Z = dims
    z, y, x = np.meshgrid(np.arange(Z), np.arange(Y), np.arange(X), indexing="ij")
    out = np.zeros((Z, Y, X), np.uint8)
    for s in shapes:
        k = s["kind"]
        if k == "ellipsoid":
            cx, cy, cz = s["c"]
            rx, ry, rz = s["r"]
            m = ((ry * rz * (x - cx)) ** 2 + (rx * rz * (y - cy)) ** 2 +
                 (rx * ry * (z - cz)) ** 2) <= (rx * ry * rz) ** 2
        elif k == "box":
            (x0, y0, z0), (x1, y1, z1) = s["lo"], s["hi"]
            m = (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1) & (z >= z0) & (z <= z1)
        elif k == "tube":  # axis-aligned cylinder along s["axis"] through point c
            cx, cy, cz = s["c"]
            r, a0, a1 = s["r"], s["from"], s["to"]
            ax = s["axis"]
            if ax == 0:
                m = ((y - cy) ** 2 + (z - cz) ** 2 <= r * r) & (x >= a0) & (x <= a1)
            elif ax == 1:
                m = ((x - cx) ** 2 + (z - cz) ** 2 <= r * r) & (y >= a0) & (y <= a1)
            else:
                m = ((x - cx) ** 2 + (y - cy) ** 2 <= r * r) & (z >= a0) & (z <= a1)
        elif k == "ring":
            cx, cy, cz = s["c"]
            d2 = (x - cx) ** 2 + (y - cy) ** 2
            m = (d2 >= s["r1"] ** 2) & (d2 <= s["r2"] ** 2) & (abs(z - cz) <= s["h"])
        elif k == "voxel":
            m = (x == s["c"][0]) & (y == s["c"][1]) & (z == s["c"][2])
        else:
            raise ValueError(k)
        out[m] = s["label"]
    return out


def E(c, r, label=1):
    return {"kind": "ellipsoid", "c": c, "r": r, "label": label}


def B(lo, hi, label=1):
    return {"kind": "box", "lo": lo, "hi": hi, "label": label}


def T(axis, c, r, a0, a1, label=1):
    return {"kind": "tube", "axis": axis, "c": c, "r": r, "from": a0, "to": a1, "label": label}


def R(c, r1, r2, h, label=1):
    return {"kind": "ring", "c": c, "r1": r1, "r2": r2, "h": h, "label": label}


def V(c, label=1):
    return {"kind": "voxel", "c": c, "label": label}


ANISO = [0.8, 0.9, 2.5]
BINARY = [
    dict(name="ellipsoids", dims=[40, 36, 24], spacing=ANISO,
         gt=[E([20, 18, 12], [12, 9, 6])], pred=[E([22, 17, 12], [10, 10, 5])]),
    dict(name="ellipsoids_iso", dims=[30, 30, 30], spacing=[1, 1, 1],
         gt=[E([15, 15, 15], [9, 9, 9])], pred=[E([16, 15, 14], [8, 10, 9])]),
    dict(name="tubes", dims=[48, 40, 20], spacing=[0.5, 0.5, 1.25],
         gt=[T(0, [0, 20, 10], 3, 4, 43), T(1, [24, 0, 10], 2, 6, 34), T(2, [12, 20, 0], 2, 2, 17)],
         pred=[T(0, [0, 21, 10], 3, 6, 40), T(1, [25, 0, 10], 2, 8, 34), B([38, 4, 3], [42, 8, 6])]),
    dict(name="ring_broken", dims=[40, 40, 12], spacing=[0.7, 0.7, 1.0],
         gt=[R([20, 20, 6], 10, 14, 2)],
         pred=[R([20, 20, 6], 10, 13, 2), B([18, 2, 0], [22, 37, 11], 0)]),
    dict(name="lesions", dims=[32, 28, 16], spacing=[1.0, 1.0, 3.0],
         gt=[E([6, 6, 4], [3, 3, 2]), E([20, 8, 8], [2, 2, 1]), V([27, 20, 12]), V([28, 21, 13]),
             B([10, 18, 3], [13, 22, 5]), V([2, 25, 14])],
         pred=[E([7, 6, 4], [3, 2, 2]), V([27, 20, 12]), B([10, 18, 4], [12, 20, 5]),
               B([25, 2, 1], [27, 4, 2]), V([30, 26, 14]), V([31, 27, 15])]),
    dict(name="diagonal_chain", dims=[12, 12, 12], spacing=[1.0, 2.0, 1.5],
         gt=[V([i, i, i]) for i in range(2, 10)] + [V([2, 9, 5]), V([3, 9, 5]), V([3, 8, 6])],
         pred=[V([i, i, 11 - i]) for i in range(1, 11)] + [B([6, 1, 1], [6, 2, 2])]),
    dict(name="boundary", dims=[20, 16, 10], spacing=[1.2, 0.6, 2.0],
         gt=[B([0, 0, 0], [9, 15, 9])], pred=[B([0, 0, 0], [11, 15, 6]), B([15, 10, 0], [19, 15, 9])]),
    dict(name="identical", dims=[16, 16, 16], spacing=ANISO,
         gt=[E([8, 8, 8], [5, 4, 3])], pred=[E([8, 8, 8], [5, 4, 3])]),
    dict(name="one_voxel_each", dims=[9, 9, 9], spacing=ANISO, gt=[V([4, 4, 4])], pred=[V([6, 3, 5])]),
    dict(name="one_voxel_same", dims=[9, 9, 9], spacing=ANISO, gt=[V([4, 4, 4])], pred=[V([4, 4, 4])]),
    dict(name="gt_empty", dims=[10, 10, 10], spacing=ANISO, gt=[], pred=[E([5, 5, 5], [2, 2, 2])]),
    dict(name="pred_empty", dims=[10, 10, 10], spacing=ANISO, gt=[E([5, 5, 5], [2, 2, 2])], pred=[]),
    dict(name="both_empty", dims=[10, 10, 10], spacing=ANISO, gt=[], pred=[]),
    dict(name="single_slice", dims=[24, 20, 1], spacing=[0.5, 0.5, 5.0],
         gt=[B([3, 3, 0], [15, 12, 0]), B([18, 2, 0], [20, 17, 0])], pred=[B([4, 3, 0], [16, 14, 0])]),
]

LABELS = [
    dict(name="vessels", dims=[40, 36, 20], spacing=[0.45, 0.45, 0.6],
         gt=[T(0, [0, 18, 10], 3, 2, 37, 1), T(1, [12, 0, 10], 2, 3, 17, 2), T(1, [28, 0, 10], 2, 19, 33, 3),
             T(2, [20, 18, 0], 2, 1, 9, 8), B([30, 4, 4], [33, 7, 7], 10), V([5, 30, 15], 15)],
         pred=[T(0, [0, 18, 10], 3, 4, 36, 1), T(1, [12, 0, 10], 2, 3, 17, 3), T(1, [28, 0, 10], 2, 19, 30, 3),
               T(2, [21, 18, 0], 2, 2, 8, 8), B([31, 4, 4], [33, 6, 6], 9), V([36, 30, 15], 4), V([38, 32, 17], 4)]),
    dict(name="cow", dims=[32, 32, 16], spacing=[0.3, 0.3, 0.5],
         gt=[R([16, 16, 8], 6, 9, 2, 11), B([14, 2, 6], [18, 8, 10], 12), B([2, 14, 6], [8, 18, 10], 2),
             B([24, 14, 6], [30, 18, 10], 3), B([14, 24, 6], [18, 30, 10], 10), V([16, 16, 8], 9)],
         pred=[R([16, 16, 8], 6, 9, 2, 11), B([14, 2, 6], [18, 9, 10], 12), B([2, 14, 6], [8, 18, 10], 2),
               B([25, 15, 7], [29, 17, 9], 3), B([14, 25, 6], [18, 30, 10], 15), B([0, 0, 0], [1, 1, 1], 8)]),
]

BOXES = [
    ([[10, 10, 10], [0, 0, 0]], [[10, 10, 10], [5, 0, 0]]),
    ([[12, 9, 7], [3, 4, 5]], [[12, 9, 7], [3, 4, 5]]),
    ([[15, 8, 6], [2, 2, 2]], [[11, 10, 5], [6, 1, 3]]),
    ([[5, 5, 5], [0, 0, 0]], [[5, 5, 5], [20, 20, 20]]),
    ([[7, 13, 4], [1, 0, 2]], [[9, 12, 6], [0, 2, 1]]),
    ([[20, 3, 9], [0, 5, 0]], [[18, 4, 10], [1, 4, 1]]),
]

# ---------------------------------------------------------------- references


def sha(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def ccount(m, conn):
    st = ndimage.generate_binary_structure(3, {6: 1, 18: 2, 26: 3}[conn])
    lab, n = ndimage.label(m, structure=st)
    return lab.astype(np.int32), int(n)


def lesion_f1(gt, pred):  # ISLES'22 compute_lesion_f1_score with 26-connectivity
    tp = fp = fn = 0
    inter = gt & pred
    lg, n = ccount(gt, 26)
    for k in range(1, n + 1):
        if (inter & (lg == k)).any():
            tp += 1
        else:
            fn += 1
    lp, n = ccount(pred, 26)
    for k in range(1, n + 1):
        if not ((lp == k) & gt).any():
            fp += 1
    return 1.0 if tp + fp + fn == 0 else tp / (tp + (fp + fn) / 2)


# DeepMind surface-distance lookup table (lookup_tables.py), absolute normal components
# in eighths, codes 0..127 then codes 128..255 transcribed separately from the library.
NORMALS = (
    "000|111|111|220 220|111|202 202|111 111|400 222 111|111|111 111|202 202|400 222 111|220 220|"
    "400 222 111|400 222 111|400 400|111|022 022|111 111|040 222 111|111 111|004 222 111|111 111 111|"
    "111 222 222 111|111 111|022 022 111|202 202 111|111 333 022 202|111 220 220|333 022 111 220|"
    "400 111 222 111|400 111 222|111|111 111|022 022|040 111 222|111 111|111 202 202|022 022 111|"
    "333 022 111 202|111 111|111 111 111|004 222 111|222 222 111 111|111 220 220|400 222 111 111|"
    "022 333 111 220|400 222 111|220 220|040 222 111|040 111 222|040 040|220 220 111|333 202 111 220|"
    "111 040 222 111|040 222 111|111 220 220|040 222 111 111|333 220 111 202|040 222 111|"
    "220 220 220 220|220 220 111|111 220 220|220 220|111|111 111|111 111|111 220 220|022 022|"
    "004 222 111|022 022 111|333 022 111 220|111 111|111 111 111|111 202 202|400 222 111 111|"
    "040 222 111|222 222 111 111|202 333 022 111|400 222 111|202 202|004 222 111|111 202 202|"
    "202 333 220 111|004 222 111|004 004|111 111 222 004|111 222 004|202 202 111|004 222 111 111|"
    "202 202 202 202|111 202 202|202 333 220 111|004 222 111|111 202 202|202 202|111 111|111 111 111|"
    "111 022 022|040 111 222 111|022 022 111|004 222 111 111|022 022 022 022|022 022 111|111 111 111|"
    "111 111 111 111|004 222 111 111|111 111 111|040 222 111 111|111 111 111|022 022 111|111 111|"
    "400 222 111|222 111 222 111|333 022 111 202|040 222 111|333 220 022 111|111 222 004|111 022 022|"
    "022 022|400 222 111 111|111 111 111|202 202 111|111 111|220 220 111|111 111|111 111|111|"
    # 128..255
    "111|111 111|111 111|220 220 111|111 111|202 202 111|111 111 111|400 222 111 111|022 022|"
    "111 022 022|111 222 004|333 220 022 111|040 222 111|333 022 111 202|222 111 222 111|400 222 111|"
    "111 111|022 022 111|111 111 111|040 222 111 111|111 111 111|004 222 111 111|111 111 111 111|"
    "111 111 111|022 022 111|022 022 022 022|004 222 111 111|022 022 111|040 111 222 111|111 022 022|"
    "111 111 111|111 111|202 202|111 202 202|004 222 111|202 333 220 111|111 202 202|202 202 202 202|"
    "004 222 111 111|202 202 111|111 222 004|111 111 222 004|004 004|004 222 111|202 333 220 111|"
    "111 202 202|004 222 111|202 202|400 222 111|202 333 022 111|222 222 111 111|040 222 111|"
    "400 222 111 111|111 202 202|111 111 111|111 111|333 022 111 220|022 022 111|004 222 111|022 022|"
    "111 220 220|111 111|111 111|111|220 220|111 220 220|220 220 111|220 220 220 220|040 222 111|"
    "333 220 111 202|040 222 111 111|111 220 220|040 222 111|111 040 222 111|333 202 111 220|"
    "220 220 111|040 040|040 111 222|040 222 111|220 220|400 222 111|022 333 111 220|400 222 111 111|"
    "111 220 220|222 222 111 111|004 222 111|111 111 111|111 111|333 022 111 202|022 022 111|"
    "111 202 202|111 111|040 111 222|022 022|111 111|111|400 111 222|400 111 222 111|333 022 111 220|"
    "111 220 220|111 333 022 202|202 202 111|022 022 111|111 111|111 222 222 111|111 111 111|"
    "004 222 111|111 111|040 222 111|111 111|022 022|111|400 400|400 222 111|400 222 111|220 220|"
    "400 222 111|202 202|111 111|111|400 222 111|111 111|202 202|111|220 220|111|111|000"
).split("|")
assert len(NORMALS) == 256, len(NORMALS)


def area_table(s):
    t = np.zeros(256)
    for code in range(256):
        total = 0
        for nrm in NORMALS[code].split():
            n = np.zeros(3)
            n[0] = int(nrm[0]) / 8 * s[1] * s[2]
            n[1] = int(nrm[1]) / 8 * s[0] * s[2]
            n[2] = int(nrm[2]) / 8 * s[0] * s[1]
            total += np.linalg.norm(n)
        t[code] = total
    return t


KERNEL = np.array([[[128, 64], [32, 16]], [[8, 4], [2, 1]]])


def bbox(m):
    idx = np.nonzero(m)
    if len(idx[0]) == 0:
        return None, None
    return np.array([i.min() for i in idx]), np.array([i.max() for i in idx])


def deepmind(gt, pred, sp):  # compute_surface_distances for (Z, Y, X) arrays, spacing (z, y, x)
    lo, hi = bbox(gt | pred)
    if lo is None:
        e = np.array([])
        return dict(d_gt=e, d_pred=e, a_gt=e, a_pred=e)
    sl = tuple(slice(lo[i], hi[i] + 1) for i in range(3))
    out = {}
    codes, borders = {}, {}
    for k, m in (("gt", gt), ("pred", pred)):
        c = np.zeros(hi - lo + 2, np.uint8)
        c[0:-1, 0:-1, 0:-1] = m[sl]
        codes[k] = ndimage.correlate(c.astype(np.uint8), KERNEL, mode="constant", cval=0)
        borders[k] = (codes[k] != 0) & (codes[k] != 255)
    table = area_table(sp)
    dist = {}
    for k in ("gt", "pred"):
        if borders[k].any():
            dist[k] = ndimage.distance_transform_edt(~borders[k], sampling=sp)
        else:
            dist[k] = np.inf * np.ones(borders[k].shape)
    d_gt, a_gt = dist["pred"][borders["gt"]], table[codes["gt"]][borders["gt"]]
    d_pred, a_pred = dist["gt"][borders["pred"]], table[codes["pred"]][borders["pred"]]
    if len(d_gt):
        s = np.array(sorted(zip(d_gt, a_gt)))
        d_gt, a_gt = s[:, 0], s[:, 1]
    if len(d_pred):
        s = np.array(sorted(zip(d_pred, a_pred)))
        d_pred, a_pred = s[:, 0], s[:, 1]
    return dict(d_gt=d_gt, d_pred=d_pred, a_gt=a_gt, a_pred=a_pred)


def robust_hd(sd, percent):
    r = []
    for d, a in ((sd["d_gt"], sd["a_gt"]), (sd["d_pred"], sd["a_pred"])):
        if len(d):
            cum = np.cumsum(a) / np.sum(a)
            i = np.searchsorted(cum, percent / 100.0)
            r.append(d[min(i, len(d) - 1)])
        else:
            r.append(np.inf)
    return max(r)


def sdice(sd, tol):
    og = np.sum(sd["a_gt"][sd["d_gt"] <= tol])
    op = np.sum(sd["a_pred"][sd["d_pred"] <= tol])
    return (og + op) / (np.sum(sd["a_gt"]) + np.sum(sd["a_pred"]))


def avg(d, a):
    return np.sum(d * a) / np.sum(a)


def monai(pred, gt, sp):  # get_mask_edges + get_surface_distance (pred edges -> gt edges)
    lo, hi = bbox(pred | gt)
    if lo is None:
        return np.array([])
    sl = tuple(slice(lo[i], hi[i] + 1) for i in range(3))
    p, g = pred[sl], gt[sl]
    ep = ndimage.binary_erosion(p) ^ p
    eg = ndimage.binary_erosion(g) ^ g
    if not eg.any():
        return (np.inf * np.ones(eg.shape))[ep]
    if not ep.any():
        return (np.inf * np.ones(eg.shape))[eg]
    return ndimage.distance_transform_edt(~eg, sampling=sp)[ep]


def cl_score(s, v):
    return 0 if np.sum(s) == 0 else float(np.sum(s * v) / np.sum(s))


def cldice(pred, gt):
    tp = cl_score(skeletonize(pred), gt)
    ts = cl_score(skeletonize(gt), pred)
    return 0.0 if tp + ts == 0 else float(2 * tp * ts / (tp + ts))


def num(v):
    v = float(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return v


def binary_metrics(gt, pred, spacing, skeleton=True):
    sx, sy, sz = spacing
    sp = (sz, sy, sx)
    r = {}
    inter = int((gt & pred).sum())
    r["gt_voxels"], r["pred_voxels"], r["inter"] = int(gt.sum()), int(pred.sum()), inter
    s = gt.sum() + pred.sum()
    r["dice_isles"] = 1.0 if s == 0 else float(2.0 * inter / s)
    for c in (6, 18, 26):
        _, r[f"cc{c}_gt"] = ccount(gt, c)
        _, r[f"cc{c}_pred"] = ccount(pred, c)
    lab, _ = ccount(gt, 26)
    r["label26_gt_sha256"] = sha(lab)
    lab, _ = ccount(pred, 6)
    r["label6_pred_sha256"] = sha(lab)
    r["lesion_f1"] = lesion_f1(gt, pred)
    r["lesion_count_diff"] = abs(r["cc26_gt"] - r["cc26_pred"])
    vs = float(np.prod(tuple(np.float32(v) for v in spacing)) / 1000.0)
    r["abs_volume_diff_ml"] = float(np.abs(np.sum(gt) * vs - np.sum(pred) * vs))
    if (~gt).any() and gt.any():
        e = ndimage.distance_transform_edt(gt, sampling=sp).ravel()
        fg = np.flatnonzero(e)
        idx = [int(fg[i * (fg.size - 1) // 15]) for i in range(16)]
        r["edt_gt"] = dict(sum=float(e.sum()), max=float(e.max()), idx=idx, val=[float(e[i]) for i in idx])
    sd = deepmind(gt, pred, sp)
    r["dm_surfels_gt"], r["dm_surfels_pred"] = len(sd["d_gt"]), len(sd["d_pred"])
    r["dm_dice"] = num(np.nan if s == 0 else 2 * inter / s)
    r["dm_sdice_5"] = num(sdice(sd, 5))
    r["dm_sdice_1"] = num(sdice(sd, 1.0))
    r["dm_hd95"] = num(robust_hd(sd, 95))
    r["dm_hd100"] = num(robust_hd(sd, 100))
    r["dm_avg_gt_to_pred"] = num(avg(sd["d_gt"], sd["a_gt"]))
    r["dm_avg_pred_to_gt"] = num(avg(sd["d_pred"], sd["a_pred"]))
    r["dm_area_gt"] = num(np.sum(sd["a_gt"]))
    r["dm_area_pred"] = num(np.sum(sd["a_pred"]))
    d = monai(pred, gt, sp)
    r["monai_n"] = len(d)
    if len(d):
        r["monai_hd95_mm"] = num(np.percentile(d, 95))
        r["monai_max_mm"] = num(d.max())
        r["monai_sum_mm"] = num(np.sum(d))
    dv = monai(pred, gt, None)
    if len(dv):
        r["monai_max_vox"] = num(dv.max())
    if skeleton and gt.any():
        for order, tr in (("zyx", lambda a: a), ("xyz", lambda a: a.transpose((2, 1, 0)))):
            sk = skeletonize(tr(gt)) != 0
            back = sk if order == "zyx" else sk.transpose((2, 1, 0))
            r[f"skel_{order}_gt_n"] = int(back.sum())
            r[f"skel_{order}_gt_sha256"] = sha(back.astype(np.uint8))
            r[f"cldice_{order}"] = cldice(tr(pred), tr(gt))
    return r


def label_metrics(gt, pred, spacing):
    sx, sy, sz = spacing
    sp = (sz, sy, sx)
    r = {"labels": {}}
    labels = sorted((set(np.unique(gt)) | set(np.unique(pred))) - {0})
    for l in labels:
        g, p = gt == l, pred == l
        inter, G, P = int((g & p).sum()), int(g.sum()), int(p.sum())
        e = {"gt": G, "pred": P, "inter": inter}
        e["dice_topcow"] = 1.0 if G == 0 and P == 0 else (0.0 if G == 0 else float(2.0 * inter / (P + G + 1e-7)))
        e["dice_topbrain"] = 0.0 if (G == 0 or P == 0) else 2.0 * inter / (G + P)
        e["iou"] = 0.0 if (G == 0 or P == 0) else inter / (G + P - inter)
        b0g = 0 if G == 0 else ccount(g, 26)[1]
        b0p = 0 if P == 0 else ccount(p, 26)[1]
        e["b0_error"] = abs(b0p - b0g)
        if G and P:
            d = monai(p, g, sp)
            e["hd95_monai"] = num(np.percentile(d, 95))
        r["labels"][str(int(l))] = e
    gl = [l for l in labels if (gt == l).any()]
    r["class_dice_topcow"] = float(np.mean([r["labels"][str(int(l))]["dice_topcow"] for l in gl])) if gl else 1.0
    r["class_dice_topbrain"] = float(np.mean([r["labels"][str(int(l))]["dice_topbrain"] for l in labels])) if labels else 0.0
    # TopBrain get_neighbor_per_mask on the prediction
    arr = np.pad(pred.transpose((2, 1, 0)), 1)
    nb = {}
    for i in (-1, 0, 1):
        for j in (-1, 0, 1):
            for k in (-1, 0, 1):
                if i == j == k == 0:
                    continue
                sh = np.roll(arr, [i, j, k], axis=(0, 1, 2))
                bm = (arr != sh) & (arr != 0)
                for a, b in zip(arr[bm], sh[bm]):
                    a, b = int(a), int(b)
                    nb.setdefault(a, set())
                    if b != 0:
                        nb[a].add(b)
                        nb.setdefault(b, set()).add(a)
    r["pred_neighbours"] = {str(k): sorted(v) for k, v in sorted(nb.items())}
    r["cldice_binary_zyx"] = cldice(pred > 0, gt > 0)
    r["cldice_binary_xyz"] = cldice((pred > 0).transpose((2, 1, 0)), (gt > 0).transpose((2, 1, 0)))
    return r


def box_points_rex(size, loc, ratio):
    d = [math.ceil(s * ratio) for s in size]
    return {(x, y, z)
            for x in range(loc[0] - d[0], loc[0] + size[0] - 1 + d[0] + 1)
            for y in range(loc[1] - d[1], loc[1] + size[1] - 1 + d[1] + 1)
            for z in range(loc[2] - d[2], loc[2] + size[2] - 1 + d[2] + 1)}


def box_points_official(size, loc, ratio):
    d = [math.ceil(s * ratio) for s in size]
    mn = loc
    mx = [loc[i] + size[i] - 1 for i in range(3)]
    pts = set()
    for i in range(d[2]):
        for x in range(mn[0], mx[0] + 1):
            for y in range(mn[1], mx[1] + 1):
                pts.add((x, y, mn[2] + i))
                pts.add((x, y, mx[2] - i))
    for i in range(d[0]):
        for y in range(mn[1], mx[1] + 1):
            for z in range(mn[2], mx[2] + 1):
                pts.add((mn[0] + i, y, z))
                pts.add((mx[0] - i, y, z))
    for i in range(d[1]):
        for x in range(mn[0], mx[0] + 1):
            for z in range(mn[2], mx[2] + 1):
                pts.add((x, mn[1] + i, z))
                pts.add((x, mx[1] - i, z))
    return pts


def set_iou(a, b):
    u = len(a | b)
    return len(a & b) / u if u else 0


def main():
    golden = {
        "command": "/usr/bin/python3 plugins/metrics/testdata/golden_volumetric.py" + (" " + sys.argv[1] if len(sys.argv) > 1 else ""),
        "versions": {"numpy": np.__version__, "scipy": scipy.__version__, "skimage": skimage.__version__},
        "binary": [], "labels": [], "boxes": [],
    }
    for c in BINARY:
        gt = paint(c["dims"], c["gt"]) != 0
        pred = paint(c["dims"], c["pred"]) != 0
        golden["binary"].append(dict(c, want=binary_metrics(gt, pred, c["spacing"])))
    for c in LABELS:
        gt = paint(c["dims"], c["gt"])
        pred = paint(c["dims"], c["pred"])
        golden["labels"].append(dict(c, want=label_metrics(gt, pred, c["spacing"])))
    for a, b in BOXES:
        e = {"a": a, "b": b}
        for name, r in (("iou", 0.5), ("boundary_iou", 0.2)):
            e["rex_" + name] = set_iou(box_points_rex(a[0], a[1], r), box_points_rex(b[0], b[1], r))
            e["official_" + name] = set_iou(box_points_official(a[0], a[1], r), box_points_official(b[0], b[1], r))
        golden["boxes"].append(e)
    cache = sys.argv[1] if len(sys.argv) > 1 else ".cache/realdata"
    d = os.path.join(cache, "invesalius")
    if os.path.exists(os.path.join(d, "mask_0.dat")):
        def load(f):
            return np.fromfile(os.path.join(d, f), np.uint8).reshape(109, 257, 257)[1:, 1:, 1:] == 255
        gt, pred = load("mask_0.dat"), load("mask_1.dat")
        sp = [0.95703119999999997, 0.95703119999999997, 1.5]
        want = binary_metrics(gt, pred, sp, skeleton=False)
        crop = (slice(40, 72), slice(60, 124), slice(100, 164))  # z, y, x
        want["crop_zyx_lo"] = [40, 60, 100]
        want["crop_dims"] = [64, 64, 32]
        w2 = binary_metrics(gt[crop], pred[crop], sp, skeleton=True)
        want["crop"] = {k: v for k, v in w2.items() if k.startswith(("skel_", "cldice_", "cc", "dm_", "monai_"))}
        golden["real"] = {"name": "invesalius mask_0 vs mask_1", "dims": [256, 256, 108], "spacing": sp, "want": want}
    with open(OUT, "w") as f:
        json.dump(golden, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
