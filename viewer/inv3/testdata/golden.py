#!/usr/bin/python3
"""Reference values for the InVesalius sample project, read with Python's plistlib and numpy
(independent of the Go reader). Usage: /usr/bin/python3 testdata/golden.py CACHE > testdata/golden.json
where CACHE is the real-data cache (.cache/realdata)."""
import json, os, plistlib, sys
import numpy as np

cache = sys.argv[1]
d = os.path.join(cache, "invesalius")
main = plistlib.load(open(os.path.join(d, "main.plist"), "rb"))
m = main["matrix"]
ct = np.fromfile(os.path.join(d, m["filename"]), dtype="<" + np.dtype(m["dtype"]).str[1:]).reshape(m["shape"])
out = {
    "command": "/usr/bin/python3 viewer/inv3/testdata/golden.py .cache/realdata",
    "dims_xyz": [int(m["shape"][2]), int(m["shape"][1]), int(m["shape"][0])],
    "spacing": [float(s) for s in main["spacing"]],
    "dtype": str(ct.dtype),
    "sum": int(ct.astype(np.int64).sum()), "min": int(ct.min()), "max": int(ct.max()),
    # (x, y, z) -> value, at fixed points through the head.
    "voxels": [[x, y, z, int(ct[z, y, x])] for (x, y, z) in [(0, 0, 0), (128, 128, 54), (60, 200, 30), (255, 255, 107), (100, 40, 90)]],
    "masks": [],
}
for i in range(len(main["masks"])):
    mp = plistlib.load(open(os.path.join(d, main["masks"][str(i)]), "rb"))
    mk = np.fromfile(os.path.join(d, mp["mask_file"]), dtype=np.uint8).reshape(mp["mask_shape"])[1:, 1:, 1:]
    out["masks"].append({"name": mp["name"], "threshold": mp["threshold_range"], "count": int((mk > 0).sum())})
json.dump(out, sys.stdout, indent=1)
print()
