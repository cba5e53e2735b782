"""Authors' tools, run from the repository's root as modules: ``python -m tools.execute_notebooks ...``,
``python -m tools.generate_exercises ...`` (``make notebooks``, ``make exercises``)."""
