"""Shared helpers for the single-GPU calibration measurements.

Timing method as in shared/calibration/scripts (common.py, calib_kernels.py): CUDA events around
batches of back-to-back calls, warm-ups first, median over batches; random bf16 operands; operand
sets rotated so that operands are not served from the 60 MB L2.  This module adds CUDA-graph replay
timing with one reused capture stream, kernel-name probing with the profiler, the environment
report and the FLOP / byte ceiling check.
"""
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))  # common.py of platforms/calibration/scripts
from common import CsvOut, Deadline, cuda_time_loop, log, median, write_json  # noqa: E402,F401

import torch  # noqa: E402

# Datasheet ceilings of the H200 SXM (dense); a timed row above them is flagged in `sanity`.
PEAK_BF16_TFLOPS = 989.4
PEAK_FP8_TFLOPS = 1978.9
PEAK_HBM_GBPS = 4800.0
L2_BYTES = 60 << 20
MiB = 1 << 20
GiB = 1 << 30


def sanity(tflops=None, gbps=None, peak_tflops=PEAK_BF16_TFLOPS):
    bad = []
    if tflops is not None and tflops > peak_tflops:
        bad.append("over_flop_peak")
    if gbps is not None and gbps > PEAK_HBM_GBPS:
        bad.append("over_hbm_peak")
    return "+".join(bad) if bad else "ok"


def rnd(*shape, dev="cuda", dtype=torch.bfloat16, scale=1.0):
    t = torch.empty(*shape, device=dev, dtype=dtype)
    t.normal_(0.0, scale)
    return t


def n_sets_for(per_set_bytes, target=256 * MiB, cap=64):
    return int(min(cap, max(1, math.ceil(target / max(1, per_set_bytes)))))


_SIDE = {}


def side_stream():
    """One side stream for all graph warm-ups (each new stream gets its own cuBLAS workspace)."""
    if "s" not in _SIDE:
        _SIDE["s"] = torch.cuda.Stream()
    return _SIDE["s"]


def graph_time(fn, inner, n_warm=3, n_rep=9):
    """Capture `inner` calls of fn into one CUDA graph, time its replays.  Returns dict(median, min,
    max, inner) in ms per call, or raises on a capture failure."""
    s = side_stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g, capture_error_mode="thread_local"):
            for _ in range(inner):
                fn()
    except Exception:
        torch.cuda.synchronize()
        del g
        raise
    for _ in range(n_warm):
        g.replay()
    torch.cuda.synchronize()
    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(n_rep):
        e0.record()
        g.replay()
        e1.record()
        torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1) / inner)
    del g
    ts.sort()
    return {"median": ts[len(ts) // 2], "min": ts[0], "max": ts[-1], "inner": inner}


def graph_inner(t_ms, target_ms=3.0, cap=1000):
    return int(min(cap, max(1, math.ceil(target_ms / max(t_ms, 1e-4)))))


def kernel_names(fn, max_names=6):
    """Names of the CUDA kernels one call of fn launches (profiler), ';'-joined and shortened."""
    try:
        from torch.profiler import ProfilerActivity, profile
        fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as p:
            fn()
            torch.cuda.synchronize()
        names = []
        for e in p.events():
            dt = getattr(e, "device_type", None)
            if dt is not None and "CUDA" in str(dt):
                n = e.name
                if n not in names:
                    names.append(n)
        short = [n.replace(",", " ")[:90] for n in names[:max_names]]
        return ";".join(short)
    except Exception as ex:  # noqa: BLE001
        return "profiler_failed:%s" % (str(ex)[:60].replace(",", " "))


def clean(s, n=200):
    return str(s)[:n].replace(",", ";").replace("\n", " ")


def nvsmi(fields="name,driver_version,pstate,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,"
                 "power.draw,power.limit,temperature.gpu,memory.used,memory.total"):
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=" + fields, "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout.strip()
        return dict(zip(fields.split(","), [x.strip() for x in out.split(",")]))
    except Exception as e:  # noqa: BLE001
        return {"error": repr(e)}


def env_report():
    dev = torch.device("cuda", 0)
    p = torch.cuda.get_device_properties(dev)
    info = {
        "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "torch": torch.__version__, "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "gpu": p.name, "sms": p.multi_processor_count, "mem_gib": p.total_memory / GiB,
        "l2_bytes": getattr(p, "L2_cache_size", None), "cc": "%d.%d" % (p.major, p.minor),
        "has_grouped_mm": hasattr(torch, "_grouped_mm"),
        "has_scaled_mm": hasattr(torch, "_scaled_mm"),
        "has_F_scaled_mm": hasattr(torch.nn.functional, "scaled_mm"),
        "has_int_mm": hasattr(torch, "_int_mm"),
        "nvidia_smi": nvsmi(),
    }
    try:
        import triton
        info["triton"] = triton.__version__
    except Exception:  # noqa: BLE001
        pass
    return info


def ceilings(quick=False):
    """Measured copy / read bandwidth and bf16 / fp8 matmul rate on random data."""
    out = {}
    n = (1 * GiB if quick else 2 * GiB) // 2
    a = rnd(n)
    b = torch.empty_like(a)
    r = cuda_time_loop(lambda: b.copy_(a), n_warm=3, n_rep=9, target_ms=5.0)
    out["copy_GBps_rw"] = 2 * n * 2 / (r["median"] * 1e-3) / 1e9
    r = cuda_time_loop(lambda: a.sum(), n_warm=3, n_rep=9, target_ms=5.0)
    out["read_sum_GBps"] = n * 2 / (r["median"] * 1e-3) / 1e9
    del a, b
    M = 8192
    x = rnd(M, M)
    w = rnd(M, M)
    y = torch.empty(M, M, device="cuda", dtype=torch.bfloat16)
    r = cuda_time_loop(lambda: torch.mm(x, w.t(), out=y), n_warm=5, n_rep=9, target_ms=10.0)
    out["mm_bf16_8192_TFLOPs"] = 2 * M ** 3 / (r["median"] * 1e-3) / 1e12
    try:
        xq = x.to(torch.float8_e4m3fn)
        wq = w.to(torch.float8_e4m3fn)
        one = torch.ones((), device="cuda", dtype=torch.float32)
        r = cuda_time_loop(lambda: torch._scaled_mm(xq, wq.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                                    use_fast_accum=True), n_warm=5, n_rep=9, target_ms=10.0)
        out["mm_fp8_8192_fastacc_TFLOPs"] = 2 * M ** 3 / (r["median"] * 1e-3) / 1e12
    except Exception as e:  # noqa: BLE001
        out["mm_fp8_error"] = clean(e)
    del x, w, y
    torch.cuda.empty_cache()
    return out


class RepeatLog:
    """Rows measured twice in one run (first pass and a repeat at the end): the spread."""

    def __init__(self, path):
        self.f = CsvOut(path, ["table", "key", "time_us_first", "time_us_repeat", "rel_diff"])

    def add(self, table, key, t1, t2):
        self.f.row(table=table, key=key, time_us_first=t1, time_us_repeat=t2, rel_diff=(t2 - t1) / t1)
        log("repeat %-16s %-60s %10.2f -> %10.2f us (%+.1f%%)" % (table, key, t1, t2, 100 * (t2 - t1) / t1))

    def close(self):
        self.f.close()
