"""From a chat model's answer to the program the sandbox runs (instruct prompt style).

An instruct answer is prose around one or more fenced code blocks, sometimes after a ``<think>`` block.
:func:`extract_program` removes reasoning, picks the code block that defines the entry point and
sanitizes it, following EvalPlus's ``evalplus/sanitize.py`` (0.3.1) with Python's own ``ast`` instead of
tree-sitter:

* the longest run of lines that parses is kept when the whole does not (an answer cut at max tokens);
* of the top-level statements, imports are kept, and the functions, classes and assignments the entry
  point reaches through the names it uses; test calls, prints and ``if __name__`` blocks are dropped;
* a name defined twice keeps its last definition (what running the module would bind);
* code that does not define the entry point is kept whole: the sanitizer never empties valid code.
"""

from __future__ import annotations

import ast
import re

FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:\n[ \t]*```|\Z)", re.DOTALL)
_PYTHON_TAGS = ("", "python", "py", "python3")
MAX_SEARCH_LINES = 400  # the longest-parsable-span search is quadratic; answers past this are cut


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
    """``code`` when it parses; otherwise its longest run of lines (most non-blank lines) that does, ``""``
    when none does. Runs start at unindented lines, as top-level code must."""
    try:
        ast.parse(code)
        return code
    except SyntaxError:
        pass
    lines = code.split("\n")[:MAX_SEARCH_LINES]
    weight = [0]
    for line in lines:
        weight.append(weight[-1] + (1 if line.strip() else 0))
    best, best_span = 0, (0, 0)
    for start, line in enumerate(lines):
        if not line.strip() or line[0].isspace():
            continue
        for end in range(len(lines), start, -1):
            if weight[end] - weight[start] <= best:
                break
            try:
                ast.parse("\n".join(lines[start:end]))
            except SyntaxError:
                continue
            best, best_span = weight[end] - weight[start], (start, end)
            break
    return "\n".join(lines[best_span[0]:best_span[1]])


def _defined_name(node: ast.stmt) -> str | None:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    return None


def _used_names(node: ast.AST) -> set[str]:
    names = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name):
            names.add(child.id)
        elif isinstance(child, ast.Attribute):
            names.add(child.attr)
    return names


def sanitize(code: str, entry_point: str) -> str:
    """Imports plus the definitions the entry point reaches (see the module docstring)."""
    code = longest_parsable(code)
    if not code.strip():
        return code
    module = ast.parse(code)
    lines = code.split("\n")
    imports: list[ast.stmt] = []
    definitions: dict[str, ast.stmt] = {}
    for node in module.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append(node)
        elif (name := _defined_name(node)) is not None:
            definitions[name] = node  # the last definition wins, as when the module runs
    if entry_point not in definitions:
        return code  # nothing to anchor on: never empty valid code
    reached, queue = {entry_point}, [entry_point]
    while queue:
        for name in _used_names(definitions[queue.pop()]):
            if name in definitions and name not in reached:
                reached.add(name)
                queue.append(name)
    kept = imports + [node for name, node in definitions.items() if name in reached]
    kept.sort(key=lambda node: node.lineno)
    pieces = []
    for node in kept:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        pieces.append("\n".join(lines[first - 1:node.end_lineno]))
    return "\n".join(pieces) + "\n"


def extract_program(answer: str, entry_point: str, opened_fence: bool = False) -> str:
    """The whole program to run for a chat answer. ``opened_fence``: the prompt ended inside an opened
    ```python block (our response prefix), so the answer starts with code."""
    text = strip_thinking(answer)
    if opened_fence:
        text = "```python\n" + text
    return sanitize(select_code(text, entry_point), entry_point)
