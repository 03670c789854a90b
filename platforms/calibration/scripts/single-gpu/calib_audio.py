"""The kernels of Qwen3-Omni's audio encoder (models/encoder/) that no other table measured, on
one GPU: rows for the cost model (kernel tables, never end-to-end times).

Run (on the device machine): python3 calib_audio.py --out DIR [--budget-s S]

Writes, with the code and protocol of the tables they extend:
  - gemm_audio.csv / gemm_audio_graph.csv: calib_kernels.gemm_bench (torch.mm, eager repeat and
    CUDA-graph replay) at its GEMM_M for the encoder's linears at TP 1, 2 and 4 (d_model 1280, 20
    heads of 64, ffn 5120, conv_out 7680 -> 1280, proj2 1280 -> 2048); merge.py appends them to
    gemm.csv and gemm_graph.csv (model qwen3-omni-audio);
  - conv.csv: the three conv2d of the encoder's front (3x3, stride 2, padding 1, bias; bf16 NCHW
    input as the encoder holds it: [images, 1, 128, 100] -> 480 channels, then 480 -> 480 twice)
    at 1 .. 500 images (conv chunks), one F.conv2d call each: eager (CUDA events over repeated
    calls, operands rotated past the L2) and CUDA-graph replay; `kernels` is the kernels one call
    launches (torch.profiler: cuDNN's layout transforms, the convolution, the bias add);
  - elementwise_audio.csv: F.gelu and F.layer_norm (weight and bias) over the encoder's tensors,
    in elementwise.csv's columns (kind gelu, layer_norm).
"""
import argparse
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))

from common import CsvOut, Deadline, cuda_time_loop, log  # noqa: E402
import calib_kernels  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

D, FFN, CH, MEL, FR = 1280, 5120, 480, 128, 100
AUDIO_GEMMS = []
for tp in (1, 2, 4):
    m = "qwen3-omni-audio-tp%d" % tp
    AUDIO_GEMMS += [(m, "qkv", D, 3 * D // tp), (m, "out_proj", D // tp, D),
                    (m, "fc1", D, FFN // tp), (m, "fc2", FFN // tp, D)]
AUDIO_GEMMS += [("qwen3-omni-audio", "conv_out", CH * 16, D), ("qwen3-omni-audio", "proj2", D, 2048)]
IMAGES = [1, 4, 16, 64, 250, 500]
# name, in channels, input height (mel bins) and width (frames) of each conv
CONVS = [("conv2d1", 1, MEL, FR), ("conv2d2", CH, 64, 50), ("conv2d3", CH, 32, 25)]


def unique_shapes(shapes):
    seen, out = set(), []
    for s in shapes:
        if (s[2], s[3]) not in seen:
            seen.add((s[2], s[3]))
            out.append(s)
    return out


def kernels_of(fn):
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sum(ev.count for ev in prof.key_averages() if ev.self_device_time_total > 0)


def conv_bench(csvf, dev, dl):
    for name, cin, h, w in CONVS:
        ho, wo = (h - 1) // 2 + 1, (w - 1) // 2 + 1
        for n in IMAGES:
            if dl.passed():
                log("conv: time budget passed, stopping")
                return
            per_set = (n * cin * h * w + CH * cin * 9 + CH + n * CH * ho * wo) * 2
            nsets = int(min(16, max(1, math.ceil((256 << 20) / per_set))))
            xs = [calib_kernels.rnd(n, cin, h, w, dev=dev) for _ in range(nsets)]
            wt = calib_kernels.rnd(CH, cin, 3, 3, dev=dev)
            bias = calib_kernels.rnd(CH, dev=dev)
            st = {"i": 0}

            def fn():
                i = st["i"]
                F.conv2d(xs[i], wt, bias, stride=2, padding=1)
                st["i"] = (i + 1) % nsets
            r = cuda_time_loop(fn, n_warm=5, n_rep=9, target_ms=4.0)
            ig = int(min(500, max(1, math.ceil(3.0 / r["median"]))))
            rg = calib_kernels.cuda_graph_time(fn, ig)
            k = kernels_of(fn)
            flops = 2.0 * n * ho * wo * cin * 9 * CH
            csvf.row(model="qwen3-omni-audio", name=name, images=n, in_ch=cin, out_ch=CH, h_in=h,
                     w_in=w, h_out=ho, w_out=wo, M=n * ho * wo, K=cin * 9, N=CH, dtype="bf16",
                     kernels=k, n_sets=nsets, inner=r["inner"], time_us=r["median"] * 1e3,
                     time_us_min=r["min"] * 1e3, time_us_max=r["max"] * 1e3, graph_inner=ig,
                     time_us_graph=rg["median"] * 1e3, min_bytes=per_set,
                     tflops_graph=flops / (rg["median"] * 1e-3) / 1e12)
            log("conv %s images=%4d  %9.1f us eager  %9.1f us graph  %d kernels" % (
                name, n, r["median"] * 1e3, rg["median"] * 1e3, k))
            del xs
            torch.cuda.empty_cache()


def elementwise_bench(csvf, dev, dl):
    rows = []
    # GELU over the conv outputs (per conv chunk: 480 x 64 x 50) and fc1's output rows
    for mb in (16, 64, 256, 1024):
        n = mb * (1 << 20) // 2
        x = calib_kernels.rnd(n, dev=dev)
        rows.append(("gelu", "F.gelu %d MB" % mb, 2 * n, 4 * n, lambda x=x: F.gelu(x)))
    for m in (1024, 4096, 16384, 65536):
        x = calib_kernels.rnd(m, D, dev=dev)
        g, b = calib_kernels.rnd(D, dev=dev), calib_kernels.rnd(D, dev=dev)
        rows.append(("layer_norm", "F.layer_norm d=%d M=%d" % (D, m), m * D * 2,
                     2 * m * D * 2 + 2 * D * 2, lambda x=x, g=g, b=b: F.layer_norm(x, (D,), g, b)))
    for kind, desc, tbytes, moved, fn in rows:
        if dl.passed():
            return
        r = cuda_time_loop(fn, n_warm=5, n_rep=9, target_ms=3.0)
        csvf.row(kind=kind, desc=desc, tensor_bytes=tbytes, min_bytes_moved=moved,
                 inner=r["inner"], time_us=r["median"] * 1e3, time_us_min=r["min"] * 1e3,
                 time_us_max=r["max"] * 1e3, gbps=moved / (r["median"] * 1e-3) / 1e9)
        log("%s %-28s %9.1f us  %7.1f GB/s" % (kind, desc, r["median"] * 1e3,
                                               moved / (r["median"] * 1e-3) / 1e9))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=400)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    dev = torch.device("cuda")
    dl = Deadline(args.budget_s)
    shapes = unique_shapes(AUDIO_GEMMS)
    gcols = ["model", "name", "M", "K", "N", "dtype", "n_sets", "inner", "time_us", "time_us_min",
             "time_us_max", "tflops", "min_bytes", "gbps"]
    for graph, fname in ((False, "gemm_audio.csv"), (True, "gemm_audio_graph.csv")):
        cols = gcols + (["graph_inner", "time_us_graph", "time_us_graph_min", "time_us_graph_max",
                         "tflops_graph"] if graph else [])
        csvf = CsvOut(os.path.join(args.out, fname), cols)
        calib_kernels.gemm_bench(csvf, dev, dl, False, graph=graph, shapes=shapes,
                                 reference=False)
        csvf.close()
    csvf = CsvOut(os.path.join(args.out, "conv.csv"),
                  ["model", "name", "images", "in_ch", "out_ch", "h_in", "w_in", "h_out", "w_out",
                   "M", "K", "N", "dtype", "kernels", "n_sets", "inner", "time_us", "time_us_min",
                   "time_us_max", "graph_inner", "time_us_graph", "min_bytes", "tflops_graph"])
    conv_bench(csvf, dev, dl)
    csvf.close()
    csvf = CsvOut(os.path.join(args.out, "elementwise_audio.csv"),
                  ["kind", "desc", "tensor_bytes", "min_bytes_moved", "inner", "time_us",
                   "time_us_min", "time_us_max", "gbps"])
    elementwise_bench(csvf, dev, dl)
    csvf.close()


if __name__ == "__main__":
    main()
