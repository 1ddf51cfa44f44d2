"""From a chat model's answer to the program the sandbox runs (instruct prompt style).

An instruct answer is prose around one or more fenced code blocks, sometimes after a ``<think>`` block.
:func:`extract_program` removes reasoning, picks the code block that defines the entry point and
sanitizes it exactly as EvalPlus 0.3.1's ``evalplus/sanitize.py::sanitize`` does, with Python's own ``ast``
instead of tree-sitter (checked against the ``evalplus`` package in ``tests/test_extraction.py`` and on real
answers in ``benchmarks/peer_parity.py``):

* the longest run of lines that parses is kept (an answer cut at max tokens), the first of equal runs;
* of the top-level statements, every import is kept, then the classes, the functions that contain a
  ``return`` and the single-name assignments that the entry point reaches through its identifiers; test
  calls, prints, ``if __name__`` blocks and decorated definitions are dropped;
* a name defined twice keeps its FIRST definition (EvalPlus's rule, not what running the module binds);
* when nothing is kept (no entry point and no imports), the longest parsable run itself.
"""

from __future__ import annotations

import ast
import re

FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:\n[ \t]*```|\Z)", re.DOTALL)
_PYTHON_TAGS = ("", "python", "py", "python3")
MAX_SEARCH_LINES = 400  # longer answers are cut here (768 tokens are far fewer lines); EvalPlus has no cap


def strip_thinking(text: str) -> str:
    """Drop ``<think>...</think>`` blocks; an unclosed ``<think>`` drops the rest, and a lone
    ``</think>`` (the template opened the block) drops everything before it."""
    text = re.sub(r"<think>.*?</think>", "", text, flags=re.DOTALL)
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    if "<think>" in text:
        text = text.split("<think>", 1)[0]
    return text


def code_blocks(text: str) -> list[str]:
    """The contents of fenced blocks tagged python (or untagged), in order; an unclosed last block runs to
    the end of the text."""
    return [match.group(2) for match in FENCE.finditer(text) if match.group(1).lower() in _PYTHON_TAGS]


def _defines(code: str, name: str) -> bool:
    return re.search(rf"^\s*(?:async\s+)?(?:def|class)\s+{re.escape(name)}\b", code, re.MULTILINE) is not None


def select_code(text: str, entry_point: str) -> str:
    """The first fenced block that defines the entry point, else the longest block, else the whole text."""
    blocks = code_blocks(text)
    if not blocks:
        return text
    for block in blocks:
        if _defines(block, entry_point):
            return block
    return max(blocks, key=len)


def longest_parsable(code: str) -> str:
    """EvalPlus's ``code_extract``: the run of at least two lines with the most non-blank lines that parses,
    the first such run when several tie (``lines[0]`` when none parses, as EvalPlus returns). The same
    result as EvalPlus's quadratic search, found with far fewer parses: for each start, the longest end
    that parses is found from the end down, then cut back to its last non-blank line."""
    lines = code.split("\n")[:MAX_SEARCH_LINES]
    weight = [0]
    for line in lines:
        weight.append(weight[-1] + (1 if line.strip() else 0))
    best, best_span = 0, (0, 0)
    for start in range(len(lines)):
        if weight[len(lines)] - weight[start] <= best:
            break  # no run from here on can beat the best: later starts only have fewer lines
        for end in range(len(lines) - 1, start, -1):  # inclusive end, at least two lines (EvalPlus: j > i)
            if weight[end + 1] - weight[start] <= best:
                break
            if _parses("\n".join(lines[start:end + 1])):
                count = weight[end + 1] - weight[start]
                while end > start + 1 and weight[end] - weight[start] == count:
                    end -= 1  # the first end with this count, as EvalPlus's ascending search keeps
                best, best_span = count, (start, end)
                break
    return "\n".join(lines[best_span[0]:best_span[1] + 1])


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
        return True
    except (SyntaxError, MemoryError, ValueError):
        return False


def _has_return(node: ast.AST) -> bool:
    return any(isinstance(child, ast.Return) for child in ast.walk(node))


def _identifiers(node: ast.AST) -> set[str]:
    """Every identifier in ``node``, as tree-sitter's ``identifier`` nodes that EvalPlus's ``get_deps``
    collects: names, attribute names, parameters, keyword arguments, imported and defined names."""
    names: set[str] = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name):
            names.add(child.id)
        elif isinstance(child, ast.Attribute):
            names.add(child.attr)
        elif isinstance(child, ast.arg):
            names.add(child.arg)
        elif isinstance(child, ast.keyword) and child.arg:
            names.add(child.arg)
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(child.name)
        elif isinstance(child, ast.alias):
            names.update(part for part in child.name.split(".") if part != "*")
            if child.asname:
                names.add(child.asname)
        elif isinstance(child, ast.ImportFrom) and child.module:
            names.update(child.module.split("."))
        elif isinstance(child, (ast.Global, ast.Nonlocal)):
            names.update(child.names)
        elif isinstance(child, ast.ExceptHandler) and child.name:
            names.add(child.name)
    return names


def sanitize(code: str, entry_point: str) -> str:
    """EvalPlus 0.3.1's ``evalplus/sanitize.py::sanitize``, with Python's ``ast`` for tree-sitter: of the
    longest parsable run (:func:`longest_parsable`), every import, then the top-level classes, functions
    that contain a ``return`` and single-name assignments the entry point reaches through its identifiers,
    the first definition of a name winning (decorated definitions, expressions, ``if`` blocks are
    dropped); imports first, then definitions in source order, joined by newlines and stripped. When
    that is empty, the longest parsable run itself."""
    extracted = longest_parsable(code)
    kept = _target_code(extracted, entry_point).strip()
    return kept if kept else extracted


def _target_code(code: str, entry_point: str) -> str:
    try:
        module = ast.parse(code)
    except (SyntaxError, MemoryError, ValueError):
        return ""  # tree-sitter finds no definitions in a line that does not parse either
    imports: list[ast.stmt] = []
    definitions: list[tuple[str | None, ast.AST]] = []
    seen: set[str | None] = set()
    for node in module.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append(node)
            continue
        if getattr(node, "decorator_list", None):
            continue  # tree-sitter's decorated_definition: not a class or function node to EvalPlus
        name: str | None
        if isinstance(node, ast.ClassDef):
            name, keep = node.name, True
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name, keep = node.name, _has_return(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            name, keep = (target.id if isinstance(target, ast.Name) else None), True
        else:
            continue
        if keep and name not in seen:
            definitions.append((name, node))
            seen.add(name)
    reached = {entry_point}
    graph = {name: _identifiers(node) for name, node in definitions}
    queue = [entry_point]
    while queue:
        for name in graph.get(queue.pop(0), ()):
            if name not in reached:
                reached.add(name)
                queue.append(name)
    pieces = [ast.get_source_segment(code, node) or "" for node in imports]
    pieces += [_segment(code, node) for name, node in definitions if name in reached]
    return "\n".join(pieces)


def _segment(code: str, node: ast.AST) -> str:
    """The node's source as tree-sitter spans it: a class or function block also holds the comments that
    end its last line or follow it, indented, before the next statement."""
    text = ast.get_source_segment(code, node) or ""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return text
    lines = code.split("\n")
    last = lines[(node.end_lineno or node.lineno) - 1]
    rest = last.encode()[node.end_col_offset:].decode(errors="replace")
    extra = [rest.rstrip()] if rest.strip().startswith("#") else [""]
    for line in lines[node.end_lineno:]:
        if line.strip() and not (line[0].isspace() and line.strip().startswith("#")):
            break
        extra.append(line.rstrip())
    while len(extra) > 1 and not extra[-1].strip():
        extra.pop()
    return text + ("\n".join(extra) if extra != [""] else "")


def extract_program(answer: str, entry_point: str, opened_fence: bool = False) -> str:
    """The whole program to run for a chat answer. ``opened_fence``: the prompt ended inside an opened
    ```python block (our response prefix), so the answer starts with code."""
    text = strip_thinking(answer)
    if opened_fence:
        text = "```python\n" + text
    return sanitize(select_code(text, entry_point), entry_point)
