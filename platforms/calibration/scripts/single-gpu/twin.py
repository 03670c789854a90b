"""cpsim beside the engine checks: the twin of every measurement of engine_checks.py.

Run (on the development machine, after `make`): python3 twin.py [--cpsim ./cpsim] [--checks DIR]

Reads the measured checks (default: platforms/calibration/h200/checks/), runs cpsim on the same
shapes (the 4-layer thinker geometry, tests/configs/thinker-4l.json, one H200, TP1, kernel set
pytorch; cuDNN attention for the prefill rows that ran it) and prints each figure, cpsim's and
the error.  A check, never a fit: nothing here feeds the cost model.
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
MODEL = os.path.join(ROOT, "tests", "configs", "thinker-4l.json")
MODELS = {"thinker": MODEL, "dense": os.path.join(ROOT, "tests", "configs", "qwen3-32b-4l.json")}
CUDNN_SET = "name: pytorch-cudnn\nattention: cudnn\n"


def run(cpsim, tmp, name, body, sets=(), model=MODEL, parallel="{tp: 1}"):
    w = os.path.join(tmp, name + ".yaml")
    with open(w, "w") as f:
        f.write("model: %s\nplatform: h200-sxm-8\nparallel: %s\n%s" % (model, parallel, body))
    out = os.path.join(tmp, name)
    cmd = [cpsim, "run", w, "--quiet", "--trace", "none", "--out", out]
    for s in sets:
        cmd += ["--set", s]
    subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL)
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    steps = []
    p = os.path.join(out, "steps.csv")
    if os.path.exists(p):
        with open(p) as f:
            steps = list(csv.DictReader(f))
    return summary, steps


def step_s(s):
    return float(s["t1_s"]) - float(s["t0_s"])


def err(sim, real):
    return 100.0 * (sim / real - 1.0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpsim", default=os.path.join(ROOT, "cpsim"))
    ap.add_argument("--checks", default=os.path.join(ROOT, "platforms", "calibration", "h200", "checks"))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="cpsim-twin-")
    ks = os.path.join(tmp, "cudnn.yaml")
    with open(ks, "w") as f:
        f.write(CUDNN_SET)
    print("%-44s %12s %12s %8s" % ("check", "measured_ms", "cpsim_ms", "error"))
    errs = {}
    with open(os.path.join(a.checks, "steps_e2e.csv")) as f:
        for r in csv.DictReader(f):
            B, C, mode = int(r["decodes"]), int(r["context"]), r["mode"]
            graph = "captured" if mode == "graph" else "eager"
            real = float(r["time_us"]) * 1e-3
            if r["kind"] == "decode":
                _, st = run(a.cpsim, tmp, "dec_%d_%d_%s" % (B, C, mode),
                            "engine: {graph: %s}\nrequests:\n  - {every_s: 0, count: %d, "
                            "prompt_tokens: %d, decode_tokens: 2}\n" % (graph, B, C))
                # the first step of the B decodes alone (the prefills come first)
                dec = [s for s in st if int(s["decodes"]) == B and int(s["prefills"]) == 0]
                sim = step_s(dec[0]) * 1e3
                label = "decode B=%d ctx=%d %s" % (B, C, mode)
            else:
                # 8 decodes at 1024 and a 2048-token prompt in one step (chunked prefill)
                _, st = run(a.cpsim, tmp, "mixed",
                            "engine: {graph: eager, chunked_prefill: true, max_num_batched_tokens: "
                            "8192}\nrequests:\n  - {every_s: 0, count: 8, prompt_tokens: 1024, "
                            "decode_tokens: 8}\n  - {prompt_tokens: 2048, arrival_s: 0.02}\n")
                mixed = [s for s in st if int(s["decodes"]) == 8 and int(s["prefills"]) == 1]
                sim = step_s(mixed[0]) * 1e3
                label = "mixed 8 decodes + 2048 prompt eager"
            errs.setdefault("steps", []).append(err(sim, real))
            print("%-44s %12.3f %12.3f %7.1f%%" % (label, real, sim, err(sim, real)))
    with open(os.path.join(a.checks, "prefill_e2e.csv")) as f:
        for r in csv.DictReader(f):
            L, att = int(r["prompt_tokens"]), r["attention"]
            real = float(r["ttft_us"]) * 1e-3
            body = "engine: {graph: eager%s}\nrequests: [{prompt_tokens: %d}]\n" % (
                ", kernels: %s" % ks if att == "cudnn" else "", L)
            sm, _ = run(a.cpsim, tmp, "pre_%d_%s" % (L, att), body)
            sim = sm["ttft_s"] * 1e3
            errs.setdefault("prefill_" + att, []).append(err(sim, real))
            print("%-44s %12.3f %12.3f %7.1f%%" % ("prefill %d %s" % (L, att), real, sim, err(sim, real)))
    with open(os.path.join(a.checks, "serving_e2e.csv")) as f:
        real = list(csv.DictReader(f))
    _, st = run(a.cpsim, tmp, "serving",
                # engine_checks.py's loop: prefills eager, decode-only steps from graphs; its
                # 32 tokens per request are the prefill's first and 31 decode steps
                "engine: {graph: decode_only}\nrequests:\n  - {streams: 8, count: 6, "
                "prompt_tokens: 512, decode_tokens: 31}\n")
    n = min(len(real), len(st))
    per = [err(step_s(st[i]), float(real[i]["time_us"]) * 1e-6) for i in range(n)]
    pre = [p for p, r in zip(per, real) if r["kind"] == "prefill"]
    dec = [p for p, r in zip(per, real) if r["kind"] == "decode"]
    print("%-44s %d steps (cpsim %d): prefill steps median %+.1f%%, decode steps median %+.1f%% "
          "(p10 %+.1f%%, p90 %+.1f%%)" % ("serving 8 x (512 + 32), 6 rounds", len(real), len(st),
                                         statistics.median(pre), statistics.median(dec),
                                         sorted(dec)[len(dec) // 10], sorted(dec)[9 * len(dec) // 10]))
    # memory: the step's tensors (max_memory_allocated) and the allocator's segments
    # (max_memory_reserved) above what the engine held before it (weights, its
    # preallocated KV cache and tables), against cpsim's peak_tensor_bytes and
    # peak_reserved_bytes less the weights and the KV; ring_kv_sp2_rank0 is rank 0 of
    # TP1 x SP2 pass-KV
    with open(os.path.join(a.checks, "memory_e2e.csv")) as f:
        for r in csv.DictReader(f):
            L, ring = int(r["prompt_tokens"]), r["strategy"] != "none"
            par = "{tp: 1, sp: 2, kv_storage: by_position, exchange: ring_kv}" if ring else "{tp: 1}"
            sm, _ = run(a.cpsim, tmp, "mem_%s_%d_%s" % (r["model"], L, r["strategy"]),
                        "engine: {graph: eager}\nrequests: [{prompt_tokens: %d}]\n" % L,
                        model=MODELS[r["model"]], parallel=par)
            rk = sm["ranks"][0]
            base = rk["peak_by_category"]["weights"] + rk["peak_by_category"]["kv_cache"]
            for what, sim, real in (
                    ("allocated", rk["peak_tensor_bytes"] - base,
                     int(r["peak_allocated"]) - int(r["allocated_before"])),
                    ("reserved", rk["peak_reserved_bytes"] - base,
                     int(r["peak_reserved"]) - int(r["reserved_before"]))):
                errs.setdefault("memory_" + what, []).append(err(sim, real))
                print("%-44s %12.3f %12.3f %7.1f%%" % ("memory %s %d %s %s (GB)" % (
                    r["model"], L, r["strategy"], what), real / 1e9, sim / 1e9, err(sim, real)))
    for k, v in errs.items():
        print("median |error| %-12s %5.1f%% over %d" % (k, statistics.median([abs(x) for x in v]), len(v)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
