"""A Sphinx directive, ``{bench-results}``, that shows the results of ``make bench``.

It reads ``_build/bench/`` when ``make bench`` has run on this machine, else the
reference run committed in ``benchmarks/results/``, and renders the machine it
ran on, the table of ours-versus-PyTorch timings with their targets, and a
figure of attention time and memory against sequence length (``scaling.json``).
"""

from __future__ import annotations

import json
from pathlib import Path

from docutils import nodes
from sphinx.util.docutils import SphinxDirective


def _cell(content) -> nodes.entry:
    """A table cell from a string, or from a list of (text, style) lines."""
    entry = nodes.entry()
    for text, style in ([(content, "")] if isinstance(content, str) else content):
        para = nodes.paragraph()
        para += nodes.literal(text=text) if style == "code" else nodes.emphasis(text=text) if style == "em" else \
            nodes.Text(text)
        entry += para
    return entry


def _about(reference: str) -> list[tuple[str, str]]:
    """What a row is compared with, without the target the table already shows."""
    text = reference.split("; ", 1)[1] if reference.startswith("target") and "; " in reference else reference
    return [] if text.startswith("target") else [(text, "em")]


def _table(header: list[str], rows: list[list]) -> nodes.table:
    table = nodes.table(classes=["bench-table"])
    group = nodes.tgroup(cols=len(header))
    table += group
    for _ in header:
        group += nodes.colspec(colwidth=1)
    for part, items in ((nodes.thead(), [header]), (nodes.tbody(), rows)):
        for cells in items:
            row = nodes.row()
            for content in cells:
                row += _cell(content)
            part += row
        group += part
    return table


def _figure(scaling: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [r["T"] for r in scaling]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    ax1.loglog(t, [r["ours_s"] for r in scaling], "o-", label="ours (teaching form)")
    ax1.loglog(t, [r["reference_s"] for r in scaling], "s-", label="F.scaled_dot_product_attention")
    ref = scaling[-1]["ours_s"]
    ax1.loglog(t, [ref * (x / t[-1]) ** 2 for x in t], "k:", label=r"$\propto T^2$")
    ax1.set_xlabel("sequence length T")
    ax1.set_ylabel("seconds (forward + backward)")
    ax1.set_title("Attention time")
    ax1.legend()
    ax2.loglog(t, [max(r["ours_peak_mb"], 1e-3) for r in scaling], "o-", label="ours (teaching form)")
    ax2.loglog(t, [max(r["reference_peak_mb"], 1e-3) for r in scaling], "s-", label="F.scaled_dot_product_attention")
    ax2.loglog(t, [8 * x * x * 4 / 2**20 for x in t], "k:", label=r"one $T \times T$ float matrix per head")
    ax2.set_xlabel("sequence length T")
    ax2.set_ylabel("peak memory (MB)")
    ax2.set_title("Attention memory")
    ax2.legend()
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)


class BenchResults(SphinxDirective):
    def run(self):
        root = Path(self.env.srcdir)
        local, committed = root / "_build" / "bench", root / "benchmarks" / "results"
        folder = local if (local / "results.json").exists() else committed
        results = folder / "results.json"
        if not results.exists():
            return [nodes.paragraph(text="No benchmark results in this build: run `make bench`, then `make book`.")]
        self.env.note_dependency(str(results))
        rows = json.loads(results.read_text())
        where = "this machine's latest make bench" if folder == local else "the reference run in benchmarks/results/"
        about = json.loads((folder / "machine.json").read_text()) if (folder / "machine.json").exists() else {}
        if about:
            where += (f": {about['date']}, {about['cpu']}, {about['cores']} core(s), torch {about['torch']} "
                      f"on {about['torch_threads']} thread(s)")
        met = {True: "yes", False: "no", None: "n/a"}
        body = [[[(r["name"], "code"), *_about(r["reference"])], f"{r['ours_s']:.3g}", f"{r['reference_s']:.3g}",
                 f"{r['ratio']:.2f}", r.get("target", "").replace("<=", "≤"), met[r.get("met")],
                 f"{r['ours_peak_mb']:.0f} / {r['reference_peak_mb']:.0f}" if "ours_peak_mb" in r else ""]
                for r in rows]
        out = [nodes.paragraph(text=f"Measured by {where}. Peak memory in MB, ours / reference."),
               _table(["name", "ours (s)", "reference (s)", "ratio", "target", "met", "peak MB"], body)]
        scaling = folder / "scaling.json"
        if scaling.exists():
            image = Path(self.env.app.outdir) / "_images" / "bench_scaling.png"
            _figure(json.loads(scaling.read_text()), image)
            rel = Path("/".join([".."] * len(Path(self.env.docname).parent.parts))) / "_images" / "bench_scaling.png"
            out.append(nodes.raw("", f'<img src="{rel.as_posix()}" alt="attention time and memory against T" '
                                     f'style="max-width:100%">', format="html"))
        return out


def setup(app):
    app.add_directive("bench-results", BenchResults)
    return {"version": "1.0", "parallel_read_safe": True}
