"""Running an evaluation: the pipeline (generate -> execute -> score -> report) for each model and task, the
run directory and its identity, resuming, and data-parallel ranks."""
