"""Step 3, judging: the verdicts on each reply, and the static reading for what an exercise forbids."""
