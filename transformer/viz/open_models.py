"""Today's open models (chapter 14): what a token costs in the cache, and how evenly a router loads its experts.

:class:`CacheCostExplorer` picks a model's shapes, a kind of attention and a context length, and shows what the
cache holds per token and in all (:func:`~transformer.kv_cache.cache_bytes`, the package's one formula, which
the chapter checks against caches it measures). :class:`ExpertLoadExplorer` shows the share of the choices each
expert got, for ``k`` and a way of balancing, from loads the chapter measured on its trained mixtures.
"""

from __future__ import annotations

import html
from collections.abc import Mapping

import torch

from .._validate import require_choice
from ..config import TransformerConfig
from ..kv_cache import cache_bytes
from ..latent_attention import LatentConfig
from .explorer import Explorer

#: layers, query heads and head size of a few published models (Touvron et al. 2023; DeepSeek-AI 2024).
MODELS = {"Llama 2 7B": (32, 32, 128), "Llama 2 70B": (80, 64, 128), "DeepSeek-V2": (60, 128, 128)}
KINDS = ("multi-head", "grouped-query, 8 kv heads", "multi-query", "sliding window 4096, 8 kv heads", "latent")
CONTEXTS = (1024, 4096, 16384, 32768, 131072)


def attention_config(model: str, kind: str) -> TransformerConfig:
    """The cache's shape of ``kind`` of attention at ``model``'s layers, heads and head size: grouped-query and the
    window as Mistral 7B (8 key/value heads, a window of 4096), latent as DeepSeek-V2 (``d_c = 4 d_h``,
    ``d_h^R = d_h / 2``). ``d_model`` is set to ``n_heads d_h``: the cache does not depend on it."""
    require_choice("model", model, tuple(MODELS))
    require_choice("kind", kind, KINDS)
    layers, heads, d_h = MODELS[model]
    fields = dict(vocab_size=2, d_model=heads * d_h, n_heads=heads, d_ff=1, n_layers=layers, max_len=CONTEXTS[-1])
    extra = {KINDS[0]: {}, KINDS[1]: dict(n_kv_heads=8), KINDS[2]: dict(n_kv_heads=1),
             KINDS[3]: dict(n_kv_heads=8, sliding_window=4096),
             KINDS[4]: dict(positional="rope", latent=LatentConfig(4 * d_h, d_h, d_h // 2, d_h))}[kind]
    return TransformerConfig(**fields, **extra)


def _size(n: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


class CacheCostExplorer(Explorer):
    """Pick a model, a kind of attention and a context length; see the cache per token and in all, in 16-bit
    numbers, beside the other kinds at the same shapes (chapter 14)."""

    def __init__(self, model: str = "Llama 2 7B", kind: str = KINDS[0], context: int = 4096):
        import ipywidgets as w

        attention_config(model, kind)  # a known model and kind, or a clear error
        require_choice("context", context, CONTEXTS)
        self.model = w.Dropdown(options=list(MODELS), value=model, description="model")
        self.kind = w.Dropdown(options=list(KINDS), value=kind, description="attention")
        self.context = w.SelectionSlider(options=[(f"{c:,}", c) for c in CONTEXTS], value=context,
                                         description="context")
        self.lay_out([self.model, self.kind], self.context)

    @property
    def bytes(self) -> dict[str, int]:
        """Each kind's cache in all, in bytes of float16, at the chosen model and context."""
        return {k: cache_bytes(attention_config(self.model.value, k), self.context.value, torch.float16)
                for k in KINDS}

    def _update(self, _change=None) -> None:
        sizes, context = self.bytes, self.context.value
        largest, bold = max(sizes.values()), " style='font-weight:bold'"
        rows = "".join(
            f"<tr{bold if k == self.kind.value else ''}><td>{html.escape(k)}</td>"
            f"<td>{_size(b / context)}</td><td>{_size(b)}</td>"
            f"<td><div style='background:#4a7fc1;height:12px;width:{max(1, round(200 * b / largest))}px'></div></td>"
            f"</tr>" for k, b in sizes.items())
        chosen = sizes[self.kind.value]
        self.view.value = (
            f"<p>{html.escape(self.model.value)}, {html.escape(self.kind.value)}, {context:,} tokens: "
            f"<b>{_size(chosen / context)}</b> per token, <b>{_size(chosen)}</b> in all, "
            f"{sizes[KINDS[0]] / chosen:.1f} times less than multi-head attention</p>"
            f"<table><tr><th>attention</th><th>per token</th><th>in all</th><th></th></tr>{rows}</table>")


class ExpertLoadExplorer(Explorer):
    """Pick ``k`` and a way of balancing; see each expert's share of the choices (chapter 14).

    ``loads[(k, balancing)]``: the shares ``(n_experts,)``, summing to 1, measured after training with that
    setting; 1 / n_experts each is an even load.
    """

    def __init__(self, loads: Mapping[tuple[int, str], torch.Tensor]):
        import ipywidgets as w

        if not loads:
            raise ValueError("loads: expected at least one (k, balancing) setting, got none")
        self.loads = {key: torch.as_tensor(v, dtype=torch.float64) for key, v in loads.items()}
        ks = sorted({k for k, _ in self.loads})
        ways = list(dict.fromkeys(b for _, b in self.loads))
        missing = [(k, b) for k in ks for b in ways if (k, b) not in self.loads]
        if missing:
            raise ValueError(f"loads: expected a load for every k and balancing, got none for {missing}")
        self.k = w.ToggleButtons(options=ks, value=ks[0], description="top-k")
        self.balancing = w.ToggleButtons(options=ways, value=ways[0], description="balancing")
        self.lay_out([self.k, self.balancing])

    @property
    def shares(self) -> torch.Tensor:
        """The chosen setting's share of the choices per expert ``(n_experts,)``."""
        return self.loads[(self.k.value, self.balancing.value)]

    def _update(self, _change=None) -> None:
        shares = self.shares
        n = shares.shape[0]
        bars = "".join(
            f"<tr><td style='text-align:right;padding-right:6px'>expert {e}</td>"
            f"<td><div style='background:#4a7fc1;height:12px;width:{round(400 * float(s))}px'></div></td>"
            f"<td style='padding-left:6px'>{float(s):.3f}</td></tr>" for e, s in enumerate(shares))
        self.view.value = (
            f"<p>top-{self.k.value}, balancing: {html.escape(self.balancing.value)}. The busiest expert gets "
            f"<b>{float(shares.max()):.3f}</b> of the choices, the idlest <b>{float(shares.min()):.3f}</b> "
            f"(even: {1 / n:.3f} each)</p><table>{bars}</table>")
