"""The public surface: `__all__`, docstrings, annotations, `py.typed`, and the sans-IO rule.

DESIGN.md section 2: names live in private modules behind `__init__`'s sorted `__all__`, every
export is documented and typed, `py.typed` ships, and layers L0-L4 never import trio or other
I/O libraries. import-linter checks direct imports between modules; the checks here also catch
an import hidden inside a function body and one pulled in through a third-party package.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import re
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import trio_mcp
import trio_mcp.http
import trio_mcp.middleware
import trio_mcp.tasks
import trio_mcp.testing
from tests.helpers import python_json
from tests.timing import scaled

PACKAGE_DIR = Path(inspect.getfile(trio_mcp)).parent
REPO_ROOT = Path(__file__).resolve().parent.parent


def _sans_io_modules() -> tuple[str, ...]:
    """Every module under the sans-IO contract of pyproject.toml, the one place it is named."""
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    (contract,) = [
        c
        for c in config["tool"]["importlinter"]["contracts"]
        if c["name"] == "Sans-IO core imports no I/O libraries"
    ]
    modules: list[str] = []
    for dotted in contract["source_modules"]:
        name = dotted.removeprefix("trio_mcp.")
        folder = PACKAGE_DIR / name
        if folder.is_dir():  # a package: itself and every module in it, at any depth
            for path in sorted(folder.rglob("*.py")):
                parts = path.relative_to(PACKAGE_DIR).with_suffix("").parts
                modules.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
        else:
            modules.append(name)
    return tuple(modules)


# L0-L4 of DESIGN.md section 2.
SANS_IO_MODULES = _sans_io_modules()
# Event loops, network clients and servers, and the stdlib's own I/O multiplexing.
FORBIDDEN = frozenset(
    {
        "trio",
        "anyio",
        "sniffio",
        "asyncio",
        "httpx",
        "httpcore",
        "hypercorn",
        "h11",
        "h2",
        "socket",
        "selectors",
        "ssl",
        "subprocess",
    }
)


#: The public namespaces: the package and its public subpackages.
NAMESPACES = (trio_mcp, trio_mcp.http, trio_mcp.middleware, trio_mcp.tasks, trio_mcp.testing)


def _exports() -> list[tuple[str, Any]]:
    """The public names of every public namespace, with the subpackage before a dot."""
    return [
        (f"{namespace.__name__.removeprefix('trio_mcp').lstrip('.')}.{name}".lstrip("."), obj)
        for namespace in NAMESPACES
        for name in namespace.__all__
        for obj in [getattr(namespace, name)]
    ]


def _home(name: str) -> str:
    """The public namespace an export's name belongs to ("trio_mcp" or "trio_mcp.http"...)."""
    return "trio_mcp." + name.rsplit(".", 1)[0] if "." in name else "trio_mcp"


def _members(cls: type) -> list[tuple[str, Any]]:
    """What a class itself defines, with static and class methods unwrapped to functions."""
    out: list[tuple[str, Any]] = []
    for attr, member in vars(cls).items():
        if getattr(member, "__module__", None) == "typing":
            continue  # what typing puts in a class (a Protocol's placeholder __init__)
        if isinstance(member, staticmethod | classmethod):
            out.append((attr, member.__func__))
        elif inspect.isfunction(member) and member.__module__ == "typing":
            continue  # put there by typing.Protocol (its `__init__`), not written here
        elif inspect.isfunction(member) or isinstance(member, property):
            out.append((attr, member))
    return out


def _documented_objects() -> list[tuple[str, Any]]:
    """Exported classes and functions, and the public methods and properties of those classes."""
    out: list[tuple[str, Any]] = []
    for name, obj in _exports():
        if inspect.isclass(obj) or inspect.isfunction(obj):
            out.append((name, obj))
        if inspect.isclass(obj):
            out += [(f"{name}.{a}", m) for a, m in _members(obj) if not a.startswith("_")]
    return out


def _callables() -> list[tuple[str, Callable[..., Any]]]:
    """Exported functions, and the public functions an exported class defines (``__init__`` too)."""
    out: list[tuple[str, Callable[..., Any]]] = []
    for name, obj in _exports():
        if inspect.isfunction(obj):
            out.append((name, obj))
        if inspect.isclass(obj):
            for attr, member in _members(obj):
                if attr.startswith("_") and attr != "__init__":
                    continue
                fn = member.fget if isinstance(member, property) else member
                if fn is not None:
                    out.append((f"{name}.{attr}", fn))
    return out


def _isort_key(name: str) -> tuple[int, list[Any]]:
    # The order of ruff's RUF022 ("isort-style"): SCREAMING_CASE, then CamelCase, then the rest,
    # each group in natural order.
    if name.upper() == name and len(name) > 1:
        group = 0
    elif name[0].isupper():
        group = 1
    else:
        group = 2
    natural = [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]
    return group, natural


# -- __all__ ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("namespace", NAMESPACES, ids=lambda n: n.__name__)
def test_every_name_in_all_exists(namespace: Any) -> None:
    missing = [name for name in namespace.__all__ if not hasattr(namespace, name)]
    assert missing == []


@pytest.mark.parametrize("namespace", [n.__name__ for n in NAMESPACES])
def test_dir_lists_every_export_before_it_is_loaded(namespace: str) -> None:
    # Tab completion and help() read dir(); names loaded on first use must be there too.
    listed, exported = python_json(
        f"import json, {namespace} as n; print(json.dumps([dir(n), n.__all__]))"
    )
    assert set(exported) <= set(listed)


def test_dir_lists_the_public_subpackages_and_they_load_on_first_use() -> None:
    loaded = python_json(
        "import json, sys, trio_mcp\n"
        "before = 'trio_mcp.tasks' in sys.modules\n"
        "trio_mcp.tasks.TaskSupport, trio_mcp.http\n"
        "print(json.dumps([dir(trio_mcp), before, 'trio_mcp.tasks' in sys.modules]))"
    )
    listed, before, after = loaded
    assert {"http", "middleware", "tasks", "testing"} <= set(listed)
    assert (before, after) == (False, True)


def test_names_loaded_on_first_use_show_in_importtime() -> None:
    # People profile start-up with `python -X importtime`; importlib.import_module would hide
    # the modules a lazy name loads from it.
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "from trio_mcp import Server, run"],
        capture_output=True,
        text=True,
        check=True,
        timeout=scaled(60),
    )
    modules = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()}
    assert {"trio_mcp._runtime.server", "trio_mcp._run"} <= modules


def test_all_has_no_duplicates() -> None:
    assert len(set(trio_mcp.__all__)) == len(trio_mcp.__all__)


@pytest.mark.parametrize("namespace", NAMESPACES, ids=lambda n: n.__name__)
def test_all_is_sorted(namespace: Any) -> None:
    assert list(namespace.__all__) == sorted(namespace.__all__, key=_isort_key)


def test_each_public_object_has_one_public_home() -> None:
    # One place to import each from: a subpackage's name is not also at the top level.
    homes: dict[int, list[str]] = {}
    for name, obj in _exports():
        if inspect.isclass(obj) or inspect.isfunction(obj):
            homes.setdefault(id(obj), []).append(name)
    assert [names for names in homes.values() if len(names) > 1] == []


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, Any] = {}
    exec("from trio_mcp import *", namespace)
    assert sorted(set(namespace) - {"__builtins__"}) == sorted(trio_mcp.__all__)


def test_public_classes_and_functions_report_their_public_namespace() -> None:
    # httpx's habit: reprs, tracebacks and help() show `trio_mcp.Server`, not the private module
    # it lives in. Only what the package defines is rewritten, so this also catches a foreign
    # class exported by mistake.
    wrong = {
        name: obj.__module__
        for name, obj in _exports()
        if (inspect.isclass(obj) or inspect.isfunction(obj)) and obj.__module__ != _home(name)
    }
    assert wrong == {}
    assert repr(trio_mcp.TextContent) == "<class 'trio_mcp.TextContent'>"
    assert repr(trio_mcp.http.HttpOptions) == "<class 'trio_mcp.http.HttpOptions'>"


_MODULE_ON_LOAD = """
import json, sys, trio_mcp
before = sys.modules["trio_mcp._core.types"].TextContent.__module__
trio_mcp.open_client
# Loaded with `open_client`, never named: they report the facade all the same.
client = sys.modules["trio_mcp._runtime.client"].Client.__module__
records = sys.modules["trio_mcp._core.client_records"].ToolInfo.__module__
print(json.dumps([before, client, records]))
"""


def test_lazy_names_report_the_facade_once_their_module_loads() -> None:
    assert python_json(_MODULE_ON_LOAD) == ["trio_mcp", "trio_mcp", "trio_mcp"]


#: Names of earlier versions, and what replaced them.
RENAMED = {
    "Accepted": trio_mcp.AcceptedElicitation,
    "Declined": trio_mcp.DeclinedElicitation,
    "Cancelled": trio_mcp.CancelledElicitation,
    "HttpOptions": trio_mcp.http.HttpOptions,
    "RetryPolicy": trio_mcp.http.RetryPolicy,
    "EventStore": trio_mcp.http.EventStore,
    "MemoryEventStore": trio_mcp.http.MemoryEventStore,
    "TaskStore": trio_mcp.tasks.TaskStore,
    "MemoryTaskStore": trio_mcp.tasks.MemoryTaskStore,
    "RedisTaskStore": trio_mcp.tasks.RedisTaskStore,
    "TaskRecord": trio_mcp.tasks.TaskRecord,
    "TaskSupport": trio_mcp.tasks.TaskSupport,
    "TaskInfo": trio_mcp.tasks.TaskInfo,
    "Middleware": trio_mcp.middleware.Middleware,
    "CallNext": trio_mcp.middleware.CallNext,
    "ResolvedRequest": trio_mcp.middleware.ResolvedRequest,
}


@pytest.mark.parametrize(("old", "new"), RENAMED.items(), ids=list(RENAMED))
def test_an_old_name_still_works_and_warns_where_it_is_used(old: str, new: Any) -> None:
    with pytest.warns(DeprecationWarning, match=rf"trio_mcp\.{old} is deprecated; use ") as caught:
        assert getattr(trio_mcp, old) is new
    assert caught[0].filename == __file__
    assert old not in trio_mcp.__all__
    assert old not in dir(trio_mcp)


def test_call_tool_result_is_a_tool_result_made_the_old_way() -> None:
    with pytest.warns(DeprecationWarning, match="use trio_mcp.ToolResult"):
        from trio_mcp import CallToolResult  # noqa: PLC0415 - the import is what warns

    old = CallToolResult([trio_mcp.TextContent("x")], structured_content={"a": 1}, is_error=True)
    assert old.structured == old.structured_content == {"a": 1}
    assert isinstance(old, trio_mcp.ToolResult)
    assert (
        old.to_wire()
        == trio_mcp.ToolResult(
            [trio_mcp.TextContent("x")], structured={"a": 1}, is_error=True
        ).to_wire()
    )


def test_the_exception_tree_in_the_docstring_draws_every_exception() -> None:
    # `_exceptions`' docstring is where a user sees what to catch: each exception is drawn
    # there once, under the class it derives from.
    from trio_mcp import _exceptions  # noqa: PLC0415 - private: only this test reads it

    drawn = re.findall(r"^\s*[│ ]*[├└]── (\w+)", _exceptions.__doc__ or "", re.MULTILINE)
    classes = {
        name: cls
        for name, cls in vars(_exceptions).items()
        if inspect.isclass(cls) and issubclass(cls, trio_mcp.TrioMCPError)
    }
    assert sorted(drawn) == sorted(set(classes) - {"TrioMCPError"})
    for name in ("LocalProtocolError", "RemoteProtocolError"):
        assert classes[name].__bases__ == (trio_mcp.ProtocolError,)
    for name in ("ConnectionClosed", "SessionExpiredError", "AuthorizationError"):
        assert classes[name].__bases__ == (trio_mcp.TransportError,)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'Nothing'"):
        trio_mcp.Nothing  # noqa: B018 - the lookup is the test
    with pytest.raises(AttributeError, match=r"'trio_mcp\.http' has no attribute 'Nothing'"):
        trio_mcp.http.Nothing  # noqa: B018


# -- documented and typed -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "obj"), [pytest.param(*item, id=item[0]) for item in _documented_objects()]
)
def test_public_object_has_a_docstring(name: str, obj: Any) -> None:
    doc = obj.__doc__  # its own: inspect.getdoc would borrow a base class's docstring
    assert doc is not None, f"{name} has no docstring"
    assert doc.strip(), f"{name} has an empty docstring"
    if inspect.isclass(obj) and dataclasses.is_dataclass(obj):
        # @dataclass fills a missing docstring with the signature, "Name(field: type, ...)".
        assert not doc.startswith(f"{obj.__name__}("), f"{name} has no docstring of its own"


@pytest.mark.parametrize(("name", "fn"), [pytest.param(*item, id=item[0]) for item in _callables()])
def test_public_callable_is_fully_annotated(name: str, fn: Callable[..., Any]) -> None:
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    if params and params[0].name in ("self", "cls"):
        params = params[1:]
    unannotated = [p.name for p in params if p.annotation is inspect.Parameter.empty]
    assert unannotated == [], f"{name}: parameters without annotations: {unannotated}"
    assert sig.return_annotation is not inspect.Signature.empty, f"{name}: no return annotation"


def test_version_is_a_string() -> None:
    assert isinstance(trio_mcp.__version__, str)
    assert trio_mcp.__version__


# -- py.typed -------------------------------------------------------------------------------------


def test_py_typed_is_in_the_package() -> None:
    assert (PACKAGE_DIR / "py.typed").is_file()


def test_py_typed_and_the_schemas_ship_in_the_wheel(tmp_path: Path) -> None:
    builders = pytest.importorskip(
        "hatchling.builders.wheel", reason="hatchling (the build backend) is not installed"
    )
    if not (REPO_ROOT / "pyproject.toml").is_file():
        pytest.skip("not running from a source checkout")
    wheels = list(
        builders.WheelBuilder(str(REPO_ROOT)).build(directory=str(tmp_path), versions=["standard"])
    )
    assert len(wheels) == 1
    names = set(zipfile.ZipFile(wheels[0]).namelist())
    assert "trio_mcp/py.typed" in names
    assert "trio_mcp/__init__.py" in names
    assert "demo_tools/__init__.py" in names
    # trio_mcp.testing checks messages against these: the package must not need tests/.
    schemas = {n for n in names if n.startswith("trio_mcp/testing/schema/")}
    assert {f"trio_mcp/testing/schema/{v}/schema.json" for v in trio_mcp.SUPPORTED_VERSIONS} | {
        "trio_mcp/testing/schema/SOURCE.md"
    } == schemas


# -- sans-IO core ---------------------------------------------------------------------------------


def _imported_modules(tree: ast.AST) -> set[str]:
    """Top-level names of absolute imports anywhere in a module, function bodies included."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out


@pytest.mark.parametrize("module", SANS_IO_MODULES)
def test_sans_io_module_has_no_io_import_in_its_source(module: str) -> None:
    path = PACKAGE_DIR.joinpath(*module.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    assert _imported_modules(tree) & FORBIDDEN == set()


# Imports each sans-IO module in turn without running trio_mcp/__init__.py (which wires in the
# trio runtime), and reports which forbidden top-level modules each one newly brought in. Only
# new ones count: under coverage measurement the interpreter starts with socket already loaded.
_PROBE = """
import importlib, importlib.util, json, sys, types
spec = importlib.util.find_spec("trio_mcp")
package = types.ModuleType("trio_mcp")
package.__path__ = list(spec.submodule_search_locations)
sys.modules["trio_mcp"] = package
forbidden = set(json.loads(sys.argv[1]))
report = {}
for name in json.loads(sys.argv[2]):
    before = set(sys.modules)
    importlib.import_module("trio_mcp." + name)
    report[name] = sorted({m.split(".")[0] for m in set(sys.modules) - before} & forbidden)
print(json.dumps(report))
"""


def test_sans_io_modules_do_not_load_io_libraries() -> None:
    report = python_json(_PROBE, json.dumps(sorted(FORBIDDEN)), json.dumps(SANS_IO_MODULES))
    assert report == {name: [] for name in SANS_IO_MODULES}


def test_the_sans_io_list_covers_the_core_and_the_features() -> None:
    named = {"_exceptions", "_core.jsonrpc", "_core.server_session", "_features.tools", "_dispatch"}
    assert named <= set(SANS_IO_MODULES)


def test_the_probe_would_see_trio() -> None:
    # The probe above is only worth something if it notices an I/O library when one is loaded.
    assert python_json(_PROBE, json.dumps(["trio"]), json.dumps(["_run"])) == {"_run": ["trio"]}


_LOADED_BY_IMPORT = """
import json, sys
import trio_mcp
before = sorted(m for m in sys.modules if m.startswith(("trio_mcp", "httpx", "hypercorn")))
trio_mcp.Client, trio_mcp.open_client, trio_mcp.http.HttpOptions, trio_mcp.http.RetryPolicy
after = sorted(m for m in sys.modules if m.startswith(("trio_mcp", "httpx", "hypercorn")))
print(json.dumps([before, after]))
"""

_RUNTIME_ON_USE = """
import json, sys
import trio_mcp
declared = sorted(m for m in sys.modules if m.split(".")[0] in ("trio", "trio_mcp"))
from trio_mcp import Server, run
served = sorted(m for m in sys.modules if m.split(".")[0] in ("trio", "trio_mcp"))
print(json.dumps([declared, served]))
"""


def test_import_loads_the_runtime_and_trio_only_when_a_server_is_used() -> None:
    # A module that only declares tools (`from trio_mcp import Param, tool`) imports without
    # trio; `Server` and `run` bring the runtime in.
    declared, served = python_json(_RUNTIME_ON_USE)
    runtime = {"trio", "trio_mcp._runtime.server", "trio_mcp._run"}
    assert runtime.isdisjoint(declared)
    assert {"trio_mcp._features.tools", "trio_mcp._features.signature"} <= set(declared)
    assert runtime <= set(served)


def test_import_loads_neither_the_client_nor_http_code_until_used() -> None:
    # A server started over stdio waits for `import trio_mcp`: the client half and the HTTP
    # transports load on first use of their names.
    before, after = python_json(_LOADED_BY_IMPORT)
    lazy = {"trio_mcp._runtime.client", "trio_mcp._connect", "trio_mcp.transports.http.client"}
    assert lazy.isdisjoint(before)
    assert not [m for m in before if m.startswith(("httpx", "hypercorn"))]
    assert lazy <= set(after)


_JOSE_ON_USE = """
import json, sys
import trio_mcp
jose = ("jwt", "cryptography")
imported = sorted(m for m in sys.modules if m.split(".")[0] in jose)
from trio_mcp import JwtVerifier, StaticTokenVerifier
from trio_mcp.http import HttpOptions
named = sorted(m for m in sys.modules if m.split(".")[0] in jose)
JwtVerifier(issuer="https://as.example", audience="https://mcp.example/mcp")
made = sorted(m for m in sys.modules if m.split(".")[0] in jose)
print(json.dumps([imported, named, made]))
"""


def test_import_loads_no_jose_library_until_a_jwt_verifier_is_made() -> None:
    # PyJWT and cryptography are the `auth` extra: `import trio_mcp`, and naming the verifiers,
    # load neither; making a `JwtVerifier` loads PyJWT.
    imported, named, made = python_json(_JOSE_ON_USE)
    assert imported == []
    assert named == []
    assert "jwt" in made


_OBSERVABILITY_ON_USE = """
import json, sys
packages = ("opentelemetry", "prometheus_client")
def loaded():
    return sorted(m for m in sys.modules if m.split(".")[0] in packages)
import trio_mcp
imported = loaded()
from trio_mcp.middleware import OpenTelemetryMiddleware, PrometheusMiddleware, trace_context_meta
named = loaded()
PrometheusMiddleware()
measured = loaded()
OpenTelemetryMiddleware()
print(json.dumps([imported, named, measured, loaded()]))
"""


def test_import_loads_no_observability_package_until_its_middleware_is_made() -> None:
    # opentelemetry-api and prometheus-client are the `otel` and `prometheus` extras: neither
    # `import trio_mcp` nor naming the middleware loads them; making each loads its own.
    imported, named, measured, traced = python_json(_OBSERVABILITY_ON_USE)
    assert imported == []
    assert named == []
    assert {m.split(".")[0] for m in measured} == {"prometheus_client"}
    assert "opentelemetry.trace" in traced
