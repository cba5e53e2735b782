"""Eval mode for a ``with`` block: dropout off and no gradients, then the model's own mode again.

Decoding, evaluation during training and the hooks that look inside a model all run a model this way.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn


@contextmanager
def eval_mode(model: nn.Module) -> Iterator[nn.Module]:
    """``with eval_mode(model):`` runs the block in eval mode without gradients; afterwards (even after an
    exception) the model is back in the mode it was in."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        model.train(was_training)
