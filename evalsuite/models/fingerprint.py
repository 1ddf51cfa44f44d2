"""What identifies a checkpoint's bytes: the hub commit, or a content hash of a local checkpoint's files.

A local folder's weights can change in place (a training run's ``ckpt/latest``, a re-downloaded model),
and so can its tokenizer files (an edited ``tokenizer_config.json`` changes the BOS) and its remote code. The
run identity therefore holds a sha256 over the contents of every weight, tokenizer, config and code file, not
their names and sizes. Hashing gigabytes on every rerun would be slow, so each file's digest is cached by
(absolute path, size, mtime in ns) in ``$EVALSUITE_CACHE_DIR/fingerprints.json`` (default
``~/.cache/evalsuite``): a file rewritten in place gets a new mtime and is hashed again.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from evalsuite.jsonl import save_to_cache

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
CHECKPOINT_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                    "tokenizer.model", "special_tokens_map.json", "added_tokens.json", "vocab.json", "merges.txt",
                    "vocab.txt", "chat_template.jinja", "chat_template.json")
CODE_SUFFIXES = (".py", ".tiktoken")  # remote model and tokenizer code, tiktoken vocabularies (Qwen)
TEMPLATE_FOLDER = "additional_chat_templates"  # transformers reads its *.jinja ("default" is the chat template)
# What else transformers reads in place of a listed file: a versioned config or tokenizer that config.json's
# "configuration_files" or tokenizer_config.json's "fast_tokenizer_files" names (config.5.0.0.json), and the
# sharded weights' index, which says which shard each tensor is read from. Edited, each made other completions
# that a rerun resumed as the old files' (the twenty-first session's eighth run-path round).
VERSIONED = re.compile(r"(config|tokenizer)\.[0-9][0-9.]*\.json|.+\.index\.json")
_CHUNK = 1 << 22


def cache_path() -> Path:
    """In evalsuite's one cache folder (``$EVALSUITE_CACHE_DIR``, see :func:`sandbox.cache_root`)."""
    from sandbox import cache_root

    return cache_root() / "fingerprints.json"


def _load_cache(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def file_sha256(path: Path, cache: dict[str, str]) -> str:
    stat = path.stat()
    # The change time and the inode too: other weights copied in with the old size and modification time (rsync -a,
    # cp -p, tar of mtime-normalised files) were taken for the old ones, and a resume mixed the two
    key = f"{path.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}\0{stat.st_ctime_ns}\0{stat.st_dev}:{stat.st_ino}"
    if key not in cache:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
        cache[key] = digest.hexdigest()
    return cache[key]


def checkpoint_files(location: Path) -> list[Path]:
    """The files whose bytes decide a local checkpoint's completions: a GGUF file alone (weights, tokenizer
    and config in one), or a folder's weight, tokenizer and config files, and its Python files: the model code
    that ``--trust-remote-code`` runs (``config.json``'s ``auto_map``). Edited in place, that code makes other
    completions from the same weights, which a resume must not report as the new code's."""
    if location.is_file():
        return [location]
    files = [p for p in location.iterdir()
             if p.is_file() and (p.name.endswith(WEIGHT_SUFFIXES) or p.name in CHECKPOINT_FILES
                                 or p.suffix in CODE_SUFFIXES or VERSIONED.fullmatch(p.name))]
    templates = location / TEMPLATE_FOLDER  # an edited template there resumed the old one's completions
    if templates.is_dir():
        files += [p for p in templates.iterdir() if p.is_file() and p.suffix == ".jinja"]
    return sorted(files)


def local_revision(location: str | Path) -> str:
    """A local checkpoint's stand-in for a commit hash, as a loaded model's identity names it: ``local:`` and the
    content fingerprint of its weight, tokenizer and config files."""
    return f"local:{local_fingerprint(location)}"


def local_fingerprint(location: str | Path) -> str:
    """``sha256:<hex>`` over (name, content sha256) of :func:`checkpoint_files`."""
    location = Path(location)
    path = cache_path()
    cache = _load_cache(path)
    before = len(cache)
    digest = hashlib.sha256()
    whole_file = location.is_file()
    for file in checkpoint_files(location):
        name = file.name if whole_file else file.relative_to(location).as_posix()  # a top-level file: its name
        digest.update(f"{name}\0{file_sha256(file, cache)}\n".encode())
    if len(cache) != before:
        save_to_cache(path, cache, "the checkpoint files' digests")  # unsaved: still right, slower next time
    return f"sha256:{digest.hexdigest()}"
