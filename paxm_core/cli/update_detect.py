"""How paxm was installed, and the commands that upgrade its distributions together.

``paxm update`` looks at the environment paxm runs from (``sys.prefix``) and recognises the
installers' own markers:

- ``uv tool install``: uv writes ``uv-receipt.toml`` into the tool's environment;
- ``pipx install``: pipx writes ``pipx_metadata.json`` into the venv it made;
- a uv project: the environment is ``<project>/.venv`` next to ``pyproject.toml`` and ``uv.lock``;
- a venv: ``pyvenv.cfg`` (a ``uv =`` line says ``uv venv`` made it, so it may lack pip).

Anything else (the system interpreter, a source checkout installed in editable mode, a venv
with neither pip nor uv) is refused with the command to run by hand: guessing would write into
an environment paxm cannot account for.  Everything here takes paths, so the tests build real
directory layouts instead of patching ``sys``.
"""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "IndexOptions",
    "Installation",
    "UpdatePlan",
    "detect_installation",
    "plan_update",
    "redact_url",
    "render_command",
]


@dataclass(frozen=True)
class Installation:
    """Where paxm runs from and which installer owns that environment."""

    kind: str
    prefix: Path
    #: the uv tool or pipx venv name, or the uv project directory
    name: str = ""
    #: why ``kind`` is ``unknown`` (printed with the manual command)
    reason: str = ""


@dataclass(frozen=True)
class IndexOptions:
    """Package-index options passed through to pip/uv unchanged."""

    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    no_index: bool = False

    def args(self) -> list[str]:
        """The flags pip, ``uv pip``, ``uv tool``, ``uv lock`` and ``pipx runpip`` all accept."""
        out: list[str] = ["--no-index"] if self.no_index else []
        if self.index_url:
            out += ["--index-url", self.index_url]
        for url in self.extra_index_urls:
            out += ["--extra-index-url", url]
        for link in self.find_links:
            out += ["--find-links", link]
        return out


@dataclass(frozen=True)
class UpdatePlan:
    """The commands (run in order, each in ``cwd``) that move every distribution to ``version``."""

    installation: Installation
    version: str
    commands: tuple[tuple[str, ...], ...] = ()
    cwd: Path | None = None
    #: set when paxm cannot run the update itself: the commands are only printed
    refused: str = ""
    notes: tuple[str, ...] = field(default=())


def detect_installation(prefix: Path, base_prefix: Path, *, editable: bool = False) -> Installation:
    """Classify the environment at ``prefix`` (``sys.prefix``; ``base_prefix`` is ``sys.base_prefix``).

    ``editable`` says paxm itself is an editable (source checkout) install.
    """
    if editable:
        return Installation(
            "unknown", prefix, reason="paxm is installed from a source checkout (editable); update the checkout"
        )
    if (prefix / "uv-receipt.toml").is_file():
        return Installation("uv-tool", prefix, name=prefix.name)
    if (prefix / "pipx_metadata.json").is_file():
        return Installation("pipx", prefix, name=prefix.name)  # pipx names the venv after the package
    project = prefix.parent
    if prefix.name == ".venv" and (project / "pyproject.toml").is_file() and (project / "uv.lock").is_file():
        return Installation("uv-project", prefix, name=str(project))
    cfg = prefix / "pyvenv.cfg"
    if prefix.resolve() == base_prefix.resolve() or not cfg.is_file():
        return Installation("unknown", prefix, reason="paxm is installed into a Python that is not a virtualenv")
    if _made_by_uv(cfg):
        return Installation("uv-venv", prefix)
    return Installation("pip-venv", prefix)


def _made_by_uv(cfg: Path) -> bool:
    try:
        lines = cfg.read_text(encoding="utf-8").splitlines()
    except OSError:
        return False
    return any(line.split("=", 1)[0].strip() == "uv" for line in lines if "=" in line)


def _receipt_python(prefix: Path) -> str:
    """The ``python = ...`` request uv recorded for the tool, if the user made one."""
    import tomllib

    try:
        receipt = tomllib.loads((prefix / "uv-receipt.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    tool = receipt.get("tool")
    value = tool.get("python") if isinstance(tool, dict) else None
    return value if isinstance(value, str) else ""


def plan_update(
    installation: Installation,
    distributions: list[str],
    version: str,
    index: IndexOptions,
    *,
    reinstall: bool = False,
    which: Callable[[str], str | None] = shutil.which,
) -> UpdatePlan:
    """The commands that install ``distributions`` (``paxm`` first) at ``version`` in that environment.

    ``reinstall`` reinstalls what is already at ``version`` (``--force``); ``which`` finds
    ``uv``/``pipx`` (a parameter so tests can say "not installed").
    """
    inst, kind = installation, installation.kind
    reqs = [f"{name}=={version}" for name in distributions]
    idx = index.args()
    python = str(inst.prefix / "bin" / "python")
    pip_force = ["--force-reinstall"] if reinstall else []
    uv_force = [arg for name in distributions for arg in ("--reinstall-package", name)] if reinstall else []
    pip_cmd = (python, "-m", "pip", "install", "--upgrade", *pip_force, *idx, *reqs)
    uv = which("uv")
    plan = UpdatePlan(inst, version)
    needs, found = "uv", uv
    if kind == "uv-tool":
        others = [arg for req in reqs[1:] for arg in ("--with", req)]
        pinned = _receipt_python(inst.prefix)
        python_arg = ["--python", pinned] if pinned else []
        commands = [(uv or "uv", "tool", "install", *python_arg, *uv_force, *idx, reqs[0], *others)]
    elif kind == "pipx":
        needs, found = "pipx", which("pipx")
        commands = [(found or "pipx", "runpip", inst.name, "install", "--upgrade", *pip_force, *idx, *reqs)]
    elif kind == "uv-project":
        upgrades = [arg for req in reqs for arg in ("--upgrade-package", req)]
        commands = [(uv or "uv", "lock", *idx, *upgrades), (uv or "uv", "sync", "--inexact", *uv_force, *idx)]
        note = "uv sync --inexact installs the project's default groups; sync extras you use with your own flags"
        plan = replace(plan, cwd=Path(inst.name), notes=(note,))
    elif kind == "pip-venv" and any(inst.prefix.glob("lib/python*/site-packages/pip/__init__.py")):
        return replace(plan, commands=(pip_cmd,))
    elif kind == "pip-venv" and uv is None:
        return replace(plan, commands=(pip_cmd,), refused="this venv has no pip and uv is not on PATH")
    elif kind in ("pip-venv", "uv-venv"):
        commands = [(uv or "uv", "pip", "install", "--python", python, "--upgrade", *uv_force, *idx, *reqs)]
    else:
        return replace(plan, commands=(pip_cmd,), refused=inst.reason or "paxm cannot tell how it was installed")
    refused = f"{kind} install, but {needs} is not on PATH" if found is None else ""
    return replace(plan, commands=tuple(commands), refused=refused)


def redact_url(value: str) -> str:
    """``value`` with any ``user:password@`` of a URL replaced by ``***@`` (index credentials)."""
    try:
        parts = urlsplit(value)
    except ValueError:
        return value
    if not parts.scheme or "@" not in parts.netloc:
        return value
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit((parts.scheme, "***@" + host, parts.path, parts.query, parts.fragment))


def render_command(command: tuple[str, ...] | list[str]) -> str:
    """A shell-quoted command line with index credentials redacted (for printing)."""
    return shlex.join(redact_url(arg) for arg in command)
