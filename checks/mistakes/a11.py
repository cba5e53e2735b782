"""The known mistakes of the exercises of chapter 11, as data: each a named wrong answer with the exercise's
signature, most the right answer with one step changed. The masking exercise draws random numbers, so its
check names a mistake by the share it gets wrong (see :func:`checks.a11.masking_problems`)."""

from __future__ import annotations

import torch

from ..core import Mistake

NEG_INF = float("-inf")

# ----------------------------------------------------------------------------- exercise 1: top-k


def _top_k(logits, k, largest=True, keep=None, fill=NEG_INF):
    cutoff = logits.topk(k if keep is None else keep, dim=-1, largest=largest).values[..., -1:]  # (..., 1)
    drop = logits < cutoff if largest else logits > cutoff
    return logits.masked_fill(drop, fill)


TOP_K_MISTAKES = [
    Mistake("k + 1 kept", "off by one: this keeps k + 1 logits; keep exactly the k largest.",
            lambda logits, k: _top_k(logits, k, keep=min(k + 1, logits.shape[-1]))),
    Mistake("k - 1 kept", "off by one: this keeps k - 1 logits (a strict > against the k-th largest drops the "
            "k-th itself); keep the k largest.",
            lambda logits, k: logits.masked_fill(logits <= logits.topk(k, dim=-1).values[..., -1:], NEG_INF)),
    Mistake("the smallest", "this keeps the k smallest logits; top-k keeps the k largest.",
            lambda logits, k: _top_k(logits, k, largest=False)),
    Mistake("zeros", "the dropped logits are 0, and e^0 = 1 is not a zero probability: set them to -inf "
            "(float('-inf')).", lambda logits, k: _top_k(logits, k, fill=0.0)),
    Mistake("probabilities", "these are probabilities; return the filtered logits (the softmax comes later).",
            lambda logits, k: _top_k(logits, k).softmax(dim=-1)),
    Mistake("only the k values", "this returns only the k kept values; return a tensor of the logits' shape, with "
            "-inf at every dropped position, so that each number stays at its token's index.",
            lambda logits, k: logits.topk(k, dim=-1).values),
    Mistake("over the first dimension", "the k largest are chosen over the wrong dimension: each row (the last "
            "dimension, the vocabulary) keeps its own k.",
            lambda logits, k: logits.masked_fill(logits < logits.topk(k, dim=0).values[-1:], NEG_INF)),
]


# ----------------------------------------------------------------------------- exercise 2: top-p


class TopP:
    """``top_p_probs(logits, p, temperature)`` done right; each known mistake below changes one step."""

    def scaled(self, logits, temperature):
        return (logits / temperature).softmax(dim=-1)

    def keep_sorted(self, sorted_probs, p):
        """Which of the sorted words to keep: those whose predecessors hold less than p."""
        before = sorted_probs.cumsum(dim=-1) - sorted_probs
        return before < p

    def finish(self, probs, keep):
        kept = probs * keep
        return kept / kept.sum(dim=-1, keepdim=True)

    def __call__(self, logits, p, temperature=1.0):
        probs = self.scaled(logits, temperature)
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        keep = torch.zeros_like(probs, dtype=torch.bool).scatter(-1, order, self.keep_sorted(sorted_probs, p))
        return self.finish(probs, keep)


class _CrossingDropped(TopP):
    def keep_sorted(self, sorted_probs, p):
        keep = sorted_probs.cumsum(dim=-1) < p
        keep[..., 0] = True
        return keep


class _NotRenormalised(TopP):
    def finish(self, probs, keep):
        return probs * keep


class _TemperatureAfterSoftmax(TopP):
    def scaled(self, logits, temperature):
        probs = logits.softmax(dim=-1) / temperature
        return probs / probs.sum(dim=-1, keepdim=True)


class _TemperatureMultiplied(TopP):
    def scaled(self, logits, temperature):
        return (logits * temperature).softmax(dim=-1)


class _TemperatureAfterFilter(TopP):
    def __call__(self, logits, p, temperature=1.0):
        probs = logits.softmax(dim=-1)
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        keep = torch.zeros_like(probs, dtype=torch.bool).scatter(-1, order, self.keep_sorted(sorted_probs, p))
        return self.finish((logits / temperature).softmax(dim=-1), keep)


class _EachWordAgainstP(TopP):
    def keep_sorted(self, sorted_probs, p):
        keep = sorted_probs >= p
        keep[..., 0] = True
        return keep


class _SortedOrder(TopP):
    def __call__(self, logits, p, temperature=1.0):
        sorted_probs = self.scaled(logits, temperature).sort(dim=-1, descending=True).values
        return self.finish(sorted_probs, self.keep_sorted(sorted_probs, p))


TOP_P_MISTAKES = [
    Mistake("temperature after the filter", "the nucleus was chosen before the temperature was applied; apply the "
            "temperature first, then choose the nucleus of the tempered distribution.", _TemperatureAfterFilter()),
    Mistake("crossing word dropped", "the word that crosses p is dropped: keep a word while the words ranked above "
            "it hold less than p, so that the kept words hold at least p.", _CrossingDropped()),
    Mistake("not renormalised", "the kept probabilities do not sum to 1: divide them by their sum.",
            _NotRenormalised()),
    Mistake("temperature after the softmax", "the temperature divides the logits before the softmax; dividing the "
            "probabilities by it and renormalising changes nothing.", _TemperatureAfterSoftmax()),
    Mistake("temperature multiplied", "the logits are multiplied by the temperature; divide them: "
            "softmax(z / temperature).", _TemperatureMultiplied()),
    Mistake("each word against p", "each word's own probability was compared with p; the nucleus adds up the "
            "probabilities of the most likely words until they reach p.", _EachWordAgainstP()),
    Mistake("sorted order", "these probabilities are in sorted order; put each one back at its token's index.",
            _SortedOrder()),
]


# ----------------------------------------------------------------------------- exercise 3: masking


class MaskTokens:
    """``mask_tokens(ids, mask_id, vocab_size, special_ids, p, generator)`` done right (80/10/10)."""

    shares = (0.8, 0.1)  # of the chosen: [MASK], random; the rest unchanged

    def allowed(self, ids, special_ids, mask_id):
        return ~torch.isin(ids, torch.tensor([*special_ids, mask_id]))

    def chosen(self, ids, allowed, p, generator):
        return (torch.rand(ids.shape, generator=generator) < p) & allowed

    def pool(self, vocab_size, special_ids, mask_id):
        """The ids a random replacement is drawn from."""
        return torch.tensor([i for i in range(vocab_size) if i not in (*special_ids, mask_id)])

    def corrupt(self, ids, chosen, mask_id, pool, generator):
        """The inputs: ``where`` says which positions the 80/10/10 rule acts on."""
        roll = torch.rand(ids.shape, generator=generator)
        random_ids = pool[torch.randint(len(pool), ids.shape, generator=generator)]
        masked, randomised = self.shares[0], self.shares[0] + self.shares[1]
        out = torch.where(chosen & (roll < masked), mask_id, ids)
        return torch.where(chosen & (roll >= masked) & (roll < randomised), random_ids, out)

    def labels(self, ids, chosen, mask_id):
        return torch.where(chosen, ids, -100)

    def __call__(self, ids, mask_id, vocab_size, special_ids, p, generator):
        chosen = self.chosen(ids, self.allowed(ids, special_ids, mask_id), p, generator)
        pool = self.pool(vocab_size, special_ids, mask_id)
        return self.corrupt(ids, chosen, mask_id, pool, generator), self.labels(ids, chosen, mask_id)


class _SpecialsChosen(MaskTokens):
    def allowed(self, ids, special_ids, mask_id):
        return torch.ones_like(ids, dtype=torch.bool)


class _RuleOnEveryToken(MaskTokens):
    def __call__(self, ids, mask_id, vocab_size, special_ids, p, generator):
        allowed = self.allowed(ids, special_ids, mask_id)
        chosen = self.chosen(ids, allowed, p, generator)
        pool = self.pool(vocab_size, special_ids, mask_id)
        return self.corrupt(ids, allowed, mask_id, pool, generator), self.labels(ids, chosen, mask_id)


def _with(name: str, **changes) -> MaskTokens:
    """The right rule with one attribute or method replaced."""
    return type(name, (MaskTokens,), changes)()


_LabelsEverywhere = _with("_LabelsEverywhere", labels=lambda self, ids, chosen, mask_id: ids.clone())
_LabelsInverted = _with("_LabelsInverted", labels=lambda self, ids, chosen, mask_id: torch.where(chosen, -100, ids))
_LabelsAreMask = _with("_LabelsAreMask", labels=lambda self, ids, chosen, mask_id: torch.where(chosen, mask_id, -100))
_AllMasked, _NoRandom, _NoUnchanged = (_with(name, shares=shares) for name, shares in [
    ("_AllMasked", (1.0, 0.0)), ("_NoRandom", (0.8, 0.0)), ("_NoUnchanged", (0.8, 0.2))])


class _RandomFromWholeVocab(MaskTokens):
    def pool(self, vocab_size, special_ids, mask_id):
        return torch.arange(vocab_size)


class _FixedShare(MaskTokens):
    def chosen(self, ids, allowed, p, generator):
        return super().chosen(ids, allowed, 0.15, generator)


class _NoGenerator(MaskTokens):
    def __call__(self, ids, mask_id, vocab_size, special_ids, p, generator):
        return super().__call__(ids, mask_id, vocab_size, special_ids, p, None)


MASKING_MISTAKES = [
    Mistake("specials chosen", "special tokens ([PAD], [CLS], [SEP], [MASK]) were chosen: only ordinary tokens may "
            "be chosen.", _SpecialsChosen()),
    Mistake("80/10/10 on every token", "the 80/10/10 rule was applied to every token; it applies only to the tokens "
            "chosen with probability p, and every other token stays as it is.", _RuleOnEveryToken()),
    Mistake("labels everywhere", "labels are set at every position; only the chosen positions count, the others "
            "must hold -100.", _LabelsEverywhere),
    Mistake("labels inverted", "the labels are inverted: -100 at the chosen positions and the tokens elsewhere; it "
            "is the other way round.", _LabelsInverted),
    Mistake("labels are [MASK]", "the labels hold mask_id; they must hold the original token, the one the model "
            "has to predict.", _LabelsAreMask),
    Mistake("all masked", "every chosen token became [MASK]; of the chosen, 10% must become a random token and "
            "10% stay unchanged.", _AllMasked),
    Mistake("no random tokens", "no chosen token was replaced by a random token; 10% of the chosen must be.",
            _NoRandom),
    Mistake("none unchanged", "too few chosen tokens stay unchanged: 10% of the chosen must keep their token (only "
            "80% become [MASK], 10% a random token).", _NoUnchanged),
    Mistake("random specials", "random replacements include special tokens or [MASK]; draw them from the ordinary "
            "tokens only.", _RandomFromWholeVocab()),
    Mistake("p ignored", "the share of chosen tokens does not follow p: choose each ordinary token with "
            "probability p, the argument (not a fixed 0.15).", _FixedShare()),
    Mistake("generator ignored", "two calls with generators seeded alike gave different results: pass generator= "
            "to every torch.rand, torch.randint or torch.multinomial.", _NoGenerator()),
]


# ----------------------------------------------------------------------------- exercise 4: patches


def _patches(images, p, order):
    b, c, h, w = images.shape
    x = images.reshape(b, c, h // p, p, w // p, p)  # (batch, C, rows, p, cols, p)
    return x.permute(*order).reshape(b, (h // p) * (w // p), c * p * p)  # (batch, n_patches, C p p), reordered


PATCHIFY_MISTAKES = [
    Mistake("columns first", "the patches are numbered column by column; number them row by row, from the top "
            "left: (rows, cols) in that order.", lambda images, p: _patches(images, p, (0, 4, 2, 1, 3, 5))),
    Mistake("patch transposed", "inside each patch the pixels are read column by column; read them row by row.",
            lambda images, p: _patches(images, p, (0, 2, 4, 1, 5, 3))),
    Mistake("channel last", "each patch is flattened pixel by pixel with the channels innermost; flatten channel "
            "first, then row, then column (the order of F.unfold and nn.Conv2d).",
            lambda images, p: _patches(images, p, (0, 2, 4, 3, 5, 1))),
    Mistake("reshape without permute", "a plain reshape does not cut patches: it reads the image in memory order. "
            "Split H and W into (rows, p) and (cols, p), then permute the axes before flattening.",
            lambda images, p: images.reshape(images.shape[0], -1, images.shape[1] * p * p)),
]


# ----------------------------------------------------------------------------- exercise 5: the family's mask


def _padding(ids, pad_id):
    return (ids != pad_id)[:, None, :]  # (batch, 1, seq): which keys are real


def _causal(t):
    return torch.ones(t, t, dtype=torch.bool).tril()  # (seq, seq)


def _family(decoder, encoder):
    def mask(family, ids, pad_id):
        t = ids.shape[1]
        out = decoder(ids, pad_id, t) if family == "decoder-only" else encoder(ids, pad_id, t)
        return out.expand(ids.shape[0], t, t)
    return mask


def _right_decoder(ids, pad_id, t):
    return _causal(t) & _padding(ids, pad_id)


def _right_encoder(ids, pad_id, t):
    return _padding(ids, pad_id)


FAMILY_MASK_MISTAKES = [
    Mistake("decoder sees padding", "the decoder-only mask must also hide the padding: causal & padding.",
            _family(lambda ids, pad_id, t: _causal(t)[None], _right_encoder)),
    Mistake("encoder is causal", "an encoder-only model sees every real position, before and after: only the "
            "padding is hidden.", _family(_right_decoder, _right_decoder)),
    Mistake("future, not past", "this is the upper triangle: a query may see the keys up to itself (the past), not "
            "the future.",
            _family(lambda ids, pad_id, t: _causal(t).T & _padding(ids, pad_id), _right_encoder)),
    Mistake("padding on the queries", "the padding mask hides padded queries (rows); it must hide padded keys "
            "(columns): shape (batch, 1, T), broadcast over the rows.",
            _family(lambda ids, pad_id, t: _causal(t) & _padding(ids, pad_id).transpose(1, 2),
                    lambda ids, pad_id, t: _padding(ids, pad_id).transpose(1, 2))),
    Mistake("encoder sees padding", "the encoder-only mask must hide the padding: (ids != pad_id) on the keys.",
            _family(_right_decoder, lambda ids, pad_id, t: torch.ones(1, t, t, dtype=torch.bool))),
    Mistake("families swapped", "the families are swapped: a decoder-only model (GPT) sees only the past, an "
            "encoder-only model (BERT) every position.", _family(_right_encoder, _right_decoder)),
]
