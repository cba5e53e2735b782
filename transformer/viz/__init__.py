"""Pictures and interactive explorers used by the chapters.

The explorers keep their logic here, in plain Python, so that it is tested:
setting a widget's value recomputes the explorer's state and its view. One
module per topic, in chapter order; everything is re-exported here
(``T.viz.plot_attention``).
"""

from .recurrence import (RecurrenceExplorer, path_length, plot_road_map, sequential_steps,  # chapter 0
                         surviving_fraction)
from .bpe import BPEExplorer, token_boxes  # chapter 1
from .embeddings import EmbeddingScaleExplorer  # chapter 2
from .positional import RopeExplorer, SinusoidalExplorer, value_bars  # chapter 3
from .attention import AttentionExplorer, plot_attention, weight_bars  # chapter 4
from .multihead import HeadCountExplorer, HeadExplorer, plot_heads  # chapter 5
from .norm import NormExplorer, signed_bars  # chapter 6
from .masks import CrossAttentionExplorer, MaskExplorer, mask_grid_html, mask_table, plot_mask  # chapters 7, 8
from .decoding import DecodingExplorer, plot_temperatures  # chapter 9
from .training import TrainingProgress, TranslationExplorer, plot_losses, translation_attention  # chapter 10
from .sampling import SamplingExplorer  # chapter 11
from .online_softmax import OnlineSoftmaxExplorer, online_steps  # chapter 12
from .inside import HeadPatternExplorer, LogitLensExplorer, pattern_svg  # chapter 13
from .open_models import CacheCostExplorer, ExpertLoadExplorer, attention_config  # chapter 14

__all__ = [
    "RecurrenceExplorer", "path_length", "plot_road_map", "sequential_steps", "surviving_fraction",
    "BPEExplorer", "token_boxes",
    "EmbeddingScaleExplorer", "RopeExplorer", "SinusoidalExplorer", "value_bars",
    "AttentionExplorer", "plot_attention", "weight_bars",
    "HeadCountExplorer", "HeadExplorer", "plot_heads",
    "NormExplorer", "signed_bars",
    "CrossAttentionExplorer", "MaskExplorer", "mask_grid_html", "mask_table", "plot_mask",
    "DecodingExplorer", "plot_temperatures",
    "TrainingProgress", "TranslationExplorer", "plot_losses", "translation_attention",
    "SamplingExplorer",
    "OnlineSoftmaxExplorer", "online_steps",
    "HeadPatternExplorer", "LogitLensExplorer", "pattern_svg",
    "CacheCostExplorer", "ExpertLoadExplorer", "attention_config",
]
