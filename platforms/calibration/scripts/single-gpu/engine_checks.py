"""End-to-end checks of cpsim's kernel sets on one GPU: a small PyTorch engine of our own.

Run: python3 engine_checks.py --out DIR [--smoke] [--only PARTS] [--budget-s S]

The model is a few decoder layers of a real geometry with random bf16 weights: `thinker` is the
Qwen3-Omni-30B-A3B thinker (hidden 2048, 32 q / 4 kv heads of 128, q/k RMSNorm, RoPE, a top-8 MoE
of 128 experts of 768), `dense` is Qwen3-32B (hidden 5120, 64 q / 8 kv heads of 128, q/k norm,
SwiGLU MLP of 25600).  Every piece is written as the calibration scripts write it (so that cpsim's
`pytorch` kernel set prices this engine from the profile's rows): F.linear GEMMs, F.rms_norm,
residual adds, the unfused RoPE of elementwise.csv, a KV-cache write per K and V, attention by
aten._scaled_dot_product_flash_attention (FlashAttention-2) or _scaled_dot_product_cudnn_attention
(cuDNN's fused Hopper kernel), the routing pieces and torch._grouped_mm expert GEMMs of
calib_moe.py, F.silu * mul.  These are checks, never fits: cpsim calibrates on kernel tables only.

Parts (each writes its own CSV / JSON; a part that fails is logged and the others run):
  prefill   TTFT of one prompt (8K .. 128K) through the layers, attention FA2 vs cuDNN (issue
            "Kernel sets", part 6): prefill.csv
  decode    one decode step (batch 1, 8, 32, 64 at a context of 1024 and 8192) eager and replayed
            from a CUDA graph; a mixed step of 8 decodes and a 2K prompt, eager: steps.csv
  serving   a closed loop of 8 clients (512 prompt + 32 decode tokens, 6 rounds): every step's
            composition and its time (prefill steps eager, decode steps replayed from graphs
            captured per batch and context bucket): serving.csv
  memory    torch.cuda.max_memory_allocated / max_memory_reserved of a prefill (8K, 32K, 128K) of
            both models, as one rank runs it without sequence parallelism and as rank 0 of a 2-rank
            pass-KV ring (its half of the tokens, the visiting K/V block, fp32 partials merged by
            their LSE): memory.csv
  profile   torch.profiler traces (Chrome JSON, gzip): a 2K prefill (eager), a decode step of batch
            8 (graph replay) and a mixed step (eager), with record_function marks per step and
            layer: trace_*.json.gz; and the prefill and the decode step eager with every op
            marked as cpsim's trace names it (OPMARKS): trace_*_opmarks.json.gz
Timing: CUDA events around each call (or graph replay), warm-ups first, median of the repeats.
"""
import argparse
import gzip
import json
import math
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))

from bench import CsvOut, Deadline, log, rnd  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

EPS = 1e-6
MODELS = {
    "thinker": dict(H=2048, nq=32, nkv=4, d=128, moe=True, E=128, k=8, I=768, vocab=152064),
    "dense": dict(H=5120, nq=64, nkv=8, d=128, moe=False, I=25600, vocab=151936),
}


# ---- the model ---------------------------------------------------------------------------------

# Op marks: when on, each piece of a step runs inside a record_function range named as cpsim's
# trace names the op (qkv_proj, qk_norm, rope, kv_write, attention, ...), so that `cpsim compare`
# classes its kernels exactly (reports/compare/compare.h).  Off, the code runs no range at all.
OPMARKS = False


class _NoMark:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def mark(name):
    return torch.profiler.record_function(name) if OPMARKS else _NoMark()


class Model:
    def __init__(self, name, layers, cmax, bmax, pmax=0):
        c = MODELS[name]
        self.name, self.c, self.nl = name, c, layers
        H, nq, nkv, d = c["H"], c["nq"], c["nkv"], c["d"]
        self.emb = rnd(c["vocab"], H, scale=0.02)
        self.lm = rnd(c["vocab"], H, scale=H ** -0.5)
        self.fnorm = rnd(H).abs_()
        self.L = []
        for _ in range(layers):
            w = dict(qkv=rnd((nq + 2 * nkv) * d, H, scale=H ** -0.5), o=rnd(H, nq * d, scale=(nq * d) ** -0.5),
                     n1=rnd(H).abs_(), n2=rnd(H).abs_(), qn=rnd(d).abs_(), kn=rnd(d).abs_())
            if c["moe"]:
                E, I = c["E"], c["I"]
                w["router"] = rnd(E, H, scale=H ** -0.5)
                w["w13"] = rnd(E, 2 * I, H, scale=H ** -0.5)
                w["w2"] = rnd(E, H, I, scale=I ** -0.5)
            else:
                w["w13"] = rnd(2 * c["I"], H, scale=H ** -0.5)
                w["w2"] = rnd(H, c["I"], scale=c["I"] ** -0.5)
            self.L.append(w)
        torch.cuda.synchronize()
        self.weight_bytes = torch.cuda.memory_allocated()
        self.kc = [torch.zeros(bmax, nkv, cmax, d, device="cuda", dtype=torch.bfloat16) for _ in range(layers)]
        self.vc = [torch.zeros(bmax, nkv, cmax, d, device="cuda", dtype=torch.bfloat16) for _ in range(layers)]
        torch.cuda.synchronize()
        self.kv_bytes = torch.cuda.memory_allocated() - self.weight_bytes
        inv = 1.0 / (1e6 ** (torch.arange(0, d, 2, device="cuda", dtype=torch.float32) / d))
        pos = torch.arange(max(cmax, pmax), device="cuda", dtype=torch.float32)  # RoPE positions
        ang = torch.outer(pos, inv)
        ang = torch.cat((ang, ang), -1)
        self.cos = ang.cos().to(torch.bfloat16)
        self.sin = ang.sin().to(torch.bfloat16)


def rope(x, cos, sin):
    """The unfused RoPE of elementwise.csv (rope_unfused)."""
    half = x.shape[-1] // 2
    rot = torch.cat((-x[..., half:], x[..., :half]), -1)
    return x * cos + rot * sin


def attend(q, k, v, causal, impl):
    scale = q.shape[-1] ** -0.5
    if impl == "cudnn":
        return torch.ops.aten._scaled_dot_product_cudnn_attention(q, k, v, None, True, 0.0, causal, False,
                                                                 scale=scale)[0]
    return torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal, False, scale=scale)[0]


def attend_lse(q, k, v, causal):
    scale = q.shape[-1] ** -0.5
    r = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal, False, scale=scale)
    return r[0], r[1]


def moe(m, w, x):
    """Router, top-k scoring, permute, two grouped GEMMs with SwiGLU, unpermute (calib_moe.py pieces)."""
    c = m.c
    E, k, I = c["E"], c["k"], c["I"]
    T = x.shape[0]
    R = T * k
    with mark("router"):
        logits = F.linear(x, w["router"])
    with mark("topk"):
        p = torch.softmax(logits, dim=-1, dtype=torch.float32)
        tw, ids = torch.topk(p, k, dim=-1)
        tw = (tw / tw.sum(-1, keepdim=True)).to(torch.bfloat16)
    with mark("moe_permute"):
        flat = ids.flatten()
        _, order = torch.sort(flat, stable=True)
        counts = torch.zeros(E, dtype=torch.int32, device="cuda").scatter_add_(
            0, flat, torch.ones(R, dtype=torch.int32, device="cuda"))
        offs = torch.cumsum(counts, 0, dtype=torch.int32)
        tok = order // k
        inv = torch.empty_like(order).scatter_(0, order, torch.arange(R, device="cuda"))
        xg = x.index_select(0, tok)
    with mark("expert_gate_up"):
        h13 = torch._grouped_mm(xg, w["w13"].transpose(-2, -1), offs=offs)
    with mark("expert_act"):
        a = F.silu(h13[:, :I]) * h13[:, I:]
    with mark("expert_down"):
        y = torch._grouped_mm(a, w["w2"].transpose(-2, -1), offs=offs)
    with mark("moe_unpermute"):
        wsort = tw.flatten().index_select(0, order)
        return (y * wsort[:, None]).index_select(0, inv).view(T, k, -1).sum(1)


def mlp(m, w, x):
    if m.c["moe"]:
        return moe(m, w, x)
    gu = F.linear(x, w["w13"])
    I = m.c["I"]
    return F.linear(F.silu(gu[:, :I]) * gu[:, I:], w["w2"])


def layer(m, li, res, x, seqs, impl, first):
    """One decoder layer over the step's tokens.  seqs: [(slot, new, prefix)]; a run of decodes
    (new == 1, the same prefix, consecutive slots) is one batched attention call."""
    c = m.c
    H, nq, nkv, d = c["H"], c["nq"], c["nkv"], c["d"]
    w = m.L[li]
    N = x.shape[0]
    with mark("qkv_proj"):
        qkv = F.linear(x, w["qkv"])
    with mark("qk_contiguous"):  # the copies F.rms_norm would make of the strided views
        qc = qkv[:, :nq * d].contiguous().view(N, nq, d)
        kc = qkv[:, nq * d:(nq + nkv) * d].contiguous().view(N, nkv, d)
    with mark("qk_norm"):
        q = F.rms_norm(qc, (d,), w["qn"], EPS)
        kk = F.rms_norm(kc, (d,), w["kn"], EPS)
    v = qkv[:, (nq + nkv) * d:].view(N, nkv, d)
    with mark("rope_cos_sin"):
        pos = seqs_pos(seqs, N)
        cos, sin = m.cos[pos][:, None, :], m.sin[pos][:, None, :]
    with mark("rope"):
        q = rope(q, cos, sin)
        kk = rope(kk, cos, sin)
    outs = []
    at = 0
    for grp in groups(seqs):
        if grp[0][1] == 1:  # decodes: one call over their slots, contexts equal
            b0, B, pre = grp[0][0], len(grp), grp[0][2]
            with mark("kv_write"):
                m.kc[li][b0:b0 + B, :, pre] = kk[at:at + B]
                m.vc[li][b0:b0 + B, :, pre] = v[at:at + B]
            with mark("attention"):
                o = attend(q[at:at + B].unsqueeze(2), m.kc[li][b0:b0 + B, :, :pre + 1],
                           m.vc[li][b0:b0 + B, :, :pre + 1], False, "fa2")
                outs.append(o[:, :, 0, :].reshape(B, nq * d))
            at += B
        else:
            slot, t, pre = grp[0]
            with mark("kv_write"):
                m.kc[li][slot, :, pre:pre + t] = kk[at:at + t].transpose(0, 1)
                m.vc[li][slot, :, pre:pre + t] = v[at:at + t].transpose(0, 1)
            with mark("attention"):
                o = attend(q[at:at + t].transpose(0, 1).unsqueeze(0),
                           m.kc[li][slot:slot + 1, :, :pre + t],
                           m.vc[li][slot:slot + 1, :, :pre + t], True, impl)
                outs.append(o[0].transpose(0, 1).reshape(t, nq * d))
            at += t
    attn = outs[0] if len(outs) == 1 else torch.cat(outs, 0)
    with mark("o_proj"):
        o = F.linear(attn, w["o"])
    with mark("residual_add"):
        res = res + o
    with mark("post_attn_norm"):
        x = F.rms_norm(res, (H,), w["n2"], EPS)
    y = mlp(m, w, x)
    with mark("residual_add"):
        res = res + y
    return res


def seqs_pos(seqs, N):
    """Positions of the step's tokens (a tensor of N)."""
    parts = [torch.arange(p, p + t, device="cuda") for _, t, p in seqs]
    return parts[0] if len(parts) == 1 else torch.cat(parts)


def groups(seqs):
    out, cur = [], []
    for s in seqs:
        if s[1] == 1 and cur and cur[-1][1] == 1 and cur[-1][2] == s[2] and cur[-1][0] + 1 == s[0]:
            cur.append(s)
            continue
        if cur:
            out.append(cur)
        cur = [s]
    if cur:
        out.append(cur)
    return out


def forward(m, ids, seqs, impl="fa2", marks=False):
    """A step: embedding, the layers, the final norm, the LM head on each sequence's last token and
    greedy sampling."""
    H = m.c["H"]
    with mark("embedding"):
        res = F.embedding(ids, m.emb)
    for li in range(m.nl):
        if marks:
            with torch.profiler.record_function("layer.%d" % li):
                with mark("input_norm"):
                    x = F.rms_norm(res, (H,), m.L[li]["n1"], EPS)
                res = layer(m, li, res, x, seqs, impl, li == 0)
        else:
            x = F.rms_norm(res, (H,), m.L[li]["n1"], EPS)
            res = layer(m, li, res, x, seqs, impl, li == 0)
    with mark("final_norm"):
        x = F.rms_norm(res, (H,), m.fnorm, EPS)
    with mark("lm_head"):
        xl = x.index_select(0, last_rows(seqs))
        logits = F.linear(xl, m.lm)
    with mark("sample"):
        return logits.float().argmax(-1)


_LAST = {}


def last_rows(seqs):
    """The row of each sequence's last token, made once per composition (a host-to-device copy
    cannot run inside a graph capture; the warm-up before a capture makes it)."""
    key = tuple(t for _, t, _ in seqs)
    if key not in _LAST:
        last, at = [], 0
        for t in key:
            at += t
            last.append(at - 1)
        _LAST[key] = torch.tensor(last, device="cuda")
    return _LAST[key]


# ---- timing ------------------------------------------------------------------------------------

def ev_time(fn, reps=5, warm=2):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        fn()
        e1.record()
        torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1) * 1e3)
    ts.sort()
    return ts[len(ts) // 2], ts[0], ts[-1]


class Graph:
    def __init__(self, fn):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                fn()
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        self.g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.g):
            fn()
        torch.cuda.synchronize()

    def replay(self):
        self.g.replay()


def ids_of(n, vocab):
    return torch.randint(0, vocab, (n,), device="cuda")


# ---- parts -------------------------------------------------------------------------------------

def part_prefill(out, smoke, dl):
    lens = [8192, 16384, 32768, 65536, 131072] if not smoke else [2048]
    m = Model("thinker", 4, max(lens), 1)
    f = CsvOut(os.path.join(out, "prefill.csv"),
               ["model", "layers", "prompt_tokens", "attention", "ttft_us", "ttft_us_min", "ttft_us_max"])
    for L in lens:
        ids = ids_of(L, m.c["vocab"])
        for impl in ("fa2", "cudnn"):
            if dl.passed():
                break
            try:
                med, lo, hi = ev_time(lambda: forward(m, ids, [(0, L, 0)], impl),
                                      reps=3 if L >= 65536 else 5, warm=1)
            except Exception as e:  # noqa: BLE001
                log("prefill %d %s failed: %r" % (L, impl, e))
                continue
            f.row(model="thinker", layers=4, prompt_tokens=L, attention=impl, ttft_us=med, ttft_us_min=lo,
                  ttft_us_max=hi)
            log("prefill thinker x4 %6d tokens %-5s %10.1f us" % (L, impl, med))
    f.close()
    del m
    torch.cuda.empty_cache()


def part_decode(out, smoke, dl):
    ctxs = [1024, 8192] if not smoke else [1024]
    bs = [1, 8, 32, 64] if not smoke else [1, 8]
    m = Model("thinker", 4, max(ctxs) + 2048 + 8, max(bs))
    f = CsvOut(os.path.join(out, "steps.csv"),
               ["model", "layers", "kind", "decodes", "context", "prefill_tokens", "mode", "time_us",
                "time_us_min", "time_us_max"])
    for C in ctxs:
        for B in bs:
            if dl.passed():
                break
            ids = ids_of(B, m.c["vocab"])
            seqs = [(b, 1, C) for b in range(B)]
            fn = lambda: forward(m, ids, seqs)  # noqa: E731
            med, lo, hi = ev_time(fn)
            f.row(model="thinker", layers=4, kind="decode", decodes=B, context=C, prefill_tokens=0, mode="eager",
                  time_us=med, time_us_min=lo, time_us_max=hi)
            try:
                g = Graph(fn)
                gm, glo, ghi = ev_time(g.replay)
                f.row(model="thinker", layers=4, kind="decode", decodes=B, context=C, prefill_tokens=0,
                      mode="graph", time_us=gm, time_us_min=glo, time_us_max=ghi)
                del g
            except Exception as e:  # noqa: BLE001
                gm = float("nan")
                log("decode graph B=%d C=%d failed: %r" % (B, C, e))
            log("decode thinker x4 B=%2d C=%5d eager %8.1f us graph %8.1f us" % (B, C, med, gm))
    # a mixed step: 8 decodes at 1024 and a 2048-token prompt, eager
    ids = ids_of(8 + 2048, m.c["vocab"])
    seqs = [(b, 1, 1024) for b in range(8)] + [(8 % m.kc[0].shape[0], 2048, 0)]
    med, lo, hi = ev_time(lambda: forward(m, ids, seqs))
    f.row(model="thinker", layers=4, kind="mixed", decodes=8, context=1024, prefill_tokens=2048, mode="eager",
          time_us=med, time_us_min=lo, time_us_max=hi)
    log("mixed thinker x4 8 decodes + 2048 prompt eager %8.1f us" % med)
    f.close()
    del m
    torch.cuda.empty_cache()


def part_serving(out, smoke, dl):
    clients, prompt, dec, rounds = (8, 512, 32, 6) if not smoke else (2, 128, 4, 1)
    bucket = 64
    m = Model("thinker", 4, prompt + dec + bucket, clients)
    f = CsvOut(os.path.join(out, "serving.csv"),
               ["step", "round", "kind", "decodes", "prefills", "tokens", "context", "mode", "time_us"])
    graphs = {}
    step = 0
    for r in range(rounds):
        if dl.passed():
            break
        # a prefill step of every waiting prompt, whole (prefill first; 8 x 512 within 8192 tokens)
        ids = ids_of(clients * prompt, m.c["vocab"])
        seqs = [(b, prompt, 0) for b in range(clients)]
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        forward(m, ids, seqs)
        e1.record()
        torch.cuda.synchronize()
        f.row(step=step, round=r, kind="prefill", decodes=0, prefills=clients, tokens=clients * prompt,
              context=0, mode="eager", time_us=e0.elapsed_time(e1) * 1e3)
        step += 1
        # the prefill sampled each client's first token: dec - 1 decode steps remain
        for s in range(dec - 1):
            C = prompt + s  # keys before the new token
            Cb = (C // bucket) * bucket  # a graph per context bucket: keys within it read C + 1 - Cb fewer
            key = (clients, Cb)
            if key not in graphs:
                dids = ids_of(clients, m.c["vocab"])
                dseqs = [(b, 1, Cb) for b in range(clients)]
                graphs[key] = Graph(lambda dids=dids, dseqs=dseqs: forward(m, dids, dseqs))
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            graphs[key].replay()
            e1.record()
            torch.cuda.synchronize()
            f.row(step=step, round=r, kind="decode", decodes=clients, prefills=0, tokens=clients, context=C,
                  mode="graph", time_us=e0.elapsed_time(e1) * 1e3)
            step += 1
    log("serving: %d steps, %d graphs captured" % (step, len(graphs)))
    f.close()
    del graphs, m
    torch.cuda.empty_cache()


def ring_kv_rank0(m, ids_local, T):
    """Rank 0 of a 2-rank pass-KV ring (striped): the layers over its T/2 tokens; each layer attends
    its queries over its own K/V (causal) and over the visiting block of the peer's T/2 keys, keeps
    both fp32-merged by their LSE (the unfused merge of elementwise.csv)."""
    c = m.c
    H, nq, nkv, d = c["H"], c["nq"], c["nkv"], c["d"]
    Tl = T // 2
    res = F.embedding(ids_local, m.emb)
    for li in range(m.nl):
        w = m.L[li]
        x = F.rms_norm(res, (H,), w["n1"], EPS)
        qkv = F.linear(x, w["qkv"])
        q = F.rms_norm(qkv[:, :nq * d].view(Tl, nq, d), (d,), w["qn"], EPS)
        kk = F.rms_norm(qkv[:, nq * d:(nq + nkv) * d].view(Tl, nkv, d), (d,), w["kn"], EPS)
        v = qkv[:, (nq + nkv) * d:].view(Tl, nkv, d)
        pos = torch.arange(0, T, 2, device="cuda")
        cos, sin = m.cos[pos][:, None, :], m.sin[pos][:, None, :]
        q = rope(q, cos, sin)
        kk = rope(kk, cos, sin)
        m.kc[li][0, :, :Tl] = kk.transpose(0, 1)
        m.vc[li][0, :, :Tl] = v.transpose(0, 1)
        qh = q.transpose(0, 1).unsqueeze(0)
        o0, l0 = attend_lse(qh, m.kc[li][0:1, :, :Tl], m.vc[li][0:1, :, :Tl], True)
        # the peer's block arrives in a receive buffer (K and V of its T/2 positions)
        kb = torch.empty(1, nkv, Tl, d, device="cuda", dtype=torch.bfloat16).normal_()
        vb = torch.empty(1, nkv, Tl, d, device="cuda", dtype=torch.bfloat16).normal_()
        o1, l1 = attend_lse(qh, kb, vb, True)
        del kb, vb
        lses = torch.stack([l0[0], l1[0]])
        mx = lses.max(0).values
        wt = torch.exp(lses - mx)
        wt = wt / wt.sum(0, keepdim=True)
        wt = wt.unsqueeze(-1)
        acc = o0[0].float() * wt[0]
        acc += o1[0].float() * wt[1]
        attn = acc.to(torch.bfloat16).transpose(0, 1).reshape(Tl, nq * d)
        del acc, o0, o1
        res = res + F.linear(attn, w["o"])
        x = F.rms_norm(res, (H,), w["n2"], EPS)
        res = res + mlp(m, w, x)
    x = F.rms_norm(res, (H,), m.fnorm, EPS)
    return F.linear(x[-1:], m.lm).float().argmax(-1)


def part_memory(out, smoke, dl):
    lens = [8192, 32768, 131072] if not smoke else [2048]
    f = CsvOut(os.path.join(out, "memory.csv"),
               ["model", "layers", "prompt_tokens", "strategy", "weights_bytes", "kv_bytes", "allocated_before",
                "peak_allocated", "peak_reserved", "reserved_before"])
    for name in ("thinker", "dense"):
        for L in lens:
            for strat in ("none", "ring_kv_sp2_rank0"):
                if dl.passed():
                    break
                torch.cuda.empty_cache()
                cmax = L if strat == "none" else L // 2
                m = Model(name, 4, cmax, 1, pmax=L)
                ids = ids_of(L if strat == "none" else L // 2, m.c["vocab"])
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats()
                before = torch.cuda.memory_allocated()
                rbefore = torch.cuda.memory_reserved()
                if strat == "none":
                    forward(m, ids, [(0, L, 0)])
                else:
                    ring_kv_rank0(m, ids, L)
                torch.cuda.synchronize()
                pa, pr = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
                f.row(model=name, layers=4, prompt_tokens=L, strategy=strat, weights_bytes=m.weight_bytes,
                      kv_bytes=m.kv_bytes, allocated_before=before, peak_allocated=pa, peak_reserved=pr,
                      reserved_before=rbefore)
                log("memory %-7s %6d %-18s weights %.2f GB kv %.2f GB peak alloc %.2f GB reserved %.2f GB" % (
                    name, L, strat, m.weight_bytes / 1e9, m.kv_bytes / 1e9, pa / 1e9, pr / 1e9))
                del m
    f.close()
    torch.cuda.empty_cache()


def part_profile(out, smoke, dl):
    from torch.profiler import ProfilerActivity, profile, record_function
    m = Model("thinker", 4, 1024 + 2048 + 8, 16)
    act = [ProfilerActivity.CPU, ProfilerActivity.CUDA]

    def save(prof, name):
        p = os.path.join(out, name + ".json")
        prof.export_chrome_trace(p)
        with open(p, "rb") as a, gzip.open(p + ".gz", "wb", compresslevel=9) as b:
            shutil.copyfileobj(a, b)
        os.remove(p)
        log("profile %s: %d bytes gzip" % (name, os.path.getsize(p + ".gz")))
    # prefill of 2048 tokens, eager
    ids = ids_of(2048, m.c["vocab"])
    forward(m, ids, [(0, 2048, 0)])
    torch.cuda.synchronize()
    with profile(activities=act) as prof:
        with record_function("step.prefill"):
            forward(m, ids, [(0, 2048, 0)], marks=True)
        torch.cuda.synchronize()
    save(prof, "trace_prefill_2k_eager")
    # a decode step of batch 8 at 1024, replayed from a graph (marks inside are captured, not replayed)
    dids = ids_of(8, m.c["vocab"])
    dseqs = [(b, 1, 1024) for b in range(8)]
    g = Graph(lambda: forward(m, dids, dseqs))
    with profile(activities=act) as prof:
        with record_function("step.decode_graph"):
            g.replay()
        torch.cuda.synchronize()
    save(prof, "trace_decode_b8_graph")
    # the same step eager, with layer marks
    with profile(activities=act) as prof:
        with record_function("step.decode_eager"):
            forward(m, dids, dseqs, marks=True)
        torch.cuda.synchronize()
    save(prof, "trace_decode_b8_eager")
    # a mixed step: 8 decodes + a 2048-token prompt, eager
    mids = ids_of(8 + 2048, m.c["vocab"])
    mseqs = dseqs + [(8, 2048, 0)]
    forward(m, mids, mseqs)
    torch.cuda.synchronize()
    with profile(activities=act) as prof:
        with record_function("step.mixed"):
            forward(m, mids, mseqs, marks=True)
        torch.cuda.synchronize()
    save(prof, "trace_mixed_eager")
    # the 2K prefill and the batch-8 decode step eager again, every op marked as cpsim names it
    global OPMARKS
    OPMARKS = True
    try:
        for name, sid, sq in (("trace_prefill_2k_opmarks", ids, [(0, 2048, 0)]),
                              ("trace_decode_b8_opmarks", dids, dseqs)):
            forward(m, sid, sq, marks=True)
            torch.cuda.synchronize()
            with profile(activities=act) as prof:
                with record_function("step.marked"):
                    forward(m, sid, sq, marks=True)
                torch.cuda.synchronize()
            save(prof, name)
    finally:
        OPMARKS = False
    del g, m
    torch.cuda.empty_cache()


PARTS = {"prefill": part_prefill, "decode": part_decode, "serving": part_serving, "memory": part_memory,
         "profile": part_profile}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--only", default="profile,decode,serving,prefill,memory")
    ap.add_argument("--budget-s", type=float, default=300)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.cuda.set_device(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    parts = args.only.split(",")
    info = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(0),
            "cudnn": torch.backends.cudnn.version(), "parts": {}}
    for p in parts:
        t0 = time.time()
        dl = Deadline(args.budget_s / len(parts) * 1.5)
        try:
            PARTS[p](args.out, args.smoke, dl)
            info["parts"][p] = {"ok": True, "s": time.time() - t0}
        except Exception as e:  # noqa: BLE001
            import traceback
            traceback.print_exc()
            info["parts"][p] = {"ok": False, "error": repr(e)[:300], "s": time.time() - t0}
            log("engine_checks: %s failed: %r" % (p, e))
        torch.cuda.empty_cache()
    with open(os.path.join(args.out, "engine_checks.json"), "w") as fo:
        json.dump(info, fo, indent=1)


if __name__ == "__main__":
    main()
