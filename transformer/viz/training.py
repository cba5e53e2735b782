"""Training pictures: the loss curve and the translation explorer (chapter 10).

The progress bar of :func:`transformer.train.fit` lives in :mod:`transformer.progress`
(training calls it back; it does not import this module); it is re-exported here.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import torch

from ..hooks import cross_attention_weights
from ..progress import TrainingProgress  # noqa: F401 - re-exported as T.viz.TrainingProgress
from ..train import translate
from .attention import weight_bars
from .explorer import Explorer


def plot_losses(losses: Sequence[float], ax=None, title: str = "Training loss", smooth: int = 20):
    """The loss of every step (light) and its running mean over ``smooth`` steps (dark), on a log scale."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FormatStrFormatter

    loss = torch.as_tensor(list(losses), dtype=torch.float64)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    steps = torch.arange(1, len(loss) + 1, dtype=torch.float64)
    ax.plot(steps.numpy(), loss.numpy(), color="tab:blue", alpha=0.3, label="each step")
    if len(loss) >= smooth:
        kernel = torch.full((smooth,), 1.0 / smooth, dtype=torch.float64)
        mean = torch.nn.functional.conv1d(loss[None, None], kernel[None, None])[0, 0]  # (steps - smooth + 1,)
        centre = steps[smooth - 1:] - (smooth - 1) / 2  # each mean is drawn at the middle of its window
        ax.plot(centre.numpy(), mean.numpy(), color="tab:blue", label=f"mean of {smooth} steps")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(FormatStrFormatter("%g"))
    ax.set_xlabel("training step")
    ax.set_ylabel("cross-entropy loss")
    ax.set_title(title)
    ax.legend()
    return ax


class TranslationExplorer(Explorer):
    """Pick a sentence and a target word; see the translation and where that word looked in the source.

    ``translate(sentence) -> (source words, target words, weights (T_d, T_e))``
    does the work: the explorer only shows it. Row ``t`` of ``weights`` is the
    cross-attention of the decoder position that *writes* target word ``t``.
    The "German word" menu lists word numbers, the same for every sentence, so that
    changing the sentence never replaces it (a keyboard user's next Tab reaches it);
    a number past the end of a translation shows its last word, ``<eos>``.
    """

    def __init__(self, sentences: Sequence[str], translate, references: dict[str, str] | None = None):
        import ipywidgets as w

        self.sentences, self.translate, self.references = list(sentences), translate, references or {}
        self._cache: dict[str, tuple] = {}
        longest = max(len(self._result(s)[1]) for s in self.sentences)
        self.sentence = w.Dropdown(options=self.sentences, value=self.sentences[0], description="English")
        self.word = w.Dropdown(options=[(str(i + 1), i) for i in range(longest)], value=0, description="German word")
        self.lay_out([self.sentence, self.word])

    def _result(self, sentence: str):
        if sentence not in self._cache:
            self._cache[sentence] = self.translate(sentence)
        return self._cache[sentence]

    @property
    def words(self) -> list[str]:
        """The words the model wrote for the chosen sentence, ending with ``<eos>``."""
        return list(self._result(self.sentence.value)[1])

    @property
    def position(self) -> int:
        """The chosen German word's position in the translation (the last, ``<eos>``, for a number past its end)."""
        return min(self.word.value, len(self.words) - 1)

    @property
    def translation(self) -> str:
        """The model's translation of the chosen sentence (without ``<eos>``)."""
        return " ".join(t for t in self.words if t != "<eos>")

    @property
    def weights(self) -> torch.Tensor:
        """The chosen target word's cross-attention over the source words, ``(T_e,)``; it sums to 1."""
        _, _, w = self._result(self.sentence.value)
        return w[self.position]

    def _update(self, _change=None) -> None:
        source, target, _ = self._result(self.sentence.value)
        ref = self.references.get(self.sentence.value)
        verdict = "" if ref is None else (" &#10003; correct" if self.translation == ref else
                                          f" &#10007; expected: {html.escape(ref)}")
        words = " ".join(f"<b>{html.escape(t)}</b>" if i == self.position else html.escape(t)
                         for i, t in enumerate(target))
        past = "" if self.word.value < len(target) else f" (the translation has {len(target)} words with &lt;eos&gt;)"
        self.view.value = (f"<p>translation: {words}{verdict}</p>"
                           f"<p>where word {self.position + 1}, <b>{html.escape(target[self.position])}</b>, "
                           f"looks in the source{past}:</p>"
                           + weight_bars(source, self.weights))


def translation_attention(model, corpus, sentence: str, layer: int = -1) -> tuple[list[str], list[str], torch.Tensor]:
    """Translate ``sentence`` greedily and read the decoder's cross-attention, averaged over the heads.

    Returns the source words, the target words the model wrote (ending with
    ``<eos>``), and ``weights (T_d, T_e)``: row ``t`` is where the decoder looked
    while writing target word ``t``, in decoder layer ``layer``.
    """
    german = translate(model, corpus, [sentence])[0]
    src = corpus.encode_src([sentence])  # (1, T_e)
    dec_in = corpus.encode_tgt([german])[:, :-1]  # (1, T_d): <sos> and the words, without <eos>
    weights = cross_attention_weights(model, src, dec_in)[layer, 0].mean(dim=0)  # (T_d, T_e): mean over heads
    return corpus.src.tokenize(sentence), corpus.tgt.tokenize(german) + ["<eos>"], weights
