"""nbgrader configuration. The course root is the repository root.

Instructor notebooks (with solutions and hidden tests) live in ``solutions/``;
``nbgrader generate_assignment`` writes the student versions to ``exercises/``.
Everything grading produces (gradebook, submissions, feedback) goes under the
git-ignored ``grading/`` folder.
"""

import os
import runpy

c = get_config()  # noqa: F821 - provided by nbgrader

root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.root = root
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"
c.CourseDirectory.submitted_directory = os.path.join("grading", "_nbgrader", "submitted")
c.CourseDirectory.autograded_directory = os.path.join("grading", "_nbgrader", "autograded")
c.CourseDirectory.feedback_directory = os.path.join("grading", "_nbgrader", "feedback")
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(root, "grading", "gradebook.db")
c.CourseDirectory.course_id = "transformer-book"

# Keep the generated student notebooks free of outputs, so regeneration is byte-identical.
c.ClearOutput.enabled = True
# A cell that runs longer than this is stopped and counts as failed: the grader's table of limits says how long.
# nbgrader loads this file by path, without the repository on sys.path, so the table is read by path too.
c.Execute.timeout = runpy.run_path(os.path.join(root, "grader", "limits.py"))["CELL_TIMEOUT_S"]
c.Execute.allow_errors = True
c.Execute.interrupt_on_timeout = True
