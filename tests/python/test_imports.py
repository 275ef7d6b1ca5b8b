"""The package's modules import each other without a cycle: every import statement counts,
also one inside a function or under ``if TYPE_CHECKING`` (a cycle hidden in a function-local
import still ties the modules together)."""
import ast
import pathlib

import sdk_helpers  # noqa: F401  (the package source: sdk_helpers.PYTHON_SRC)

PACKAGE = sdk_helpers.PYTHON_SRC / "cohort"


def package_imports(path: pathlib.Path):
    """Names of the package's modules that the module at `path` imports."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:  # from .x import y
                out.add(node.module.split(".")[0])
            elif node.level == 1:  # from . import x, y
                out.update(a.name for a in node.names)
            elif node.module and node.module.startswith("cohort."):
                out.add(node.module.split(".")[1])
            elif node.module == "cohort":
                out.update(a.name for a in node.names)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("cohort."):
                    out.add(a.name.split(".")[1])
    return out


def module_graph():
    modules = {p.stem: p for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    return {m: sorted(package_imports(p) & set(modules)) for m, p in modules.items()}


def find_cycle(graph):
    state = {}  # module -> "open" while on the stack, "done" after

    def visit(m, stack):
        state[m] = "open"
        for n in graph[m]:
            if state.get(n) == "open":
                return stack[stack.index(n):] + [n]
            if n not in state:
                found = visit(n, stack + [n])
                if found:
                    return found
        state[m] = "done"
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m, [m])
            if found:
                return found
    return None


def test_the_package_modules_import_each_other_without_a_cycle():
    graph = module_graph()
    assert {"_run", "_state", "sdk", "_synced"} <= set(graph)
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_the_cycle_finder_finds_a_cycle_through_a_function_local_import(tmp_path):
    (tmp_path / "a.py").write_text("from . import b\n")
    (tmp_path / "b.py").write_text("def f():\n    from .a import g\n")
    graph = {p.stem: sorted(package_imports(p) & {"a", "b"}) for p in tmp_path.glob("*.py")}
    assert find_cycle(graph) == ["a", "b", "a"]
