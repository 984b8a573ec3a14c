"""The terminal chat's display settings, driven through a pseudo-terminal: /reasoning
show prints the model's reasoning after its answer, /verbose changes the tool lines."""

from __future__ import annotations

from tests.cli.chat_pty import PROMPT
from tests.fakes.llm_server import text, tool_call

LONG = "echo " + "a " * 45 + "tail-marker"  # its one-line preview stops before the marker


def test_reasoning_shows_after_the_answer_when_asked(chat, fake_llm):
    fake_llm.enqueue(
        text("Forty-two.", reasoning="First I count the towels."),
        text("Still forty-two.", reasoning="Recounting the towels."),
    )
    session = chat()
    session.say("how many?", "Forty-two.")
    assert "count the towels" not in session.expect(PROMPT)  # hidden by default
    session.command("/reasoning show", "Reasoning display on")
    session.say("sure?", "Still forty-two.", "reasoning:", "Recounting the towels.", PROMPT)
    assert session.leave() == 0


def test_verbose_cycles_how_tool_calls_show(chat, fake_llm):
    session = chat()
    session.command("/verbose", "Tool progress: verbose")
    fake_llm.enqueue(tool_call("terminal", {"command": LONG}), text("Done one."))
    session.say("run it", "⚙ terminal", "tail-marker", "Done one.", PROMPT)
    session.command("/verbose", "Tool progress: log")
    fake_llm.enqueue(tool_call("terminal", {"command": "true"}), text("Done two."))
    session.say("again", "⚙ terminal", "✓ terminal (", "Done two.", PROMPT)
    session.command("/verbose", "Tool progress: off")
    fake_llm.enqueue(tool_call("terminal", {"command": "true"}), text("Done three."))
    session.child.sendline("once more")
    assert "⚙" not in session.expect("Done three.")
    session.expect(PROMPT)
    assert session.leave() == 0
