"""Every cap, budget and timeout of the grader, in one table.

A submission is hostile input (``book/instructors.md``, "What the grader promises"): everything the grader
reads, runs or keeps for it is bounded, and each bound is here, with what it bounds and why it has that size.
The grader's modules read their limits from this module and define none of their own
(``tests/test_limits.py`` scans them); the guide's numbers are checked against it, so a number changed here
fails that test until the guide says the same.

The kernel side (``grader/kernel_side/``, shipped into the sandbox) never imports this module: the trusted
side writes the values it needs into the code it runs in the kernel (``grader/running/run.py``: ``monitor.install``
and ``runner.answer``). The trusted side decodes every reply under its own budget, ``REPLY_BUDGET``, whatever
the kernel was told. ``nbgrader_config.py``, which nbgrader loads as a file, states ``CELL_TIMEOUT_S`` again;
``tests/test_limits.py`` checks the two agree.
"""

from __future__ import annotations

KIB, MIB, GIB = 2**10, 2**20, 2**30

# --- The file: one submission as it is read (grader/collecting/intake.py, grader/collecting/collect.py) ---------------
MAX_FILE_BYTES = 16 * MIB      # a submission file, or one zip member as inflated: a notebook with its images is
                               # far smaller, and the file is held whole in memory while it is parsed
MAX_CELLS = 500                # cells in one notebook: a chapter's exercises have fewer than 100
MAX_CELL_CHARS = 200_000       # characters in one cell's source: an answer is a few thousand
MAX_ID_CHARS = 100             # characters of a student id, the name of its feedback page (file systems allow 255)
MAX_SUBMISSION_ENTRIES = 1000  # files and folders of one student (a place, or the files of one Canvas or Moodle
                               # identity): a notebook and a few data files. Past it, that student's row says so
                               # and the rest of their folders is not listed, so one student cannot make the
                               # listing, or the class, wait on them
MAX_FOLDER_ENTRIES = 100_000   # files and folders outside every student's submission, in one SUBMISSIONS folder
                               # or zip (the instructor's own: a class of thousands with a few files each)

# --- The zip: one download as it is read in memory, never unpacked (grader/collecting/intake.py) ----------------------
MAX_ZIP_MEMBERS = 200_000      # members listed in one zip, checked before anything is read: Python's zipfile
                               # reads a zip's whole listing at once (about 650 bytes a member, 130 MiB here), so
                               # this bounds the grader's memory; a class of hundreds, a few files each, is far below
MAX_ZIP_BYTES = 2 * GIB        # bytes inflated from one zip over every read of its members: a class's notebooks
                               # with their outputs, read more than once
MAX_ZIP_RATIO = 200            # inflated : compressed bytes of one member (a notebook compresses about 10:1) ...
ZIP_RATIO_FROM = MIB           # ... once it is larger than this: a bomb is large; small files compress unevenly
ZIP_CHUNK_BYTES = MIB          # bytes inflated at a time, so that a cap stops a member within one chunk

# --- The reading: the static scan for forbidden calls (grader/judging/reading.py, grader/judging/forbidden.py) --------
MAX_READ_CHARS = 100_000       # characters of one cell parsed: Python's parser takes memory and time per character
MAX_READ_TOTAL = 3 * MAX_READ_CHARS  # characters parsed per notebook, so a flood of cells cannot stall the grading
MAX_BINDINGS = 20              # dotted names one variable may stand for, followed across a notebook's assignments
BINDING_PASSES = 4            # passes over a notebook's imports and assignments: aliases of aliases, four deep

# --- The kernel's messages and output (grader/running/kernel.py, grader/running/wire.py, grader/running/run.py) -------
MAX_OUTPUT_LINES = 1000        # lines of output kept per cell: a page a reader can still scroll
MAX_OUTPUT_CHARS = 200_000     # characters of output kept per cell
MAX_NOTEBOOK_CHARS = 4_000_000  # characters of output kept for one notebook's page, all cells together
MAX_MESSAGE_BYTES = 16 * MIB   # one message from the kernel, all its frames together (ipykernel's are far smaller;
                               # a PNG of a figure is well below)
MAX_FRAMES = 64                # frames of one message (ipykernel's have 7, plus a few binary buffers)
READ_BYTES = 256 * KIB         # read from a kernel's socket at a time: what a wire holds beyond the frame it reads
MAX_DECODED_BYTES = 6 * MAX_OUTPUT_CHARS  # JSON content of one message decoded: larger could never be kept (JSON
                               # spends at most 6 bytes on a character), so it is a flood, left undecoded (JSON such
                               # as "[{}, {}, ...]" takes 18 times its size once decoded)
MAX_HEADER_BYTES = 64 * KIB    # a message's header, parent header or metadata: larger, it is skipped (ipykernel's:
                               # < 1 KiB)
MAX_ERROR_CHARS = 400          # characters of an error's value read from an output before it is cut to one line
ERROR_NAME_CHARS = 100         # characters kept of an error's type name (the kernel chose it)
ERROR_LINE_CHARS = 200         # characters kept of the first line of an error's value

# --- The sandbox: what one kernel may hold (grader/running/sandbox.py, grader/running/cgroups.py) ---------------------
MEMORY_BYTES = 6 * GIB         # address space of each kernel process (rlimit), and as root the memory of all of a
                               # grading process's sandboxes (cgroup): PyTorch maps about 2 GiB before any tensor
PROCESSES = 256                # processes and threads (rlimit; the cgroup's pids.max as root): PyTorch's and
                               # OpenMP's threads, with room to spare
SANDBOX_FILE_BYTES = 64 * MIB  # largest file the kernel may write (rlimit): a reply's array is at most
                               # REPLY_BUDGET["file_bytes"]
CPU_SECONDS = 600              # CPU seconds of one kernel process (rlimit): the wall-clock budget stops it sooner
TMPFS_BYTES = 256 * MIB        # the private /tmp, and HOME: in-memory file systems, so bounded
BOX_BYTES = 256 * MIB          # the box (questions, answers, sockets): a tmpfs of its own when grading as root;
                               # one grade cell's replies are removed before the next cell's are written
SANDBOX_UIDS = 4096            # uids tried for a grading process's sandboxes, from sandbox.FIRST_UID: one per
                               # grading process on the machine
MAX_DEATHS = 3                 # kernel deaths per submission, in cells and in probes together: each costs a start
                               # and a replay of the cells before it
MAX_KERNEL_EVENTS = 50         # what the kernel records of its refusals (grader/kernel_side/monitor.py)

# --- The time (grader/grade.py; kernel.py, wire.py, workers.py, cluster.py, sandbox.py in grader/running/) ------
CELL_TIMEOUT_S = 60            # one cell (nbgrader_config.py's c.Execute.timeout, which must equal it): an
                               # exercise runs in well under a second
BUDGET_TIMEOUTS = 10           # a submission's whole time budget (cells, replays, probes), in cell timeouts
READY_S = 60                   # to start the kernel and import its libraries (PyTorch alone takes seconds)
KERNEL_STARTS = 2              # tries to start a kernel that does not answer (a busy machine), each within READY_S
SEND_S = 10                    # to hand the kernel one request (its ZeroMQ thread reads them even while a cell runs)
INTERRUPT_S = 3                # an interrupted kernel has this long to become idle before it is killed
ENDING_S = 2                   # a kernel that closed its sockets has this long to end, so its exit status is known
POLL_S = 0.25                  # the longest wait for one message, so that a dead kernel is noticed this soon
DEADLINE_GRACE_S = 2 * READY_S + 60  # past its budget and one cell timeout, a submission's worker is stopped: a
                               # kernel started just before the budget ran out (two waits of READY_S at most) and
                               # the grader's own work after it
WORKER_STOP_S = 5              # a worker asked to stop has this long before it is killed
WORKER_KILL_S = 10             # waited for a killed worker (one stuck in the kernel may not go at once)
CLUSTER_CONNECT_S = 10         # for the dask scheduler of --cluster to answer (grader/running/cluster.py): one on the
                               # network answers in well under a second; past it, the run does not start
CLUSTER_WORKERS_S = 60         # for a first worker to join that scheduler (one just started imports PyTorch)
REAP_S = 5.0                   # waited for a sandbox's processes to die, so the next one has its whole process limit

# --- The replies: plain data between the grader and a kernel (grader/running/replies.py, grader/kernel_side/) ------
# What one decode of a reply may cost the trusted side; read_reply always decodes under this, whatever the kernel
# was told. Every reference to an array is counted, so one file named a thousand times costs a thousand times.
REPLY_BUDGET = {
    "items": 10_000,           # values in one reply: the largest probe answers a few hundred
    "depth": 32,               # nesting depth (Python's recursion limit is far away)
    "keys": 1_000,             # keys of one dict
    "array_bytes": 32 * MIB,   # bytes of arrays, as read and as converted to the tensor's dtype: the largest
                               # hidden case's outputs and gradients are a few MiB
    "dims": 8,                 # dimensions of one array
    "elements": 4_000_000,     # numbers in arrays: what a judge may turn into Python numbers
    "file_bytes": 64 * MIB,    # one array file, checked before it is read
    "json_bytes": MIB,         # one reply's JSON tree (arrays are files of their own)
    "header_bytes": 10_000,    # one .npy header (numpy's own default)
}
# What the kernel side may spend decoding the grader's questions (the hidden inputs, written by the grader): only
# larger than the reply's, never smaller; sent with the code that asks (grader/running/run.py).
REQUEST_BUDGET = {**REPLY_BUDGET, "items": 10**6, "keys": 10**5, "array_bytes": GIB, "json_bytes": MIB}
MAX_REPLY_NAMES = 100          # names read from a reply's "ran" list (the grader asks about a few)
MAX_REPLY_ERROR_CHARS = 300    # characters kept of a reply's error, read by the grader
KERNEL_ERROR_CHARS = 200       # characters of an error's message the kernel side writes into a reply
MAX_EVENTS_BYTES = MIB         # the kernel's record of its refusals (out/events.log), as a file
MAX_EVENTS_CHARS = 64_000      # ... of which this much is read ...
MAX_EVENT_LINES = 50           # ... in at most this many lines (the kernel records at most MAX_KERNEL_EVENTS) ...
MAX_EVENT_CHARS = 160          # ... of at most this many characters each

# --- The report: what one submission's rows, page and the run's screen hold --------------------------------
MAX_PROBLEMS = 50              # problems listed for one submission (grades.csv, its page)
MAX_SANDBOX_EVENTS = 20        # sandbox events listed for one submission
MAX_REFUSAL_CHARS = 100_000    # characters of a cell's errors searched for the sandbox's refusals
MAX_PAGE_BYTES = 16 * MIB      # one feedback page; a larger one is made again without the cells' outputs
FAILURES_SHOWN = 10            # failures listed under a grade cell on its page; the rest are counted
TRACEBACK_LINES = 60           # lines of one traceback kept on a page
ATTENTION_SHOWN = 15           # rows that need attention listed at the end of a run; the rest are in grades.csv
LINE_CHARS = 160               # characters of one attention line on the terminal
NAMES_SHOWN = 50               # student ids listed in an error message about --only
CELL_TEXT_CHARS = 2000         # characters of any text the report writes into one CSV cell or line
HEATMAP_MAX_STUDENTS = 40      # the course page draws a heat map of students only up to this class size
# the similarity report (grader/reporting/similarity.py)
MAX_CODE_CHARS = 5_000         # characters of one student's code fingerprinted, answer cells first: about twice
                               # the longest solution of the book (2,612 characters)
MAX_LISTED = 1000              # pairs listed in the report's table (all are returned)
MAX_SHOWN = 50                 # pairs whose code the report shows side by side
