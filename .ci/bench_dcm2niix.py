#!/usr/bin/python3
"""The reference side of .ci/bench-io.sh's uncompressed series: convert a DICOM series folder
N times with Debian's dcm2niix (one thread, as dcm2niix runs) into an uncompressed NIfTI in a
scratch folder (on tmpfs when /dev/shm is there, so that the disk does not time the write),
and print one JSON line like benchio's: median wall and CPU milliseconds (the child's user
and system time) per series. dcm2niix's time includes writing its NIfTI; AMID's stops with
the volume in memory."""
import json, os, resource, shutil, subprocess, sys, tempfile, time


def main():
    n, folder = int(sys.argv[1]), sys.argv[2]
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    times, cpus = [], []
    for _ in range(n):
        out = tempfile.mkdtemp(dir=base)
        try:
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run(["dcm2niix", "-z", "n", "-b", "n", "-f", "out", "-o", out, folder],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times.append((time.perf_counter() - t0) * 1000)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append((r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000)
            size = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out) if f.endswith(".nii"))
        finally:
            shutil.rmtree(out)
    times.sort()
    cpus.sort()
    print(json.dumps({"tool": "dcm2niix", "path": folder, "median_ms": times[len(times) // 2], "min_ms": times[0],
                      "cpu_ms": cpus[len(cpus) // 2], "nifti_mb": size / 2**20}))


main()
