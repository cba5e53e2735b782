"""Hidden tests, decided by the grader: one module per assignment (``a04.py`` for assignment 04). (Hidden as in
not shown to the student; ``DecoderOnly.hidden`` in the package is a model's last hidden states, another thing.)

A hidden test never runs its verdict inside the student's kernel. Each grade cell of an assignment
(a row of the map of exercises, ``layout/exercises.py``) has a function in its module, named after the cell's
``grade_id``, that takes the run's secret
``seed`` and yields :class:`Case` s:

- ``what``: what is tested, in words (the feedback page shows it when the case fails);
- ``request``: which probe the kernel runs, on which inputs (plain data drawn here from the seed);
- ``judge``: a function of the probe's reply that returns what is wrong, in words, or ``None``;
- ``scored``: ``False`` for a property only the kernel can report (a call made, a parameter
  registered) and the text does not promise: it is shown as "reported by your kernel" and earns
  nothing either way, because a forged reply could claim it. What the text promises (inputs not
  changed, the dtype of the result) is scored: a forged reply could hide a fault there, as it could
  any whose right answer it computes, but an honest one that shows it loses the points.

Inputs come from :func:`generator` / :func:`rng` of the seed, so a run whose seed is secret asks
questions no one has seen, and a regrade with the recorded seed asks the same ones. Answers fixed
by the lectures (the flying arrows, the hand-worked tables) do not depend on the seed.

The probes themselves are kernel-side code in ``grader/kernel_side/probes/``: :func:`calls` and
:func:`reads` cover most exercises; ``Request("aNN.name", inputs)`` names an assignment's own probe.
A judge reads a reply through :mod:`grader.hidden.judge`'s strict helpers (:func:`judge.fields`,
:func:`judge.items`): a reply of another form is malformed and fails the case.
"""

from __future__ import annotations

import hashlib
import importlib
import math
import random
from dataclasses import dataclass, field
from typing import Callable, Iterator

import torch

from layout import exercises


@dataclass
class Request:
    probe: str
    inputs: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Forbid:
    """What one exercise's text forbids (its **Do not use:** line), ``FORBIDS[grade_id]`` in its module: ``function``
    is the name its hidden tests call or read, ``names`` are dotted names of modules (everything in them) or
    callables (``grader/judging/forbidden.py`` reads the submissions for them)."""

    function: str
    names: tuple[str, ...]


@dataclass
class Case:
    what: str
    request: Request
    judge: Callable[[object], str | None]
    scored: bool = True


def calls(name: str, *args, **kwargs) -> Request:
    """Ask the kernel for ``name(*args, **kwargs)``; the reply is ``{"out": result, "args": [...]}``."""
    return Request("call", {"name": name, "args": list(args), "kwargs": kwargs})


def reads(name: str) -> Request:
    """Ask the kernel for the value of ``name``."""
    return Request("value", {"name": name})


def derive(seed: int, name: str) -> int:
    """A 63-bit seed for the inputs called ``name``, from the run's ``seed`` (stable across processes)."""
    digest = hashlib.sha256(f"{int(seed)}:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def generator(seed: int, name: str) -> torch.Generator:
    """A torch generator for the inputs called ``name`` (e.g. the grade cell's id)."""
    return torch.Generator().manual_seed(derive(seed, name))


def rng(seed: int, name: str) -> random.Random:
    """A Python ``random.Random`` for the inputs called ``name``."""
    return random.Random(derive(seed, name))


def fill(module: torch.nn.Module, g: torch.Generator, spread: float) -> dict:
    """Every parameter of ``module`` drawn from ``g``: matrices of size about 1/sqrt(fan-in), norm scales
    (``gamma``, a norm's ``weight``) about 1, biases about ``spread`` (non-trivial norms and biases too).
    Returns a copy of its state dict."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            if p.dim() > 1:
                p.copy_(noise / math.sqrt(p.shape[-1]))
            elif name.endswith("gamma") or ("norm" in name and name.endswith("weight")):
                p.copy_(1 + spread * noise)
            else:
                p.copy_(spread * noise)
    return {k: v.clone() for k, v in module.state_dict().items()}


def module_for(assignment: str):
    """The hidden-test module of ``assignment`` (``04_queries_keys_values`` -> ``grader.hidden.a04``)."""
    return importlib.import_module(f"{__name__}.a{assignment[:2]}")


def cases(assignment: str, seed: int) -> dict[str, list[Case]]:
    """grade_id -> the cases of that grade cell, in order, for the run's ``seed`` (the grade cells as the map of
    exercises lists them, ``layout/exercises.py``)."""
    mod = module_for(assignment)
    return {gid: list(getattr(mod, gid)(seed)) for gid in exercises.graded(assignment)}


def all_cases(assignment: str, seed: int) -> Iterator[tuple[str, Case]]:
    for gid, group in cases(assignment, seed).items():
        for case in group:
            yield gid, case
