"""The calibration tables extended to decode sizes (issue "Decode steps", part 3), on one GPU.

Run: python3 extend_small.py --out DIR [--smoke] [--budget-s S]

The measured series of the profile stop where prefill starts: gemm_graph.csv at M = 256, moe.csv at
64 tokens, elementwise.csv at 16 MB.  Decode steps run below them.  This script times the same kernels
with the same code below those edges:
  - gemm_graph_small.csv: calib_kernels.gemm_bench (graph replay) at M = 1 .. 128 for its shapes and the
    Llama 3.1 405B shards at TP8; gemm_fp8_small.csv: calib_gemm_fp8 at the same M;
  - moe_small.csv: calib_moe (grouped expert GEMMs and routing pieces) at 1 .. 32 tokens, Qwen3-30B-A3B
    geometry (the thinker's), every TP / EP shard, the three routings; its `active_experts` column is
    the experts that received a row (the weights the kernel reads);
  - elementwise_small.csv: copy, add, RMSNorm, SwiGLU, unfused RoPE and LSE merge over 1 .. 4096 rows,
    eager and CUDA-graph replay (graph replay is the kernel's time; eager is bound by the launch rate).
Each part runs in its own budget share and writes its rows as it goes.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))

from bench import CsvOut, Deadline, graph_inner, graph_time, log, rnd  # noqa: E402
from common import cuda_time_loop  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

SMALL_M = [1, 2, 4, 8, 16, 32, 64, 128]
SMALL_TOKENS = [1, 2, 4, 8, 16, 32]
# Llama 3.1 405B at TP8: hidden 16384, 128 q / 8 kv heads of 128, intermediate 53248
LLAMA405_TP8 = [
    ("llama-3.1-405b-tp8", "qkv_proj", 16384, (16 + 2) * 128),
    ("llama-3.1-405b-tp8", "o_proj", 2048, 16384),
    ("llama-3.1-405b-tp8", "mlp_gate_up", 16384, 2 * 53248 // 8),
    ("llama-3.1-405b-tp8", "mlp_down", 53248 // 8, 16384),
]


def run_main(module, argv):
    old = sys.argv
    sys.argv = [module.__file__] + argv
    try:
        module.main()
    finally:
        sys.argv = old


def gemm_small(out, budget, smoke):
    import calib_kernels
    calib_kernels.GEMM_M = SMALL_M if not smoke else [1, 16]
    calib_kernels.GEMM_SHAPES = LLAMA405_TP8 + calib_kernels.GEMM_SHAPES
    d = os.path.join(out, "gemm_small")
    run_main(calib_kernels, ["--out", d, "--only", "gemm", "--graph", "--budget-s", str(budget)] +
             (["--smoke"] if smoke else []))


def gemm_fp8_small(out, budget, smoke):
    import calib_gemm_fp8
    calib_gemm_fp8.MS = SMALL_M if not smoke else [1, 16]
    calib_gemm_fp8.SHAPES = LLAMA405_TP8 + calib_gemm_fp8.SHAPES[:7]
    calib_gemm_fp8.VARIANTS = ["bf16", "fp8_tensor_fastacc", "fp8_row_fastacc"]
    run_main(calib_gemm_fp8, ["--out", os.path.join(out, "gemm_fp8_small"), "--budget-s", str(budget)] +
             (["--smoke"] if smoke else []))


def moe_small(out, budget, smoke):
    import calib_moe
    calib_moe.TOKENS = SMALL_TOKENS if not smoke else [1, 8]
    run_main(calib_moe, ["--out", os.path.join(out, "moe_small"), "--models", "qwen3-30b-a3b",
                         "--budget-s", str(budget)] + (["--smoke"] if smoke else []))


def elementwise_small(out, budget, smoke):
    dl = Deadline(budget)
    os.makedirs(out, exist_ok=True)
    f = CsvOut(os.path.join(out, "elementwise_small.csv"),
               ["kind", "desc", "rows", "tensor_bytes", "min_bytes_moved", "time_us", "time_us_graph",
                "graph_inner", "gbps_graph"])
    rows_list = [1, 8, 64, 512, 4096] if not smoke else [8]
    H = 2048
    todo = []
    for m in rows_list:
        a = rnd(m, H)
        b = torch.empty_like(a)
        c = rnd(m, H)
        w = rnd(H)
        todo.append(("copy", "x.copy_(y) [%d,%d]" % (m, H), m, m * H * 2, 2 * m * H * 2,
                     lambda a=a, b=b: b.copy_(a)))
        todo.append(("add", "z = x + y [%d,%d]" % (m, H), m, m * H * 2, 3 * m * H * 2,
                     lambda a=a, c=c: torch.add(a, c)))
        todo.append(("rms_norm", "F.rms_norm hidden=%d M=%d" % (H, m), m, m * H * 2, 2 * m * H * 2 + H * 2,
                     lambda a=a, w=w: F.rms_norm(a, (H,), w, 1e-6)))
        gu = rnd(m, 2 * 768)
        todo.append(("silu_mul", "silu(g)*u M=%d I=768" % m, m, m * 1536 * 2, m * 1536 * 2 + m * 768 * 2,
                     lambda gu=gu: F.silu(gu[:, :768]) * gu[:, 768:]))
        q = rnd(m, 32, 128)
        cos = rnd(m, 1, 128)
        sin = rnd(m, 1, 128)

        def rope(q=q, cos=cos, sin=sin):
            rot = torch.cat((-q[..., 64:], q[..., :64]), -1)
            return q * cos + rot * sin
        todo.append(("rope_unfused", "rope q M=%d (4 kernels)" % m, m, m * 32 * 128 * 2, 2 * m * 32 * 128 * 2,
                     rope))
        o0 = rnd(m, 32, 128)
        o1 = rnd(m, 32, 128)
        l0 = torch.randn(32, m, device="cuda")
        l1 = torch.randn(32, m, device="cuda")

        def mergef(o0=o0, o1=o1, l0=l0, l1=l1):
            lses = torch.stack([l0, l1])
            mx = lses.max(0).values
            wt = torch.exp(lses - mx)
            wt = wt / wt.sum(0, keepdim=True)
            wt = wt.transpose(1, 2).unsqueeze(-1)
            acc = o0.float() * wt[0]
            acc += o1.float() * wt[1]
            return acc.to(torch.bfloat16)
        todo.append(("lse_merge2_unfused", "merge 2 partials n=%d (unfused torch ops)" % m, m, m * 32 * 128 * 2,
                     3 * m * 32 * 128 * 2 + 2 * 32 * m * 4, mergef))
    for kind, desc, m, size, by, fn in todo:
        if dl.passed():
            log("elementwise_small: budget passed")
            break
        r = cuda_time_loop(fn, n_warm=3, n_rep=7, target_ms=2.0)
        inner = graph_inner(r["median"], target_ms=2.0)
        g = graph_time(fn, inner)
        f.row(kind=kind, desc=desc, rows=m, tensor_bytes=size, min_bytes_moved=by, time_us=r["median"] * 1e3,
              time_us_graph=g["median"] * 1e3, graph_inner=inner, gbps_graph=by / (g["median"] * 1e-3) / 1e9)
        log("elem_small %-20s %-36s eager %8.2f us graph %8.2f us" % (kind, desc, r["median"] * 1e3,
                                                                     g["median"] * 1e3))
    f.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--budget-s", type=float, default=150)
    ap.add_argument("--only", default="elementwise,gemm,gemm_fp8,moe")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.cuda.set_device(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    parts = args.only.split(",")
    share = {"elementwise": 0.15, "gemm": 0.25, "gemm_fp8": 0.2, "moe": 0.4}
    for p in parts:
        b = args.budget_s * share[p]
        try:
            {"elementwise": lambda: elementwise_small(args.out, b, args.smoke),
             "gemm": lambda: gemm_small(args.out, b, args.smoke),
             "gemm_fp8": lambda: gemm_fp8_small(args.out, b, args.smoke),
             "moe": lambda: moe_small(args.out, b, args.smoke)}[p]()
        except Exception as e:  # noqa: BLE001
            log("extend_small: %s failed: %r" % (p, e))
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
