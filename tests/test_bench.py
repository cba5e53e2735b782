"""`make bench` writes results.json in the agreed shape (speed targets are read from it, never asserted here)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT, venv_env

pytestmark = pytest.mark.slow


def bench(out, *names):
    subprocess.run([sys.executable, "-m", "benchmarks.bench", "--quick", "--out", str(out), "--only", *names],
                   cwd=ROOT, env=venv_env(), check=True, capture_output=True, timeout=600)
    return json.loads((out / "results.json").read_text())


def test_bench_writes_results_with_the_agreed_keys(tmp_path):
    rows = bench(tmp_path, "sdpa-teaching", "mha-fast")
    assert [r["name"] for r in rows] == ["sdpa-teaching", "mha-fast"]
    for r, limit in zip(rows, (1.5, 1.0)):
        assert {"name", "ours_s", "reference", "reference_s", "ratio", "target", "met"} <= set(r)
        assert r["ours_s"] > 0 and r["reference_s"] > 0
        assert r["ratio"] == pytest.approx(r["ours_s"] / r["reference_s"])
        assert r["target"] == f"ratio <= {limit:g}" and r["met"] == (r["ratio"] <= limit)
    assert rows[0]["ours_peak_mb"] > 0 and rows[0]["reference_peak_mb"] > 0
    scaling = json.loads((tmp_path / "scaling.json").read_text())
    small, large = scaling[0], scaling[-1]
    growth = (large["T"] / small["T"]) ** 2
    assert large["ours_peak_mb"] / small["ours_peak_mb"] > growth / 4, "the teaching form's memory grows like T^2"
    machine = json.loads((tmp_path / "machine.json").read_text())
    assert machine["cores"] >= 1 and machine["torch"].startswith("2.13")

    again = bench(tmp_path, "mha-fast")
    assert [r["name"] for r in again] == ["sdpa-teaching", "mha-fast"], "--only updates rows, it keeps the others"
    assert again[0] == rows[0] and again[1] != rows[1]


def test_reference_results_are_committed_and_complete():
    """The book's performance page falls back to the committed reference run: it must hold every entry."""
    from benchmarks.bench import TARGETS

    rows = json.loads((ROOT / "benchmarks" / "results" / "results.json").read_text())
    assert [r["name"] for r in rows] == list(TARGETS)
    assert all(r["ours_s"] == r["ours_s"] for r in rows), "no NaN in the reference run"
    assert (ROOT / "benchmarks" / "results" / "scaling.json").exists()
    assert (ROOT / "benchmarks" / "results" / "machine.json").exists()


def test_chapter_12_attention_memory_the_tiled_form_grows_like_t_the_teaching_form_like_t_squared():
    """The numbers of chapter 12's picture, measured in this process at two lengths (forward only)."""
    from benchmarks.modern import peak_here

    small, large = ({form: peak_here(form, t) for form in ("teaching", "flash", "torch")} for t in (512, 2048))
    assert large["teaching"] / small["teaching"] > 16 / 2, "T x T scores: 16 times the memory for 4 times T"
    assert large["flash"] / small["flash"] < 4, "tiles of a fixed size, an output that grows like T"
    assert large["flash"] <= 2 * large["torch"] + 2, "within twice PyTorch's fused kernel (+ one 2 MB tile)"
    assert large["teaching"] > 8 * 2048 * 2048 * 4 / 2**20, "at least one float32 T x T matrix per head"


def test_resident_memory_sees_the_teaching_forms_t_by_t_matrices():
    """The resident memory a forward adds (the flash rows' second count) sees what the profiler sees: the teaching
    form holds at least one float32 T x T matrix per head, the tiled form a small part of that. Each is measured in a
    fresh process, as the bench does: in one that has run much before, the call may fit in memory freed earlier."""
    from benchmarks.modern import rss_mb

    teaching, flash = rss_mb("teaching", 2048, runs=1), rss_mb("flash", 2048, runs=1)
    assert teaching > 8 * 2048 * 2048 * 4 / 2**20, "one float32 T x T matrix per head, at least"
    assert 0 < flash < teaching / 8, (flash, teaching)


def test_the_performance_page_quotes_the_reference_runs_resident_memory():
    rows = {r["name"]: r for r in json.loads((ROOT / "benchmarks" / "results" / "results.json").read_text())}
    one, two = rows["flash-attn-1-thread"], rows["flash-attn-2-threads"]
    page = " ".join((ROOT / "book" / "performance.md").read_text(encoding="utf-8").split())
    assert (f"adds {one['rss_ratio']:.1f} times PyTorch's resident memory on one thread and {two['rss_ratio']:.1f} "
            f"times on two ({one['ours_rss_mb']:.1f} MB against {one['reference_rss_mb']:.1f} MB, "
            f"{two['ours_rss_mb']:.1f} MB against {two['reference_rss_mb']:.1f} MB)") in page
    assert one["rss_ratio"] <= 2 and two["rss_ratio"] <= 2


def test_the_guide_quotes_the_recorders_row_as_measured():
    """The instructors' guide says how much slower the recorder of forbidden calls makes a hidden test: the
    reference run's forbidden-recorder row, to one decimal, within its target."""
    from benchmarks.bench import TARGETS

    row = {r["name"]: r for r in json.loads((ROOT / "benchmarks" / "results" / "results.json").read_text())}
    ratio = row["forbidden-recorder"]["ratio"]
    guide = " ".join((ROOT / "book" / "instructors.md").read_text(encoding="utf-8").split())
    assert f"ran {ratio:.1f} times slower in `make bench`'s `forbidden-recorder` row" in guide
    assert ratio <= TARGETS["forbidden-recorder"][1]


def test_chapter_14_reference_rows_weigh_the_caches_as_worked_out_by_hand():
    """The committed run of benchmarks/open_models.py: bytes per position of one layer in float32, 16 heads of 64 —
    multi-head 2 * 16 * 64 * 4, 4 key/value heads 2 * 4 * 64 * 4, one 2 * 64 * 4, latent (256 + 32) * 4, and the
    window's 511 kept positions of 2,048 bytes spread over the 2,048 positions seen."""
    rows = {r["name"]: r for r in json.loads((ROOT / "benchmarks" / "results" / "open_models.json").read_text())}
    expected = {"decode-2k-grouped-query, 4 kv heads": 2048, "decode-2k-multi-query": 512,
                "decode-2k-window 512, 4 kv heads": 511, "decode-2k-latent, absorbed": 1152}
    assert set(rows) == {*expected, "moe-top2-of-8"}
    for name, size in expected.items():
        assert rows[name]["cache_bytes_per_token"] == size
        assert rows[name]["reference_cache_bytes_per_token"] == 2 * 16 * 64 * 4
        assert rows[name]["ratio"] == pytest.approx(rows[name]["ours_s"] / rows[name]["reference_s"])


def test_the_guide_and_the_performance_page_quote_the_cluster_row_as_measured():
    """The overhead of grading through a dask cluster (``--cluster``), as the reference run's grade-cluster row
    measured it, to two decimals, with the class size it measured; the row's grades were the same on both sides."""
    row = {r["name"]: r for r in json.loads((ROOT / "benchmarks" / "results" / "results.json").read_text())}
    cluster = row["grade-cluster"]
    said = f"took {cluster['ratio']:.2f} times as long as with `--jobs 2` (`make bench`'s `grade-cluster` row"
    for page in ("instructors.md", "performance.md"):
        assert said in " ".join((ROOT / "book" / page).read_text(encoding="utf-8").split()), page
    assert cluster["same_grades"] and cluster["ratio"] == pytest.approx(cluster["ours_s"] / cluster["reference_s"])
