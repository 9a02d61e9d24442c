"""The plugin boundary, checked on the source: distributions use only paxm's public modules, and the
core imports no distribution and names no harness in code."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: The modules a provider or integration distribution may import from paxm_core (docs/architecture.md
#: "Public modules").  Everything else is internal and may change without notice.
PUBLIC_MODULES = frozenset(
    {
        "paxm_core",
        # the contract: every module of paxm_core.api (checked by prefix below)
        "paxm_core.api",
        "paxm_core.integration",
        "paxm_core.duration",
        "paxm_core.attribution",
        "paxm_core.private_files",
        # waiting out the SQLite locks the busy handler skips: for any SQLite-backed provider
        "paxm_core.sqlite_locks",
        "paxm_core.http_client",
        "paxm_core.generated_file",
        "paxm_core.doctor",
        "paxm_core.json_settings",
        # the settings-file hooks engine (declarative harness specs)
        "paxm_core.settings_hooks",
    }
)


def _distribution_sources() -> list[Path]:
    out: list[Path] = []
    for group in ("providers", "integrations"):
        out.extend(sorted((ROOT / group).glob("*/src/**/*.py")))
    return out


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def test_there_are_distributions_to_check() -> None:
    assert len(_distribution_sources()) > 10


@pytest.mark.parametrize("path", _distribution_sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_distributions_import_only_public_core_modules(path: Path) -> None:
    private = [
        f"{path.relative_to(ROOT)}:{line}: {module}"
        for line, module in _imported_modules(path)
        if (module == "paxm_core" or module.startswith("paxm_core."))
        and module not in PUBLIC_MODULES
        and not module.startswith("paxm_core.api.")
    ]
    assert not private, "import from paxm_core's public modules only (see PUBLIC_MODULES):\n" + "\n".join(private)


def test_core_imports_no_distribution() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {module}"
        for path in sorted((ROOT / "paxm_core").rglob("*.py"))
        for line, module in _imported_modules(path)
        if module.startswith(("paxm_provider_", "paxm_integration_"))
    ]
    assert not offenders, "\n".join(offenders)


#: harness names that must not appear in the core's code (data in config/defaults.py and the
#: legacy-entry-point constant are upstream's values; docstrings and comments are prose)
_HARNESS = re.compile(
    r"""["'](codex|claude|cursor|kimi|cline|zcode|opencode|trae|kiro|codex-plugin|claude-plugin)["']"""
)
_DATA_FILES = {"paxm_core/config/defaults.py"}


def test_core_code_names_no_harness() -> None:
    offenders = []
    for path in sorted((ROOT / "paxm_core").rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if rel in _DATA_FILES:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                if _HARNESS.fullmatch(repr(node.value)) or _HARNESS.fullmatch(f'"{node.value}"'):
                    offenders.append(f"{rel}:{node.lineno}: {node.value!r}")
    assert not offenders, "the core must not name a harness in code:\n" + "\n".join(offenders)


#: what the config package may not import: it is handed what plugins declare (``ProviderCatalog``,
#: ``SetupCatalog``) by the runtime and the CLI, which load the plugins
_PLUGIN_LOADING = ("paxm_core.plugins", "paxm_core.plugin_index", "paxm_core.integration")
_CONFIG_SOURCES = sorted((ROOT / "paxm_core" / "config").glob("*.py")) + [
    ROOT / "paxm_core" / "api" / "provider_config.py"
]


def test_config_parsing_loads_no_plugins() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {module}"
        for path in sorted((ROOT / "paxm_core" / "config").glob("*.py"))
        for line, module in _imported_modules(path)  # every import, TYPE_CHECKING and lazy ones too
        if module in _PLUGIN_LOADING or module.startswith(tuple(m + "." for m in _PLUGIN_LOADING))
    ]
    assert not offenders, "pass what plugins declare to the config instead:\n" + "\n".join(offenders)


#: backends whose defaults, URLs and checks belong to their provider distribution (the built-in
#: default type, ``sqlite``, is the one the core names)
_BACKEND = re.compile(r"zep|mem0|memos|openviking|postgres|sqlite[-_]hybrid", re.IGNORECASE)


@pytest.mark.parametrize("path", _CONFIG_SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_core_config_names_no_backend(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for number, line in enumerate(text.splitlines(), 1)
        if _BACKEND.search(line)
    ]
    assert not offenders, "a backend's config lives in its ProviderType:\n" + "\n".join(offenders)


def _core_import_graph() -> dict[str, set[str]]:
    """paxm_core's modules and what each imports of paxm_core (module, function and TYPE_CHECKING level)."""
    core = ROOT / "paxm_core"
    modules = {}
    for path in core.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def test_the_contract_imports_nothing_else_of_paxm() -> None:
    graph = _core_import_graph()
    outside = {
        f"{name} -> {target}"
        for name, targets in graph.items()
        if name.startswith("paxm_core.api")
        for target in targets
        if not target.startswith("paxm_core.api")
    }
    assert not outside, "paxm_core.api is the bottom layer:\n" + "\n".join(sorted(outside))


def _documented_layers() -> dict[str, int]:
    """docs/architecture.md's layer table: module or package (dotted, under paxm_core) -> layer."""
    layers: dict[str, int] = {}
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    for row in re.findall(r"^\| (\d)\. [^|]+\| ([^|]+)\|", text, flags=re.MULTILINE):
        for entry in re.findall(r"`([\w/]+(?:\.py)?/?)`", row[1]):
            dotted = entry.removesuffix("/").removesuffix(".py").replace("/", ".").removesuffix("__init__")
            dotted = dotted.removeprefix("paxm_core").strip(".")
            layers["paxm_core" + ("." + dotted if dotted else "")] = int(row[0])
    return layers


def _layer_of(module: str, layers: dict[str, int]) -> int | None:
    """The layer of ``module``'s longest documented prefix (bare ``paxm_core`` is the facade only)."""
    parts = module.split(".")
    for n in range(len(parts), 1, -1):
        if ".".join(parts[:n]) in layers:
            return layers[".".join(parts[:n])]
    return layers.get(module)


def test_nothing_in_paxm_core_imports_a_higher_layer() -> None:
    layers = _documented_layers()
    assert set(layers.values()) == set(range(8)), f"docs/architecture.md's layer table did not parse: {layers}"
    graph = _core_import_graph()
    unplaced = sorted(name for name in graph if _layer_of(name, layers) is None)
    assert not unplaced, f"modules docs/architecture.md's layer table does not place: {unplaced}"
    upward = sorted(
        f"{name} (layer {_layer_of(name, layers)}) -> {target} (layer {_layer_of(target, layers)})"
        for name, targets in graph.items()
        for target in targets
        if (_layer_of(target, layers) or 0) > (_layer_of(name, layers) or 0)
    )
    assert not upward, "a module imports from a higher layer (docs/architecture.md, Layers):\n" + "\n".join(upward)


def test_paxm_core_has_no_import_cycles() -> None:
    graph = _core_import_graph()
    # Tarjan's strongly connected components: a component of two or more modules is a cycle
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    assert not cycles, f"import cycles in paxm_core: {cycles}"
