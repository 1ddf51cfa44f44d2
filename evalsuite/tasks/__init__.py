"""Tasks: the task contract (:mod:`.task`), discovery of task plugins (:mod:`.discovery`), tasks over datasets
(:mod:`.dataset_tasks`, :mod:`.datasets_loader`), YAML task specs (:mod:`.specs`) and the built-in tasks
(:mod:`.builtin`)."""
