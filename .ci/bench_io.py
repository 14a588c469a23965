#!/usr/bin/python3
"""The reference side of .ci/bench-io.sh: load one image (or DICOM series folder) N times
with Debian's nibabel or pydicom and print one JSON line like benchio's."""
import glob, json, os, resource, sys, time

def rss_kb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0

def load(path):
    if os.path.isdir(path):
        import numpy as np, pydicom
        ds = [pydicom.dcmread(p) for p in sorted(glob.glob(os.path.join(path, "*.dcm")))]
        ds.sort(key=lambda d: float(d.ImagePositionPatient[2]))
        return np.stack([d.pixel_array for d in ds])
    import nibabel as nib
    img = nib.load(path)
    return img.get_fdata(dtype=img.get_data_dtype()) if img.dataobj.slope == 1 and img.dataobj.inter == 0 and img.get_data_dtype().kind == "f" else img.dataobj[...]

def main():
    n, path = int(sys.argv[1]), sys.argv[2]
    base = rss_kb("VmRSS")
    times, peak, decoded = [], 0, 0
    for i in range(n):
        t0 = time.perf_counter()
        a = load(path)
        times.append((time.perf_counter() - t0) * 1000)
        decoded = a.nbytes
        if i == 0:
            peak = rss_kb("VmHWM") - base
        del a
    times.sort()
    tool = "pydicom" if os.path.isdir(path) else "nibabel"
    print(json.dumps({"tool": tool, "path": path, "median_ms": times[len(times)//2], "min_ms": times[0],
                      "decoded_mb": decoded / 2**20, "peak_mb": peak / 1024}))

main()
