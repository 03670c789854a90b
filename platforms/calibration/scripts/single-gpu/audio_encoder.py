"""Qwen3-Omni's audio encoder on one GPU, eager, as vLLM's forward runs it: a check of
models/encoder/ (never a fit: nothing here feeds the cost model).

Run (on the device machine): python3 audio_encoder.py --out DIR

Builds the encoder at the transformers defaults (Qwen3OmniMoeAudioEncoderConfig: 32 layers,
d_model 1280, 20 heads, ffn 5120, 128 mel bins, 480 conv channels, n_window 50, n_window_infer
800, conv_chunksize 500; output 2048, the thinker's hidden size) with random bf16 weights and
times its forward on random mel features of several lengths (CUDA events around the whole
forward, median of the repeats after warm-up).  The forward follows vLLM's
Qwen3OmniMoeAudioEncoder.forward: chunks of 2 n_window frames padded, conv2d x3 with GELU (in
calls of conv_chunksize chunks), conv_out, positions added, padding rows dropped, layers of
LayerNorm / qkv / windowed attention (flash_attn_varlen_func when importable, else SDPA over
the windows) / out_proj / residual / LayerNorm / fc1 / GELU / fc2 / residual, ln_post, proj1,
GELU, proj2.  Writes audio_encoder_e2e.csv.
"""
import argparse
import csv
import math
import os
import statistics

import torch
import torch.nn.functional as F

D, HEADS, FFN, MEL, CH, NW, NWI, CCS, OUT, LAYERS, POS = (
    1280, 20, 5120, 128, 480, 50, 800, 500, 2048, 32, 1500)
HD = D // HEADS

try:
    from flash_attn import flash_attn_varlen_func
except ImportError:  # the SDPA fallback below
    flash_attn_varlen_func = None


def conv_len(n):
    for _ in range(3):
        n = (n - 1) // 2 + 1 if n > 0 else 0
    return n


class Encoder:
    def __init__(self, dev):
        g = torch.Generator(device="cpu").manual_seed(0)

        def w(*shape):
            return (torch.randn(*shape, generator=g) * 0.02).to(dev, torch.bfloat16)

        self.c1w, self.c1b = w(CH, 1, 3, 3), w(CH)
        self.c2w, self.c2b = w(CH, CH, 3, 3), w(CH)
        self.c3w, self.c3b = w(CH, CH, 3, 3), w(CH)
        f3 = (((MEL + 1) // 2 + 1) // 2 + 1) // 2
        self.cow = w(D, CH * f3)
        self.pos = w(POS, D)
        self.layers = []
        for _ in range(LAYERS):
            self.layers.append(dict(
                n1w=w(D), n1b=w(D), qkvw=w(3 * D, D), qkvb=w(3 * D), ow=w(D, D), ob=w(D),
                n2w=w(D), n2b=w(D), f1w=w(FFN, D), f1b=w(FFN), f2w=w(D, FFN), f2b=w(D)))
        self.lnw, self.lnb = w(D), w(D)
        self.p1w, self.p1b = w(D, D), w(D)
        self.p2w, self.p2b = w(OUT, D), w(OUT)

    def forward(self, feats):
        frames = feats.shape[1]
        chunk = 2 * NW
        n = (frames + chunk - 1) // chunk
        lens = [chunk] * n
        if frames % chunk:
            lens[-1] = frames % chunk
        chunks = feats.T.split(lens, dim=0)
        x = torch.nn.utils.rnn.pad_sequence(chunks, batch_first=True).transpose(1, 2)
        x = x.unsqueeze(1)
        outs = []
        for part in x.split(CCS, dim=0):
            y = F.gelu(F.conv2d(part, self.c1w, self.c1b, stride=2, padding=1))
            y = F.gelu(F.conv2d(y, self.c2w, self.c2b, stride=2, padding=1))
            y = F.gelu(F.conv2d(y, self.c3w, self.c3b, stride=2, padding=1))
            outs.append(y)
        y = torch.cat(outs, dim=0)
        b, c, f, t = y.shape
        y = F.linear(y.permute(0, 3, 1, 2).contiguous().view(b, t, c * f), self.cow)
        y = y + self.pos[:t].unsqueeze(0)
        after = torch.tensor([conv_len(l) for l in lens], device=y.device)
        mask = torch.arange(t, device=y.device).unsqueeze(0) < after.unsqueeze(1)
        h = y[mask]
        rows = h.shape[0]
        window = t * (NWI // chunk)
        cu = [0]
        while cu[-1] < rows:
            cu.append(min(cu[-1] + window, rows))
        cu_t = torch.tensor(cu, device=h.device, dtype=torch.int32)
        for L in self.layers:
            r = h
            z = F.layer_norm(h, (D,), L["n1w"], L["n1b"])
            qkv = F.linear(z, L["qkvw"], L["qkvb"])
            q, k, v = qkv.view(rows, 3, HEADS, HD).unbind(1)
            if flash_attn_varlen_func is not None:
                a = flash_attn_varlen_func(q, k, v, cu_t, cu_t, window, window, causal=False)
            else:  # the full windows as one batch, the short last one alone
                full = rows // window * window
                parts = []
                if full:
                    qf, kf, vf = (u[:full].view(-1, window, HEADS, HD).transpose(1, 2)
                                  for u in (q, k, v))
                    parts.append(F.scaled_dot_product_attention(qf, kf, vf).transpose(1, 2)
                                 .reshape(full, HEADS, HD))
                if full < rows:
                    qt, kt, vt = (u[full:].transpose(0, 1) for u in (q, k, v))
                    parts.append(F.scaled_dot_product_attention(qt, kt, vt).transpose(0, 1))
                a = torch.cat(parts, 0) if len(parts) > 1 else parts[0]
            h = r + F.linear(a.reshape(rows, D), L["ow"], L["ob"])
            r = h
            z = F.layer_norm(h, (D,), L["n2w"], L["n2b"])
            z = F.gelu(F.linear(z, L["f1w"], L["f1b"]))
            h = r + F.linear(z, L["f2w"], L["f2b"])
        h = F.layer_norm(h, (D,), self.lnw, self.lnb)
        h = F.gelu(F.linear(h, self.p1w, self.p1b))
        return F.linear(h, self.p2w, self.p2b), rows, len(cu) - 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--kernels", type=int, default=0,
                    help="list the kernels of the forward of this many seconds")
    args = ap.parse_args()
    dev = torch.device("cuda")
    enc = Encoder(dev)
    rows_out = []
    with torch.inference_mode():
        for seconds in (10, 60, 300, 600, 1800, 3600):
            frames = seconds * 100
            feats = torch.randn(MEL, frames, device=dev, dtype=torch.bfloat16)
            for _ in range(2):
                enc.forward(feats)
            torch.cuda.synchronize()
            times = []
            for _ in range(args.repeats):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                out, rows, windows = enc.forward(feats)
                e.record()
                torch.cuda.synchronize()
                times.append(s.elapsed_time(e))
            times.sort()
            # the kernels' device time of one forward (torch.profiler, CUDA activity)
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                enc.forward(feats)
                torch.cuda.synchronize()
            kernel_us = sum(ev.self_device_time_total for ev in prof.key_averages())
            if args.kernels and seconds == args.kernels:  # the kernels of one length
                top = sorted(prof.key_averages(), key=lambda ev: -ev.self_device_time_total)
                for ev in top[:24]:
                    if ev.self_device_time_total > 0:
                        print("  kernel %-90.90s %5d %9.3f ms" % (
                            ev.key, ev.count, ev.self_device_time_total / 1e3))
            row = dict(audio_s=seconds, frames=frames, rows=rows, windows=windows,
                       ms_median=round(statistics.median(times), 3), ms_min=round(times[0], 3),
                       ms_max=round(times[-1], 3), kernel_ms=round(kernel_us / 1e3, 3),
                       attention="flash_attn_varlen" if flash_attn_varlen_func else "sdpa",
                       peak_bytes=torch.cuda.max_memory_allocated(),
                       device=torch.cuda.get_device_name(0), torch=torch.__version__)
            print(row, flush=True)
            rows_out.append(row)
            torch.cuda.reset_peak_memory_stats()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "audio_encoder_e2e.csv"), "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows_out[0]))
        wr.writeheader()
        wr.writerows(rows_out)


if __name__ == "__main__":
    main()
