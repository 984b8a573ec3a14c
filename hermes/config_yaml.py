"""Editing config.yaml in place: one key set or removed, the rest of the file as the
user wrote it (comments, key order, indentation, flow or block lists).

PyYAML reads config.yaml everywhere else; only an edit goes through ``ruamel.yaml``'s
round-trip mode, which keeps what a plain load and dump would throw away. A comment on
the lines after a section's last key (the heading of the next section) is, to ruamel,
part of that last key; a key added to the section goes before it, so the comment
stays with the section it introduces.
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark
from ruamel.yaml.scalarstring import ScalarString, SingleQuotedScalarString
from ruamel.yaml.tokens import CommentToken

from hermes.errors import ConfigError


def set_key(path: Path, key: str, value: Any) -> None:
    """Write ``value`` at the dotted ``key`` of the file (created, mode 0600, if absent)."""
    text = _read(path)
    yaml = _round_trip(text)
    tree = yaml.load(text) if text.strip() else None
    if not isinstance(tree, CommentedMap):
        tree = CommentedMap()
    if isinstance(tree.get("model"), str):  # `model: NAME`, Hermes Agent's short form
        tree["model"] = CommentedMap({"default": tree["model"]})
    node: Any = tree
    parts = key.split(".")
    while len(parts) > 1 and isinstance(_item(node, parts[0]), CommentedMap | CommentedSeq):
        node, parts = _item(node, parts[0]), parts[1:]
    head, rest = parts[0], parts[1:]
    value = _read_back_as_written(value)
    for part in reversed(rest):  # the sections still missing, built whole before adding
        value = CommentedMap({part: value})
    if isinstance(node, CommentedSeq):  # `custom_providers.0.api_key`: an item there
        if _index(node, head) is None:
            raise ConfigError(
                f"Cannot set '{key}': {head!r} is not an index of that list (it has "
                f"{len(node)} items, from 0)."
            )
        node[int(head)] = _updated(node[int(head)], value)
    elif head in node:
        node[head] = _updated(node[head], value)
    else:
        _add(node, head, value)
    _write(path, yaml, tree)


def unset_key(path: Path, key: str) -> bool:
    """Remove the dotted ``key`` from the file (and sections it leaves empty); False when
    the file does not set it."""
    text = _read(path)
    yaml = _round_trip(text)
    tree = yaml.load(text) if text.strip() else None
    if not isinstance(tree, CommentedMap):
        return False
    if key == "model.default" and isinstance(tree.get("model"), str):
        key = "model"  # `model: NAME` is model.default
    trail: list[Any] = [tree]
    *parents, leaf = key.split(".")
    for part in parents:
        child = _item(trail[-1], part)
        if not isinstance(child, CommentedMap | CommentedSeq):
            return False
        trail.append(child)
    if isinstance(trail[-1], CommentedSeq):  # an item of a list, by its index
        at = _index(trail[-1], leaf)
        if at is None:
            return False
        del trail[-1][at]
    elif leaf in trail[-1]:
        _remove(trail[-1], leaf)
    else:
        return False
    # A section the removal left empty goes too (`plugins: {}` would say something); a
    # list the user wrote stays, even empty.
    for parent, part in zip(reversed(trail[:-1]), reversed(parents), strict=True):
        if (
            not isinstance(parent, CommentedMap)
            or parent[part]
            or isinstance(parent[part], CommentedSeq)
        ):
            break
        _remove(parent, part)
    _write(path, yaml, tree)
    return True


def _read_back_as_written(value: Any) -> Any:
    """``value`` with each text that a YAML 1.1 reader (PyYAML, which reads config.yaml
    here and in Hermes Agent) would read as something else quoted: ruamel writes YAML
    1.2, where ``off``, ``yes`` or ``1_000`` are plain text and need no quotes."""
    import yaml

    if isinstance(value, ScalarString):
        return value  # quoted as the file had it
    if isinstance(value, str):
        try:
            same = yaml.safe_load(value) == value
        except yaml.YAMLError:
            same = False
        return value if same else SingleQuotedScalarString(value)
    if isinstance(value, list) and not isinstance(value, CommentedSeq):
        return [_read_back_as_written(item) for item in value]
    if isinstance(value, dict) and not isinstance(value, CommentedMap):
        return {key: _read_back_as_written(item) for key, item in value.items()}
    return value


def _index(sequence: CommentedSeq, part: str) -> int | None:
    """``part`` as an index of ``sequence`` (``0``, ``1``...), or None when it is none."""
    return int(part) if part.isdigit() and int(part) < len(sequence) else None


def _item(container: Any, part: str) -> Any:
    """``container``'s entry named by one part of a dotted key (a list's by its index)."""
    if isinstance(container, CommentedSeq):
        at = _index(container, part)
        return None if at is None else container[at]
    return container.get(part) if isinstance(container, CommentedMap) else None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""


def _round_trip(text: str) -> YAML:
    yaml = YAML()  # round-trip: keeps comments, order and flow style
    yaml.preserve_quotes = True
    yaml.width = 4096  # never fold a long value onto a second line
    mapping, sequence, offset = _indents(text)
    yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    return yaml


def _indents(text: str) -> tuple[int, int, int]:
    """The file's own indentation: of a nested key, and of a block list's dash and item
    (``key:\\n  - a`` or ``key:\\n- a``), so an edit does not re-indent the file."""
    mapping, sequence, offset = 2, 4, 2  # what `config set` writes in a new file
    found_mapping = found_sequence = False
    previous = ""
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        depth = len(line) - len(line.lstrip(" "))
        parent = len(previous) - len(previous.lstrip(" "))
        opens = previous.rstrip().endswith(":")
        dash = re.match(r"( *)- +", line)
        if opens and dash and not found_sequence:
            offset = depth - parent
            sequence = len(dash.group()) - parent
            found_sequence = True
        elif opens and not dash and depth > parent and not found_mapping:
            mapping = depth - parent
            found_mapping = True
        previous = line
    return mapping, max(sequence, offset + 2), offset


def _updated(old: Any, new: Any) -> Any:
    """``new``, in ``old``'s list style: a list edited in place keeps flow or block
    style and the comments of the items it keeps."""
    if not (isinstance(old, CommentedSeq) and isinstance(new, list)):
        return new
    for index in reversed(range(len(old))):
        if old[index] not in new:
            del old[index]
    for item in new:
        if item not in old:
            old.append(item)
    if list(old) != new:  # reordered: same style, items in the new order
        old[:] = new
    return old


def _add(mapping: CommentedMap, key: str, value: Any) -> None:
    """Append ``key`` to ``mapping``, before the comment lines that followed its last
    key (they introduce what comes next in the file)."""
    previous = next(reversed(mapping), None) if mapping else None
    mapping[key] = value
    if previous is None:
        return
    lines_after = _take_lines_after(mapping, previous)
    if lines_after is not None:
        _put_lines_after(mapping, key, lines_after)


def _remove(mapping: CommentedMap, key: str) -> None:
    """Delete ``key``, handing the comment lines after it to the key before it."""
    keys = list(mapping)
    lines_after = _take_lines_after(mapping, key)
    del mapping[key]
    mapping.ca.items.pop(key, None)
    position = keys.index(key)
    if lines_after is not None and position > 0:
        _put_lines_after(mapping, keys[position - 1], lines_after)


def _deepest_last(container: Any, key: Any) -> tuple[Any, Any]:
    """Where ruamel keeps the comments after ``container[key]``: on the last item of the
    value itself when it is a block mapping or list."""
    value = container[key]
    while isinstance(value, CommentedMap | CommentedSeq) and len(value) and not _flow(value):
        key = next(reversed(value)) if isinstance(value, CommentedMap) else len(value) - 1
        container = value
        value = container[key]
    return container, key


def _flow(value: Any) -> bool:
    return bool(value.fa.flow_style())


def _take_lines_after(mapping: CommentedMap, key: Any) -> str | None:
    """Detach the whole comment lines after ``key`` (not its end-of-line comment)."""
    container, where = _deepest_last(mapping, key)
    slots = container.ca.items.get(where)
    slot = _slot(container)
    token = slots[slot] if slots and len(slots) > slot else None
    if token is None or not hasattr(token, "value"):
        return None
    same_line, _, rest = str(token.value).partition("\n")
    if not rest:
        return None
    if same_line:
        token.value = same_line + "\n"
    else:
        slots[slot] = None
    return rest


def _put_lines_after(mapping: CommentedMap, key: Any, lines: str) -> None:
    container, where = _deepest_last(mapping, key)
    slot = _slot(container)
    slots = container.ca.items.setdefault(where, [None, None, None, None])
    existing = slots[slot]
    if existing is not None and hasattr(existing, "value"):
        existing.value += lines
    else:
        slots[slot] = CommentToken("\n" + lines, CommentMark(0), None)


def _slot(container: Any) -> int:
    """Where ruamel keeps the comment after an item: 2 in a mapping, 0 in a list."""
    return 2 if isinstance(container, CommentedMap) else 0


def _write(path: Path, yaml: YAML, tree: CommentedMap) -> None:
    buffer = io.StringIO()
    yaml.dump(tree, buffer)
    tmp = path.with_suffix(".yaml.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(buffer.getvalue())
    os.replace(tmp, path)
