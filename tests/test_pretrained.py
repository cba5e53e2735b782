"""The tiny trained model of transformer.pretrained: its files, its losses, and what it learned.

Everything is measured again here on the committed weights, through forward hooks
(transformer.hooks), on sentences regenerated from the grammar; nothing is trained
except a few steps for the determinism check. The thresholds are set below what
the model shows (see the report in tiny_lm.json) and well above chance.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from transformer import DecoderOnly, EncoderOnly
from transformer.hooks import attention_weights
from transformer.pretrained import INFO, MASK, WEIGHTS, blank_loss, encode, grammar, info, tiny_lm

LECTURE_TIRED, LECTURE_WIDE = grammar.LECTURE_SENTENCES


@pytest.fixture(scope="module")
def loaded():
    return tiny_lm()


@pytest.fixture(scope="module")
def validation():
    return grammar.split(seed=info()["seed"])[1]


def pronoun_sentences(sentences):
    return [s for s in sentences if grammar.is_pronoun_sentence(s)]


def head_of(name):
    return info()["heads"][name]["layer"], info()["heads"][name]["head"]


def attention(model, ids):
    """``(layers, batch, heads, T, T)`` read by forward hooks."""
    return torch.stack(list(attention_weights(model, ids).values()))


# ---------------------------------------------------------------- files and losses


def test_the_files_are_small_and_load_as_plain_tensors():
    assert WEIGHTS.stat().st_size <= 5 * 2**20 and INFO.stat().st_size <= 2**20
    state = torch.load(WEIGHTS, weights_only=True)
    assert all(v.dtype == torch.float32 for v in state.values())
    meta = info()
    for key in ("config", "vocabulary", "curve", "train_loss", "validation_loss", "seed", "steps", "training_seconds"):
        assert key in meta
    assert meta["curve"][-1]["step"] == meta["steps"] and len(meta["curve"]) >= 5


def test_tiny_lm_is_an_encoder_in_eval_mode_with_learned_positions(loaded):
    model, tokenizer = loaded
    assert isinstance(model, EncoderOnly) and not model.training
    assert model.cfg.positional == "learned" and model.cfg.n_layers == 2
    assert tokenizer.vocab.itos == info()["vocabulary"] and MASK in tokenizer.vocab
    for sentence in grammar.LECTURE_SENTENCES:  # every word known: no <unk>
        assert tokenizer.vocab.unk_id not in tokenizer.encode(sentence)


def test_tiny_lm_rejects_an_unknown_kind():
    with pytest.raises(ValueError, match=r"kind: expected one of \['causal', 'encoder'\], got 'bert'"):
        tiny_lm("bert")
    with pytest.raises(TypeError, match="sentences: expected a list of strings"):
        encode(tiny_lm()[1], LECTURE_TIRED)


def test_the_validation_loss_is_the_recorded_one(loaded, validation):
    """Each word hidden in turn, its cross-entropy: computed here sentence by sentence."""
    model, tokenizer = loaded
    mask_id, total, count = tokenizer.vocab.id_of(MASK), 0.0, 0
    with torch.no_grad():
        for sentence in validation:
            ids = torch.tensor(tokenizer.encode(sentence))  # (T,) <sos> ... <eos>
            rows = ids.repeat(len(ids) - 2, 1)  # (T - 2, T): one row per word
            words = torch.arange(1, len(ids) - 1)
            rows[words - 1, words] = mask_id
            logits = model(rows)[words - 1, words]  # (T - 2, vocab): the blank of each row
            total += F.cross_entropy(logits, ids[words], reduction="sum").item()
            count += len(words)
    assert abs(total / count - info()["validation_loss"]) < 1e-4
    assert abs(blank_loss(model, tokenizer, validation) - info()["validation_loss"]) < 1e-4


def test_the_model_learned_and_the_curve_went_down():
    meta = info()
    losses = [p["validation_loss"] for p in meta["curve"]]
    assert losses[-1] < losses[0] and meta["curve"][-1]["train_batch_loss"] < meta["curve"][0]["train_batch_loss"]
    # far below guessing among the words (uniform: log(vocabulary size)); held-out close to training
    assert meta["validation_loss"] < 0.35 * math.log(len(meta["vocabulary"]))
    assert abs(meta["validation_loss"] - meta["train_loss"]) < 0.1


# ---------------------------------------------------------------- embeddings and positions (chapters 2 and 3)


def embeddings_of(model, tokenizer, words):
    return model.embed.tokens.weight.detach()[[tokenizer.vocab.stoi[w] for w in words]]  # (n, d_model)


def test_each_noun_s_nearest_neighbours_are_of_its_class(loaded):
    """Chance is 7 of the 23 other singular nouns (30 %); the model's 3 nearest by cosine are 98 % of the class."""
    model, tokenizer = loaded
    nouns = [n for nouns in grammar.CLASSES.values() for n in nouns]
    x = F.normalize(embeddings_of(model, tokenizer, nouns), dim=1)
    cos = (x @ x.T).fill_diagonal_(-2.0)  # (24, 24); a word is not its own neighbour
    near = cos.topk(3, dim=1).indices  # (24, 3)
    same = [grammar.NOUN_CLASS[nouns[j]] == grammar.NOUN_CLASS[nouns[i]] for i in range(len(nouns)) for j in near[i]]
    assert sum(same) / len(same) >= 0.9
    adjectives = [a for adjs in grammar.ADJECTIVES.values() for a in adjs]
    y = F.normalize(embeddings_of(model, tokenizer, adjectives), dim=1)
    nearest = (y @ y.T).fill_diagonal_(-2.0).argmax(dim=1)  # (18,)
    assert all(grammar.ADJECTIVE_CLASS[adjectives[j]] == grammar.ADJECTIVE_CLASS[a]
               for a, j in zip(adjectives, nearest.tolist()))


def test_a_2d_pca_of_the_nouns_keeps_the_classes_apart(loaded):
    """In the plane of the two main directions, every singular noun is nearest to its own class's centre."""
    model, tokenizer = loaded
    nouns = [n for nouns in grammar.CLASSES.values() for n in nouns]
    x = embeddings_of(model, tokenizer, nouns)
    x = x - x.mean(dim=0)  # (24, d_model), centred
    plane = x @ torch.linalg.svd(x, full_matrices=False).Vh[:2].T  # (24, 2)
    centres = plane.view(3, 8, 2).mean(dim=1)  # (3, 2): the classes are 8 nouns each, in order
    nearest = torch.cdist(plane, centres).argmin(dim=1)  # (24,)
    assert (nearest == torch.arange(3).repeat_interleave(8)).float().mean() >= 0.9


def test_learned_positions_are_labels_not_distances(loaded):
    """Sinusoidal neighbours are alike (cosine > 0.8 at distance 1); the learned rows of this model are not: no
    distance averages beyond 0.3 in size, each position got its own direction, with no notion of nearness."""
    from transformer.positional import sinusoidal_encoding

    model, _ = loaded
    learned = F.normalize(model.embed.positions.weight.detach(), dim=1)  # (max_len, d_model)
    sinus = F.normalize(sinusoidal_encoding(learned.shape[0], learned.shape[1]), dim=1)
    for distance in range(1, learned.shape[0] - 1):
        assert abs(float((learned @ learned.T).diagonal(distance).mean())) < 0.3
    assert float((sinus @ sinus.T).diagonal(1).mean()) > 0.8
    # and yet they were learned: drawn with norm 0.02 * sqrt(64) = 0.16, the rows in use grew to about 1
    assert float(model.embed.positions.weight.detach()[1:-1].norm(dim=1).min()) > 0.5


# ---------------------------------------------------------------- heads (chapters 5 and 7)


def previous_token_scores(model, ids):
    w = attention(model, ids)  # (layers, batch, heads, T, T)
    on_previous = w.diagonal(offset=-1, dim1=-2, dim2=-1)  # (layers, batch, heads, T - 1)
    real = (ids[:, 1:] != 0)[None, :, None, :]  # (1, batch, 1, T - 1)
    return (on_previous * real).sum(dim=(1, 3)) / real.sum(dim=(1, 3))  # (layers, heads)


def test_no_head_is_a_previous_token_head(loaded, validation):
    """Uniform attention gives about 1/12 to the word before; the best head gives about 0.2, no head half."""
    model, tokenizer = loaded
    scores = previous_token_scores(model, encode(tokenizer, validation))  # (layers, heads)
    assert float(scores.max()) < 0.5
    layer, head = head_of("previous_token")
    assert abs(float(scores[layer, head]) - float(scores.max())) < 0.02  # the recorded one is the best here too


def positions(tokenizer, sentence):
    words = [tokenizer.vocab.itos[i] for i in tokenizer.encode(sentence)]
    referent, other = grammar.referent(sentence)
    pronoun = next(i for i, w in enumerate(words) if w in ("it", "they"))
    return pronoun, words.index(referent), words.index(other), len(words) - 2


def referent_right(model, tokenizer, sentences, layer, head):
    """For each sentence: does the head, from the pronoun, put more weight on the referent than on the other noun?"""
    w = attention(model, encode(tokenizer, sentences))[layer, :, head]  # (n, T, T)
    return [bool(w[k, p, r] > w[k, p, o]) for k, (p, r, o, _) in
            enumerate(positions(tokenizer, s) for s in sentences)]


def test_the_pronoun_head_finds_the_animal_when_tired_and_the_street_when_wide(loaded):
    model, tokenizer = loaded
    layer, head = head_of("pronoun")
    ids = encode(tokenizer, [LECTURE_TIRED, LECTURE_WIDE])  # (2, 15)
    w = attention(model, ids)[layer, :, head]  # (2, 15, 15)
    it, animal, street = 10, 2, 8  # <sos> the animal didn ' t cross the street because it ...
    assert [tokenizer.vocab.itos[i] for i in ids[0, [it, animal, street]]] == ["it", "animal", "street"]
    assert w[0, it, animal] > 2 * w[0, it, street]  # too tired: the animal
    assert w[1, it, street] > 2 * w[1, it, animal]  # too wide: the street


def test_the_pronoun_head_finds_the_referent_in_held_out_sentences(loaded, validation):
    model, tokenizer = loaded
    held_out = pronoun_sentences(validation)
    assert len(held_out) > 300
    right = referent_right(model, tokenizer, held_out, *head_of("pronoun"))
    assert sum(right) / len(right) >= 0.95


def test_the_pronoun_first_reads_the_adjective_at_the_end(loaded, validation):
    """The step before: a head of the first layer takes the pronoun to the last word, its class."""
    model, tokenizer = loaded
    held_out = pronoun_sentences(validation)
    layer, head = head_of("pronoun_to_adjective")
    assert layer < head_of("pronoun")[0]
    w = attention(model, encode(tokenizer, held_out))[layer, :, head]  # (n, T, T)
    onto = [float(w[k, p, last]) for k, (p, _, _, last) in enumerate(positions(tokenizer, s) for s in held_out)]
    assert sum(onto) / len(onto) > 0.5


def twins(sentences):
    """Each held-out pronoun sentence whose nouns agree in number, and its twin ending on the other noun's class."""
    def singular(noun):
        return noun in grammar.CLASSES[grammar.NOUN_CLASS[noun]]

    pairs = []
    for s in sentences:
        referent, other = grammar.referent(s)
        if singular(referent) == singular(other):  # the same "it was" or "they were" fits both twins
            pairs.append((s, s.rsplit(" ", 1)[0] + " " + grammar.ADJECTIVES[grammar.NOUN_CLASS[other]][0]))
    return pairs


def test_the_causal_mask_loses_the_reference(loaded, validation):
    """Twins share every word up to the adjective. Bidirectional, the head is right on both of most twins;
    with the same weights behind a causal mask, "it" cannot see the adjective: its row is the same in both
    twins, so the head can be right on one twin of each pair at most."""
    model, tokenizer = loaded
    causal, _ = tiny_lm("causal")
    assert isinstance(causal, DecoderOnly)
    layer, head = head_of("pronoun")
    pairs = twins(pronoun_sentences(validation))
    assert len(pairs) > 100
    flat = [s for pair in pairs for s in pair]
    both = torch.tensor(referent_right(model, tokenizer, flat, layer, head)).view(-1, 2).all(dim=1)
    assert both.float().mean() >= 0.9
    both_causal = torch.tensor(referent_right(causal, tokenizer, flat, layer, head)).view(-1, 2).all(dim=1)
    assert not both_causal.any()
    w = attention(causal, encode(tokenizer, [LECTURE_TIRED, LECTURE_WIDE]))[layer, :, head]  # (2, 15, 15)
    torch.testing.assert_close(w[0, 10], w[1, 10], atol=1e-6, rtol=0)  # "it": the same row, tired or wide


# ---------------------------------------------------------------- determinism


def test_the_grammar_gives_one_corpus_per_seed():
    assert grammar.generate(300, seed=5) == grammar.generate(300, seed=5)
    assert grammar.generate(300, seed=5) != grammar.generate(300, seed=6)
    train, validation = grammar.split(seed=0)
    assert not set(validation) & set(train) and not set(grammar.LECTURE_SENTENCES) & set(train)
    with pytest.raises(ValueError, match="n: expected an int >= 0, got -1"):
        grammar.generate(-1)
    with pytest.raises(TypeError, match="n: expected an int >= 0, got float 3.0"):
        grammar.generate(3.0)
    with pytest.raises(TypeError, match=r"pronoun_share: expected a probability in \[0, 1\], got str '0.5'"):
        grammar.generate(3, pronoun_share="0.5")


def test_training_is_deterministic():
    from tools.train_tiny_lm import train

    first, _, curve1 = train(steps=3, log_every=3, validation=False)
    second, _, curve2 = train(steps=3, log_every=3, validation=False)
    assert curve1 == curve2
    for (name, a), (_, b) in zip(first.state_dict().items(), second.state_dict().items()):
        assert torch.equal(a, b), name
    assert not torch.equal(first.embed.tokens.weight, train(steps=3, seed=1, validation=False)[0].embed.tokens.weight)


def test_filling_in_the_pronoun_needs_the_adjective_and_the_causal_mask_hides_it(loaded):
    """The animal is one, the streets are many: only the last word says whether "it was" or "they were" fits."""
    model, tokenizer = loaded
    causal, _ = tiny_lm("causal")
    blanks = ["the animal didn't cross the streets because <mask> <mask> too tired",
              "the animal didn't cross the streets because <mask> <mask> too wide"]
    ids = encode(tokenizer, blanks)  # (2, 15); the blanks are at 10 and 11
    with torch.no_grad():
        guess = model(ids)[:, 10:12].argmax(dim=-1)  # (2, 2)
        hidden = causal(ids)[:, 10:12]  # (2, 2, vocab)
    assert [tokenizer.decode(row) for row in guess] == ["it was", "they were"]
    torch.testing.assert_close(hidden[0], hidden[1])  # seen from the left, the two sentences are one


# ---------------------------------------------------------------- how the heads were chosen (chapters 4, 5)


def singular(noun):
    return noun in grammar.CLASSES[grammar.NOUN_CLASS[noun]]


def test_the_recorded_heads_were_chosen_on_training_sentences(loaded):
    """tiny_lm.json's head scores are those of the pronoun sentences among the first 4,000 training sentences
    (tools/train_tiny_lm.py); the lecture's sentences differ from training sentences in the adjective only."""
    from transformer.pretrained.probes import find_heads

    model, tokenizer = loaded
    train = grammar.split(seed=info()["seed"])[0]
    chosen_on = pronoun_sentences(train[:4000])
    assert len(chosen_on) == 1940
    found = find_heads(model, tokenizer, chosen_on, train[:1000])
    recorded = info()["heads"]["pronoun"]
    assert (found["pronoun"]["layer"], found["pronoun"]["head"]) == (recorded["layer"], recorded["head"]) == (1, 3)
    torch.testing.assert_close(torch.tensor(found["pronoun"]["all"]), torch.tensor(recorded["all"]), atol=2e-4, rtol=0)
    stem = LECTURE_TIRED.rsplit(" ", 1)[0] + " "
    assert {s[len(stem):] for s in set(train) if s.startswith(stem)} == {"scared", "angry", "crowded", "muddy"}


def test_both_referent_heads_work_where_only_the_adjective_tells(loaded, validation):
    """When the two nouns differ in number, "it was"/"they were" gives the referent away; on the held-out
    sentences whose nouns agree in number, heads 2 and 3 of layers.1 still prefer the referent to the other noun."""
    model, tokenizer = loaded
    held_out = pronoun_sentences(validation)
    same = [s for s in held_out if len({singular(n) for n in grammar.referent(s)}) == 1]
    assert (len(held_out), len(same)) == (509, 248)
    right = {head: sum(referent_right(model, tokenizer, same, 1, head)) / len(same) for head in (2, 3)}
    assert right[3] == 1.0 and 0.975 < right[2] < 0.99


def test_over_the_whole_row_head_3_often_prefers_sos(loaded, validation):
    """Pairwise head 3 is never wrong, but its largest weight goes to <sos> in about half of the held-out pronoun
    sentences (the referent in the other half); head 2's largest weight is the referent in about 3 of 4."""
    model, tokenizer = loaded
    held_out = pronoun_sentences(validation)
    w = attention(model, encode(tokenizer, held_out))[1]  # (n, heads, T, T): layers.1
    top = {head: [] for head in (2, 3)}
    for k, (p, r, _, _) in enumerate(positions(tokenizer, s) for s in held_out):
        for head in top:
            first = int(w[k, head, p].argmax())  # the key with the largest weight in the pronoun's row
            top[head].append("referent" if first == r else first)
    share = {head: {key: tops.count(key) / len(tops) for key in ("referent", 0)} for head, tops in top.items()}
    assert 0.50 < share[3]["referent"] < 0.55 and 0.45 < share[3][0] < 0.50
    assert abs(share[3]["referent"] + share[3][0] - 1.0) < 1e-9  # nothing else comes first
    assert 0.75 < share[2]["referent"] < 0.78 and share[2][0] == 0.0
