"""The house's arrows, checked from the code's own imports (docs/architecture.md).

Every import of the project's modules counts, at the top of a file or inside a function: a
lazy import is still an arrow. The layers, bottom up, and the arrows allowed between apps are
written once, here; a new module names its layer by where it lives (the rules below), or the
test asks for it to be placed.
"""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Packages, bottom up: each imports only the ones below it (lazy imports counted), so no two
# import each other. ``core`` is the pure core: no Django, no app.
PACKAGES = ("core", "annotate", "ranking", "review", "config")
APPS = PACKAGES  # every package the graph reads

# Layers inside the apps, bottom up: a module may import its own layer and the ones below.
CORE, DATA, SERVICES, ENTRY = 0, 1, 2, 3
LAYER_NAMES = {CORE: "core", DATA: "data", SERVICES: "services", ENTRY: "entry points"}
LAYERS = [
    # pure: numpy / scipy / scikit-learn / pyserini, no Django, no app data
    (r"core(\..+)?", CORE),
    # tables and the roles that guard them
    (r"(annotate|ranking|review)\.models", DATA),
    (r"annotate\.(roles|bulk)", DATA),  # bulk: inserting many rows (COPY on PostgreSQL)
    # writes and reads
    (
        r"annotate\.(services|selectors|jobs|projects|judgments|labels|exports|charts|import_report"
        r"|import_documents|import_emails|import_smart|import_topics|import_labels|import_personas"
        r"|audit|threads|entities|hooks)",
        SERVICES,
    ),
    (
        r"ranking\.(services|selectors|pooling|learning_plans|learning_state|learning_queue"
        r"|learning_step|seeding|classifier|check_samples)",
        SERVICES,
    ),
    (
        r"review\.(services|releases|release_audits|selectors|visibility|audit|exposure|redaction"
        r"|copies)",
        SERVICES,
    ),
    # what a request, a worker or a command enters through
    (
        r"(annotate|ranking|review)\.(views|api|judging_api|lead_api|judging|lead|forms|admin|apps"
        r"|tasks|checks|certifying|publishing|management(\..+)?)",
        ENTRY,
    ),
    (r"config(\..+)?", ENTRY),
]
FRAMEWORKS = ("django", "rest_framework", "celery", "drf_spectacular", "django_htmx")


def modules() -> dict[str, Path]:
    """Every module of the apps (migrations left out: they are history, not code)."""
    out = {}
    for app in APPS:
        for path in (ROOT / app).rglob("*.py"):
            rel = path.relative_to(ROOT).with_suffix("")
            if "migrations" in rel.parts:
                continue
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            out[".".join(parts)] = path
    return out


def imports(path: Path, known: set[str]) -> set[str]:
    """The project modules and third-party top-level packages ``path`` imports (relative
    imports resolved against the module's package)."""
    found = set()
    package = ".".join(path.relative_to(ROOT).parts[:-1])  # where "from . import" looks
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{module}" if module else base
            names = [module, *(f"{module}.{a.name}" for a in node.names)]
        for name in names:
            if name in known:
                found.add(name)
            elif name.split(".")[0] in FRAMEWORKS:
                found.add(name.split(".")[0])
    return found


def layer(module: str) -> int:
    for pattern, number in LAYERS:
        if re.fullmatch(pattern, module):
            return number
    if module in APPS:  # a package's empty __init__
        return CORE
    raise LookupError(module)


def graph() -> dict[str, set[str]]:
    found = modules()
    return {m: imports(p, set(found)) - {m} for m, p in found.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in edges:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def violations(edges: dict[str, set[str]]) -> list[str]:
    """Every arrow that points up a layer or up the packages, and every import of a framework
    from the pure core."""
    out = []
    for a, targets in sorted(edges.items()):
        for b in sorted(targets):
            if b in FRAMEWORKS:
                if layer(a) == CORE:
                    out.append(f"{a} -> {b}: the core imports no framework")
                continue
            pa, pb = PACKAGES.index(a.split(".")[0]), PACKAGES.index(b.split(".")[0])
            if pb > pa:
                out.append(f"{a} -> {b}: {PACKAGES[pa]} never imports {PACKAGES[pb]}")
            elif pa == pb and layer(b) > layer(a):
                out.append(
                    f"{a} ({LAYER_NAMES[layer(a)]}) -> {b} ({LAYER_NAMES[layer(b)]}): "
                    "points up a layer"
                )
    return out


def package_pairs(edges: dict[str, set[str]]) -> set[tuple[str, str]]:
    """The (importer, imported) pairs of packages the graph holds."""
    return {
        (a.split(".")[0], b.split(".")[0])
        for a, targets in edges.items()
        for b in targets
        if b not in FRAMEWORKS and a.split(".")[0] != b.split(".")[0]
    }


def test_every_module_has_a_layer():
    unplaced = []
    for module in modules():
        try:
            layer(module)
        except LookupError:
            unplaced.append(module)
    assert unplaced == [], f"place these modules in a layer (LAYERS): {unplaced}"


def test_no_import_cycles():
    assert cycles(graph()) == []


def test_arrows_point_down_the_layers_and_the_packages():
    assert violations(graph()) == []


def test_no_two_packages_import_each_other():
    pairs = package_pairs(graph())
    assert sorted((a, b) for a, b in pairs if (b, a) in pairs) == []


def test_the_core_imports_no_app_and_no_framework():
    edges = graph()
    assert (
        sorted(
            f"{a} -> {b}"
            for a, targets in edges.items()
            if a.split(".")[0] == "core"
            for b in targets
            if b in FRAMEWORKS or b.split(".")[0] != "core"
        )
        == []
    )


@pytest.mark.parametrize(
    ("module", "target", "expected"),
    [
        ("ranking.classifier", "review.models", "ranking never imports review"),
        ("annotate.services", "annotate.views", "points up a layer"),
        ("core.measures", "django", "the core imports no framework"),
        ("annotate.models", "ranking.services", "annotate never imports ranking"),
        ("core.writings", "annotate.models", "core never imports annotate"),
        ("ranking.learning_step", "ranking.views", "points up a layer"),
    ],
)
def test_a_forbidden_arrow_is_named(module, target, expected):
    """The checks fail on a forbidden import: add one to the real graph and see it reported."""
    edges = graph()
    edges[module] = edges[module] | {target}
    assert any(expected in line and module in line for line in violations(edges))


def test_two_packages_importing_each_other_are_found():
    edges = graph()
    edges["annotate.judgments"] = edges["annotate.judgments"] | {"ranking.learning_plans"}
    assert ("annotate", "ranking") in package_pairs(edges)
    assert ("ranking", "annotate") in package_pairs(edges)


def test_a_cycle_is_found():
    edges = graph()
    edges["annotate.models"] = edges["annotate.models"] | {"annotate.services"}
    assert any({"annotate.models", "annotate.services"} <= set(c) for c in cycles(edges))


def test_every_task_a_service_queues_by_name_is_registered():
    """Services name the Celery entry points they queue; a name that matches no task would
    only fail when queued, so every one in the code is looked up here."""
    from celery import current_app

    pattern = re.compile(r'(?:\bqueue(?:_on_commit)?\(\s*|\btask=)"([\w.]+)"')
    named = {
        name
        for path in modules().values()
        for name in pattern.findall(path.read_text())
        if "." in name
    }
    assert len(named) >= 6  # import, index, pool, learning, classifier, review requests
    assert sorted(n for n in named if n not in current_app.tasks) == []
