"""The questions ``paxm setup`` asks, behind one small interface with two implementations.

:class:`TerminalPrompter` drives a terminal with ``questionary`` (arrow keys, space to tick,
masked password input); it is imported only when setup runs in a terminal.
:class:`TextPrompter` reads answers line by line from a pipe, upstream's numbered selector
(``all``, ``none``, ``1,3``, empty = the defaults), so setup can be scripted without ``--yes``.
Both raise :class:`KeyboardInterrupt` when the person cancels; setup then saves nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO, Any, Protocol

from paxm_core.api.errors import UsageError

__all__ = ["Option", "Prompter", "TerminalPrompter", "TextPrompter", "parse_multi_select"]


@dataclass(frozen=True)
class Option:
    """One choice of a selection: ``value`` is returned, ``label`` shown; ``disabled`` says why it cannot be chosen."""

    value: str
    label: str
    checked: bool = False
    disabled: str = ""


Validator = Callable[[str], str]
"""Returns ``""`` for an acceptable answer, else the sentence to show before asking again."""


class Prompter(Protocol):
    """What setup asks through; every method may raise :class:`KeyboardInterrupt`."""

    def note(self, line: str) -> None:
        """Show one informational line."""

    def multi_select(self, question: str, options: Sequence[Option]) -> list[str]:
        """Tick any number of options; returns their values in option order."""

    def select(self, question: str, choices: Sequence[str], default: str) -> str:
        """Pick exactly one of ``choices``."""

    def text(self, question: str, default: str = "", validate: Validator | None = None) -> str:
        """A line of text (``default`` when left empty)."""

    def secret(self, question: str, validate: Validator | None = None) -> str:
        """A credential, never echoed; ``""`` when left empty."""

    def confirm(self, question: str, default: bool) -> bool:
        """Yes or no."""


def parse_multi_select(answer: str, options: Sequence[Option]) -> list[str]:
    """Upstream's numbered selector: ``all``, ``none``, or comma-separated 1-based numbers.

    An empty answer keeps the defaults.  Raises :class:`ValueError` (with the sentence to show)
    for a number out of range or a disabled option.
    """
    value = answer.strip().lower()
    if not value:
        return [o.value for o in options if o.checked and not o.disabled]
    if value == "all":
        return [o.value for o in options if not o.disabled]
    if value == "none":
        return []
    picked: set[int] = set()
    for part in value.split(","):
        part = part.strip()
        if not part:
            continue
        if not part.isdigit() or not 1 <= int(part) <= len(options):
            raise ValueError(f"invalid selection {part!r}: choose numbers 1-{len(options)}, all or none")
        option = options[int(part) - 1]
        if option.disabled:
            raise ValueError(f"{option.label} cannot be chosen: {option.disabled}")
        picked.add(int(part) - 1)
    return [o.value for i, o in enumerate(options) if i in picked]


class TextPrompter:
    """Line-by-line answers from ``stdin``, questions on ``out`` (stderr keeps stdout for results).

    End of input accepts the defaults of every remaining question, like upstream.
    """

    def __init__(self, stdin: IO[str], out: IO[str]) -> None:
        self._in = stdin
        self._out = out
        self._answered = False

    def _ask(self, prompt: str) -> str | None:
        self._out.write(prompt)
        self._out.flush()
        line = self._in.readline()
        if not line:
            self._out.write("\n")
            if not self._answered:
                # nothing at all on stdin (</dev/null, a cron job): not consent to the defaults
                raise UsageError(
                    "setup needs --yes when not run in a terminal, or answers on stdin"
                    " (e.g. printf '1\\n1\\ny\\n' | paxm setup)"
                )
            return None
        self._answered = True
        return line.rstrip("\r\n")

    def note(self, line: str) -> None:
        self._out.write(line + "\n")

    def multi_select(self, question: str, options: Sequence[Option]) -> list[str]:
        if not options:
            return []
        defaults = ",".join(str(i + 1) for i, o in enumerate(options) if o.checked and not o.disabled) or "none"
        while True:
            self.note(f"{question}:")
            for i, option in enumerate(options):
                mark = "[x]" if option.checked and not option.disabled else "[ ]"
                extra = f"  ({option.disabled})" if option.disabled else ""
                self.note(f"  {i + 1}) {mark} {option.label}{extra}")
            answer = self._ask(f"Choose numbers, comma-separated, or all/none [{defaults}]: ")
            try:
                return parse_multi_select(answer or "", options)
            except ValueError as exc:
                self.note(str(exc))
                if answer is None:
                    return parse_multi_select("", options)

    def select(self, question: str, choices: Sequence[str], default: str) -> str:
        while True:
            self.note(f"{question}:")
            for i, choice in enumerate(choices):
                self.note(f"  {i + 1}) {'[x]' if choice == default else '[ ]'} {choice}")
            answer = self._ask(f"Choose one [{choices.index(default) + 1 if default in choices else 1}]: ")
            value = (answer or "").strip()
            if not value:
                return default if default in choices else choices[0]
            if value.isdigit() and 1 <= int(value) <= len(choices):
                return choices[int(value) - 1]
            if value in choices:
                return value
            self.note("Please choose one of the listed options.")
            if answer is None:
                return default

    def text(self, question: str, default: str = "", validate: Validator | None = None) -> str:
        while True:
            answer = self._ask(f"{question} [{default}]: " if default else f"{question}: ")
            value = (answer or "").strip() or default
            problem = validate(value) if validate is not None else ""
            if not problem:
                return value
            self.note(problem)
            if answer is None:
                raise KeyboardInterrupt  # no more input and no acceptable answer: give up, save nothing

    def secret(self, question: str, validate: Validator | None = None) -> str:
        return self.text(question, "", validate)  # piped input is never echoed back

    def confirm(self, question: str, default: bool) -> bool:
        while True:
            answer = self._ask(f"{question} {'[Y/n]' if default else '[y/N]'}: ")
            value = (answer or "").strip().lower()
            if not value:
                return default
            if value in ("y", "yes"):
                return True
            if value in ("n", "no"):
                return False
            self.note("Please answer yes or no.")
            if answer is None:
                return default


class TerminalPrompter:
    """Questions in a terminal through ``questionary`` (prompt_toolkit); imported on first use.

    ``unsafe_ask`` lets Ctrl-C raise :class:`KeyboardInterrupt` instead of returning ``None``.
    """

    def __init__(self) -> None:
        import questionary

        self._q: Any = questionary

    def note(self, line: str) -> None:
        self._q.print(line)

    def multi_select(self, question: str, options: Sequence[Option]) -> list[str]:
        if not options:
            return []
        choices = [
            self._q.Choice(o.label, value=o.value, checked=o.checked and not o.disabled, disabled=o.disabled or None)
            for o in options
        ]
        instruction = "(arrows move, space ticks, enter accepts)"
        wanted = set(self._q.checkbox(question, choices=choices, instruction=instruction).unsafe_ask() or [])
        return [o.value for o in options if o.value in wanted]

    def select(self, question: str, choices: Sequence[str], default: str) -> str:
        return str(self._q.select(question, choices=list(choices), default=default or None).unsafe_ask())

    def text(self, question: str, default: str = "", validate: Validator | None = None) -> str:
        value = self._q.text(question, default=default, validate=_questionary_check(validate)).unsafe_ask()
        return str(value or "").strip()

    def secret(self, question: str, validate: Validator | None = None) -> str:
        value = self._q.password(question, validate=_questionary_check(validate)).unsafe_ask()
        return str(value or "").strip()

    def confirm(self, question: str, default: bool) -> bool:
        return bool(self._q.confirm(question, default=default).unsafe_ask())


def _questionary_check(validate: Validator | None) -> Callable[[str], bool | str] | None:
    """``validate`` as questionary wants it: ``True`` or the sentence to show."""
    if validate is None:
        return None
    return lambda value: validate(value.strip()) or True


def make_prompter() -> Prompter:
    """:class:`TerminalPrompter` in a terminal, else :class:`TextPrompter` asking on stderr (stdout has the result)."""
    if sys.stdin.isatty() and sys.stdout.isatty():
        return TerminalPrompter()
    return TextPrompter(sys.stdin, sys.stderr)
