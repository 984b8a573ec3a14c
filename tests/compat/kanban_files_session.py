"""Task attachments and notification subscriptions, played through whichever
``hermes_cli.kanban_db`` this python finds (hermes's, or Hermes Agent 0.19's own): files a
user gives a task as hermes-webui's Kanban panel and 0.19's CLI keep them, and the cursor a
gateway notifier moves over a task's events. What a caller would see is printed as JSON,
task ids and paths made relative so two runs can be compared.

Usage: python kanban_files_session.py   (HERMES_HOME names the home to use)
"""

import json
import os
from pathlib import Path

from hermes_cli import kanban_db as kb

HOME = Path(os.environ["HERMES_HOME"])
LABELS = {}


def label(task_id):
    return LABELS.setdefault(task_id, f"T{len(LABELS) + 1}")


def where(path):
    text = os.path.relpath(str(path), HOME)
    for task_id, name in LABELS.items():
        text = text.replace(task_id, name)
    return text


def error(call):
    try:
        call()
    except Exception as exc:  # the kind of error a caller sees
        return [type(exc).__name__, isinstance(exc, ValueError)]
    return None


def shown(att):
    if att is None:
        return None
    return [label(att.task_id), att.filename, att.content_type, att.size, att.uploaded_by,
            where(att.stored_path), att.created_at > 0]  # fmt: skip


def files(folder):
    return sorted(p.name for p in Path(folder).iterdir()) if Path(folder).exists() else []


seen = {}
kb.init_db()
with kb.connect_closing() as conn:
    a = kb.create_task(conn, title="Read the contract", assignee="alice")
    b = kb.create_task(conn, title="Summarise it")
    label(a), label(b)
    seen["roots"] = [where(kb.attachments_root()), where(kb.task_attachments_dir(a))]

    first = kb.store_attachment_bytes(conn, a, "contract.pdf", b"%PDF-1.4 x",
                                      content_type="application/pdf", uploaded_by="webui")  # fmt: skip
    second = kb.store_attachment_bytes(conn, a, "contract.pdf", b"%PDF-1.4 yy")
    third = kb.store_attachment_bytes(conn, a, "notes.tar.gz", b"gz", uploaded_by="cli")
    seen["dotfile"] = shown(
        kb.get_attachment(conn, kb.store_attachment_bytes(conn, a, ".env", b"k"))
    )
    seen["ids_grow"] = first < second < third
    seen["listed"] = [shown(x) for x in kb.list_attachments(conn, a)]
    seen["files"] = files(kb.task_attachments_dir(a))
    seen["bytes"] = Path(kb.get_attachment(conn, second).stored_path).read_bytes().decode()
    seen["none_for_b"] = kb.list_attachments(conn, b)
    seen["unknown_id"] = kb.get_attachment(conn, 999999)
    seen["too_large"] = error(lambda: kb.store_attachment_bytes(conn, b, "big.bin", b"12345",
                                                                max_bytes=4))  # fmt: skip
    seen["too_large_is"] = issubclass(kb.AttachmentTooLarge, ValueError)
    seen["cap"] = kb.KANBAN_ATTACHMENT_MAX_BYTES
    seen["blank_name"] = error(lambda: kb.store_attachment_bytes(conn, b, "  ", b"x"))
    seen["dots_only"] = error(lambda: kb.store_attachment_bytes(conn, b, "...", b"x"))
    seen["unknown_task"] = error(lambda: kb.store_attachment_bytes(conn, "t_nope", "x.txt", b"x"))
    seen["no_file_for_unknown_task"] = files(kb.task_attachments_dir("t_nope"))
    seen["b_folder_after_refusals"] = files(kb.task_attachments_dir(b))

    placed = kb.task_attachments_dir(b) / "sketch.png"
    placed.parent.mkdir(parents=True, exist_ok=True)
    placed.write_bytes(b"\x89PNG")
    added = kb.add_attachment(conn, b, filename=" sketch.png ", stored_path=str(placed),
                              content_type="image/png", size=4, uploaded_by="tester")  # fmt: skip
    seen["added"] = shown(kb.get_attachment(conn, added))
    seen["add_blank"] = [
        error(lambda: kb.add_attachment(conn, b, filename="", stored_path=str(placed))),
        error(lambda: kb.add_attachment(conn, b, filename="x", stored_path=" ")),
    ]
    removed = kb.delete_attachment(conn, added)
    seen["removed"] = shown(removed)
    seen["removed_file_gone"] = placed.exists()
    seen["delete_again"] = kb.delete_attachment(conn, added)
    seen["events_a"] = [(e.kind, e.payload) for e in kb.list_events(conn, a)]
    seen["events_b"] = [(e.kind, e.payload) for e in kb.list_events(conn, b)]

kb.create_board("side")
with kb.connect_closing(board="side") as conn:
    c = kb.create_task(conn, title="On the side board")
    label(c)
    att = kb.store_attachment_bytes(conn, c, "plan.md", b"# plan", board="side")
    seen["side_board"] = [
        where(kb.attachments_root(board="side")),
        shown(kb.get_attachment(conn, att)),
    ]

with kb.connect_closing() as conn:
    sub = {"task_id": a, "platform": "telegram", "chat_id": "42"}
    kb.add_notify_sub(conn, **sub, user_id="u1")
    kb.add_notify_sub(
        conn, **sub, user_id="u2", notifier_profile="ops"
    )  # idempotent; profile filled
    kb.add_notify_sub(conn, **sub, notifier_profile="other")  # a set profile stays
    kb.add_notify_sub(conn, task_id=a, platform="slack", chat_id="C1", thread_id="T9")
    kb.add_notify_sub(conn, task_id=b, platform="telegram", chat_id="42")
    seen["subs_of_a"] = sorted(
        [[r[k] for k in ("platform", "chat_id", "thread_id", "user_id", "notifier_profile",
                         "last_event_id")] + [label(r["task_id"]), sorted(r)]
         for r in kb.list_notify_subs(conn, a)]
    )  # fmt: skip
    seen["subs_all"] = len(kb.list_notify_subs(conn))

    cursor, events = kb.unseen_events_for_sub(conn, **sub)
    seen["unseen"] = [cursor, [(e.id, e.kind, label(e.task_id)) for e in events]]
    seen["unseen_kinds"] = [
        e.kind for e in kb.unseen_events_for_sub(conn, **sub, kinds=["attached"])[1]
    ]
    seen["unseen_unknown"] = kb.unseen_events_for_sub(conn, task_id=a, platform="x", chat_id="y")
    old, new, claimed = kb.claim_unseen_events_for_sub(conn, **sub, kinds=["created", "attached"])
    seen["claim"] = [old, new, [e.kind for e in claimed]]
    seen["claim_again"] = list(
        kb.claim_unseen_events_for_sub(conn, **sub, kinds=["created", "attached"])
    )
    seen["claim_unknown"] = list(
        kb.claim_unseen_events_for_sub(conn, task_id=b, platform="x", chat_id="1")
    )
    seen["rewind"] = kb.rewind_notify_cursor(conn, **sub, claimed_cursor=new, old_cursor=old)
    seen["rewind_again"] = kb.rewind_notify_cursor(conn, **sub, claimed_cursor=new, old_cursor=old)
    kb.advance_notify_cursor(conn, **sub, new_cursor=new)
    kb.add_comment(conn, a, "bob", "after the cursor")
    seen["after_advance"] = [(e.kind, e.payload) for e in kb.unseen_events_for_sub(conn, **sub)[1]]
    seen["remove"] = kb.remove_notify_sub(conn, **sub)
    seen["remove_again"] = kb.remove_notify_sub(conn, **sub)
    seen["remove_thread"] = kb.remove_notify_sub(conn, task_id=a, platform="slack", chat_id="C1",
                                                 thread_id="T9")  # fmt: skip
    seen["subs_left"] = [label(r["task_id"]) for r in kb.list_notify_subs(conn)]

print(json.dumps(seen, indent=1, sort_keys=True, default=str))
