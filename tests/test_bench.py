"""`make bench` writes results.json in the agreed shape (speed targets are read from it, never asserted here)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT, venv_env

pytestmark = pytest.mark.slow


def test_bench_writes_results_with_the_agreed_keys():
    subprocess.run([sys.executable, "benchmarks/bench.py", "--quick", "--only", "sdpa-teaching", "mha-fast"],
                   cwd=ROOT, env=venv_env(), check=True, capture_output=True, timeout=600)
    rows = json.loads((ROOT / "_build" / "bench" / "results.json").read_text())
    assert [r["name"] for r in rows] == ["sdpa-teaching", "mha-fast"]
    for r in rows:
        assert {"name", "ours_s", "reference", "reference_s", "ratio"} <= set(r)
        assert r["ours_s"] > 0 and r["reference_s"] > 0
        assert r["ratio"] == pytest.approx(r["ours_s"] / r["reference_s"])
    assert rows[0]["ours_peak_mb"] > 0 and rows[0]["reference_peak_mb"] > 0
    scaling = json.loads((ROOT / "_build" / "bench" / "scaling.json").read_text())
    small, large = scaling[0], scaling[-1]
    growth = (large["T"] / small["T"]) ** 2
    assert large["ours_peak_mb"] / small["ours_peak_mb"] > growth / 4, "the teaching form's memory grows like T^2"
