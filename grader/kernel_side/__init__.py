"""Code of the grader that runs inside the student's kernel: its reports inform, they never decide."""
