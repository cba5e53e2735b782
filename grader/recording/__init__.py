"""Steps 4 and 5, recording: the points into nbgrader's gradebook, each result saved, each feedback page made and handed
back."""
