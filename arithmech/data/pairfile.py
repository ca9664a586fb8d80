"""Template-pair files (``--task pairs.json``, the chapters' ``tasks`` parameter): format, schema, loader.

A pair file is a JSON list (or JSON Lines, one object a line) of template pairs::

    [{"id": "pow", "clean": "{A} to the power of {B} equals", "corrupt": "{A} to the none of {B} equals",
      "op": "exponentiation", "op_word": "power", "answer": "A ** B"}]

=========  ========  =========================================================================
key        required  meaning
=========  ========  =========================================================================
clean      yes       the reference prompt X_r, with ``{A}``, ``{B}``, other known fields
corrupt    yes       the counterfactual X_c (same fields; the operator replaced, e.g. by ``{N}``)
id         no        a name for the pair (default ``pair-<index>``), unique in the file
op         no        ``addition`` (default), ``subtraction``, ``multiplication``, ``division``,
                     ``exponentiation``, or ``custom`` (needs ``answer``)
op_word    no        what ``{OP}`` stands for: plain text, or a pool such as ``{SPAN}``
answer     no        the answer ``C`` as arithmetic in ``A`` and ``B`` (:mod:`arithmech.data.answers`):
                     numbers, ``+ - * / // % **``, parentheses; parsed, never run as code
=========  ========  =========================================================================

:data:`PAIR_FILE_SCHEMA` is that format as a JSON Schema (draft 2020-12); :func:`schema_problems` checks
a value against it (the subset of JSON Schema it uses) and :func:`load_pair_file` adds the checks a
schema cannot express (known fields, a safe and satisfiable answer, unique ids). Every violation is a
``ValueError`` naming the file, the pair's index and the field.
"""

from __future__ import annotations

import json
from pathlib import Path

from arithmech.core.inputs import quoted
from arithmech.data import templates
from arithmech.data.answers import MAX_EXPR_CHARS, OPERATIONS

PAIR_KEYS = ("clean", "corrupt", "id", "op", "op_word", "answer")

# Limits of a pair file, checked while it is read: a pair file lists templates, each a sentence.
MAX_FILE_BYTES = 1 << 20  # 1 MiB: thousands of templates; a larger file is not a template list
MAX_PAIRS = 2000  # templates per file (the paper's Fig. 8 + Fig. 10 have 48)
MAX_TEMPLATE_CHARS = 1000  # characters of one clean or corrupt template (a prompt, not a document)
MAX_DEPTH = 4  # JSON nesting: a list of objects of strings is 3 levels

PAIR_FILE_SCHEMA: dict = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "arithmech template-pair file",
    "description": "A non-empty list of (reference, counterfactual) template pairs.",
    "type": "array",
    "minItems": 1,
    "items": {
        "type": "object",
        "required": ["clean", "corrupt"],
        "additionalProperties": False,
        "properties": {
            "clean": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_TEMPLATE_CHARS,
                "description": "reference prompt X_r with {A}, {B}",
            },
            "corrupt": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_TEMPLATE_CHARS,
                "description": "counterfactual prompt X_c",
            },
            "id": {"type": "string", "minLength": 1, "description": "name of the pair, unique in the file"},
            "op": {"type": "string", "enum": [*OPERATIONS, "custom"], "description": "operation of the answer"},
            "op_word": {"type": "string", "description": "what {OP} stands for: text or a pool like {SPAN}"},
            "answer": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_EXPR_CHARS,
                "description": "answer C as arithmetic in A and B: numbers, + - * / // % **, ()",
            },
        },
    },
}

_TYPES = {"array": list, "object": dict, "string": str}


def schema_problems(  # noqa: C901 (one branch per JSON-schema keyword it reads)
    value, schema: dict = PAIR_FILE_SCHEMA, where: tuple = ()
) -> list[tuple[tuple, str]]:
    """Violations of ``schema`` by ``value`` as ``(path, message)``; ``path`` is a tuple of list
    indices and keys. Understands the keywords :data:`PAIR_FILE_SCHEMA` uses: ``type`` (array,
    object, string), ``minItems``, ``items``, ``required``, ``additionalProperties: false``,
    ``properties``, ``enum``, ``minLength``, ``maxLength``."""
    want = schema.get("type")
    if want and not (isinstance(value, _TYPES[want]) and not isinstance(value, bool)):
        return [(where, f"must be a JSON {want}, not {_json_type(value)}")]
    out = []
    if want == "array":
        if len(value) < schema.get("minItems", 0):
            out.append((where, f"must hold at least {schema['minItems']} item(s); it is empty"))
        for i, item in enumerate(value):
            out += schema_problems(item, schema.get("items", {}), where + (i,))
    elif want == "object":
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                out.append((where + (key,), "is required"))
        for key in value:
            if key in props:
                out += schema_problems(value[key], props[key], where + (key,))
            elif schema.get("additionalProperties", True) is False:
                out.append((where + (key,), f"is not a known key; use {', '.join(props)}"))
    elif want == "string":
        if len(value) < schema.get("minLength", 0):
            out.append((where, "must not be empty"))
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            out.append((where, f"has {len(value)} characters; at most {schema['maxLength']}"))
    if "enum" in schema and value not in schema["enum"]:
        out.append((where, f"{value!r} is not one of {', '.join(map(str, schema['enum']))}"))
    return out


def _json_type(v) -> str:
    return {
        dict: "object",
        list: "array",
        str: "string",
        bool: "boolean",
        type(None): "null",
        int: "number",
        float: "number",
    }.get(type(v), type(v).__name__)


def _where(path: tuple) -> str:
    if not path:
        return "the file"
    head = f"pair {path[0]}"
    return head + (f", field {path[1]!r}" if len(path) > 1 else "")


def read_pair_rows(path: str | Path) -> list:
    """The JSON value of a pair file: a JSON list, or JSON Lines (one object per non-empty line).
    ``FileNotFoundError`` when missing; ``ValueError`` (with the line) when it is not JSON."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"template-pair file {quoted(p)} does not exist")
    if not p.is_file():
        raise ValueError(f"template-pair file {quoted(p)} is not a regular file")
    if p.stat().st_size > MAX_FILE_BYTES:
        raise ValueError(
            f"template-pair file {quoted(p)} has {p.stat().st_size:,} bytes; at most {MAX_FILE_BYTES:,} "
            f"(a list of at most {MAX_PAIRS} templates): split it or give the templates you need"
        )
    if text_depth(p) > MAX_DEPTH:
        raise ValueError(
            f"template-pair file {quoted(p)} nests JSON deeper than {MAX_DEPTH} levels; a pair file is a "
            "list of objects of strings"
        )
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"template-pair file {quoted(p)} is not UTF-8 text ({e.reason} at byte {e.start})") from None
    if text.lstrip().startswith("["):
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"template-pair file {quoted(p)}: not valid JSON at line {e.lineno}: {e.msg}") from None
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise ValueError(
                    f"template-pair file {quoted(p)}: line {n} is not a JSON object ({e.msg}); write a "
                    "JSON list of pairs or one JSON object per line"
                ) from None
    return rows


def text_depth(path: Path) -> int:
    """The deepest nesting of JSON brackets in the file, counted on the bytes (strings skipped) before
    :func:`json.loads` sees it, so a file nested 10,000 levels deep is refused instead of recursing."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in path.read_bytes().decode("utf-8", errors="replace"):
        if in_string:
            escaped, in_string = (not escaped and ch == "\\"), in_string and (escaped or ch != '"')
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def check_pair_rows(rows, source: str = "template-pair file") -> list[templates.Template]:
    """Validate parsed rows (schema, then fields, operation, answer, unique ids) and build templates.
    Raises ``ValueError("<source>: pair <i>, field '<key>': <what is wrong>")`` on the first violation."""
    if isinstance(rows, list) and len(rows) > MAX_PAIRS:
        raise ValueError(f"{source}: {len(rows):,} pairs; at most {MAX_PAIRS} (split the file)")
    problems = schema_problems(rows)
    if problems:
        path, msg = problems[0]
        raise ValueError(f"{source}: {_where(path)} {msg}")
    out, seen = [], dict[str, int]()
    for i, r in enumerate(rows):
        pid = r.get("id", f"pair-{i}")
        if pid in seen:
            raise ValueError(f"{source}: pair {i}, field 'id': {pid!r} is already the id of pair {seen[pid]}")
        seen[pid] = i
        kw = dict(op=r.get("op", "addition"), op_word=r.get("op_word", ""), answer_expr=r.get("answer", ""))
        for field, msg in templates.pair_problems(r["clean"], r["corrupt"], **kw)[:1]:
            raise ValueError(f"{source}: pair {i} ({pid!r}), field {field!r}: {msg}")
        out.append(templates.parse_pair(r["clean"], r["corrupt"], id=pid, **kw))
    return out


def load_pair_file(path: str | Path) -> list[templates.Template]:
    """Read and validate a template-pair file (see the module docstring for the format)."""
    return check_pair_rows(read_pair_rows(path), source=f"template-pair file {Path(path)}")


TASK_NAMES = ("all", "addition", "subtraction", "multiplication", "division", "fig8", "fig10", "exponentiation")


def check_task(task: str) -> str:
    """An identify task: a name of :data:`TASK_NAMES` or a template-pair file that parses and passes its
    schema (:func:`arithmech.data.pairfile.load_pair_file`); checked without torch or a model."""
    if not isinstance(task, str) or not task.strip():
        raise ValueError(f"--task {task!r}: give a task name ({', '.join(TASK_NAMES)}) or a template-pair file")
    if task in TASK_NAMES:
        return task
    if task.endswith((".json", ".jsonl")) or Path(task).is_file():
        load_pair_file(task)
        return task
    raise ValueError(
        f"--task {task!r} is not a task ({', '.join(TASK_NAMES)}) nor an existing template-pair "
        "file (.json / .jsonl): fix the name or the path"
    )
