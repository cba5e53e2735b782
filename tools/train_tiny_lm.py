"""Train the book's tiny model and store it in transformer/pretrained/ (``make pretrained``).

    python -m tools.train_tiny_lm

An :class:`~transformer.model.EncoderOnly` model learns to fill in hidden
words of the generated English of :mod:`transformer.pretrained.grammar`
(BERT's objective): in each sentence about 15 % of the words are chosen;
of those, 80 % become ``<mask>``, 10 % a random word, 10 % stay; the model
predicts every chosen word. Two more kinds of noise:

- agreement: every word that agrees in number (*it*/*they*, *was*/*were*,
  *is*/*are*) is always asked for, and in half the sentences all of them are
  shown in the other number. A visible *it* may be wrong: to say which
  pronoun belongs there the model must find the referent, the noun of the
  last word's class (and read its number);
- order: in 30 % of the sentences two neighbouring words trade places, and
  the model must put them back.

One thread, one seed: the same run gives the same weights, bit for bit.
Writes ``tiny_lm.pt`` (the float32 state_dict) and ``tiny_lm.json``.
"""

from __future__ import annotations

import json
import random
import time

import torch

from layout.env import one_thread
from transformer.config import TransformerConfig
from transformer.data import maskable
from transformer.model import EncoderOnly
from transformer.pretrained import INFO, MASK, SPECIALS, WEIGHTS, blank_loss, encode, grammar, tokenizer_for
from transformer.pretrained.probes import find_heads
from transformer.pretraining import IGNORE_INDEX, masked_lm_loss, replace_chosen

SEED = 0
STEPS = 2500
BATCH = 64
LR = 3e-3
LOG_EVERY = 250
CURVE_SENTENCES = 200  # the curve's validation loss is on the first 200 validation sentences; the final one on all
MASK_RATE, SWAP_RATE, ORDER_RATE = 0.15, 0.5, 0.3
SWAPS = (("it", "they"), ("was", "were"), ("is", "are"))


# 2 pre-norm layers of width 64 with 4 heads of 16, learned positions, no dropout (deterministic). Token
# embeddings are not scaled by sqrt(d_model) (as in GPT-2 and BERT), so the learned positions, drawn 50 times
# smaller than scaled tokens, do not start drowned. Every field is written out, so tiny_lm.json keeps the model
# even if a default changes later.
ARCHITECTURE = dict(d_model=64, n_heads=4, d_ff=128, n_layers=2, dropout=0.0, norm_first=True, norm="layer",
                    norm_eps=1e-5, final_norm=None, activation="relu", positional="learned", tie_weights=True,
                    scale_embeddings=False, pad_id=0)


def config(vocab_size: int, max_len: int) -> TransformerConfig:
    return TransformerConfig(vocab_size=vocab_size, max_len=max_len, **ARCHITECTURE)


def swap_table(tokenizer) -> torch.Tensor:
    """``table[id]`` is the id of the other number's word (``it`` -> ``they``), or ``id`` itself."""
    stoi = tokenizer.vocab.stoi
    table = torch.arange(len(tokenizer.vocab))  # (vocab,)
    for a, b in SWAPS:
        table[stoi[a]], table[stoi[b]] = stoi[b], stoi[a]
    return table


def swap_neighbours(ids: torch.Tensor, gen: torch.Generator, words: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """In a share ``ORDER_RATE`` of the rows two neighbouring words trade places.

    Returns ``(inputs, swapped)``, both ``(batch, T)``; ``swapped`` is True at the two moved words.
    """
    pair = words[:, :-1] & words[:, 1:]  # (batch, T - 1): positions t whose word and the next are both words
    first = torch.rand(pair.shape, generator=gen).masked_fill(~pair, -1.0).argmax(dim=1)  # (batch,)
    rows = torch.nonzero(torch.rand(len(ids), generator=gen) < ORDER_RATE).flatten()  # (k,)
    inputs, swapped = ids.clone(), torch.zeros_like(words)
    t = first[rows]  # (k,)
    inputs[rows, t], inputs[rows, t + 1] = ids[rows, t + 1], ids[rows, t]
    swapped[rows, t] = swapped[rows, t + 1] = True
    return inputs, swapped


def choose_words(ids: torch.Tensor, gen: torch.Generator, words: torch.Tensor) -> torch.Tensor:
    """A share ``MASK_RATE`` of the words, and at least one a row: ``(batch, T)`` bool."""
    draw = torch.rand(ids.shape, generator=gen).masked_fill(~words, 2.0)  # (batch, T)
    return (draw < MASK_RATE) | (draw == draw.min(dim=1, keepdim=True).values)


def flip_agreement(ids: torch.Tensor, gen: torch.Generator, table: torch.Tensor) -> torch.Tensor:
    """In a share ``SWAP_RATE`` of the rows every agreeing word is shown in the other number (it -> they)."""
    switch = (torch.rand(ids.shape[0], 1, generator=gen) < SWAP_RATE) & (table[ids] != ids)  # (batch, T)
    return torch.where(switch, table[ids], ids)


def corrupt(ids: torch.Tensor, gen: torch.Generator, table: torch.Tensor, mask_id: int,
            n_specials: int = len(SPECIALS)) -> tuple[torch.Tensor, torch.Tensor]:
    """``ids (batch, T)`` -> ``(inputs, labels)``, both ``(batch, T)``; labels ``-100`` where nothing is asked.

    The chosen words follow the package's 80/10/10 rule (``replace_chosen``); the numbers are drawn in
    this order: chosen words, agreement flips, the rule's two draws, neighbour swaps.
    """
    words = maskable(ids, range(n_specials))  # (batch, T): special tokens are never hidden
    chosen = choose_words(ids, gen, words)
    flipped = flip_agreement(ids, gen, table)
    action = torch.rand(ids.shape, generator=gen)  # drawn before the swaps, applied after them
    randoms = torch.randint(n_specials, len(table), ids.shape, generator=gen)  # a random word (never special)
    inputs, swapped = swap_neighbours(flipped, gen, words)
    inputs = replace_chosen(inputs, chosen, action, randoms, mask_id)
    asked = chosen | swapped | (table[ids] != ids)  # the agreeing words are always asked for
    labels = torch.where(asked, ids, torch.full_like(ids, IGNORE_INDEX))
    return inputs, labels


def train(steps: int = STEPS, seed: int = SEED, log_every: int = LOG_EVERY, validation: bool = True):
    """Train from scratch: ``(model, tokenizer, curve)``, ``curve`` a list of dicts, one every ``log_every`` steps."""
    with one_thread():
        torch.manual_seed(seed)
        train_set, val_set = grammar.split(seed=seed)
        tokenizer = tokenizer_for([*SPECIALS, *grammar.words()])
        ids = encode(tokenizer, train_set)  # (n, longest)
        model = EncoderOnly(config(len(tokenizer.vocab), ids.shape[1]))
        gen = torch.Generator().manual_seed(seed)
        table, mask_id = swap_table(tokenizer), tokenizer.vocab.id_of(MASK)
        optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
        schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, LR, total_steps=steps, pct_start=0.1)
        curve, running = [], []
        model.train()
        for step in range(1, steps + 1):
            batch = ids[torch.randint(len(ids), (BATCH,), generator=gen)]  # (BATCH, longest)
            inputs, labels = corrupt(batch, gen, table, mask_id)
            loss = masked_lm_loss(model, (inputs, labels))  # the package's loss: labels -100 where nothing is asked
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
            running.append(loss.item())
            if step % log_every == 0 or step == steps:
                point = {"step": step, "train_batch_loss": sum(running) / len(running)}
                if validation:
                    point["validation_loss"] = blank_loss(model, tokenizer, val_set[:CURVE_SENTENCES])
                curve.append(point)
                running = []
        return model.eval(), tokenizer, curve


def main() -> None:
    start, cpu = time.perf_counter(), time.process_time()
    model, tokenizer, curve = train()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    train_set, val_set = grammar.split(seed=SEED)
    with one_thread():
        heads = find_heads(model, tokenizer, [s for s in train_set[:4000] if grammar.is_pronoun_sentence(s)],
                           train_set[:1000])
        record = {
            "description": "EncoderOnly masked-word model on transformer.pretrained.grammar (make pretrained)",
            "seed": SEED, "steps": STEPS, "batch_size": BATCH, "learning_rate": LR, "threads": 1,
            "objective": {"mask_rate": MASK_RATE, "swap_rate": SWAP_RATE, "swaps": [list(p) for p in SWAPS],
                          "order_rate": ORDER_RATE, "loss": "mean cross-entropy of one word hidden at a time (nats)",
                          "curve_validation_sentences": CURVE_SENTENCES},
            "config": {"vocab_size": model.cfg.vocab_size, "max_len": model.cfg.max_len, **ARCHITECTURE},
            "vocabulary": tokenizer.vocab.itos,
            "corpus": {"train_sentences": len(train_set), "validation_sentences": len(val_set)},
            "curve": curve,
            "train_loss": blank_loss(model, tokenizer, random.Random(SEED).sample(sorted(set(train_set)), 1000)),
            "validation_loss": blank_loss(model, tokenizer, val_set),
            "heads": heads,
            "training_seconds": round(seconds, 1),  # wall clock, on a 2-core machine other work was sharing
            "training_cpu_seconds": round(cpu, 1),
        }
    torch.save(model.state_dict(), WEIGHTS)  # the tied embedding and output matrix are stored once
    INFO.write_text(json.dumps(record, indent=1) + "\n")
    print(f"trained in {seconds:.1f} s ({cpu:.1f} s of CPU): train loss {record['train_loss']:.4f}, "
          f"validation loss {record['validation_loss']:.4f}; heads {heads}")
    print(f"wrote {WEIGHTS} and {INFO}")


if __name__ == "__main__":
    main()
