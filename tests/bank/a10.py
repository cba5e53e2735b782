"""Wrong answers for assignment 10, the whole Transformer (see ``tests/bank/__init__.py``)."""

ASSIGNMENT = "10_whole_transformer"

# By hand, d = 512, d_ff = 2048: attention 4 d^2 + 4 d = 1,050,624; feed-forward 2 d d_ff + d_ff + d = 2,099,712;
# LayerNorm 2 d = 1,024. Encoder block 3,152,384; decoder block 4,204,032; 37000 x 512 + 6 (both) = 63,082,496.
EXPECTED = {"ex1_answer": [3_152_384, 4_204_032, 63_082_496]}

_COUNTS = """
d, d_ff, v, n = 512, 2048, 37000, 6
att = 4 * d * d + 4 * d
ffn = 2 * d * d_ff + d_ff + d
ln = 2 * d
enc = {enc}
dec = {dec}
counts = {{"encoder_layer": enc, "decoder_layer": dec, "model": {model}}}
"""


def _counts(enc="att + ffn + 2 * ln", dec="2 * att + ffn + 3 * ln", model="v * d + n * (enc + dec)"):
    return _COUNTS.format(enc=enc, dec=dec, model=model)


_STEP = """
import torch.nn.functional as F

def train_step(model, optimizer, src, tgt, pad_id=0, label_smoothing=0.0):
    dec_in, labels = {split}
    logits = model(src, dec_in)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1){loss_args})
{update}
    return {ret}
"""
_UPDATE = "    optimizer.zero_grad()\n    loss.backward()\n    optimizer.step()"


def _step(split="tgt[:, :-1], tgt[:, 1:]", loss_args=", ignore_index=pad_id, label_smoothing=label_smoothing",
          update=_UPDATE, ret="loss.item()"):
    return _STEP.format(split=split, loss_args=loss_args, update=update, ret=ret)


_TRANSLATOR = """
from torch import nn
from transformer import (Decoder, Encoder, OutputHead, SinusoidalPositionalEncoding, TokenEmbedding, causal_mask,
                         padding_mask)

class Translator(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.pad_id = cfg.pad_id
        self.src_embed = TokenEmbedding({src_vocab}, cfg.d_model{scale})
        self.tgt_embed = TokenEmbedding(cfg.vocab_size, cfg.d_model{scale})
        self.{positions_name} = SinusoidalPositionalEncoding(cfg.d_model, cfg.max_len)
        self.encoder = Encoder(cfg)
        self.decoder = Decoder(cfg)
        self.head = OutputHead(cfg.d_model, cfg.vocab_size{tie})

    def forward(self, src, tgt):
        src_mask = padding_mask(src, self.pad_id)
        tgt_mask = {tgt_mask}
        memory = self.encoder({src_in}, {enc_mask})
        h = self.decoder({tgt_in}, memory, tgt_mask, {mem_mask})
        return self.head(h)
"""


def _translator(src_vocab="cfg.src_vocab_size", scale="", positions_name="positions", tie=", tie_to=self.tgt_embed",
                tgt_mask="causal_mask(tgt.shape[1]) & padding_mask(tgt, self.pad_id)",
                src_in="self.positions(self.src_embed(src))", enc_mask="src_mask",
                tgt_in="self.positions(self.tgt_embed(tgt))", mem_mask="src_mask"):
    return _TRANSLATOR.format(src_vocab=src_vocab, scale=scale, positions_name=positions_name, tie=tie,
                              tgt_mask=tgt_mask, src_in=src_in, enc_mask=enc_mask, tgt_in=tgt_in, mem_mask=mem_mask)


WRONG = {
    "ex1_answer": [
        ("no biases", _counts(enc="4 * d * d + 2 * d * d_ff + 2 * ln", dec="8 * d * d + 2 * d * d_ff + 3 * ln"),
         "biases are missing"),
        ("forgot the cross-attention", _counts(dec="att + ffn + 3 * ln"), "two attentions"),
        ("two LayerNorms in the decoder", _counts(dec="2 * att + ffn + 2 * ln"), "three LayerNorms"),
        ("attention counted per head", _counts(enc="8 * att + ffn + 2 * ln", dec="16 * att + ffn + 3 * ln"),
         "heads split"),
        ("embedding counted three times", _counts(model="3 * v * d + n * (enc + dec)"), "counted once"),
        ("embedding counted twice", _counts(model="2 * v * d + n * (enc + dec)"), "counted twice"),
        ("one block per stack", _counts(model="v * d + enc + dec"), "6 layers"),
        ("the paper's rounded number", _counts(model="65_000_000"), "rounded"),
        ("a list, not a dict", "counts = [3152384, 4204032, 63082496]", "expected a dict"),
        ("a key is missing", 'counts = {"encoder": 3152384, "decoder_layer": 4204032, "model": 63082496}', "missing"),
    ],
    "ex2_answer": [
        ("labels not shifted", _step(split="tgt[:, :-1], tgt[:, :-1]"), "shifted by one"),
        ("padding counted", _step(loss_args=", label_smoothing=label_smoothing"), "ignore_index"),
        ("label smoothing ignored", _step(loss_args=", ignore_index=pad_id"), "label_smoothing is ignored"),
        ("no zero_grad", _step(update="    loss.backward()\n    optimizer.step()"), "zero_grad"),
        ("no optimizer step", _step(update="    optimizer.zero_grad()\n    loss.backward()"), "optimizer.step()"),
        ("summed loss", _step(loss_args=", ignore_index=pad_id, label_smoothing=label_smoothing, reduction='sum'"),
         "summed"),
        ("returns the tensor", _step(ret="loss"), "loss.item()"),
        ("full target as decoder input", _step(split="tgt, tgt[:, 1:]"), "raised"),
    ],
    "ex3_answer": [
        ("no causal mask", _translator(tgt_mask="padding_mask(tgt, self.pad_id)"), "causal_mask"),
        ("no target padding mask", _translator(tgt_mask="causal_mask(tgt.shape[1])"), "target's padding mask"),
        ("no source padding anywhere", _translator(enc_mask="None", mem_mask="None"), "ignored everywhere"),
        ("no memory mask", _translator(mem_mask="None"), "memory_mask"),
        ("no positional encoding", _translator(src_in="self.src_embed(src)", tgt_in="self.tgt_embed(tgt)"),
         "no positional encoding"),
        ("positions on the source only", _translator(tgt_in="self.tgt_embed(tgt)"), "target needs them too"),
        ("embeddings not scaled", _translator(scale=", scale=False"), "sqrt(d_model)"),
        ("untied output layer", _translator(tie=""), "tie_to"),
        ("source uses the target vocabulary", _translator(src_vocab="cfg.vocab_size"), "src_vocab_size"),
        ("attribute misnamed", _translator(positions_name="pos").replace("self.positions(", "self.pos("),
         "expected an attribute positions"),
    ],
}

RIGHT = {
    "ex1_answer": [
        ("numpy counts", "import numpy as np\n" + _counts(enc="np.int64(att + ffn + 2 * ln)",
                                                        dec="np.int64(2 * att + ffn + 3 * ln)")),
        ("float counts", _counts(enc="float(att + ffn + 2 * ln)", model="torch.tensor(v * d + n * (enc + dec))")),
    ],
    "ex2_answer": [
        ("padding relabelled on a copy of the labels",
         _step(split="tgt[:, :-1], tgt[:, 1:].clone()\n    labels[labels == pad_id] = -100",
               loss_args=", ignore_index=-100, label_smoothing=label_smoothing")),
        ("the loss as a numpy float", _step(ret="np.float32(loss.item())")
         .replace("import torch.nn.functional as F", "import numpy as np\nimport torch.nn.functional as F")),
    ],
}

# "attribute misnamed" (a part under another name computes the same logits) is scored: the hidden tests call the parts
# by their names (positions, src_embed, tgt_embed, head) and compare what they give with the grader's own; the
# kernel's report of the named parts stays beside it.
REPORTED_ONLY: set = set()
