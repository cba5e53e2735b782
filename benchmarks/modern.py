"""Benchmarks of chapter 12: attention in tiles, and generation with a key/value cache.

- ``flash-attn-1-thread``, ``flash-attn-2-threads``: :func:`transformer.flash_attention` against
  ``F.scaled_dot_product_attention`` at T = 4096, d_k = 64, 8 heads, batch 1, **forward only**:
  the median time of each, interleaved (in a process with ``OMP_WAIT_POLICY=PASSIVE``: :func:`in_process`),
  and the peak memory of each form, each measured in a
  process of its own (PyTorch's profiler: the largest sum of live tensor allocations during the call,
  the inputs excluded), and beside it the most resident memory the call adds to its process (Linux's
  high-water mark, the median of three processes: what the machine sees, the allocator's slack included).
  Targets: time and both counts of peak memory at most twice PyTorch's.
- ``kv-cache-128``, ``kv-cache-512``: a small decoder generating 128 and 512 new tokens greedily,
  with :func:`transformer.generate_cached` against :func:`transformer.generate`, interleaved.
  Target at 512: at least 5 times faster (ratio <= 0.2).

:func:`attention_memory` returns the numbers of the chapter's picture: peak memory against T for
the teaching form, the tiled form and PyTorch's kernel.

    python -m benchmarks.modern peak FORM T     (one measurement, in this process; prints MB)
    python -m benchmarks.modern rss FORM T      (the same, as resident memory; prints MB)
    python -m benchmarks.modern times T         (tiled and PyTorch's, interleaved; prints their medians)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import torch
import torch.nn.functional as F

import transformer as T
from layout.env import one_thread

from .timing import interleaved

FORMS = {"teaching": T.scaled_dot_product_attention, "flash": T.flash_attention,
         "torch": F.scaled_dot_product_attention}
HEADS, D_K = 8, 64


def qkv(t: int) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    return tuple(torch.randn(1, HEADS, t, D_K, generator=g) for _ in range(3))  # (batch, heads, T, d_k)


def allocations(fn) -> list[int]:
    """The bytes of every allocation (> 0) and free (< 0) while ``fn()`` runs, in time order: the profiler's
    ``[memory]`` events, which count frees made between two operators too (an operator's
    ``self_cpu_memory_usage`` leaves those to the enclosing call)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    memory = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    return [e.nbytes() for e in sorted(memory, key=lambda e: e.start_ns())]


def peak_here(form: str, t: int) -> float:
    """Peak MB allocated by one forward of ``form`` at length ``t``: the largest running sum of its
    :func:`allocations`."""
    q, k, v = qkv(t)
    with torch.no_grad():
        live = peak = 0
        for nbytes in allocations(lambda: FORMS[form](q, k, v)):
            live += nbytes
            peak = max(peak, live)
    return peak / 2**20


def _status_mb(field: str) -> float:
    """A line of /proc/self/status (``VmRSS``, ``VmHWM``), in MB."""
    with open("/proc/self/status", encoding="ascii") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":")) / 1024


def rss_here(form: str, t: int) -> float:
    """Peak MB of resident memory one forward of ``form`` at length ``t`` adds to this process (Linux): the
    high-water mark, reset just before the call (``/proc/self/clear_refs``), less the resident memory then. The form
    runs once before on 512 positions, so that neither the code it loads nor the allocator's first arenas count."""
    q, k, v = qkv(t)
    with torch.no_grad():
        FORMS[form](*(x[..., :512, :].contiguous() for x in (q, k, v)))
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")  # the high-water mark starts again from the resident memory now
        before = _status_mb("VmRSS")
        FORMS[form](q, k, v)
        return _status_mb("VmHWM") - before


def times_here(t: int) -> list[float]:
    """Median seconds of the tiled form and of PyTorch's kernel, forward, interleaved, in this process."""

    q, k, v = qkv(t)
    with torch.no_grad():
        return list(interleaved(lambda: T.flash_attention(q, k, v), lambda: F.scaled_dot_product_attention(q, k, v),
                                3, warmup=1))


def in_process(*args: str, threads: int):
    """Run ``python -m benchmarks.modern *args`` on ``threads`` threads; what it prints, read as JSON.

    OpenMP's waiting threads sleep rather than spin (``OMP_WAIT_POLICY=PASSIVE``, as the nbval check runs):
    the tiled form makes thousands of small parallel calls, and on a busy machine a spinning thread takes the
    core its partner needs, which stalls every call. Both forms run with the same setting.
    """
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "OMP_WAIT_POLICY": "PASSIVE"}
    out = subprocess.run([sys.executable, "-m", "benchmarks.modern", *args], check=True, capture_output=True,
                         text=True, env=env, timeout=1200)
    return json.loads(out.stdout.strip().splitlines()[-1])


def peak_mb(form: str, t: int, threads: int = 1) -> float:
    """:func:`peak_here` in a fresh process, so that no form inherits another's allocations."""
    return in_process("peak", form, str(t), threads=threads)


def rss_mb(form: str, t: int, threads: int = 1, runs: int = 3) -> float:
    """:func:`rss_here`, the median of ``runs`` fresh processes (the allocator's slack varies from run to run)."""
    import statistics

    return statistics.median(in_process("rss", form, str(t), threads=threads) for _ in range(runs))


def attention_memory(ts=(256, 512, 1024, 2048, 4096), threads: int = 1) -> list[dict]:
    """Peak memory (MB, forward only) of the three forms against T, 8 heads of 64: the chapter's picture."""
    return [{"T": t, **{f"{form}_peak_mb": peak_mb(form, t, threads) for form in FORMS}} for t in ts]


def bench_flash(threads: int, t: int = 4096) -> dict:
    """Tiled attention against PyTorch's fused kernel, forward only, on ``threads`` threads (a process of its own)."""
    ours, ref = in_process("times", str(t), threads=threads)
    mem = {form: peak_mb(form, t, threads) for form in FORMS}
    rss = {form: rss_mb(form, t, threads) for form in ("flash", "torch")}
    name = f"flash-attn-{threads}-thread" + ("s" if threads > 1 else "")
    return {"name": name, "ours_s": ours, "reference": f"F.scaled_dot_product_attention, forward, T={t}, "
            f"{HEADS} heads of {D_K}, {threads} thread(s), passive OpenMP wait; peak memory each in its own process "
            "(profiler; and resident, median of 3)",
            "reference_s": ref, "ratio": ours / ref, "ours_peak_mb": mem["flash"], "reference_peak_mb": mem["torch"],
            "teaching_peak_mb": mem["teaching"], "peak_ratio": mem["flash"] / mem["torch"],
            "teaching_peak_ratio": mem["teaching"] / mem["torch"], "ours_rss_mb": rss["flash"],
            "reference_rss_mb": rss["torch"], "rss_ratio": rss["flash"] / rss["torch"]}


def small_decoder() -> T.DecoderOnly:
    """A small Llama-style decoder: 2 layers, d_model 256, 8 heads (2 kv heads), RoPE, SwiGLU, RMSNorm."""
    torch.manual_seed(0)
    cfg = T.TransformerConfig(vocab_size=1000, d_model=256, n_heads=8, n_kv_heads=2, d_ff=768, n_layers=2,
                              dropout=0.0, max_len=640, norm_first=True, norm="rms", ffn="gated", activation="silu",
                              positional="rope", rope_pairs="half", linear_bias=False, scale_embeddings=False,
                              pad_id=None, fast=True)
    return T.DecoderOnly(cfg).eval()


def bench_kv_cache(n_new: int) -> dict:
    """Greedy generation of ``n_new`` tokens after a 16-token prefix, with and without the cache, on one thread
    (each step is small: two threads would mostly wait for each other). The first pair also checks the tokens."""
    model = small_decoder()
    prefix = torch.randint(0, 1000, (1, 16), generator=torch.Generator().manual_seed(1))
    with one_thread():
        cached = T.generate_cached(model, prefix, n_new)
        assert torch.equal(cached, T.generate(model, prefix, n_new)), "the cache must not change the tokens"
        ours, ref = interleaved(lambda: T.generate_cached(model, prefix, n_new),
                                lambda: T.generate(model, prefix, n_new), 3 if n_new <= 128 else 1, warmup=0,
                                min_seconds=0.0)
    return {"name": f"kv-cache-{n_new}", "ours_s": ours, "reference": f"generate without the cache, {n_new} new "
            "tokens, same tokens; small decoder (2 layers, d_model 256, 2 kv heads), 1 thread", "reference_s": ref,
            "ratio": ours / ref, "speedup": ref / ours}


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] in ("peak", "rss"):
        print(json.dumps((peak_here if sys.argv[1] == "peak" else rss_here)(sys.argv[2], int(sys.argv[3]))))
    elif len(sys.argv) == 3 and sys.argv[1] == "times":
        print(json.dumps(times_here(int(sys.argv[2]))))
    else:
        sys.exit(__doc__)
