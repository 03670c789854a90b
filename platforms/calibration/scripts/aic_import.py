"""Import NVIDIA aiconfigurator's public H200 tables (Apache-2.0; github ai-dynamo/aiconfigurator
v0.10.0, src/aiconfigurator/systems/data/h200_sxm/, converted to CSV one to one in
shared/calibration/aiconfigurator-h200/) into the h200 profile, in the columns cpsim reads.

    python3 aic_import.py AIC_DIR PROFILE_DIR

Writes into PROFILE_DIR (platforms/calibration/h200):
  aic_nccl.csv, aic_nccl_graph.csv
      NCCL all_gather, all_reduce, reduce_scatter and all_to_all on 4 and 8 GPUs, at the sizes of
      nccl.csv (4 KiB x 4^k).  aiconfigurator times the device work of a call; our own nccl.csv
      (eager) and nccl_graph.csv (graph replay) time a call as an engine issues it, on 2 GPUs.  Rule:
          time_us(P, S) = aic(P, S) + [ours(2, S) - aic(2, S)]
      the launch path of a call in that mode, measured on 2 GPUs at the same size, is added to
      aiconfigurator's time on P GPUs (launch_us column).  Rows of 2 GPUs stay ours.
  aic_custom_allreduce.csv, aic_custom_allreduce_graph.csv
      vLLM 0.14's custom all-reduce (vLLM_custom_eager / vLLM_custom_graph) on 2, 4, 8 GPUs, as
      measured (op custom_all_reduce).
  aic_context_attention.csv
      prefill attention (FlashAttention-3, bf16 Q and KV) of vLLM 0.14 (vllm_flash_attn) and
      SGLang 0.5.9 (flash_attention): one sequence (batch 1) of isl >= 512 queries, causal, at
      least 8 query heads per GPU (the shards cpsim prices: a prefill is one call per sequence),
      head dim 128, time_us.
  aic_generation_attention.csv
      decode attention of the same kernels, bf16 KV: batch 1, 4, 16, 64, 256 of one query over
      kv_len = step + 1 >= 64 keys, 1-8 KV heads and 1-16 query heads per KV head.

Every row is checked against the H200's datasheet ceilings (machine.json reference_device:
989.4 TFLOP/s bf16 dense, 4.8 TB/s HBM); rows above them are dropped and counted (the
README of shared/calibration/aiconfigurator-h200 warns some of its tables are impossible).
"""
import csv
import json
import os
import sys

KINDS = {"all_gather": "all_gather", "all_reduce": "all_reduce",
         "reduce_scatter": "reduce_scatter", "alltoall": "all_to_all"}


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def write(path, fields, out):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(fields)
        w.writerows(out)
    print("%s: %d rows" % (os.path.basename(path), len(out)))


def nccl(aic, prof):
    a = {}
    for r in rows(os.path.join(aic, "nccl-2.26.2", "nccl_perf.csv")):
        if r["op_name"] in KINDS:
            a[(KINDS[r["op_name"]], int(r["num_gpus"]), int(r["message_size"]))] = \
                float(r["latency"]) * 1e3
    for table in ("nccl", "nccl_graph"):
        out = []
        ours = {(r["op"], int(r["P"]), int(r["size_bytes"])): float(r["time_us"])
                for r in rows(os.path.join(prof, table + ".csv"))}
        for (op, p, size), t2 in sorted(ours.items()):
            if p != 2 or (op, 2, size) not in a:
                continue
            launch = t2 - a[(op, 2, size)]
            for q in (4, 8):
                if (op, q, size) in a:
                    t = a[(op, q, size)] + launch
                    out.append([op, q, size, "%.4f" % t, "%.4f" % a[(op, q, size)],
                                "%.4f" % launch])
        write(os.path.join(prof, "aic_" + table + ".csv"),
              ["op", "P", "size_bytes", "time_us", "aic_time_us", "launch_us"], out)


def custom_ar(aic, prof):
    src = rows(os.path.join(aic, "vllm-0.14.0", "custom_allreduce_perf.csv"))
    for mode, table in (("vLLM_custom_eager", "aic_custom_allreduce"),
                        ("vLLM_custom_graph", "aic_custom_allreduce_graph")):
        out = [["custom_all_reduce", int(r["num_gpus"]), int(r["message_size"]),
                "%.4f" % (float(r["latency"]) * 1e3)]
               for r in src if r["kernel_source"] == mode and r["allreduce_dtype"] == "bfloat16"]
        out.sort(key=lambda x: (x[1], x[2]))
        write(os.path.join(prof, table + ".csv"), ["op", "P", "size_bytes", "time_us"], out)


def attention(aic, prof, peak, hbm):
    srcs = (("vllm", "vllm-0.14.0", "vllm_flash_attn"), ("sglang", "sglang-0.5.9", "flash_attention"))
    ctx, gen, dropped = [], [], {"context": 0, "generation": 0}
    for fw, folder, kernel in srcs:
        for r in rows(os.path.join(aic, folder, "context_attention_perf.csv")):
            if (r["kernel_source"] != kernel or r["kv_cache_dtype"] != "bfloat16" or
                    r["attn_dtype"] != "bfloat16" or int(r["isl"]) < 512 or
                    int(r["batch_size"]) != 1 or int(r["num_heads"]) < 8):
                continue
            b, s, h, kv, d = (int(r[k]) for k in ("batch_size", "isl", "num_heads",
                                                   "num_key_value_heads", "head_dim"))
            t = float(r["latency"]) * 1e-3
            # causal: s (s + 1) / 2 pairs per head, q.k and p.v: 4 d flops per pair
            flops = b * h * s * (s + 1) / 2 * 4 * d
            if flops / t > peak:
                dropped["context"] += 1
                continue
            ctx.append([fw, b, s, h, kv, d, "%.4f" % (t * 1e6), "%.1f" % (flops / t / 1e12)])
        for r in rows(os.path.join(aic, folder, "generation_attention_perf.csv")):
            h, kv = int(r["num_heads"]), int(r["num_key_value_heads"])
            if (r["kernel_source"] != kernel or r["kv_cache_dtype"] != "bfloat16" or
                    r["attn_dtype"] != "bfloat16" or int(r["step"]) < 63 or
                    int(r["batch_size"]) not in (1, 4, 16, 64, 256) or kv > 8 or
                    h % kv or h // kv > 16):
                continue
            b, kvlen, h, kv, d = (int(r["batch_size"]), int(r["step"]) + 1, int(r["num_heads"]),
                                  int(r["num_key_value_heads"]), int(r["head_dim"]))
            t = float(r["latency"]) * 1e-3
            byts = b * kvlen * kv * d * 2 * 2  # K and V in bf16
            if byts / t > hbm:
                dropped["generation"] += 1
                continue
            gen.append([fw, b, kvlen, h, kv, d, "%.4f" % (t * 1e6), "%.1f" % (byts / t / 1e9)])
    ctx.sort()
    gen.sort()
    write(os.path.join(prof, "aic_context_attention.csv"),
          ["framework", "batch", "isl", "heads", "kv_heads", "head_dim", "time_us", "tflops"], ctx)
    write(os.path.join(prof, "aic_generation_attention.csv"),
          ["framework", "batch", "kv_len", "heads", "kv_heads", "head_dim", "time_us", "gbps"],
          gen)
    print("dropped above the ceilings: %(context)d context rows, %(generation)d generation rows"
          % dropped)


def main(aic, prof):
    with open(os.path.join(prof, "machine.json")) as f:
        ref = json.load(f)["reference_device"]
    nccl(aic, prof)
    custom_ar(aic, prof)
    attention(aic, prof, ref["peak_flops"]["bf16"], ref["hbm_bandwidth"])


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
