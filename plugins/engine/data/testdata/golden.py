"""Reference values for the data package's tests, from numpy and scipy.

Run from this folder: /usr/bin/python3 golden.py  (writes golden.json)
"""
import json

import numpy as np
from scipy import ndimage

rng = np.random.default_rng(7)
# Image indexed [z, y, x] (X fastest in the flat list), spacing (x, y, z).
img = rng.normal(100, 30, size=(4, 5, 6)).astype(np.float32)
spacing = [0.8, 1.1, 3.0]
target = [0.5, 0.7, 1.3]
dims = [int(max(1, round(n * s / t))) for n, s, t in zip([6, 5, 4], spacing, target)]
# Output voxel i samples input index i * target / spacing, clamped to the edge (mode nearest).
zz, yy, xx = np.meshgrid(*[np.arange(d) * t / s for d, t, s in zip(dims[::-1], target[::-1], spacing[::-1])], indexing="ij")
res = ndimage.map_coordinates(img.astype(np.float64), [zz, yy, xx], order=1, mode="nearest")
# MR: z-score over non-zero voxels, zero stays zero.
mr = img.copy()
mr[0, 0, :3] = 0
nz = mr != 0
mrn = np.zeros_like(mr, dtype=np.float64)
mrn[nz] = (mr[nz] - mr[nz].mean()) / mr[nz].std()
# CT: percentiles 0.5 / 99.5, mean, std over foreground (all of img here).
fg = img.astype(np.float64).ravel()
ct = [np.percentile(fg, 0.5), np.percentile(fg, 99.5), fg.mean(), fg.std()]
json.dump({
    "command": "cd plugins/engine/data/testdata && /usr/bin/python3 golden.py",
    "numpy": np.__version__,
    "image": img.ravel().tolist(), "dims": [6, 5, 4], "spacing": spacing,
    "target": target, "resampled_dims": dims, "resampled": res.ravel().tolist(),
    "mr_input": mr.ravel().tolist(), "mr": mrn.ravel().tolist(), "ct": ct,
}, open("golden.json", "w"))
