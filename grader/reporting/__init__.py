"""Step 6, reporting: grades.csv and the closing summary, the similarity report, the platform's file."""
