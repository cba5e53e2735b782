"""Hidden tests of assignment 10, the whole Transformer (references: PyTorch's own layers and nn.Transformer)."""

from __future__ import annotations

import copy
import math
import warnings

import torch
import torch.nn.functional as F

from grader.forbidden import Forbid
from grader.hidden import Case, Request, probe, reads
from grader.hidden.judge import as_number, describe, entry, tensor
from transformer import EncoderDecoder, TransformerConfig

ASSIGNMENT = "10_whole_transformer"
GRADED = ["ex1_parameter_count", "ex2_train_step", "ex3_translator"]
FORBIDS = {  # what each exercise's text forbids (its **Do not use:** line; tests/test_forbidden.py)
    "ex2_train_step": Forbid("train_step", ("transformer.train",)),
}


# ----------------------------------------------------------------- exercise 1: counting by hand


def _count_judge(key, want):
    def judge(got):
        if as_number(got) is None:
            return f"counts[{key!r}]: expected a whole number, got {describe(got)}"
        got = as_number(got)
        if not math.isfinite(got) or abs(got - want) >= 0.5:
            return f"counts[{key!r}] is not the right count (tolerance: exact)"
        return None
    return entry(key, judge, "counts")


def ex1_parameter_count():
    # PyTorch's own layers are built exactly like the blocks of the base model (meta tensors: sizes, no numbers)
    enc = sum(p.numel() for p in torch.nn.TransformerEncoderLayer(512, 8, 2048, device="meta").parameters())
    dec = sum(p.numel() for p in torch.nn.TransformerDecoderLayer(512, 8, 2048, device="meta").parameters())
    expected = {"encoder_layer": enc, "decoder_layer": dec, "model": 37000 * 512 + 6 * enc + 6 * dec}
    said = {"encoder_layer": "the parameters of one encoder block", "decoder_layer": "the parameters of one decoder "
            "block", "model": "the parameters of the whole base model, the shared embedding counted once"}
    for key, want in expected.items():
        yield Case(f"counts[{key!r}], {said[key]} (exact)", reads("counts"), _count_judge(key, want))


# ----------------------------------------------------------------- exercise 2: a training step


@probe
def a10_train_step(user, cfg, state, src, tgt, pad_id, label_smoothing, steps):
    """``steps`` calls of train_step on an EncoderDecoder holding ``state``, with SGD (lr 0.1)."""
    import torch

    from transformer import EncoderDecoder, TransformerConfig
    model = EncoderDecoder(TransformerConfig(**cfg))
    model.load_state_dict(state)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = [user["train_step"](model, opt, src, tgt, pad_id, label_smoothing) for _ in range(steps)]
    return {"losses": losses, "params": {n: p.detach().clone() for n, p in model.named_parameters()},
            "src": src, "tgt": tgt}


def _step_judge(losses, params, src, tgt):
    def judge(reply):
        got = reply["losses"]
        for i, (loss, want) in enumerate(zip(got, losses)):
            step = f"step {i + 1}"
            if isinstance(loss, torch.Tensor):
                return f"{step} returned a tensor; return the loss as a Python float with loss.item()"
            if isinstance(loss, bool) or not isinstance(loss, (int, float)):  # numpy scalars arrive as floats
                return f"{step}: expected the loss as a float, got {describe(loss)}"
            if not math.isfinite(loss):
                return f"{step}: the loss is NaN or infinite"
            if abs(loss - want) >= 1e-5:
                return f"{step}: the loss is wrong (tolerance: atol=1e-5)"
        for name, want in params.items():
            if name not in reply["params"]:
                return f"the parameter {name} is missing after the steps"
            problem = tensor(reply["params"][name], want, atol=1e-5, rtol=1e-4)
            if problem:
                return f"the parameters after {len(losses)} steps, {name}: {problem}"
        for name, before in (("src", src), ("tgt", tgt)):
            if not torch.equal(reply[name], before):
                return f"the input {name} was changed in place; slice it instead"
        return None
    return judge


def ex2_train_step():
    for seed, smoothing in [(3, 0.0), (4, 0.2)]:
        cfg = dict(vocab_size=9, src_vocab_size=10, d_model=8, n_heads=2, d_ff=16, n_layers=1, dropout=0.0,
                   max_len=12)
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            model = EncoderDecoder(TransformerConfig(**cfg))
        state = {k: v.clone() for k, v in model.state_dict().items()}
        g = torch.Generator().manual_seed(seed)
        src = torch.randint(3, 10, (3, 5), generator=g)
        src[0, 3:] = 0
        tgt = torch.randint(3, 9, (3, 6), generator=g)
        tgt[:, 0], tgt[:, -1] = 1, 2
        tgt[1, 3], tgt[1, 4:] = 2, 0
        twin = copy.deepcopy(model)
        losses = []
        for _ in range(2):                                 # the steps written out: plain SGD, p <- p - 0.1 grad
            logits = twin(src, tgt[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, 9), tgt[:, 1:].reshape(-1), ignore_index=0,
                                   label_smoothing=smoothing)
            twin.zero_grad()
            loss.backward()
            with torch.no_grad():
                for p in twin.parameters():
                    p -= 0.1 * p.grad
            losses.append(loss.item())
        params = {n: p.detach().clone() for n, p in twin.named_parameters()}
        yield Case(f"two train_step calls with SGD (lr 0.1) on a small EncoderDecoder (vocab 9, source vocab 10, "
                   f"d_model 8), a padded batch of 3 and label_smoothing={smoothing}: the two losses (floats) and "
                   f"the parameters after them",
                   Request("a10_train_step", {"cfg": cfg, "state": state, "src": src, "tgt": tgt, "pad_id": 0,
                                              "label_smoothing": smoothing, "steps": 2}),
                   _step_judge(losses, params, src, tgt))


# ----------------------------------------------------------------- exercise 3: the Translator

PARTS = ["src_embed", "tgt_embed", "positions", "encoder", "decoder", "head"]


@probe
def a10_translator(user, cfg, state, e_src, e_tgt, src, tgt, seed):
    """Build Translator(cfg), copy an nn.Transformer's weights (``state``) into its encoder and decoder and the
    given embedding matrices into its embeddings, and return its logits for ``src``, ``tgt``."""
    import warnings

    import torch

    from transformer import TransformerConfig
    from transformer.interop import copy_transformer
    config = TransformerConfig(**cfg)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = user["Translator"](config)
    if not isinstance(model, torch.nn.Module):
        return {"module": False, "kind": type(model).__name__}
    reply = {"module": True, "missing": [n for n in ["src_embed", "tgt_embed", "positions", "encoder", "decoder",
                                                      "head"] if not hasattr(model, n)]}
    if reply["missing"]:
        return reply
    model.eval()
    reply["shapes"] = {n: list(getattr(getattr(model, n), "weight", torch.zeros(0)).shape)
                       for n in ["src_embed", "tgt_embed"]}
    reply["tied"] = getattr(model.head, "weight", None) is model.tgt_embed.weight
    if reply["shapes"] != {"src_embed": list(e_src.shape), "tgt_embed": list(e_tgt.shape)}:
        return reply
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.nn.Transformer(config.d_model, config.n_heads, config.n_layers, config.n_layers, config.d_ff,
                                      dropout=0.0, batch_first=True)
    theirs.load_state_dict(state)
    copy_transformer(model.encoder, model.decoder, theirs)
    with torch.no_grad():
        model.src_embed.weight.copy_(e_src)
        model.tgt_embed.weight.copy_(e_tgt)
        out = model(src, tgt)
    reply["logits"] = out
    reply["inputs"] = [src, tgt]
    return reply


def _translator_judge(ref, cfg, src, tgt):
    d, vs, vt = cfg["d_model"], cfg["src_vocab_size"], cfg["vocab_size"]

    def judge(reply):
        if not reply["module"]:
            return f"Translator(cfg) should be an nn.Module, got a {reply['kind']}"
        if reply["missing"]:
            return f"expected an attribute {reply['missing'][0]} (the checks find the parts by name)"
        shapes = reply["shapes"]
        if shapes["src_embed"] != [vs, d]:
            return (f"src_embed: expected a table of shape (src_vocab_size={vs}, d_model={d}), "
                    f"got {tuple(shapes['src_embed'])}")
        if shapes["tgt_embed"] != [vt, d]:
            return (f"tgt_embed: expected a table of shape (vocab_size={vt}, d_model={d}), "
                    f"got {tuple(shapes['tgt_embed'])}")
        if not reply["tied"]:
            return "head: the output layer must share the target embedding's matrix (tie_to=self.tgt_embed)"
        problem = tensor(reply["logits"], ref, atol=1e-4, rtol=1e-4, dims=["batch", "T_d", "vocab_size"])
        if problem:
            return f"the logits: {problem}"
        if not (torch.equal(reply["inputs"][0], src) and torch.equal(reply["inputs"][1], tgt)):
            return "the input ids were changed in place"
        return None
    return judge


def _sinusoids(n: int, d: int) -> torch.Tensor:
    """The table written out: P[pos, 2i] = sin(pos / 10000^(2i/d)), P[pos, 2i+1] = cos(pos / 10000^(2i/d))."""
    angles = torch.arange(float(n))[:, None] / 10000 ** (torch.arange(0, d, 2) / d)
    table = torch.zeros(n, d)
    table[:, 0::2], table[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return table


def ex3_translator():
    for seed, (d, h, layers, vs, vt) in enumerate([(24, 3, 1, 9, 15), (16, 4, 2, 20, 7)]):
        cfg = dict(vocab_size=vt, src_vocab_size=vs, d_model=d, n_heads=h, d_ff=2 * d, n_layers=layers,
                   dropout=0.0, max_len=20, final_norm=True)
        with warnings.catch_warnings(), torch.random.fork_rng():
            warnings.simplefilter("ignore")
            torch.manual_seed(seed)
            theirs = torch.nn.Transformer(d, h, layers, layers, 2 * d, dropout=0.0, batch_first=True).eval()
        g = torch.Generator().manual_seed(100 + seed)
        src = torch.randint(3, vs, (4, 7), generator=g)
        src[1, 5:], src[3, 2:] = 0, 0
        tgt = torch.randint(3, vt, (4, 6), generator=g)
        tgt[:, 0], tgt[2, 3:] = 1, 0
        with torch.no_grad():
            for p in theirs.parameters():                          # non-trivial norms and biases too
                p.add_(0.1 * torch.randn(p.shape, generator=g))
        e_src = torch.randn(vs, d, generator=g) / math.sqrt(d)
        e_tgt = torch.randn(vt, d, generator=g) / math.sqrt(d)
        table = _sinusoids(20, d)
        xs, xt = e_src[src] * math.sqrt(d) + table[:7], e_tgt[tgt] * math.sqrt(d) + table[:6]
        with warnings.catch_warnings():                          # with autograd on: no fast path, no nested tensors
            warnings.simplefilter("ignore")
            hidden = theirs(xs, xt, tgt_mask=torch.ones(6, 6, dtype=torch.bool).triu(1),
                            src_key_padding_mask=src == 0, memory_key_padding_mask=src == 0,
                            tgt_key_padding_mask=tgt == 0)
        ref = (hidden @ e_tgt.T).detach()
        state = {k: v.clone() for k, v in theirs.state_dict().items()}
        yield Case(f"Translator with d_model {d}, {h} heads, {layers} layer(s), source vocab {vs}, target vocab {vt}: "
                   f"the logits of a padded batch of 4 (T_e 7, T_d 6) with nn.Transformer's weights copied into its "
                   f"encoder and decoder and given embedding matrices, against nn.Transformer itself",
                   Request("a10_translator", {"cfg": cfg, "state": state, "e_src": e_src, "e_tgt": e_tgt,
                                              "src": src, "tgt": tgt, "seed": seed}),
                   _translator_judge(ref, cfg, src, tgt))
