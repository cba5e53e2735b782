"""Hidden tests of assignment 10, the whole Transformer (references: PyTorch's own layers and nn.Transformer).

Exercise 1 counts the parameters of the paper's base model: its question is fixed by the lectures. The other
inputs (weights, token ids, the label smoothing) come from the run's seed. Scored: the losses and the parameters
after the training steps, the Translator's logits, and its parts called by their names (positions, src_embed,
tgt_embed, head) against the grader's own table and matrices, and the inputs after the calls (the texts say they are
not changed); reported by the kernel (no points) beside them: which named parts it has, table shapes and tying.
"""

from __future__ import annotations

import math
import warnings

import torch
import torch.nn.functional as F

from grader.hidden import Case, Forbid, Request, fill, generator, reads, rng
from grader.hidden.judge import as_number, describe, entry, fields, items, kept, tensor
from transformer import Decoder, Encoder, EncoderDecoder, TransformerConfig
from transformer.interop import copy_transformer

ASSIGNMENT = "10_whole_transformer"
FORBIDS = {  # what each exercise's text forbids (its **Do not use:** line; tests/test_forbidden.py)
    "ex2_train_step": Forbid("train_step", ("transformer.train",)),
}
FIXED = {"ex1_parameter_count"}  # the base model of the paper, counted by hand
PARTS = ["src_embed", "tgt_embed", "positions", "encoder", "decoder", "head"]


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


def ex1_parameter_count(seed: int):
    # PyTorch's own layers are built exactly like the blocks of the base model (meta tensors: sizes, no numbers)
    enc = sum(p.numel() for p in torch.nn.TransformerEncoderLayer(512, 8, 2048, device="meta").parameters())
    dec = sum(p.numel() for p in torch.nn.TransformerDecoderLayer(512, 8, 2048, device="meta").parameters())
    expected = {"encoder_layer": enc, "decoder_layer": dec, "model": 37000 * 512 + 6 * enc + 6 * dec}
    said = {"encoder_layer": "the parameters of one encoder block", "decoder_layer": "the parameters of one decoder "
            "block", "model": "the parameters of the whole base model, the shared embedding counted once"}
    for key, want in expected.items():
        yield Case(f"counts[{key!r}], {said[key]} (exact)", reads("counts"), _count_judge(key, want))


# ----------------------------------------------------------------- exercise 2: a training step


def _step_judge(losses, params):
    def judge(reply):
        got, got_params, _args = fields(reply, "losses", "params", "args")
        for loss, want in zip(items(got, len(losses), "the losses"), losses, strict=True):
            step = f"one of the {len(losses)} steps"  # not which: the reply could choose it
            if isinstance(loss, torch.Tensor):
                return f"{step} returned a tensor; return the loss as a Python float with loss.item()"
            if isinstance(loss, bool) or not isinstance(loss, (int, float)):  # numpy scalars arrive as floats
                return f"{step}: expected the loss as a float, got {describe(loss)}"
            if not math.isfinite(loss):
                return f"{step}: the loss is NaN or infinite"
            if abs(loss - want) >= 1e-5:
                return f"{step}: the loss is wrong (tolerance: atol=1e-5)"
        for name, got_p, want in zip(params, fields(got_params, *params), params.values(), strict=True):
            problem = tensor(got_p, want)
            if problem:
                return f"the parameters after {len(losses)} steps, {name}: {problem}"
        return None
    return judge


def ex2_train_step(seed: int):
    g, r = generator(seed, "ex2_train_step"), rng(seed, "ex2_train_step")
    for smoothing in [0.0, round(r.uniform(0.1, 0.3), 2)]:
        cfg = dict(vocab_size=9, src_vocab_size=10, d_model=8, n_heads=2, d_ff=16, n_layers=1, dropout=0.0,
                   max_len=12)
        with torch.random.fork_rng():
            model = EncoderDecoder(TransformerConfig(**cfg))   # every parameter is drawn from g below
        state = fill(model, g, spread=0.1)
        src = torch.randint(3, 10, (3, 5), generator=g)
        src[0, 3:] = 0
        tgt = torch.randint(3, 9, (3, 6), generator=g)
        tgt[:, 0], tgt[:, -1] = 1, 2
        tgt[1, 3], tgt[1, 4:] = 2, 0
        losses = []
        for _ in range(2):                                 # the steps written out: plain SGD, p <- p - 0.1 grad
            logits = model(src, tgt[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, 9), tgt[:, 1:].reshape(-1), ignore_index=0,
                                   label_smoothing=smoothing)
            model.zero_grad()
            loss.backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.1 * p.grad
            losses.append(loss.item())
        params = {n: p.detach().clone() for n, p in model.named_parameters()}
        what = (f"two train_step calls with SGD (lr 0.1) on a small EncoderDecoder (vocab 9, source vocab 10, "
                f"d_model 8), a padded batch of 3 and label_smoothing={smoothing}")
        request = Request("a10.train_step", {"cfg": cfg, "state": state, "src": src, "tgt": tgt, "pad_id": 0,
                                             "label_smoothing": smoothing, "steps": 2})
        yield Case(f"{what}: the two losses (floats) and the parameters after them", request,
                   _step_judge(losses, params))
        yield Case(f"{what}: src and tgt unchanged", request,
                   kept([src, tgt], ["src", "tgt"], ("losses", "params", "args")))


# ----------------------------------------------------------------- exercise 3: the Translator


def _translator_judge(ref):
    def judge(reply):
        logits, _args = fields(reply, "logits", "args")
        problem = tensor(logits, ref, atol=1e-4, rtol=1e-4, dims=["batch", "T_d", "vocab_size"])
        return f"the logits: {problem}" if problem else None
    return judge


NAMED = ("positions", "src_embed", "tgt_embed", "head")


def _named_judge(refs: dict, dims: dict):
    """Scored: each part, called by its name, gives the grader's own reference."""
    def judge(reply):
        for name, got in zip(NAMED, fields(reply, *NAMED), strict=True):
            problem = tensor(got, refs[name], dims=dims[name])
            if problem:
                return f"self.{name}: {problem}"
        return None
    return judge


def _parts_judge(cfg):
    d, vs, vt = cfg["d_model"], cfg["src_vocab_size"], cfg["vocab_size"]

    def judge(reply):
        module, has, shapes, tied = fields(reply, "module", "has", "shapes", "tied")
        if module is not True:
            return "Translator(cfg) should be an nn.Module"
        missing = [n for n, h in zip(PARTS, items(has, len(PARTS), "the parts"), strict=True) if h is not True]
        if missing:
            return f"expected an attribute {missing[0]} (the checks find the parts by name)"
        src_shape, tgt_shape = items(shapes, 2, "the table shapes")
        if src_shape != [vs, d]:
            return f"src_embed: expected a table of shape (src_vocab_size={vs}, d_model={d})"
        if tgt_shape != [vt, d]:
            return f"tgt_embed: expected a table of shape (vocab_size={vt}, d_model={d})"
        if tied is not True:
            return "head: the output layer must share the target embedding's matrix (tie_to=self.tgt_embed)"
        return None
    return judge


def _sinusoids(n: int, d: int) -> torch.Tensor:
    """The table written out: P[pos, 2i] = sin(pos / 10000^(2i/d)), P[pos, 2i+1] = cos(pos / 10000^(2i/d))."""
    angles = torch.arange(float(n))[:, None] / 10000 ** (torch.arange(0, d, 2) / d)
    table = torch.zeros(n, d)
    table[:, 0::2], table[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return table


def ex3_translator(seed: int):
    g, r = generator(seed, "ex3_translator"), rng(seed, "ex3_translator")
    for d, h, layers, vs, vt in [(24, 3, 1, 9, 15), (16, 4, 2, 20, 7)]:
        cfg = dict(vocab_size=vt, src_vocab_size=vs, d_model=d, n_heads=h, d_ff=2 * d, n_layers=layers,
                   dropout=0.0, max_len=20, final_norm=True)
        with warnings.catch_warnings(), torch.random.fork_rng():   # every parameter is drawn from g below
            warnings.simplefilter("ignore")
            theirs = torch.nn.Transformer(d, h, layers, layers, 2 * d, dropout=0.0, batch_first=True).eval()
            encoder, decoder = Encoder(TransformerConfig(**cfg)), Decoder(TransformerConfig(**cfg))
        fill(theirs, g, spread=0.1)
        copy_transformer(encoder, decoder, theirs)
        src = torch.randint(3, vs, (4, 7), generator=g)
        src[1, 5:], src[3, 2:] = 0, 0
        tgt = torch.randint(3, vt, (4, 6), generator=g)
        tgt[:, 0], tgt[2, 3:] = 1, 0
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
        built = r.randrange(2**31)
        what = f"Translator with d_model {d}, {h} heads, {layers} layer(s), source vocab {vs}, target vocab {vt}"
        request = Request("a10.translator", {"cfg": cfg, "encoder": encoder.state_dict(),
                                             "decoder": decoder.state_dict(), "e_src": e_src, "e_tgt": e_tgt,
                                             "src": src, "tgt": tgt, "seed": built})
        yield Case(f"{what}: the logits of a padded batch of 4 (T_e 7, T_d 6) with nn.Transformer's weights copied "
                   f"into its encoder and decoder and given embedding matrices, against nn.Transformer itself",
                   request, _translator_judge(ref))
        yield Case(f"{what}: the token ids unchanged", request,
                   kept([src, tgt], ["src", "tgt"], ("logits", "args")))
        x, h_in = torch.randn(2, 5, d, generator=g), torch.randn(2, 5, d, generator=g)
        named = Request("a10.translator_named", {"cfg": cfg, "e_src": e_src, "e_tgt": e_tgt, "src": src, "tgt": tgt,
                                                 "x": x, "h": h_in, "seed": built})
        refs = {"positions": x + table[:5], "src_embed": e_src[src] * math.sqrt(d),
                "tgt_embed": e_tgt[tgt] * math.sqrt(d), "head": h_in @ e_tgt.T}
        dims = {"positions": ["batch", "seq", "d_model"], "src_embed": ["batch", "T_e", "d_model"],
                "tgt_embed": ["batch", "T_d", "d_model"], "head": ["batch", "seq", "vocab_size"]}
        yield Case(f"{what}: its parts called by their names, with the given embedding matrices: positions(x) for a "
                   f"random x of shape (2, 5, {d}), src_embed(src), tgt_embed(tgt) (scaled by sqrt(d_model)), and "
                   f"head(h) for a random h, against the sinusoid table and the matrices", named,
                   _named_judge(refs, dims))
        yield Case(f"{what}: the parts {', '.join(PARTS)} by name, the embedding tables' shapes, and the head tied "
                   f"to the target embedding", Request("a10.translator_parts", {"cfg": cfg, "seed": built}),
                   _parts_judge(cfg), scored=False)
