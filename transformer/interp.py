"""Looking inside a model: cache, replace and ablate named activations (chapter 13).

Every activation has a name that says where it lives and what it holds (blocks counted from 0),
for a :class:`~transformer.model.DecoderOnly` or :class:`~transformer.model.EncoderOnly`:

- ``embed``: the summed token and position embeddings, ``(batch, seq, d_model)``;
- ``blocks.i.resid_pre``: the residual stream entering block ``i``, ``(batch, seq, d_model)``;
- ``blocks.i.attn.pattern``: the attention weights, ``(batch, heads, T_q, T_k)`` (cached, never replaced);
- ``blocks.i.attn.z``: each head's weighted sum of values, before ``W^O``, ``(batch, seq, heads, d_h)``;
- ``blocks.i.attn.out``: what the attention sublayer adds to the stream, ``(batch, seq, d_model)``;
- ``blocks.i.ffn.out``: what the feed-forward adds (blocks that have one), ``(batch, seq, d_model)``;
- ``blocks.i.resid_post``: the stream leaving block ``i``, ``(batch, seq, d_model)``;
- ``final``: the stream after the final norm, what the output head reads, ``(batch, seq, d_model)``.

Forward hooks on the model's own modules read these, and replace them (patching, ablation): the
model runs its own forward pass, once, and is left as it was. :func:`head_outputs` splits a
block's attention output into the part each head writes; :func:`attribution_patching` estimates every
patch at once from one gradient.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from ._validate import require_choice, require_int, require_tensor, shape_str
from .blocks import SelfAttentionStack
from .hooks import attached, weights_hook
from .modes import eval_mode

Patch = Callable[[torch.Tensor], torch.Tensor] | torch.Tensor


def hook_points(model: nn.Module) -> dict[str, tuple[nn.Module, str]]:
    """``{name: (module, where)}`` for every named activation of ``model``, in the order the forward pass
    makes them; ``where`` is ``"output"`` (the module's output), ``"input"`` (its first input), or, of a
    multi-head attention module, ``"pattern"`` (its weights) or ``"z"`` (the heads' outputs that ``W^O`` reads)."""
    stack = stack_of(model)
    points = {"embed": (model.embed, "output")}
    for i, block in enumerate(stack.layers):
        points[f"blocks.{i}.resid_pre"] = (block, "input")
        points[f"blocks.{i}.attn.pattern"] = (block.self_attn, "pattern")
        points[f"blocks.{i}.attn.z"] = (block.self_attn, "z")
        points[f"blocks.{i}.attn.out"] = (block.self_attn, "output")
        if block.ff is not None:
            points[f"blocks.{i}.ffn.out"] = (block.ff, "output")
        points[f"blocks.{i}.resid_post"] = (block, "output")
    points["final"] = (stack.norm, "output")
    return points


def run_with_cache(model: nn.Module, ids: torch.Tensor, names: list[str] | None = None):
    """Run ``model(ids)`` once, in eval mode and without gradients: ``(logits, cache)``.

    ``cache[name]`` holds every named activation (or only ``names``), detached; the logits are
    ``(batch, seq, vocab_size)``.
    """
    points = hook_points(model)
    wanted = list(points) if names is None else _check_names("names", names, points)
    cache: dict[str, torch.Tensor] = {}
    with torch.no_grad(), eval_mode(model), _hooked(points, wanted, cache, {}):
        logits = model(ids)
    return logits, {name: cache[name] for name in points if name in cache}


def run_with_patches(model: nn.Module, ids: torch.Tensor, patches: dict[str, Patch], names: list[str] | None = None):
    """Run ``model(ids)`` once with named activations replaced: ``(logits, cache)``.

    ``patches[name]`` is a tensor of the activation's shape, which replaces it, or a function from
    the activation to its replacement (:func:`patched_from`, :func:`ablated`). A later activation
    is computed from the replaced one. ``cache`` holds ``names`` (default: none) as they came out.
    """
    points = hook_points(model)
    if not isinstance(patches, dict) or not patches:
        raise TypeError(f"patches: expected a non-empty dict {{name: tensor or function}}, got {patches!r:.60}")
    _check_names("patches", list(patches), points, replaceable=True)
    for name, patch in patches.items():
        if not (isinstance(patch, torch.Tensor) or callable(patch)):
            raise TypeError(f"patches[{name!r}]: expected a tensor or a function, got {type(patch).__name__}")
    wanted = [] if names is None else _check_names("names", names, points)
    cache: dict[str, torch.Tensor] = {}
    with torch.no_grad(), eval_mode(model), _hooked(points, wanted, cache, patches):
        logits = model(ids)
    return logits, cache


def patched_from(source: torch.Tensor, head: int | None = None, position: int | None = None):
    """A patch that copies ``source``, the same activation cached on another input, into this run:
    all of it, or only head ``head`` (dimension 2 of ``attn.z``) and/or position ``position`` (dimension 1)."""
    require_tensor("source", source)
    return _replacer(lambda act: source, head, position, "source")


def ablated(how: str = "zero", head: int | None = None, reference: torch.Tensor | None = None):
    """A patch that removes an activation (or only head ``head`` of an ``attn.z``): ``how="zero"`` sets it to 0;
    ``how="mean"`` to its mean over the batch of ``reference``, the activation cached on other inputs."""
    require_choice("how", how, ("zero", "mean"))
    if how == "zero":
        return _replacer(torch.zeros_like, head, None, "how")
    require_tensor("reference", reference)
    mean = reference.mean(dim=0, keepdim=True)  # (batch, seq, ...) -> (1, seq, ...)
    return _replacer(lambda act: mean.expand(act.shape[0], *mean.shape[1:]), head, None, "reference")


def attribution_patching(model: nn.Module, clean_ids: torch.Tensor, corrupted_ids: torch.Tensor,
                         metric: Callable[[torch.Tensor], torch.Tensor], names: list[str]) -> dict[str, torch.Tensor]:
    """The gradient's linear estimate of patching each activation of ``names`` from the clean run into the corrupted
    one (attribution patching, Nanda 2023): ``(a_clean - a_corrupted) * d metric / d a`` at the corrupted run,
    ``{name: tensor of the activation's shape}``, from one forward and one backward pass.

    ``metric`` maps the logits ``(batch, seq, vocab_size)`` to a number (a 0-d tensor). Summed over a head's entries
    (dimensions 1 and 3 of ``attn.z``) or a position's, an estimate stands for the change of ``metric`` that
    :func:`run_with_patches` with :func:`patched_from` gives; it is exact only where ``metric`` is linear in the
    activation. The model's parameters and their ``.grad`` are left as they were.
    """
    points = hook_points(model)
    names = _check_names("names", names, points, replaceable=True)
    _, clean = run_with_cache(model, clean_ids, names)
    acts: dict[str, torch.Tensor] = {}

    def keep(name):
        def patch(act):
            acts[name] = act if act.requires_grad else act.detach().requires_grad_(True)
            return acts[name]
        return patch

    with eval_mode(model), torch.enable_grad(), _hooked(points, [], {}, {name: keep(name) for name in names}):
        value = metric(model(corrupted_ids))
    if not isinstance(value, torch.Tensor) or value.dim() != 0:
        got = shape_str(value) if isinstance(value, torch.Tensor) else type(value).__name__
        raise ValueError(f"metric: expected a function from the logits to a 0-d tensor, got {got}")
    grads = torch.autograd.grad(value, [acts[name] for name in names])
    return {name: (clean[name] - acts[name].detach()) * grad for name, grad in zip(names, grads)}


def head_outputs(model: nn.Module, cache: dict[str, torch.Tensor], layer: int) -> torch.Tensor:
    """What each head of block ``layer`` writes into the stream, ``z_h W^O_h``: ``(batch, seq, heads, d_model)``.

    Their sum over the heads, plus the bias of ``W^O``, is ``cache["blocks.layer.attn.out"]``.
    """
    require_int("layer", layer, 0, len(stack_of(model).layers) - 1)
    return head_terms(model, cache, layer)


def head_terms(model: nn.Module, cache: dict[str, torch.Tensor], layer: int) -> torch.Tensor:
    """:func:`head_outputs` of a layer already checked (the lens calls it for every layer)."""
    attn = stack_of(model).layers[layer].self_attn
    z = cache[f"blocks.{layer}.attn.z"]  # (batch, seq, heads, d_h)
    w_o = attn.w_o.weight.detach().view(attn.d_model, attn.n_heads, attn.d_h)  # (d_model, heads, d_h)
    return torch.einsum("bshd,mhd->bshm", z, w_o)  # (batch, seq, heads, d_model)


def unembed(model: nn.Module, stream: torch.Tensor) -> torch.Tensor:
    """Logits of a residual stream ``(..., seq, d_model)``: the model's own final norm, then its output head."""
    return model.head(stack_of(model).norm(stream))  # (..., seq, vocab_size)


# ----------------------------------------------------------------------------- the hooks


def _hooked(points: dict, wanted: list[str], cache: dict, patches: dict):
    """Hooks that replace ``patches`` and store ``wanted`` in ``cache``; removed when the block ends."""
    return attached(_register(module, where, name, cache if name in wanted else None, patches.get(name))
                    for name, (module, where) in points.items() if name in wanted or name in patches)


def _register(module: nn.Module, where: str, name: str, store: dict | None, patch):
    def apply(act: torch.Tensor) -> torch.Tensor:
        if patch is not None:
            new = patch(act) if callable(patch) else patch
            _check_patch(name, new, act)
            act = new
        if store is not None:
            store[name] = act.detach()  # assigned, not appended: a second call writes the same values
        return act

    if where == "pattern":
        return module.register_forward_hook(weights_hook(apply), with_kwargs=True)
    if where == "output":
        return module.register_forward_hook(lambda mod, args, out: apply(out))
    if where == "z":  # W^O reads the heads concatenated: show them one by one
        def z_hook(mod, args):
            b, s, d_model = args[0].shape
            z = apply(args[0].view(b, s, module.n_heads, module.d_h))  # (batch, seq, d_model) -> (.., heads, d_h)
            return (z.reshape(b, s, d_model), *args[1:])  # (batch, seq, heads, d_h) -> (batch, seq, d_model)
        return module.w_o.register_forward_pre_hook(z_hook)
    return module.register_forward_pre_hook(lambda mod, args: (apply(args[0]), *args[1:]))


def _replacer(new_values: Callable, head: int | None, position: int | None, source: str):
    """A patch that writes ``new_values(act)`` into ``act`` at ``head`` (dim 2) and ``position`` (dim 1);
    ``source`` names the argument the new values come from, for an error."""
    if head is not None:
        require_int("head", head, 0)
    if position is not None:
        require_int("position", position)

    def patch(act: torch.Tensor) -> torch.Tensor:
        if head is not None and act.dim() != 4:
            raise ValueError(f"head: expected a patch of an attn.z activation (batch, seq, heads, d_h), "
                             f"got one of shape {shape_str(act)}")
        new, out = new_values(act), act.clone()
        if new.shape[1:] != act.shape[1:]:
            raise ValueError(f"{source}: expected the activation's shape after the batch, {shape_str(act)}, "
                             f"got {shape_str(new)}")
        where = (slice(None), slice(None) if position is None else position, *(() if head is None else (head,)))
        out[where] = new[where]
        return out

    return patch


# ----------------------------------------------------------------------------- argument checks


def stack_of(model: nn.Module) -> SelfAttentionStack:
    """The stack of blocks of a DecoderOnly (``causal_stack``) or EncoderOnly (``encoder``) ``model``."""
    stack = getattr(model, "causal_stack", None) or getattr(model, "encoder", None)
    if not isinstance(stack, SelfAttentionStack) or not isinstance(getattr(model, "embed", None), nn.Module):
        raise TypeError(f"model: expected a DecoderOnly or EncoderOnly model, got {type(model).__name__}")
    return stack


def _check_names(argument: str, names, points: dict, replaceable: bool = False) -> list[str]:
    """``names``: a list of activation names of the model (replaceable ones if ``replaceable``)."""
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"{argument}: expected a list of activation names, got {names!r:.60}")
    for name in names:
        if name not in points:
            raise ValueError(f"{argument}: expected names of this model's activations ({', '.join(list(points)[:4])}, "
                             f"..., see hook_points(model)), got {name!r}")
        if replaceable and points[name][1] == "pattern":
            raise ValueError(f"{argument}: expected an activation that can be replaced, got {name!r} "
                             "(attention weights are cached, not replaced: patch attn.z or the stream instead)")
    return list(names)


def _check_patch(name: str, new, act: torch.Tensor) -> None:
    """A replacement is a tensor of the activation's shape."""
    if not isinstance(new, torch.Tensor) or new.shape != act.shape:
        got = shape_str(new) if isinstance(new, torch.Tensor) else type(new).__name__
        raise ValueError(f"patches[{name!r}]: expected a tensor of shape {shape_str(act)}, got {got}")
