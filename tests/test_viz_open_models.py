"""Chapter 14's explorers: the cache per token and in all, worked out by hand from the models' shapes (Llama 2 7B:
32 layers of 32 heads of 128; DeepSeek-V2: 60 layers, d_c 512, d_h^R 64), and the experts' shares as given."""

from __future__ import annotations

import pytest
import torch

from transformer.viz.open_models import KINDS, CacheCostExplorer, ExpertLoadExplorer


def test_the_cache_by_hand():
    ex = CacheCostExplorer()
    assert ex.bytes[KINDS[0]] == 4096 * 2 * 32 * 32 * 128 * 2  # 2 GiB at 4096 tokens
    assert "<b>512.0 KiB</b> per token, <b>2.0 GiB</b> in all" in ex.view.value
    ex.kind.value = KINDS[2]  # one key/value head: 32 times less
    assert "<b>16.0 KiB</b> per token" in ex.view.value and "32.0 times less" in ex.view.value
    ex.kind.value, ex.context.value = KINDS[3], 32768  # the window keeps 4095 positions of 8 heads
    assert ex.bytes[KINDS[3]] == 4095 * 2 * 32 * 8 * 128 * 2
    assert ex.bytes[KINDS[1]] == 32768 * 2 * 32 * 8 * 128 * 2
    ex.model.value, ex.kind.value = "DeepSeek-V2", KINDS[4]
    assert ex.bytes[KINDS[4]] == 32768 * (512 + 64) * 60 * 2
    assert "<b>67.5 KiB</b> per token" in ex.view.value


def test_every_control_changes_the_view():
    ex = CacheCostExplorer()
    first = ex.view.value
    for control, value in ((ex.model, "Llama 2 70B"), (ex.kind, KINDS[1]), (ex.context, 1024)):
        before = ex.view.value
        control.value = value
        assert ex.view.value != before
    assert ex.view.value != first


LOADS = {(1, "none"): [0.7, 0.1, 0.1, 0.1], (1, "loss"): [0.25] * 4,
         (2, "none"): [0.4, 0.4, 0.1, 0.1], (2, "loss"): [0.3, 0.2, 0.3, 0.2]}


def test_the_shares_shown_are_the_ones_given():
    ex = ExpertLoadExplorer({key: torch.tensor(v) for key, v in LOADS.items()})
    assert "<b>0.700</b> of the choices, the idlest <b>0.100</b> (even: 0.250 each)" in ex.view.value
    ex.balancing.value = "loss"
    assert torch.equal(ex.shares, torch.tensor([0.25] * 4, dtype=torch.float64))
    ex.k.value = 2
    assert "<b>0.300</b> of the choices, the idlest <b>0.200</b>" in ex.view.value


def test_bad_choices_are_refused_by_name():
    with pytest.raises(ValueError, match="model: expected one of .*'Llama 2 7B'.*, got 'GPT-4'"):
        CacheCostExplorer(model="GPT-4")
    with pytest.raises(ValueError, match="kind: expected one of"):
        CacheCostExplorer(kind="linear")
    with pytest.raises(ValueError, match="context: expected one of .*, got 1000"):
        CacheCostExplorer(context=1000)


def test_bad_loads_are_refused_by_name():
    with pytest.raises(ValueError, match="loads: expected at least one"):
        ExpertLoadExplorer({})
    with pytest.raises(ValueError, match=r"got none for \[\(2, 'loss'\)\]"):
        ExpertLoadExplorer({key: torch.tensor(v) for key, v in LOADS.items() if key != (2, "loss")})
