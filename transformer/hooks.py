"""Look inside a model without changing it: forward hooks (chapters 5 to 10).

PyTorch calls a module's *forward hooks* after each of its forward passes,
with its inputs and its output. The pictures of the book use them to read
what a model computes, instead of writing the forward pass a second time:

- :func:`recorded_attention`: the attention weights of chosen attention modules;
- :func:`recorded`: the outputs (or inputs) of any modules, call after call;
- :func:`attention_weights`: every attention module of a model, for one forward pass;
- :func:`cross_attention_weights`: the cross-attention of every decoder layer;
- :func:`layer_outputs`: the output of every block of every stack;
- :func:`residual_stream`: the stream after every sublayer of encoder blocks.

Each one removes its hooks when it is done: the model is left as it was.
Chapter 13's :mod:`transformer.interp` uses the same kind of hooks to cache every named activation
of a model and to replace some of them (patching, ablation).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

import torch
from torch import nn

from ._validate import require_choice, require_float, require_rank
from .blocks import Decoder, Encoder, EncoderBlock
from .modes import eval_mode
from .multihead import MultiHeadAttention

WHAT = ("output", "input")


@contextmanager
def attached(hooks: Iterable) -> Iterator[None]:
    """Every handle that ``hooks`` yields (each one registers a hook as it is drawn) is removed when the ``with``
    block ends, however it ends: an error while the hooks are being registered removes those already there. The
    one place of the book's hooks that the model is left as it was (here and in :mod:`transformer.interp`)."""
    handles = []
    try:
        for handle in hooks:
            handles.append(handle)
        yield
    finally:
        for handle in handles:
            handle.remove()


@contextmanager
def _hooked(modules: dict[str, nn.Module], kind: type, kind_name: str,
            register) -> Iterator[dict[str, list[torch.Tensor]]]:
    """``register(module, append)`` hooks each module so that it appends to its list in the record."""
    record: dict[str, list[torch.Tensor]] = {name: [] for name in modules}

    def hooks():
        for name, module in modules.items():
            if not isinstance(module, kind):
                raise TypeError(f"modules[{name!r}]: expected {kind_name}, got {type(module).__name__}")
            yield register(module, record[name].append)

    with attached(hooks()):
        yield record


def recorded(modules: dict[str, nn.Module], what: str = "output"):
    """Inside the ``with`` block, every call of ``modules[name]`` appends its output (``what="output"``)
    or its first input (``what="input"``) to ``record[name]``, detached."""
    require_choice("what", what, WHAT)

    def register(module, append):
        if what == "output":
            return module.register_forward_hook(lambda mod, args, out: append(out.detach()))
        return module.register_forward_pre_hook(lambda mod, args: append(args[0].detach()))

    return _hooked(modules, nn.Module, "an nn.Module", register)


def recorded_attention(modules: dict[str, nn.Module]):
    """Record the attention weights of :class:`~transformer.multihead.MultiHeadAttention` modules.

    Inside the ``with`` block, every call of ``modules[name]`` also appends its
    weights ``(batch, heads, T_q, T_k)`` to ``record[name]``. The hook calls the
    module a second time with ``return_weights=True`` (without gradients): in
    eval mode these are the very weights of the call; in training mode dropout
    draws new ones.
    """
    def register(module, append):
        return module.register_forward_hook(weights_hook(append), with_kwargs=True)

    return _hooked(modules, MultiHeadAttention, "a MultiHeadAttention", register)


def weights_hook(take: Callable[[torch.Tensor], object]):
    """A forward hook (``with_kwargs=True``) for a :class:`~transformer.multihead.MultiHeadAttention` that hands
    ``take`` the weights ``(batch, heads, T_q, T_k)`` of each call: it calls the module's ``forward`` again with
    ``return_weights=True``, without gradients (``forward`` itself skips the hooks)."""
    def hook(mod, args, kwargs, output):
        with torch.no_grad():
            _, weights = mod.forward(*args, **{**kwargs, "return_weights": True})
        take(weights.detach())

    return hook


def attention_modules(model: nn.Module, kind: str | None = None) -> dict[str, MultiHeadAttention]:
    """The attention modules of ``model`` by their names in it (``"encoder.layers.0.self_attn"``, ...).

    ``kind="self"`` or ``"cross"`` keeps only self- or cross-attention, told apart by their names.
    """
    if kind is not None:
        require_choice("kind", kind, ("self", "cross"))
    found = {name: m for name, m in model.named_modules() if isinstance(m, MultiHeadAttention)}
    if kind:
        found = {name: m for name, m in found.items() if name.rsplit(".", 1)[-1].startswith(kind)}
    return found


def attention_weights(model: nn.Module, *inputs: torch.Tensor, kind: str | None = None) -> dict[str, torch.Tensor]:
    """Run ``model(*inputs)`` once in eval mode; the weights ``(batch, heads, T_q, T_k)`` of each attention module.

    A module called more than once in the pass (a shared one) gives its calls stacked on a first dimension.
    """
    modules = attention_modules(model, kind)
    with eval_mode(model), recorded_attention(modules) as record:
        model(*inputs)
    return {name: w[0] if len(w) == 1 else torch.stack(w) for name, w in record.items() if w}


def cross_attention_weights(model: nn.Module, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    """The cross-attention of every decoder layer: ``src (batch, T_e)``, ``tgt (batch, T_d)`` (decoder input).

    Returns ``(layers, batch, heads, T_d, T_e)``: row ``t`` is how the decoder
    position reading ``tgt[:, t]`` (and writing the next word) spreads its
    attention over the source words. The model is run in eval mode.
    """
    layers = {str(i): layer.cross_attn for i, layer in enumerate(model.decoder.layers)}
    with eval_mode(model), recorded_attention(layers) as record:
        model(src, tgt)
    return torch.stack([record[str(i)][0] for i in range(len(layers))])  # (layers, batch, heads, T_d, T_e)


def layer_outputs(model: nn.Module, *inputs: torch.Tensor) -> dict[str, torch.Tensor]:
    """Run ``model(*inputs)`` once in eval mode; the output ``(batch, seq, d_model)`` of every block,
    by its name in the model (``"encoder.layers.0"``, ...), in the order the blocks ran."""
    stacks = [m for m in model.modules() if isinstance(m, (Encoder, Decoder))]
    blocks = {name: m for name, m in model.named_modules() if any(m in s.layers for s in stacks)}
    with eval_mode(model), recorded(blocks) as record:
        model(*inputs)
    ran = [name for name in blocks if record[name]]
    return {name: record[name][0] for name in ran}


def residual_stream(blocks: EncoderBlock | Encoder | Iterable[EncoderBlock], x: torch.Tensor,
                    mask: torch.Tensor | None = None) -> tuple[list[torch.Tensor], list[str]]:
    """The residual stream through encoder blocks: the state after every sublayer (chapter 6).

    ``x (batch, seq, d_model)``. Returns ``states``, a list of tensors of that
    shape (the input, then the stream after each attention and each
    feed-forward sublayer, then after the final norm of an :class:`Encoder`
    that has one; an attention-only block has no feed-forward state), and ``labels``
    naming them. The last state is what the blocks return. The blocks run as they are; hooks read the stream where it
    passes: after attention it is what ``norm2`` reads (pre-norm) or what
    ``norm1`` writes (post-norm); after the feed-forward it is the block's output.
    """
    require_float("x", x)
    require_rank("x", x, (3,), "(batch, seq, d_model)")
    x_in = x
    blocks, final = _encoder_blocks(blocks)
    with_ff = [b.ff is not None for b in blocks]  # an attention-only block (chapter 13): its output is the stream
    pre = {str(i): b.norm2 for i, b in enumerate(blocks) if b.norm_first and with_ff[i]}  # x + Attn(Norm(x)) -> norm2
    post = {str(i): b.norm1 for i, b in enumerate(blocks) if not b.norm_first and with_ff[i]}  # Norm(x + Attn(x))
    with recorded(pre, "input") as entering, recorded(post) as leaving, \
            recorded({str(i): b for i, b in enumerate(blocks)}) as out:
        for block in blocks:
            x = block(x, mask)
    after_attention = {**entering, **leaving}
    states, labels = [x_in], ["input"]
    for i in range(len(blocks)):
        if not with_ff[i]:
            states, labels = states + [out[str(i)][0]], labels + [f"{i + 1}: + attention"]
            continue
        states += [after_attention[str(i)][0], out[str(i)][0]]
        labels += [f"{i + 1}: + attention", f"{i + 1}: + feed-forward"]
    if final is not None and not isinstance(final, nn.Identity):
        states.append(final(x))
        labels.append("final norm")
    return states, labels


# ----------------------------------------------------------------------------- argument checks


def _encoder_blocks(blocks) -> tuple[list[EncoderBlock], nn.Module | None]:
    """``blocks`` of :func:`residual_stream` as a list of :class:`EncoderBlock`, and the final norm of an
    :class:`Encoder` (None otherwise)."""
    final = None
    if isinstance(blocks, EncoderBlock):
        blocks = [blocks]
    elif isinstance(blocks, Encoder):
        final, blocks = blocks.norm, list(blocks.layers)
    blocks = list(blocks)
    for block in blocks:
        if not isinstance(block, EncoderBlock):
            raise TypeError(f"blocks: expected EncoderBlock modules, got {type(block).__name__}")
    return blocks, final
