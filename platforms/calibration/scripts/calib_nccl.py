"""NCCL calibration on P GPUs of one node (one process per GPU, torchrun), for cpsim's
collective fit (collectives/fit.c) and interference model (models/interference.c).

Run: torchrun --standalone --nproc_per_node=P calib_nccl.py --out DIR [--smoke]
     [--only nccl,nccl_graph,groups,ep,overlap] [--groups 2x4,4x2] [--budget-s S]
Writes on rank 0, each with a `nranks` column (the group size of the call):
  DIR/nccl.csv         eager torch.distributed calls, the whole world as one group
  DIR/nccl_graph.csv   the same ops captured in one CUDA graph per rank and replayed
  DIR/nccl_groups.csv  sub-groups running at once (--groups GxN: G groups of N ranks,
                       consecutive ranks, each group running the op): how TP and SP
                       groups share the switch; not fitted, for the contention check
  DIR/ep_alltoall.csv  expert-parallel dispatch and combine: all_to_all_single with
                       the uneven splits of a top-8 routing of T tokens over 128 experts
  DIR/overlap.csv      a compute kernel on the main stream against an NCCL op on a side
                       stream, alone and concurrent, on the whole world
Testing without GPUs: --backend gloo --device cpu runs the same logic on CPU processes
(gloo collectives, host timers; no graph capture, no overlap); its numbers are no
calibration and its rows say so in `note`.

Size conventions follow nccl-tests:
  all_gather      size = bytes of the gathered output (each rank contributes size/P)
  reduce_scatter  size = bytes of the input on each rank (each rank keeps size/P)
  all_reduce      size = bytes of the buffer
  all_to_all      size = bytes of the send buffer on each rank (size/P to each peer)
  broadcast       size = bytes of the buffer (from group rank 0)
  sendrecv        size = bytes each rank sends to its ring neighbour while receiving
                  the same amount (paired isend/irecv, batch_isend_irecv)
  algbw = size / time; busbw = algbw * factor, factor = 2(P-1)/P for all_reduce,
  (P-1)/P for all_gather / reduce_scatter / all_to_all, 1 for broadcast and sendrecv.
Time per op: CUDA events around batches of back-to-back ops on each rank, ranks
aligned by a barrier before every batch, median over batches, then max over ranks.
NVLink multicast stays off (common.py sets NCCL_NVLS_ENABLE=0 and the rest).
"""
import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import CsvOut, Deadline, log, median  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
OPS = ["all_gather", "reduce_scatter", "all_reduce", "all_to_all", "broadcast", "sendrecv"]
NCCL_FIELDS = ["op", "P", "nranks", "groups", "size_bytes", "per_rank_bytes", "dtype", "mode",
               "inner", "time_us", "time_us_min", "time_us_max", "time_us_rank0",
               "time_us_rank1", "algbw_GBps", "busbw_GBps", "busbw_factor", "note"]


class Ctx:
    """The process's place: world rank and size, device, backend, the gloo group used
    for barriers and gathers, and a timer (CUDA events, or the host clock on CPU)."""

    def __init__(self, backend, device):
        self.r = int(os.environ["RANK"])
        self.P = int(os.environ["WORLD_SIZE"])
        self.local = int(os.environ.get("LOCAL_RANK", self.r))
        self.cuda = device == "cuda"
        if self.cuda:
            torch.cuda.set_device(self.local)
            self.dev = torch.device("cuda", self.local)
            dist.init_process_group(backend, device_id=self.dev)
        else:
            self.dev = torch.device("cpu")
            dist.init_process_group(backend)
        self.backend = backend
        self.gloo = dist.new_group(backend="gloo")
        self.note = "" if backend == "nccl" and self.cuda else "%s-%s logic test" % (backend, device)

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def barrier(self):
        self.sync()
        dist.barrier(group=self.gloo)

    def gather(self, x):
        lst = [None] * self.P
        dist.all_gather_object(lst, x, group=self.gloo)
        return lst

    def measure(self, fn, inner, warm, nrep):
        """Every rank's {med, min, max} ms per call: warm-ups, then nrep batches of
        `inner` calls, the ranks aligned by a barrier before each batch."""
        for _ in range(warm):
            fn()
        ts = []
        for _ in range(nrep):
            self.barrier()
            ts.append(self.time_batch(fn, inner))
        return self.gather({"med": median(ts), "min": min(ts), "max": max(ts)})

    def time_batch(self, fn, inner):
        """Milliseconds per call of `inner` back-to-back calls of fn."""
        if self.cuda:
            e0 = torch.cuda.Event(enable_timing=True)
            e1 = torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(inner):
                fn()
            e1.record()
            torch.cuda.synchronize()
            return e0.elapsed_time(e1) / inner
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        return (time.perf_counter() - t0) * 1e3 / inner


# bf16 on GPUs (the tables' dtype); float32 in a gloo logic test (gloo's own types)
DTYPE = torch.bfloat16


def elsize():
    return torch.finfo(DTYPE).bits // 8


def dtype_name():
    return "bf16" if DTYPE == torch.bfloat16 else "fp32"


def rand_bf16(n, dev):
    return torch.randn(max(n, 1), device=dev).to(DTYPE)


def make_op(name, size, members, me, dev, group=None):
    """The call `name` of `size` bytes (conventions above) in the group of `members`
    (global ranks, group order) as member `me`; returns (fn(async_op=False), factor)."""
    P = len(members)
    el = size // elsize()  # elements of DTYPE
    if name == "all_gather":
        inp = rand_bf16(el // P, dev)
        out = torch.empty(inp.numel() * P, device=dev, dtype=DTYPE)

        def fn(async_op=False):
            return dist.all_gather_into_tensor(out, inp, group=group, async_op=async_op)
        factor = (P - 1) / P
    elif name == "reduce_scatter":
        inp = rand_bf16(el, dev)
        out = torch.empty(inp.numel() // P, device=dev, dtype=DTYPE)

        def fn(async_op=False):
            return dist.reduce_scatter_tensor(out, inp, group=group, async_op=async_op)
        factor = (P - 1) / P
    elif name == "all_reduce":
        buf = rand_bf16(el, dev)

        def fn(async_op=False):
            return dist.all_reduce(buf, group=group, async_op=async_op)
        factor = 2 * (P - 1) / P
    elif name == "all_to_all":
        inp = rand_bf16(el, dev)
        out = torch.empty_like(inp)

        def fn(async_op=False):
            return dist.all_to_all_single(out, inp, group=group, async_op=async_op)
        factor = (P - 1) / P
    elif name == "broadcast":
        buf = rand_bf16(el, dev)

        def fn(async_op=False):
            return dist.broadcast(buf, src=members[0], group=group, async_op=async_op)
        factor = 1.0
    elif name == "sendrecv":
        sb = rand_bf16(el, dev)
        rb = torch.empty_like(sb)
        nxt, prv = members[(me + 1) % P], members[(me - 1) % P]

        def fn(async_op=False):
            works = dist.batch_isend_irecv([dist.P2POp(dist.isend, sb, nxt, group=group),
                                            dist.P2POp(dist.irecv, rb, prv, group=group)])
            if async_op:
                return works
            for w in works:
                w.wait()
        factor = 1.0
    else:
        raise ValueError(name)
    return fn, factor


def wait_any(h):
    if h is None:
        return
    if isinstance(h, list):
        for w in h:
            w.wait()
    else:
        h.wait()


def sizes_of(smoke, cpu):
    top = 16 * MiB if smoke else GiB
    if cpu:
        top = min(top, 4 * MiB)  # a logic test: gloo on CPU is slow
    return [4 * KiB * (4 ** i) for i in range(11) if 4 * KiB * (4 ** i) <= top]


def reps(size):
    """(inner, warm-ups, batches) by size: batches of a few ms, fewer for big ops."""
    inner = 20 if size <= MiB else (10 if size <= 16 * MiB else (4 if size <= 256 * MiB else 2))
    return inner, (5 if size <= 64 * MiB else 2), (9 if size <= 64 * MiB else 7)


def ops_for(P):
    # one rank has no neighbour to send to
    return [o for o in OPS if P > 1 or o != "sendrecv"]


def row(csvf, c, name, size, nranks, groups, mode, inner, allm, factor):
    """One table row from every rank's {med, min, max} (ms); rank 0 writes."""
    tmed = max(a["med"] for a in allm)
    algbw = size / (tmed * 1e-3) / 1e9
    csvf.row(op=name, P=c.P, nranks=nranks, groups=groups, size_bytes=size,
             per_rank_bytes=size // nranks if name == "all_gather" else size, dtype=dtype_name(),
             mode=mode, inner=inner, time_us=tmed * 1e3,
             time_us_min=min(a["min"] for a in allm) * 1e3,
             time_us_max=max(a["max"] for a in allm) * 1e3, time_us_rank0=allm[0]["med"] * 1e3,
             time_us_rank1=allm[1]["med"] * 1e3 if len(allm) > 1 else "",
             algbw_GBps=algbw, busbw_GBps=algbw * factor, busbw_factor=factor, note=c.note)
    log("%s %-15s n=%d x%d %11d B  %10.1f us  busbw %7.2f GB/s" % (
        mode, name, nranks, groups, size, tmed * 1e3, algbw * factor))


def eager_bench(csvf, c, dl, smoke, layout=None):
    """Eager calls on the whole world (layout None) or on G groups of N consecutive
    ranks at once (layout (G, N))."""
    G, N = layout or (1, c.P)
    members = list(range((c.r // N) * N, (c.r // N) * N + N))
    group = None
    if layout:
        # every rank creates every group, in the same order (torch.distributed's rule)
        for g in range(G):
            pg = dist.new_group(list(range(g * N, g * N + N)))
            if g == c.r // N:
                group = pg
    for name in ops_for(N):
        for size in sizes_of(smoke, not c.cuda):
            if not c.gather(not dl.passed())[0]:
                if c.r == 0:
                    log("nccl: time budget passed, skipping", name, size)
                continue
            fn, factor = make_op(name, size, members, c.r % N, c.dev, group)
            inner, warm, nrep = reps(size)
            if not c.cuda:
                inner, warm, nrep = 2, 1, 3
            err = ""
            try:
                fn()
            except (RuntimeError, ValueError) as e:  # an op the backend lacks (gloo)
                err = ("%r" % (e,))[:120]
            if not all(c.gather(err == "")):
                if c.r == 0:
                    log("%s %s: not run here: %s" % (c.backend, name, err))
                break
            allm = c.measure(fn, inner, warm, nrep)
            if c.r == 0:
                row(csvf, c, name, size, N, G, "eager", inner, allm, factor)
            del fn
            if c.cuda:
                torch.cuda.empty_cache()


def graph_bench(csvf, c, dl, smoke):
    """The same ops and sizes with `inner` back-to-back ops captured in one CUDA graph
    per rank and replayed: no host launch overhead (NCCL's own latency floor)."""
    cur = torch.cuda.current_stream()
    members = list(range(c.P))
    for name in ops_for(c.P):
        for size in sizes_of(smoke, False):
            if not c.gather(not dl.passed())[0]:
                continue
            fn, factor = make_op(name, size, members, c.r, c.dev)
            inner = 50 if size <= MiB else (20 if size <= 16 * MiB else (4 if size <= 256 * MiB else 2))
            err, g = "", None
            try:
                side = torch.cuda.Stream()
                side.wait_stream(cur)
                with torch.cuda.stream(side):
                    for _ in range(2):
                        fn()
                cur.wait_stream(side)
                c.barrier()
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g, capture_error_mode="thread_local"):
                    for _ in range(inner):
                        fn()
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001
                err = ("%r" % (e,))[:200].replace(",", ";").replace("\n", " ")
                g = None
            if not all(c.gather(err == "")):
                if c.r == 0:
                    log("nccl graph %s %d: capture failed: %s" % (name, size, err))
                    csvf.row(op=name, P=c.P, nranks=c.P, groups=1, size_bytes=size, mode="graph",
                             note="capture failed: " + err)
                del fn, g
                continue
            ts = []
            for i in range(2 + (9 if size <= 64 * MiB else 7)):
                c.barrier()
                t = c.time_batch(g.replay, 1) / inner
                if i >= 2:
                    ts.append(t)
            allm = c.gather({"med": median(ts), "min": min(ts), "max": max(ts)})
            if c.r == 0:
                row(csvf, c, name, size, c.P, 1, "graph", inner, allm, factor)
            del fn, g
            torch.cuda.empty_cache()


def routing_splits(tokens, experts, topk, P, seed):
    """Rows each rank sends to each rank in an EP dispatch: every rank holds `tokens`
    tokens, each routed to `topk` distinct experts drawn from router scores with a skew
    (a few hot experts, as trained routers have: popularity 1/sqrt(1 + i), shuffled so
    hot experts land on any rank), experts split evenly over the P ranks.  A token goes
    once to each rank that holds any of its experts (engines deduplicate per rank).
    Returns send[src][dst], the same on every rank (seeded)."""
    rng = random.Random(seed)
    weight = [1.0 / (1 + i) ** 0.5 for i in range(experts)]
    rng.shuffle(weight)
    g = torch.Generator().manual_seed(seed)
    w = torch.tensor(weight).expand(tokens, experts)
    per = experts // P
    send = []
    for _ in range(P):
        chosen = torch.multinomial(w, topk, replacement=False, generator=g)  # [tokens, topk]
        hit = torch.zeros(tokens, P, dtype=torch.bool)
        hit.scatter_(1, chosen // per, True)
        send.append([int(v) for v in hit.sum(0)])
    return send


def ep_bench(csvf, c, dl, smoke):
    """EP dispatch and combine as engines run them: one all_to_all_single of token rows
    (hidden size 7168 bf16, DeepSeek-V3) with the uneven splits of a top-8 routing over
    128 experts; combine sends the rows back (splits transposed)."""
    experts, topk, hidden = 128, 8, 7168
    if experts % c.P:
        if c.r == 0:
            log("ep: %d experts do not split over %d ranks, skipped" % (experts, c.P))
        return
    token_list = [4096, 16384, 65536] if not smoke else [1024, 4096]
    if not c.cuda:
        token_list, hidden = [256], 256
    row_bytes = hidden * elsize()
    for tokens in token_list:
        if not c.gather(not dl.passed())[0]:
            continue
        send = routing_splits(tokens, experts, topk, c.P, seed=tokens)
        for phase in ("dispatch", "combine"):
            out_rows = [send[s][c.r] for s in range(c.P)] if phase == "dispatch" else send[c.r]
            in_rows = send[c.r] if phase == "dispatch" else [send[s][c.r] for s in range(c.P)]
            inp = rand_bf16(sum(in_rows) * hidden, c.dev).view(-1, hidden)
            out = torch.empty(sum(out_rows), hidden, device=c.dev, dtype=DTYPE)

            def fn(inp=inp, out=out, in_rows=in_rows, out_rows=out_rows):
                dist.all_to_all_single(out, inp, output_split_sizes=out_rows,
                                       input_split_sizes=in_rows)
            inner, warm, nrep = (5, 2, 7) if c.cuda else (1, 1, 2)
            allm = c.measure(fn, inner, warm, nrep)
            if c.r == 0:
                sent = [sum(send[s][d] for d in range(c.P) if d != s) * row_bytes
                        for s in range(c.P)]
                tmed = max(a["med"] for a in allm)
                csvf.row(op=phase, P=c.P, nranks=c.P, tokens=tokens, topk=topk, experts=experts,
                         hidden=hidden, dtype=dtype_name(), bytes_sent_max=max(sent),
                         bytes_sent_mean=sum(sent) / c.P, rows_to_self=send[0][0],
                         time_us=tmed * 1e3, time_us_min=min(a["min"] for a in allm) * 1e3,
                         time_us_max=max(a["max"] for a in allm) * 1e3, note=c.note)
                log("ep %-8s T=%6d  max %9d B off-rank  %9.1f us" % (
                    phase, tokens, max(sent), tmed * 1e3))
            del inp, out, fn
            if c.cuda:
                torch.cuda.empty_cache()


def overlap_bench(csvf, c, dl, smoke):
    """Does an NCCL op on a side stream slow a concurrent compute kernel on the main
    stream (and vice versa)?  The collectives run on the whole world (nranks = P)."""
    dev, P, r = c.dev, c.P, c.r
    main = torch.cuda.current_stream()
    side = torch.cuda.Stream()
    x = torch.randn(16384, 2048, device=dev).to(torch.bfloat16)
    w = torch.randn(12288, 2048, device=dev).to(torch.bfloat16)
    y = torch.empty(16384, 12288, device=dev, dtype=DTYPE)
    L = 16384 if not smoke else 4096
    q = torch.randn(1, L, 32, 128, device=dev).to(torch.bfloat16).transpose(1, 2)
    kv = torch.randn(1, L, 4, 128, device=dev).to(torch.bfloat16).transpose(1, 2)

    def gemm():
        torch.mm(x, w.t(), out=y)

    def fa():
        torch.ops.aten._scaled_dot_product_flash_attention(q, kv, kv, 0.0, True, False,
                                                           scale=128 ** -0.5)

    computes = [("gemm_16384x2048x12288", gemm, 2.0 * 16384 * 2048 * 12288),
                ("flash_causal_%dk_32q4kv" % (L // 1024), fa, 2.0 * L * L * 128 * 32)]
    comms = [o for o in ["all_gather", "all_to_all", "sendrecv", "all_reduce", "reduce_scatter"]
             if o in ops_for(P)]
    sizes = [16 * MiB, 256 * MiB] if not smoke else [16 * MiB]
    target_ms = 30.0 if not smoke else 10.0
    e = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
    members = list(range(P))

    def run(mode, cfn, ck, mfn, mk):
        """mode: compute | comm | both. Returns (compute_ms, comm_ms, wall_ms) here."""
        c.barrier()
        e[0].record(main)
        hs = []
        if mode in ("comm", "both"):
            side.wait_event(e[0])
            with torch.cuda.stream(side):
                for _ in range(mk):
                    hs.append(mfn(async_op=True))
                for h in hs:
                    wait_any(h)
                e[2].record(side)
        if mode in ("compute", "both"):
            for _ in range(ck):
                cfn()
            e[1].record(main)
        if mode in ("comm", "both"):
            main.wait_event(e[2])
        e[3].record(main)
        torch.cuda.synchronize()
        tc = e[0].elapsed_time(e[1]) if mode != "comm" else float("nan")
        tm = e[0].elapsed_time(e[2]) if mode != "compute" else float("nan")
        return tc, tm, e[0].elapsed_time(e[3])

    for cname, cfn, cflops in computes:
        for _ in range(3):
            cfn()
        t1 = c.time_batch(cfn, 5)
        ck = c.gather(max(1, int(round(target_ms / t1))))[0]
        for comm in comms:
            for size in sizes:
                if not c.gather(not dl.passed())[0]:
                    continue
                mfn, factor = make_op(comm, size, members, r, dev)
                for _ in range(3):
                    wait_any(mfn(async_op=True))
                c.barrier()
                tm1 = c.time_batch(lambda: wait_any(mfn(async_op=True)), 3)
                mk = c.gather(max(1, int(round(ck * t1 / tm1))))[0]
                res = {"compute": [], "comm": [], "both": []}
                for _ in range(5):
                    for mode in ("compute", "comm", "both"):
                        res[mode].append(run(mode, cfn, ck, mfn, mk))
                vals = (median([a[0] for a in res["compute"]]), median([a[1] for a in res["comm"]]),
                        median([a[0] for a in res["both"]]), median([a[1] for a in res["both"]]),
                        median([a[2] for a in res["both"]]))
                allr = c.gather(vals)
                if r == 0:
                    tc_alone, tm_alone, tc_both, tm_both, tw_both = [
                        max(v[i] for v in allr) for i in range(5)]
                    ov = (tc_alone + tm_alone - tw_both) / min(tc_alone, tm_alone)
                    csvf.row(compute=cname, compute_reps=ck, compute_ms_alone=tc_alone,
                             compute_tflops_alone=cflops * ck / (tc_alone * 1e-3) / 1e12,
                             comm=comm, comm_size_bytes=size, nranks=P, comm_reps=mk,
                             comm_ms_alone=tm_alone,
                             comm_busbw_alone_GBps=size * factor * mk / (tm_alone * 1e-3) / 1e9,
                             compute_ms_concurrent=tc_both, comm_ms_concurrent=tm_both,
                             wall_ms_concurrent=tw_both, compute_slowdown=tc_both / tc_alone,
                             comm_slowdown=tm_both / tm_alone, serial_ms=tc_alone + tm_alone,
                             overlap_fraction=ov)
                    log("overlap %-26s x%-3d %-14s %5d MiB x%-3d n=%d compute x%.3f comm x%.3f" % (
                        cname, ck, comm, size // MiB, mk, P, tc_both / tc_alone, tm_both / tm_alone))
                del mfn
                torch.cuda.empty_cache()


def parse_groups(text, P):
    out = []
    for item in filter(None, text.split(",")):
        g, n = (int(v) for v in item.lower().split("x"))
        if g * n != P or n < 2:
            raise SystemExit("--groups %s: G x N must be the world size %d, N >= 2" % (item, P))
        out.append((g, n))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--budget-s", type=float, default=200)
    ap.add_argument("--only", default="nccl,nccl_graph,groups,ep,overlap")
    ap.add_argument("--groups", default="", help="sub-group layouts GxN, comma separated "
                    "(default: 2 x P/2 and P/2 x 2 when P >= 4)")
    ap.add_argument("--backend", default="nccl", choices=["nccl", "gloo"])
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    args = ap.parse_args()
    global DTYPE
    if args.device == "cpu":
        DTYPE = torch.float32
    c = Ctx(args.backend, args.device)
    dl = Deadline(args.budget_s)
    only = args.only.split(",")
    if c.r == 0:
        os.makedirs(args.out, exist_ok=True)
        log("backend", args.backend, "device", args.device, "world", c.P,
            "nccl", torch.cuda.nccl.version() if c.cuda else "-")
    # warm up the communicator (and check it adds up)
    t = torch.ones(1024, device=c.dev)
    dist.all_reduce(t)
    c.sync()
    assert t[0].item() == c.P, t[0].item()

    def table(name, fields):
        return CsvOut(os.path.join(args.out, name), fields) if c.r == 0 else None

    if "nccl" in only:
        f = table("nccl.csv", NCCL_FIELDS)
        eager_bench(f, c, dl, args.smoke)
        f and f.close()
    if "nccl_graph" in only and c.cuda:
        f = table("nccl_graph.csv", NCCL_FIELDS)
        graph_bench(f, c, dl, args.smoke)
        f and f.close()
    layouts = parse_groups(args.groups, c.P) if args.groups else (
        [(2, c.P // 2), (c.P // 2, 2)] if c.P >= 4 and c.P % 2 == 0 else [])
    if "groups" in only and layouts:
        f = table("nccl_groups.csv", NCCL_FIELDS)
        for lay in layouts:
            eager_bench(f, c, dl, args.smoke, lay)
        f and f.close()
    if "ep" in only:
        f = table("ep_alltoall.csv", ["op", "P", "nranks", "tokens", "topk", "experts", "hidden",
                                      "dtype", "bytes_sent_max", "bytes_sent_mean",
                                      "rows_to_self", "time_us", "time_us_min", "time_us_max",
                                      "note"])
        ep_bench(f, c, dl, args.smoke)
        f and f.close()
    if "overlap" in only and c.cuda:
        f = table("overlap.csv", ["compute", "compute_reps", "compute_ms_alone",
                                  "compute_tflops_alone", "comm", "comm_size_bytes", "nranks",
                                  "comm_reps", "comm_ms_alone", "comm_busbw_alone_GBps",
                                  "compute_ms_concurrent", "comm_ms_concurrent",
                                  "wall_ms_concurrent", "compute_slowdown", "comm_slowdown",
                                  "serial_ms", "overlap_fraction"])
        overlap_bench(f, c, dl, args.smoke)
        f and f.close()
    dist.barrier(group=c.gloo)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
