"""The instructor's side: grading a class, each submission in its own sandbox.

Steps, in the order they run (``grader/grade.py``):

1. ``collect``: find, name, read and rebuild the submissions on the release;
2. ``run``: run each in a bubblewrap sandbox (``sandbox``, ``kernel``), then ask its functions
   about the hidden inputs (``hidden``), answers coming back as plain data (``plain``);
3. ``verdicts``: judge the answers against the grader's own references, outside the sandbox;
4. ``gradebook``: write the scores into nbgrader's gradebook;
5. ``feedback``: a page per student, saying what was tested and what was wrong, never how;
6. ``report``: grades.csv, the class picture, and what the sandbox stopped or a human should read.

Run it as ``python -m grader ASSIGNMENT SUBMISSIONS`` or ``make grade``.
"""
