"""The repository's pytest set-up: kernels for strict nbval that start reliably (the plugin tests/nbval_kernels.py,
found through pyproject's ``pythonpath``), and the longest files first."""

pytest_plugins = ["nbval_kernels"]

# The files that take longest, measured with ``--durations`` on two workers: started first. A worker takes a whole
# file at a time (``--dist loadfile``), in the order collected, so a long file taken last keeps one worker busy while
# the other has nothing left; taken first, the short ones fill in around it. (The book's build, shared by
# test_accessibility and test_book, is made by the first to ask: test_book comes later, once it is there.)
LONGEST_FIRST = (
    "tests/test_accessibility.py",
    "tests/test_grading_trusted.py",
    "tests/test_grading_all.py",
    "notebooks/10_whole_transformer.ipynb",
    "tests/test_grading_hostile.py",
    "notebooks/11_gpt_bert_vit.ipynb",
    "tests/test_grading.py",
    "tests/test_course_loop.py",
    "notebooks/13_looking_inside.ipynb",
    "notebooks/12_from_2017_to_today.ipynb",
    "notebooks/14_open_models.ipynb",
)


def pytest_collection_modifyitems(config, items):
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))  # stable: the rest as collected
