"""Times one training step (forward, backward, clip, AdamW) of a U-Net given as JSON by
cmd/benchengine (on the CPU) or cmd/benchgpu (--device cuda), and prints one JSON line:
step time, samples/s, peak RSS.

    /usr/bin/python3 torch_bench.py --spec '{"batch":8,...}' --steps 3 --threads 2 [--device cuda]
"""
import argparse
import json
import os
import resource
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_unet import UNet, dice_ce  # noqa: E402


def rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", required=True)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    if a.device != "cpu" and not torch.cuda.is_available():
        sys.exit("torch_bench.py: no CUDA device for PyTorch")
    dev = torch.device(a.device)
    sync = torch.cuda.synchronize if a.device != "cpu" else (lambda: None)
    m = json.loads(a.spec)
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    base = rss_mib()
    dims = 2 if m["patch"][0] == 1 else 3
    net = UNet(1, m["classes"], m["widths"], m["kernels"], m["pools"], 2, m["maxpool"],
               "instance", 0.01, dims).to(dev)
    shape = [m["batch"], 1] + (m["patch"][1:] if dims == 2 else m["patch"])
    x = torch.randn(shape).to(dev)
    y = torch.randint(0, m["classes"], [shape[0]] + shape[2:]).to(dev)
    opt = torch.optim.AdamW(net.parameters(), 1e-3, weight_decay=1e-2)
    times, cpus = [], []
    for i in range(a.steps + 1):
        t, c = time.perf_counter(), time.process_time()
        opt.zero_grad(set_to_none=True)
        loss = dice_ce(net(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 12)
        opt.step()
        sync()
        if i > 0:
            times.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
    med = statistics.median(times)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"impl": "pytorch", "model": m["name"], "step_ms": 1000 * med,
                      "cpu_ms": 1000 * statistics.median(cpus),
                      "peak_mib": peak, "base_mib": base, "samples_per_s": m["batch"] / med,
                      "backend": "torch %s, %s" % (torch.__version__, torch.cuda.get_device_name(0) if a.device != "cpu" else "%d threads" % torch.get_num_threads())}))


if __name__ == "__main__":
    main()
