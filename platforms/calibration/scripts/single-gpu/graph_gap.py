"""Device time per kernel under CUDA-graph replay and per launch in eager mode -> graph_gap.csv.

Run: python3 graph_gap.py --out DIR [--smoke]

A chain of n kernels that do almost nothing (an in-place add on a small buffer) is captured in one
CUDA graph and replayed, for several n; the slope of the replay time over n is what one kernel
costs the device between its neighbours under graph replay: its launch from the graph, its own
shortest run and the gap before the next.  The same chain launched eagerly gives the host's launch
rate.  A second kernel kind (F.rms_norm over 8 rows of 2048, a real decode-size kernel) shows
whether the gap depends on the kernel.  Timing: CUDA events around the replay (or the eager
chain), warm-ups first, median of 9.
Columns: kernel, mode (graph | eager), n (kernels in the chain), time_us (the chain), per_kernel_us
(time_us / n), slope_us (least-squares slope over the n of that kernel and mode, on each row).
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))

from bench import CsvOut, log, rnd  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def median(v):
    v = sorted(v)
    return v[len(v) // 2]


def time_graph(fn, n, reps=9):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n):
            fn()
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(reps):
        e0.record()
        g.replay()
        e1.record()
        torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1) * 1e3)
    del g
    return median(ts)


def time_eager(fn, n, reps=9):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(reps):
        e0.record()
        for _ in range(n):
            fn()
        e1.record()
        torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1) * 1e3)
    return median(ts)


def slope(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx > 0 else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.cuda.set_device(0)
    tiny = torch.zeros(256, device="cuda", dtype=torch.float32)
    x = rnd(8, 2048)
    w = rnd(2048)
    kinds = [("add_inplace_256", lambda: tiny.add_(1.0)),
             ("rms_norm_8x2048", lambda: F.rms_norm(x, (2048,), w, 1e-6))]
    ns = [16, 64, 256, 1024] if not args.smoke else [16, 64]
    f = CsvOut(os.path.join(args.out, "graph_gap.csv"),
               ["kernel", "mode", "n", "time_us", "per_kernel_us", "slope_us"])
    for name, fn in kinds:
        for mode, timer in (("graph", time_graph), ("eager", time_eager)):
            ts = [timer(fn, n) for n in ns]
            sl = slope(ns, ts)
            for n, t in zip(ns, ts):
                f.row(kernel=name, mode=mode, n=n, time_us=t, per_kernel_us=t / n, slope_us=sl)
            log("graph_gap %-16s %-5s slope %.3f us per kernel (%s)" % (
                name, mode, sl, ", ".join("%d: %.1f us" % (n, t) for n, t in zip(ns, ts))))
    f.close()


if __name__ == "__main__":
    main()
