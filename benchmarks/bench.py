"""Benchmarks: ours against PyTorch, measured side by side (``make bench``).

Each comparison runs both sides interleaved in one process, repeats, and
reports the median; attention entries also record peak memory (from the
profiler's allocation events). Prints a table and writes ``_build/bench/results.json``
(a list of ``{name, ours_s, reference, reference_s, ratio, target, met}``),
``_build/bench/scaling.json`` (attention time and memory against sequence length),
``_build/bench/attention_memory.json`` (peak memory of three forms of attention against T, chapter 12),
``_build/bench/open_models.json`` (decoding per kind of attention and a mixture of experts, chapter 14)
and ``_build/bench/machine.json`` (what it ran on). The book's performance page
shows these files when they exist, else the reference run committed in
``benchmarks/results/``; to update that, copy the files there.
Speed targets live here, never in unit tests.

    python -m benchmarks.bench [--quick] [--only NAME ...] [--out FOLDER]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

import transformer as T
from layout.paths import ROOT
from transformer.interop import copy_encoder_block, copy_multihead

from . import timing
from .modern import attention_memory, bench_flash, bench_kv_cache
from .open_models import open_models, print_rows
from .project import bench_book, bench_capstone, bench_cluster, bench_grading, bench_nbval, bench_recorder
from .timing import interleaved

OUT = ROOT / "_build" / "bench"
TARGETS = {"sdpa-teaching": ("ratio", 1.5), "mha-fast": ("ratio", 1.0), "encoder-layer": ("ratio", 1.0),
           "seq2seq-train-step": ("ratio", 1.0), "flash-attn-1-thread": ("ratio", 2.0),
           "flash-attn-2-threads": ("ratio", 2.0), "kv-cache-128": ("ratio", 1.0), "kv-cache-512": ("ratio", 0.2),
           "capstone-time-to-98": ("ours_s", 60.0),
           "notebooks-nbval": ("ours_s", 240.0), "book-build": ("ours_s", 60.0),
           "grade-per-submission": ("ours_s", 1.5), "grade-cluster": ("ratio", 1.1),
           "forbidden-recorder": ("ratio", 4.0)}
ALSO = {"flash-attn-1-thread": [("peak_ratio", 2.0), ("rss_ratio", 2.0)],  # more targets
        "flash-attn-2-threads": [("peak_ratio", 2.0), ("rss_ratio", 2.0)],
        "grade-per-submission": [("ratio", 1.2)]}  # against the floor measured in the same run


def keep_freed_memory() -> bool:
    """Ask glibc to keep freed memory in the process, as a caching allocator does (Linux only).

    By default glibc hands large blocks back to the kernel when they are freed, and
    adapts that threshold as the program runs, so every T x T tensor may or may not
    cost thousands of page faults, depending on what ran before: the same attention
    then measures 1.2 or 2.3 times PyTorch's. Fixing the thresholds (what
    ``MALLOC_MMAP_THRESHOLD_`` and ``MALLOC_TRIM_THRESHOLD_`` do) removes that noise,
    for both sides alike.
    """
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3
        largest = 32 << 20  # glibc's upper limit for the mmap threshold on 64-bit systems
        return bool(libc.mallopt(m_mmap_threshold, largest) and libc.mallopt(m_trim_threshold, 1 << 30))
    except (OSError, AttributeError):
        return False


def fwd_bwd(module_call, inputs):
    def run():
        for x in inputs:
            x.grad = None
        module_call().sum().backward()
    return run


# ------------------------------------------------------------------ attention and its memory

def peak_mb(kind: str, b: int, h: int, t: int, d: int) -> float:
    """Peak memory allocated during one forward + backward, from the profiler's allocation events."""
    from torch.profiler import ProfilerActivity, profile

    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(b, h, t, d, generator=g).requires_grad_() for _ in range(3))
    fn = T.scaled_dot_product_attention if kind == "ours" else F.scaled_dot_product_attention
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn(q, k, v).sum().backward()
    live = peak = 0
    for event in sorted(prof.events(), key=lambda e: e.time_range.start):
        live += event.self_cpu_memory_usage
        peak = max(peak, live)
    return peak / 2**20


def bench_sdpa(repeats: int) -> dict:
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(8, 8, 256, 32, generator=g).requires_grad_() for _ in range(3))
    ours, ref = interleaved(fwd_bwd(lambda: T.scaled_dot_product_attention(q, k, v), (q, k, v)),
                            fwd_bwd(lambda: F.scaled_dot_product_attention(q, k, v), (q, k, v)), repeats)
    return {"name": "sdpa-teaching", "ours_s": ours, "reference": "F.scaled_dot_product_attention",
            "reference_s": ref, "ratio": ours / ref, "ours_peak_mb": peak_mb("ours", 8, 8, 256, 32),
            "reference_peak_mb": peak_mb("torch", 8, 8, 256, 32)}


def bench_mha(repeats: int) -> dict:
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(256, 8, batch_first=True)
    ours = T.MultiHeadAttention(256, 8, fast=True)
    copy_multihead(ours, theirs)
    x = torch.randn(8, 256, 256, requires_grad=True)
    a, b = interleaved(fwd_bwd(lambda: ours(x), (x,)), fwd_bwd(lambda: theirs(x, x, x, need_weights=False)[0], (x,)),
                       repeats)
    return {"name": "mha-fast", "ours_s": a, "reference": "nn.MultiheadAttention", "reference_s": b, "ratio": a / b}


def bench_encoder_layer(repeats: int) -> dict:
    torch.manual_seed(0)
    cfg = T.TransformerConfig(vocab_size=10, d_model=256, n_heads=8, d_ff=1024, n_layers=1, dropout=0.0,
                              norm_first=True, fast=True)
    theirs = nn.TransformerEncoderLayer(256, 8, 1024, dropout=0.0, batch_first=True, norm_first=True)
    ours = T.EncoderBlock(cfg)
    copy_encoder_block(ours, theirs)
    x = torch.randn(8, 256, 256, requires_grad=True)
    a, b = interleaved(fwd_bwd(lambda: ours(x), (x,)), fwd_bwd(lambda: theirs(x), (x,)), repeats)
    return {"name": "encoder-layer", "ours_s": a, "reference": "nn.TransformerEncoderLayer (norm_first)",
            "reference_s": b, "ratio": a / b}


def bench_seq2seq(repeats: int) -> dict:
    torch.manual_seed(0)
    cfg = T.TransformerConfig(vocab_size=1000, d_model=256, n_heads=8, d_ff=1024, n_layers=2, dropout=0.0,
                              max_len=128, fast=True, final_norm=True)
    ours = T.EncoderDecoder(cfg)
    theirs = nn.Transformer(256, 8, 2, 2, 1024, dropout=0.0, batch_first=True)
    emb_src, emb_tgt, head = nn.Embedding(1000, 256), nn.Embedding(1000, 256), nn.Linear(256, 1000, bias=False)
    src = torch.randint(1, 1000, (16, 64), generator=torch.Generator().manual_seed(1))
    tgt = torch.randint(1, 1000, (16, 48), generator=torch.Generator().manual_seed(2))
    dec_in, labels = tgt[:, :-1], tgt[:, 1:]
    mask = nn.Transformer.generate_square_subsequent_mask(dec_in.shape[1])
    opt_a = torch.optim.Adam(ours.parameters(), 1e-4)
    params_b = [*theirs.parameters(), *emb_src.parameters(), *emb_tgt.parameters(), *head.parameters()]
    opt_b = torch.optim.Adam(params_b, 1e-4)

    def step_ours():
        T.train_step(ours, opt_a, src, tgt)

    def step_theirs():
        theirs.train()
        out = theirs(emb_src(src) * 16.0, emb_tgt(dec_in) * 16.0, tgt_mask=mask, tgt_is_causal=True)
        loss = F.cross_entropy(head(out).flatten(0, 1), labels.flatten())
        opt_b.zero_grad(set_to_none=True)
        loss.backward()
        opt_b.step()

    a, b = interleaved(step_ours, step_theirs, repeats)
    return {"name": "seq2seq-train-step", "ours_s": a, "reference": "nn.Transformer + same embeddings and head",
            "reference_s": b, "ratio": a / b}


def scaling(quick: bool) -> list[dict]:
    """Attention time and memory against sequence length: the T^2 growth."""
    rows = []
    for t in ([64, 128, 256, 512] if quick else [64, 128, 256, 512, 1024]):
        g = torch.Generator().manual_seed(0)
        q, k, v = (torch.randn(1, 8, t, 32, generator=g).requires_grad_() for _ in range(3))
        ours, ref = interleaved(fwd_bwd(lambda q=q, k=k, v=v: T.scaled_dot_product_attention(q, k, v), (q, k, v)),
                                fwd_bwd(lambda q=q, k=k, v=v: F.scaled_dot_product_attention(q, k, v), (q, k, v)), 5)
        rows.append({"T": t, "ours_s": ours, "reference_s": ref, "ours_peak_mb": peak_mb("ours", 1, 8, t, 32),
                     "reference_peak_mb": peak_mb("torch", 1, 8, t, 32)})
    return rows


BENCHES = {"sdpa-teaching": bench_sdpa, "mha-fast": bench_mha, "encoder-layer": bench_encoder_layer,
           "seq2seq-train-step": bench_seq2seq,
           "flash-attn-1-thread": lambda repeats: bench_flash(1),  # chapter 12: benchmarks/modern.py
           "flash-attn-2-threads": lambda repeats: bench_flash(2),
           "kv-cache-128": lambda repeats: bench_kv_cache(128),
           "kv-cache-512": lambda repeats: bench_kv_cache(512),
           "forbidden-recorder": bench_recorder}
SLOW = {"capstone-time-to-98": bench_capstone, "notebooks-nbval": bench_nbval, "book-build": bench_book,
        "grade-per-submission": bench_grading, "grade-cluster": bench_cluster}


def judge(row: dict) -> dict:
    """Add the target (``"ratio <= 1.5"``, and any of :data:`ALSO`) and whether it was met (None: no number)."""
    checks = [TARGETS[row["name"]], *ALSO.get(row["name"], [])]
    values = [row[key] for key, _ in checks]
    met = None if any(v != v for v in values) else all(v <= limit for v, (_, limit) in zip(values, checks))
    return {**row, "target": " and ".join(f"{key} <= {limit:g}" for key, limit in checks), "met": met}


def machine(kept_freed_memory: bool) -> dict:
    """What the numbers were measured on."""
    import platform

    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"date": time.strftime("%Y-%m-%d"), "cpu": cpu, "cores": cores, "torch_threads": torch.get_num_threads(),
            "torch": torch.__version__, "python": platform.python_version(),
            "malloc_keeps_freed_memory": kept_freed_memory}


def merged(old: list[dict], new: list[dict]) -> list[dict]:
    """Rows of ``new`` replace the rows of the same name in ``old``; the order is the benchmarks' own."""
    by_name = {r["name"]: r for r in [*old, *new]}
    return [by_name[n] for n in TARGETS if n in by_name]


def print_table(rows: list[dict]) -> None:
    """The results as a table, then the peak memory and the speed-ups of chapter 12's rows."""
    print(f"\n{'name':<22} {'ours (s)':>10} {'reference (s)':>14} {'ratio':>7}  {'target':<30} met  reference")
    for r in rows:
        met = {True: "yes", False: "NO", None: "n/a"}[r["met"]]
        print(f"{r['name']:<22} {r['ours_s']:>10.4f} {r['reference_s']:>14.4f} {r['ratio']:>7.2f}  {r['target']:<30} "
              f"{met:<4} {r['reference']}")
    for r in rows:
        if "peak_ratio" in r:
            print(f"{r['name']}: peak MB (forward) tiled {r['ours_peak_mb']:.1f}, PyTorch {r['reference_peak_mb']:.1f} "
                  f"({r['peak_ratio']:.2f}x), teaching form {r['teaching_peak_mb']:.0f} "
                  f"({r['teaching_peak_ratio']:.0f}x)" + (f"; resident MB tiled {r['ours_rss_mb']:.1f}, PyTorch "
                  f"{r['reference_rss_mb']:.1f} ({r['rss_ratio']:.2f}x)" if "rss_ratio" in r else ""))
        if "speedup" in r:
            print(f"{r['name']}: the cache is {r['speedup']:.1f} times faster")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, no whole-project timings")
    parser.add_argument("--only", nargs="*", choices=list(TARGETS), metavar="NAME",
                        help=f"run only these; other rows already in results.json are kept ({', '.join(TARGETS)})")
    parser.add_argument("--out", type=Path, default=OUT, help=f"folder for the JSON files (default: {OUT})")
    args = parser.parse_args()
    kept = keep_freed_memory()
    torch.manual_seed(0)
    repeats = 5 if args.quick else 15
    if args.quick:
        timing.MIN_SECONDS = 0.3
    wanted = args.only or [*BENCHES, *([] if args.quick else SLOW)]
    rows = []
    for name in wanted:
        fn = BENCHES.get(name) or SLOW[name]
        row = fn(repeats) if name in BENCHES else fn()
        rows.append(judge(row))
        print(f"  {name}: done", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    results = args.out / "results.json"
    previous = json.loads(results.read_text()) if args.only and results.exists() else []
    results.write_text(json.dumps(merged(previous, rows), indent=1))
    (args.out / "machine.json").write_text(json.dumps(machine(kept), indent=1))
    if not args.only or "sdpa-teaching" in wanted:
        (args.out / "scaling.json").write_text(json.dumps(scaling(args.quick), indent=1))
    if not args.only or "flash-attn-1-thread" in wanted:  # chapter 12's picture: peak memory against T, forward
        ts = (256, 512, 1024) if args.quick else (256, 512, 1024, 2048, 4096)
        (args.out / "attention_memory.json").write_text(json.dumps(attention_memory(ts), indent=1))
    print_table(rows)
    if not args.only:  # chapter 14: decoding per kind of attention, experts against dense (benchmarks/open_models.py)
        chapter_14 = open_models(repeats)
        (args.out / "open_models.json").write_text(json.dumps(chapter_14, indent=1))
        print_rows(chapter_14)
    print(f"\nthreads: {torch.get_num_threads()}; wrote {results}")


if __name__ == "__main__":
    main()
