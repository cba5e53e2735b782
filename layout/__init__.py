"""The course's layout: where the chapters, solutions and exercises are (``paths``), the map of exercises
(``exercises``), the nbgrader metadata the notebooks carry (``nbmeta``), nbgrader's API on this repository
(``nbgrader_api``) and the environment of the processes the course starts (``env``).

The grader and the authors' tools both read it; it imports neither.
"""
