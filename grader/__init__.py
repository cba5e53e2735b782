"""The instructor's side: grading a class, each submission in its own sandbox.

A folder per step, in the order they run (``grader/grade.py`` calls each in turn):

1. ``collecting/``: find, name, read and rebuild the submissions on the release, and know who is enrolled;
2. ``running/``: run each in a bubblewrap sandbox (``sandbox``, ``kernel``, on this machine or a cluster's workers),
   then ask its functions about the hidden inputs, answers coming back as plain data (``replies``);
3. ``judging/``: judge the answers against the grader's own references, outside the sandbox, and read the code for
   what an exercise forbids;
4. and 5. ``recording/``: write the scores into nbgrader's gradebook, save each result, make a page per student
   saying what was tested and what was wrong, never how;
6. ``reporting/``: grades.csv, the class picture, what the sandbox stopped or a human should read, the similarity
   report, the platform's file.

The two sides of the trust boundary have folders of their own: ``hidden/``, the hidden tests, which only the grader
reads, and ``kernel_side/``, the code that runs inside the student's sandboxed kernel and never imports the grader.
The commands stand at the top: ``python -m grader ASSIGNMENT SUBMISSIONS`` (``make grade``), ``grader.manual``
(points given by hand) and ``grader.course`` (the term at a glance); beside them what every step reads:
``limits``, ``progress``, ``seed`` and ``safe_text``.
"""
