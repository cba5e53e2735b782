"""Step 1, collecting: what a SUBMISSIONS folder or zip holds, whose each file is, and who is enrolled."""
