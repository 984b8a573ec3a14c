"""The Kanban board: Hermes Agent 0.19's task board, kept by hermes for the tools that use it
(hermes-webui's Kanban panel reaches it as ``hermes_cli.kanban_db``).

A board is a SQLite database with 0.19's tables and columns, where 0.19 keeps it: the
``default`` board at ``<root>/kanban.db``, others at ``<root>/kanban/boards/<slug>/``
(``<root>`` is the profiles' root, shared by every profile). Its readers run their own SQL
on it, so the table and column names are an interface.

- ``paths``: the root, board slugs, each board's files, the current-board pointer (and a
  board pinned for one context), the worker logs and attachments folders; everything
  that becomes a path is checked here (no ``..``, no separators).
- ``schema``: the tables, as 0.19 names them.
- ``db``: opening a board (WAL, busy timeout), refusing a damaged one, and its write
  transaction.
- ``board_bytes``: a damaged board's byte-for-byte copy, made by a child process (this
  process's SQLite locks on the file live through it).
- ``boards``: a board's display metadata; creating, listing and removing boards.
- ``records``: typed rows (``Task``, ``Run``, ``Comment``, ``Event``, ``Attachment``,
  ``DispatchResult``).
- ``tasks``: creating, reading, assigning and linking tasks, comments, events, runs.
- ``flow``: a task's moves (claim, complete, block, unblock, archive), the board's counts.
- ``workspaces``: a task's workspace (scratch folder, ``dir``, git worktree), made for its
  worker and, for a scratch folder hermes made, removed when the task is done.
- ``triage``: taking a task out of triage, specified or decomposed into children.
- ``retention``: worker-log rotation, and deleting old events and logs.
- ``manual``: a person's own moves (reclaim, reassign, promote, edit a completed result).
- ``attachments``: the files a user gives a task, each in its task's own folder.
- ``artifacts``: a completed task's deliverables, copied out of its scratch folder.
- ``notify``: notification subscriptions, a chat's cursor over a task's events.
- ``context``: what a worker reads before it starts (``build_worker_context``).
- ``dispatch``: the dispatcher tick, which starts ``hermes -p ASSIGNEE kanban work TASK``
  (cli/kanban_cmd.py) for each ready task of a profile.
- ``daemon``: the dispatcher in the foreground, a tick every interval until stopped.
- ``respawn``: the respawn guard, which holds a ready task whose last run says a new
  worker would only repeat it (a rate-limit cool-down, a quota or credential error, a
  recent success, an open pull request).
- ``review``: the review lane (a task in ``review`` gets its assignee's agent again, with
  the reviewer's skill) and which lanes hold a task a worker could start.
- ``supervision``: the tick's watch over the workers it started (expired claims, stale,
  crashed and timed-out workers, reaping them) and the failure count that blocks a task.
"""
