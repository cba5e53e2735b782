"""The repository's pytest set-up: kernels for strict nbval that start reliably (the plugin tests/nbval_kernels.py,
found through pyproject's ``pythonpath``), and the longest files first."""

pytest_plugins = ["nbval_kernels"]

# The files that take longest, measured (seconds per file, from ``--junitxml``, two workers): started first. A worker
# takes a whole file at a time (``--dist loadfile``), in the order collected (``--no-loadscope-reorder``: pytest-xdist
# would otherwise start the files with the most tests first, and these have few), so a long file taken last keeps one
# worker busy while the other has nothing left; taken first, the short ones fill in around it. (The book's build,
# shared by test_accessibility and test_book, is made by the first to ask: test_book comes later, once it is there.)
LONGEST_FIRST = (
    "tests/test_accessibility.py",        # 150 s
    "tests/test_grading_trusted.py",      # 100 s
    "tests/test_grading_hostile.py",      # 90 s
    "tests/test_grading_all.py",          # 71 s
    "notebooks/10_whole_transformer.ipynb",  # 53 s
    "tests/test_grading_cluster.py",      # 41 s
    "tests/test_grading.py",              # 37 s
    "tests/test_course_loop.py",          # 30 s
    "notebooks/11_gpt_bert_vit.ipynb",    # 25 s
    "tests/test_hidden_tests.py",         # 18 s
    "notebooks/14_open_models.ipynb",     # 17 s
    "tests/test_new_exercise.py",         # 16 s
    "tests/test_bench.py",                # 15 s
    "tests/test_forbidden_recorder.py",   # 13 s
    "tests/test_kernel_messages.py",      # 12 s
    "tests/test_forbidden.py",            # 11 s
    "notebooks/13_looking_inside.ipynb",  # 11 s
    "notebooks/12_from_2017_to_today.ipynb",  # 10 s
)


def pytest_collection_modifyitems(config, items):
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))  # stable: the rest as collected
