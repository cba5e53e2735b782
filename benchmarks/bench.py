"""Benchmarks: ours against PyTorch, measured side by side (``make bench``).

Each comparison runs both sides interleaved in one process, repeats, and
reports the median; attention entries also record peak memory (from the
profiler's allocation events). Prints a table and writes ``_build/bench/results.json``
(a list of ``{name, ours_s, reference, reference_s, ratio}``) and
``_build/bench/scaling.json`` (attention time and memory against sequence length).
Speed targets live here, never in unit tests.

    python benchmarks/bench.py [--quick] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

import transformer as T
from transformer.interop import copy_encoder_block, copy_multihead

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "_build" / "bench"
TARGETS = {"sdpa-teaching": ("ratio", 1.5), "mha-fast": ("ratio", 1.0), "encoder-layer": ("ratio", 1.0),
           "seq2seq-train-step": ("ratio", 1.0), "capstone-time-to-98": ("ours_s", 60.0),
           "notebooks-nbval": ("ours_s", 240.0), "book-build": ("ours_s", 60.0),
           "grade-per-submission": ("ours_s", 3.0)}


def interleaved(ours, theirs, repeats: int, warmup: int = 2) -> tuple[float, float]:
    """Median seconds of each callable, alternating calls so both see the same machine state."""
    for _ in range(warmup):
        ours(), theirs()
    a, b = [], []
    for _ in range(repeats):
        for fn, acc in ((ours, a), (theirs, b)):
            t = time.perf_counter()
            fn()
            acc.append(time.perf_counter() - t)
    return statistics.median(a), statistics.median(b)


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
        ours, ref = interleaved(fwd_bwd(lambda: T.scaled_dot_product_attention(q, k, v), (q, k, v)),
                                fwd_bwd(lambda: F.scaled_dot_product_attention(q, k, v), (q, k, v)), 5)
        rows.append({"T": t, "ours_s": ours, "reference_s": ref, "ours_peak_mb": peak_mb("ours", 1, 8, t, 32),
                     "reference_peak_mb": peak_mb("torch", 1, 8, t, 32)})
    return rows


# ------------------------------------------------------------------ whole-project timings


def timed(cmd: list[str], **kw) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, **kw)
    return time.perf_counter() - t


def bench_book() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        s = timed([str(Path(sys.executable).parent / "jupyter-book"), "build", str(ROOT), "--path-output", tmp])
    return {"name": "book-build", "ours_s": s, "reference": "target 60 s", "reference_s": 60.0, "ratio": s / 60.0}


def bench_nbval() -> dict:
    nbs = sorted(str(p) for p in (ROOT / "notebooks").glob("*.ipynb"))
    s = timed([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadfile", "--nbval", "--nbval-current-env",
               "--nbval-sanitize-with", "tests/sanitize.cfg", "-p", "no:cacheprovider", *nbs])
    return {"name": "notebooks-nbval", "ours_s": s, "reference": "target 240 s", "reference_s": 240.0,
            "ratio": s / 240.0}


def bench_grading(n: int = 20) -> dict:
    sys.path.insert(0, str(ROOT / "tests"))
    import nbformat

    threads = torch.get_num_threads()
    from conftest import make_submission  # the tests' conftest pins torch to one thread: undo that here

    torch.set_num_threads(threads)

    with tempfile.TemporaryDirectory() as tmp:
        subs = Path(tmp) / "subs"
        subs.mkdir()
        for i in range(n):
            nbformat.write(make_submission("04_queries_keys_values", solved=i % 2 == 0), subs / f"s{i:02d}.ipynb")
        env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
        s = timed([sys.executable, "tools/grade.py", "04_queries_keys_values", str(subs), "--out", str(Path(tmp) / "o")],
                  env=env)
    return {"name": "grade-per-submission", "ours_s": s / n, "reference": "target 3 s", "reference_s": 3.0,
            "ratio": s / n / 3.0}


def bench_capstone(steps: int = 400) -> dict:
    """Seconds the chapter 10 recipe trains before held-out exact match is at least 98%.

    The recipe's one run of ``steps`` steps is timed, then checked: the time is an
    upper bound on the time to 98% (NaN if the run does not get there).
    """
    from transformer.data import Corpus
    from transformer.train import exact_match, fit

    corpus = Corpus(held_out=0.1, seed=0)
    torch.manual_seed(0)
    cfg = T.TransformerConfig(vocab_size=len(corpus.tgt.vocab), src_vocab_size=len(corpus.src.vocab), d_model=64,
                              n_heads=4, d_ff=128, n_layers=2, dropout=0.0, max_len=16)
    model = T.EncoderDecoder(cfg)
    t = time.perf_counter()
    fit(model, corpus.batches(64, torch.Generator().manual_seed(0)), steps=steps, lr=1e-3, warmup=100,
        label_smoothing=0.1)
    seconds = time.perf_counter() - t
    accuracy = exact_match(model, corpus, corpus.held_out)
    if accuracy < 0.98:
        seconds = float("nan")
    return {"name": "capstone-time-to-98", "ours_s": seconds, "reference": f"target 60 s; {steps} steps, "
            f"held-out exact match {accuracy:.1%}", "reference_s": 60.0, "ratio": seconds / 60.0}


BENCHES = {"sdpa-teaching": bench_sdpa, "mha-fast": bench_mha, "encoder-layer": bench_encoder_layer,
           "seq2seq-train-step": bench_seq2seq}
SLOW = {"capstone-time-to-98": bench_capstone, "notebooks-nbval": bench_nbval, "book-build": bench_book,
        "grade-per-submission": bench_grading}


def met(row: dict) -> str:
    key, limit = TARGETS[row["name"]]
    value = row[key]
    if value != value:  # NaN
        return "n/a"
    return f"{'yes' if value <= limit else 'NO'} ({key} <= {limit:g})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, no whole-project timings")
    parser.add_argument("--only", nargs="*", help="names of the benchmarks to run")
    args = parser.parse_args()
    torch.manual_seed(0)
    repeats = 5 if args.quick else 15
    wanted = args.only or [*BENCHES, *([] if args.quick else SLOW)]
    rows = []
    for name in wanted:
        fn = BENCHES.get(name) or SLOW[name]
        row = fn(repeats) if name in BENCHES else fn()
        rows.append(row)
        print(f"  {name}: done", flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "results.json").write_text(json.dumps(rows, indent=1))
    if not args.only or "sdpa-teaching" in wanted:
        (OUT / "scaling.json").write_text(json.dumps(scaling(args.quick), indent=1))
    print(f"\n{'name':<22} {'ours (s)':>10} {'reference (s)':>14} {'ratio':>7}  target met   reference")
    for r in rows:
        print(f"{r['name']:<22} {r['ours_s']:>10.4f} {r['reference_s']:>14.4f} {r['ratio']:>7.2f}  {met(r):<12} "
              f"{r['reference']}")
    print(f"\nthreads: {torch.get_num_threads()}; wrote {OUT / 'results.json'}")


if __name__ == "__main__":
    main()
