"""The similarity report (grader/reporting/similarity.py) on chapter 4's real assignment: copies are paired, independent
work and the template are not, the published solution is listed apart, one code handed in by several is one entry,
copies of code nobody else wrote come first, a student's text never becomes markup, and the work grows with the class,
not its square."""

from __future__ import annotations

import collections
import html.parser
import itertools
import re
from pathlib import Path

import nbformat
import pytest

from grader import limits
from grader.collecting.collect import Submission, rebuild
from grader.reporting import similarity, similarity_page

from bank import a04
from conftest import make_submission, notebook_path, solution_sources

A = "04_queries_keys_values"
SOLUTION = notebook_path("solutions", A)

# A student's own work, with helpers of their own.
OWN = {
    "ex1_answer": (
        "def softmax2(a, b):\n"
        "    ea, eb = math.exp(a), math.exp(b)\n"
        "    return ea / (ea + eb), eb / (ea + eb)\n\n"
        "def mix(weights, values):\n"
        "    return [sum(w * v[i] for w, v in zip(weights, values)) for i in range(len(values[0]))]\n\n"
        "weights = softmax2(1 / math.sqrt(2), -1 / math.sqrt(2))\n"
        "flying = mix(weights, [[1, 0], [-1, 1]])\n"),
    "ex2_answer": (
        "def attention(q, k, v, mask=None):\n"
        "    d_k = q.size(-1)\n"
        "    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)\n"
        "    if mask is not None:\n"
        "        scores = scores.masked_fill(mask == 0, -1e9)\n"
        "    weights = torch.softmax(scores, dim=-1)\n"
        "    return torch.matmul(weights, v)\n"),
    "ex3_answer": (
        "def kernel_regression(x, x_train, y_train):\n"
        "    w = torch.softmax(-0.5 * (x.unsqueeze(1) - x_train) ** 2, dim=1)\n"
        "    return torch.mv(w, y_train)\n"),
    "ex4_answer": (
        "def self_attention(x, W_q, W_k, W_v):\n"
        "    queries = torch.matmul(x, W_q)\n"
        "    keys = torch.matmul(x, W_k)\n"
        "    values = torch.matmul(x, W_v)\n"
        "    return attention(queries, keys, values)\n"),
}
# The same code with every name changed and the helper functions swapped.
RENAMED = {
    "ex1_answer": (
        "def combine(ws, vs):\n"
        "    return [sum(a * b[j] for a, b in zip(ws, vs)) for j in range(len(vs[0]))]\n\n"
        "def two_way_softmax(s, t):\n"
        "    es, et = math.exp(s), math.exp(t)\n"
        "    return es / (es + et), et / (es + et)\n\n"
        "p = two_way_softmax(1 / math.sqrt(2), -1 / math.sqrt(2))\n"
        "flying = combine(p, [[1, 0], [-1, 1]])\n"),
    "ex2_answer": (
        "def attention(q, k, v, mask=None):\n"
        "    dim = q.size(-1)\n"
        "    s = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(dim)\n"
        "    if mask is not None:\n"
        "        s = s.masked_fill(mask == 0, -1e9)\n"
        "    p = torch.softmax(s, dim=-1)\n"
        "    return torch.matmul(p, v)\n"),
    "ex3_answer": (
        "def kernel_regression(x, x_train, y_train):\n"
        "    p = torch.softmax(-0.5 * (x.unsqueeze(1) - x_train) ** 2, dim=-1)\n"
        "    return torch.mv(p, y_train)\n"),
    "ex4_answer": (
        "def self_attention(x, W_q, W_k, W_v):\n"
        "    qq = torch.matmul(x, W_q)\n"
        "    kk = torch.matmul(x, W_k)\n"
        "    vv = torch.matmul(x, W_v)\n"
        "    return attention(qq, kk, vv)\n"),
}
# Correct, and written apart from the solution: the sigmoid by hand, the bank's other correct attention.
INDEPENDENT = {
    "ex1_answer": "w1 = 1 / (1 + math.exp(-math.sqrt(2)))\nflying = [2 * w1 - 1, 1 - w1]\n",
    "ex2_answer": a04.RIGHT["ex2_answer"][0][1],
    "ex3_answer": a04.RIGHT["ex3_answer"][1][1],
    "ex4_answer": ("def self_attention(x, W_q, W_k, W_v):\n"
                   "    q, k, v = (x @ w for w in (W_q, W_k, W_v))\n"
                   "    return attention(q, k, v)\n"),
}


@pytest.fixture(scope="module")
def release():
    return nbformat.read(notebook_path("exercises", A), as_version=4)


def student(release, answers: dict[str, str], added: tuple[str, ...] = (), solved: bool = False):
    """A submission with ``answers`` (and ``added`` code cells at its end), rebuilt as the grader does."""
    nb = make_submission(A, answers, solved=solved)
    nb.cells += [nbformat.v4.new_code_cell(src) for src in added]
    return rebuild(Submission("s", Path("s.ipynb")), nb, release)


def test_a_copy_with_renamed_names_and_reordered_functions_is_paired(release, tmp_path):
    pairs = similarity.report(release, {"ana": student(release, OWN), "ben": student(release, RENAMED)},
                              tmp_path / "similarity.html").pairs
    assert [(p.a, p.b) for p in pairs] == [(("ana",), ("ben",))]
    assert pairs[0].score >= 0.9 > similarity.THRESHOLD, pairs
    assert pairs[0].rarity == pytest.approx(pairs[0].score)  # no one else: every shared passage counts fully


def test_independent_answers_are_not_paired(release, tmp_path):
    """The solution and a correct answer written apart from it share the short, obvious lines only."""
    notebooks = {"sol": student(release, {}, solved=True), "ind": student(release, INDEPENDENT)}
    prints = {s: similarity._Print(similarity._fingerprint(similarity.student_code(release, nb))) for s, nb in
              notebooks.items()}
    score = similarity._score(prints["sol"], prints["ind"])
    assert 0 < score < similarity.THRESHOLD - 0.2, score  # some lines are alike, far below the threshold
    assert similarity.report(release, notebooks, tmp_path / "similarity.html").pairs == []


def test_blank_submissions_and_the_template_are_never_paired(release, tmp_path):
    """The template, the signatures and the visible checks are everyone's: left as they are, with comments or
    spaces added, pasted into an added cell, or each answer cell's template written on one line."""
    everything = "\n".join(c.source for c in release.cells if c.cell_type == "code")  # every line the release has
    decorated = {"ex1_answer": "raise   NotImplementedError()  # not yet\n",
                 "ex2_answer": "def attention(q, k, v, mask = None):  # TODO\n    raise NotImplementedError( )\n"}
    one_line = {"ex2_answer": "def attention(q, k, v, mask=None): raise NotImplementedError()\n",
                "ex3_answer": "def kernel_regression(x, x_train, y_train): raise NotImplementedError()\n",
                "ex4_answer": "def self_attention(x, W_q, W_k, W_v): raise NotImplementedError()\n"}
    pasted = student(release, {}, added=(everything,))
    notebooks = {"blank1": student(release, {}), "blank2": student(release, {}), "pasted1": pasted, "pasted2": pasted,
                 "spaced1": student(release, decorated), "spaced2": student(release, decorated),
                 "stub1": student(release, one_line), "stub2": student(release, one_line)}
    out = tmp_path / "similarity.html"
    assert similarity.report(release, notebooks, out, threshold=0.01).pairs == []
    assert all(similarity.student_code(release, notebooks[s]) == "" for s in notebooks if "stub" not in s)
    assert similarity.student_code(release, notebooks["stub1"])  # not line by line the template: the boilerplate
    text = out.read_text(encoding="utf-8")
    assert "No pair of submissions scores 1% or more." in text
    assert ", ".join(sorted(notebooks)) in text  # each named as not compared


def test_the_page_escapes_every_student_text_and_loads_nothing(release, tmp_path):
    markup = "</table><script>alert(1)</script>"
    theirs = {**OWN, "ex3_answer": OWN["ex3_answer"] + f"    # {markup}\n    note = '{markup}'\n"}
    names = {"<b>ana</b>": student(release, theirs), "ben": student(release, {**RENAMED, "ex3_answer":
                                                                               theirs["ex3_answer"]})}
    out = tmp_path / "similarity.html"
    pairs = similarity.report(release, names, out).pairs
    assert len(pairs) == 1
    text = out.read_text(encoding="utf-8")
    assert "<script" not in text.lower() and "<b>" not in text
    assert "&lt;/table&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in text and "&lt;b&gt;ana&lt;/b&gt;" in text
    assert "<mark>" in text  # the matched spans, marked, not coloured only
    assert not any(tag in text.lower() for tag in ("src=", "<link", "url(", "@import", "http:", "https:"))
    _well_formed(text)


def test_hostile_code_never_stops_the_report(release, tmp_path):
    """Code that is not Python, control characters and lone surrogates, more code than the cap, a notebook
    that is not one: each is compared as text or skipped, and the page is valid UTF-8."""
    junk = "def (:::\n\x00\x01\ud800 \x1b[31m" + "é" * 40 + "\n%timeit x\n!rm -rf /\n" + "λ = {[(" * 20
    big = "x = torch.ones(3, 4).sum(dim=1) + y\n" * 2000
    broken = nbformat.v4.new_notebook()
    broken.cells = [{"cell_type": "code", "source": 7, "metadata": []}, 7]  # not what nbformat writes
    flood = student(release, {}, added=("for i in range(3):\n    print(i, 'scratch')\n" * 2000,) * 300)  # 20 MB
    notebooks = {"junk1": student(release, {"ex2_answer": junk}), "junk2": student(release, {}, added=(junk,)),
                 "big": student(release, {"ex3_answer": big}), "flood": flood, "broken": broken, "none": None,
                 "empty": student(release, {})}
    out = tmp_path / "similarity.html"
    pairs = similarity.report(release, notebooks, out).pairs
    assert [(p.a, p.b) for p in pairs] == [(("junk1", "junk2"), ())]  # the same junk, read as text: one code
    assert len(similarity.student_code(release, notebooks["big"])) == limits.MAX_CODE_CHARS
    assert len(similarity.student_code(release, notebooks["flood"])) == limits.MAX_CODE_CHARS
    text = out.read_bytes().decode("utf-8")  # strict: no lone surrogate reached the page
    assert "\x00" not in text and "\x1b" not in text
    assert "broken, empty, none" in text
    _well_formed(text)


def test_entries_come_rarest_first_with_scores_in_0_1(release, tmp_path):
    """ben and cy share their first two answers with no one else; the last two, all three of them have."""
    half = {**OWN, "ex1_answer": INDEPENDENT["ex1_answer"], "ex2_answer": INDEPENDENT["ex2_answer"]}
    notebooks = {"ana": student(release, half), "ben": student(release, OWN), "cy": student(release, RENAMED)}
    pairs = similarity.report(release, notebooks, tmp_path / "similarity.html", threshold=0.0).pairs
    assert len(pairs) == 3 and all(0 <= p.score <= 1 and 0 <= p.rarity <= p.score for p in pairs)
    assert [p.rarity for p in pairs] == sorted((p.rarity for p in pairs), reverse=True)
    assert (pairs[0].a, pairs[0].b) == (("ben",), ("cy",)) and pairs[0].rarity > 2 * pairs[-1].rarity


def test_rarity_counts_each_position_by_its_rarest_shared_fingerprint(release):
    """_rarity's bits and tiers against the definition computed position by position from copydetect's own
    fingerprints: each position of one's code that a fingerprint the two share covers counts 1/(1 + n), n the
    fewest students outside the pair who have a fingerprint covering it; over all the positions any covers."""
    alternatives = {c: [w[1] for w in wrong] for c, wrong in a04.WRONG.items()}
    answers = [dict(zip(alternatives, combo)) for combo in itertools.islice(itertools.product(*alternatives.values()),
                                                                             0, None, 13)][:10] + [OWN, RENAMED]
    boilerplate = sorted(similarity._fingerprint(similarity._release_code(release), window=1).hash_idx)
    fps = [similarity._fingerprint(similarity.student_code(release, student(release, a)), boilerplate=boilerplate)
           for a in answers]
    prints = [similarity._Print(f) for f in fps]
    held = collections.Counter(int(h) for f in fps for h in f.hash_idx)
    for i, j in [(10, 11), (0, 1), (2, 7), (3, 9)]:
        common = {int(h) for h in fps[i].hash_idx} & {int(h) for h in fps[j].hash_idx}
        shares = []
        for f in (fps[i], fps[j]):
            fewest, every = {}, set()
            for h, starts in f.hash_idx.items():
                for s in starts:
                    span = range(int(s), int(s) + f.k)
                    every.update(span)
                    for at in span if int(h) in common else ():
                        fewest[at] = min(fewest.get(at, len(fps)), held[int(h)] - 2)
            shares.append(sum(1 / (1 + n) for n in fewest.values()) / len(every))
        rarity = similarity._rarity((prints[i], prints[j]), (prints[i], prints[j]), held, 2)
        assert rarity == pytest.approx(sum(shares) / 2, abs=1e-12), (i, j)
        assert (rarity > 0.9) == ((i, j) == (10, 11))  # the bank's answers are everyone's; OWN's are two students'


def test_the_fast_score_is_copydetects(release):
    """The score (bits of the covered positions) equals copydetect's compare_files on students from the bank."""
    from copydetect import compare_files

    alternatives = {c: [w[1] for w in wrong][:3] for c, wrong in a04.WRONG.items()}
    answers = [dict(zip(alternatives, combo)) for combo in itertools.islice(itertools.product(*alternatives.values()),
                                                                             0, None, 7)][:12]
    answers += [OWN, RENAMED, INDEPENDENT, solution_sources(A)]
    boilerplate = sorted(similarity._fingerprint(similarity._release_code(release), window=1).hash_idx)
    prints = [similarity._Print(similarity._fingerprint(similarity.student_code(release, student(release, a)),
                                                        boilerplate=boilerplate)) for a in answers]
    compared = 0
    for x, y in itertools.combinations(prints, 2):
        _, (sim_x, sim_y), _ = compare_files(x.fingerprint, y.fingerprint)
        score = similarity._score(x, y)
        assert score == pytest.approx((sim_x + sim_y) / 2, abs=1e-12)
        compared += sim_x > 0
    assert compared > 20  # most pairs share something: the equality is not one of zeros


def test_each_submission_is_fingerprinted_once(release, tmp_path, monkeypatch):
    """The work that grows with the class is one fingerprint per student (plus the release's): 40 students,
    780 pairs, 41 fingerprints. (The time of a class of 300 is measured outside the unit tests.)"""
    calls = []
    fingerprint = similarity._fingerprint
    monkeypatch.setattr(similarity, "_fingerprint", lambda *a, **k: calls.append(1) or fingerprint(*a, **k))
    alternatives = {c: [w[1] for w in wrong] for c, wrong in a04.WRONG.items()}
    notebooks = {f"s{i:02d}": student(release, answers) for i, answers in
                 enumerate(itertools.islice((dict(zip(alternatives, combo)) for combo in
                                             itertools.product(*alternatives.values())), 0, None, 11))}
    notebooks = dict(list(notebooks.items())[:40])
    assert len(notebooks) == 40
    similarity.report(release, notebooks, tmp_path / "similarity.html")
    assert len(calls) == 40 + 1


def renamed_solution() -> dict[str, str]:
    """The published solution's answers with other names, as a student who copied them would hand them in."""
    names = {"s1": "a", "s2": "b", "w1": "p", "w2": "r", "scores": "logits"}
    return {gid: re.sub(rf"\b({'|'.join(names)})\b", lambda m: names[m[0]], source)
            for gid, source in solution_sources(A).items()}


def test_the_published_solution_is_listed_apart_and_pairs_no_one(release, tmp_path):
    """Three students who pasted the solution (one with its names changed) are one row of the solution's table and
    in no entry. cy and dee took exercises 1, 2 and 4 from the solution and exercise 3 from each other (names
    changed): they are named with the solution, and paired on the code outside it."""
    notebooks = {"sol1": student(release, {}, solved=True), "sol2": student(release, {}, solved=True),
                 "sol3": student(release, renamed_solution()),
                 "ana": student(release, OWN), "ben": student(release, RENAMED),
                 "cy": student(release, {"ex3_answer": OWN["ex3_answer"]}, solved=True),
                 "dee": student(release, {"ex3_answer": RENAMED["ex3_answer"]}, solved=True)}
    found = similarity.compare(release, notebooks, solution=SOLUTION)
    (first, score), *others = found.solution
    assert first == ("sol1", "sol2", "sol3") and score == pytest.approx(1.0)
    assert {g for g, _ in others} == {("cy",), ("dee",)}, found.solution
    entries = [(p.a, p.b) for p in found.pairs]
    assert entries[0] == (("ana",), ("ben",)) and (("cy",), ("dee",)) in entries, entries
    assert not any(s.startswith("sol") for p in found.pairs for s in p.a + p.b)
    without = similarity.compare(release, notebooks)  # no solution given: the old pairs, the pasters one code
    assert without.solution is None and (("sol1", "sol2", "sol3"), ()) in [(p.a, p.b) for p in without.pairs]
    out = tmp_path / "similarity.html"
    assert similarity.report(release, notebooks, out, solution=SOLUTION).pairs == found.pairs
    text = out.read_text(encoding="utf-8")
    assert "3 student(s) handed in code that matches the published solution" not in text  # five: cy and dee too
    assert "5 student(s) handed in code that matches the published solution" in text and "sol1, sol2, sol3" in text
    assert "No published solution was compared" in similarity_page.page(without, [], 0.7, 7, similarity.NOISE)
    _well_formed(text)


def test_in_a_class_that_pasted_the_solution_a_renamed_copy_comes_first(release):
    """A class of 120, fingerprinted only (no grading): 56 who pasted the published solution (one renamed it),
    56 whose answers are combinations of the bank's and the solution's, three pairs who each handed in one notebook
    (two from the bank, one their own), and ana and ben, ben's code a renamed copy of ana's. Sorted by score alone,
    every pair listed, ana and ben came at rank 1545 of 2123 (1543 pairs at 100%), 5th even with the 1540 pairs
    of pasters set aside. The goal: among the first three entries, the solution's being apart."""
    sol = solution_sources(A)
    options = {c: [w[1] for w in wrong] + [sol[c]] for c, wrong in a04.WRONG.items()}
    combos = [dict(zip(options, c)) for c in itertools.product(*options.values())][::18][:58]
    assert len(combos) == 58 and sol not in combos
    notebooks = {f"paste{i:02d}": student(release, {}, solved=True) for i in range(55)}
    notebooks["paste55"] = student(release, renamed_solution())
    notebooks |= {f"bank{i:02d}": student(release, answers) for i, answers in enumerate(combos[:56])}
    for name, answers in (("twin1", combos[56]), ("twin2", combos[57]), ("same", INDEPENDENT)):
        notebooks[f"{name}a"] = notebooks[f"{name}b"] = student(release, answers)
    notebooks |= {"ana": student(release, OWN), "ben": student(release, RENAMED)}
    assert len(notebooks) == 120
    found = similarity.compare(release, notebooks, solution=SOLUTION)
    rank = next(i for i, p in enumerate(found.pairs, 1) if p.a + p.b == ("ana", "ben"))
    assert rank <= 3, [(p.a, p.b, p.score, p.rarity) for p in found.pairs[:5]]
    assert found.solution[0] == (tuple(f"paste{i:02d}" for i in range(56)), pytest.approx(1.0))
    assert not any(s.startswith("paste") for p in found.pairs for s in p.a + p.b)
    entries = [(p.a, p.b) for p in found.pairs]
    assert (("samea", "sameb"), ()) in entries[:3]  # one notebook, one entry, near the top: only they wrote it
    assert (("twin1a", "twin1b"), ()) in entries[3:] and (("twin2a", "twin2b"), ()) in entries[3:]  # the bank's
    assert not any(f"{n}a" in side and f"{n}b" not in side for a, b in entries for side in (a, b) for n in ("twin1",
                                                                                                           "twin2"))


class _Checker(html.parser.HTMLParser):
    """Every element that is opened is closed, in order (void elements aside)."""

    VOID = {"meta", "br", "hr", "img", "input", "link"}

    def __init__(self):
        super().__init__()
        self.open, self.seen = [], set()

    def handle_starttag(self, tag, attrs):
        self.seen.add(tag)
        if tag == "html":
            assert dict(attrs).get("lang") == "en"
        if tag == "th":
            assert dict(attrs).get("scope") == "col"
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, (self.open, tag)
        self.open.pop()


def _well_formed(text: str) -> None:
    assert text.startswith("<!DOCTYPE html>")
    checker = _Checker()
    checker.feed(text)
    checker.close()
    assert not checker.open
    assert {"html", "head", "title", "body", "main", "h1"} <= checker.seen
