"""Models: the registry of aliases and per-family fixes (the sole reader of ``evalsuite/configs/models.yaml``) and the
fingerprint of a checkpoint's weights."""
