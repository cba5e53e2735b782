"""Pictures and interactive explorers used by the chapters.

The explorers keep their logic here, in plain Python, so that it is tested:
setting a widget's value recomputes the explorer's state and its view. One
module per topic; everything is re-exported here (``T.viz.plot_attention``).
"""

from .attention import AttentionExplorer, plot_attention, weight_bars

__all__ = ["AttentionExplorer", "plot_attention", "weight_bars"]
