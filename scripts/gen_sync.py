"""Generate ``azt/sync/_generated.py``: the blocking twins of the async classes.

The blocking API drives the async implementation on a private event loop
(``azt/sync/_runtime.py``); what is generated is only the typed surface: for each async
class, a class of the same name with the same public methods, parameters, overloads,
properties and (adapted) docstrings, whose bodies hand the call to the async object:

* ``async def m(...) -> T``            -> ``def m(...) -> T``: ``runtime.run(inner.m(...))``
* ``... -> AsyncIterator[T]`` / ``AsyncGenerator[T, None]``, ``__aiter__``
                                        -> ``Iterator[T]``: ``runtime.iterate(...)``
* ``AsyncPager[T]``, ``TableClient``, ``Query[R]``, ... (the wrapped classes, and the
  protocols they satisfy)               -> their blocking twins, in and out
* ``aclose`` / ``__aenter__`` / ``__aexit__`` -> ``close`` / ``__enter__`` / ``__exit__``

It reads the async source (``ast``), never imports its logic, and refuses what it does not
understand (a decorator, a wrapped type in an unexpected position, a new public instance
attribute) instead of guessing. Run it after changing an async class::

    python scripts/gen_sync.py          # rewrites azt/sync/_generated.py
    python scripts/gen_sync.py --check  # exit 1 if the file is stale (the tests do this)
"""

from __future__ import annotations

import argparse
import ast
import builtins
import importlib.util
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "azt" / "sync" / "_generated.py"


@dataclass(frozen=True)
class Spec:
    module: str
    name: str  # the async class
    sync: str  # the blocking twin's name
    owns_runtime: bool = False  # constructing one without a wrapped argument starts a runtime
    tracks_transport: bool = False
    #: Public instance attributes (set in ``__init__``): name -> (type, writable, doc).
    attributes: dict[str, tuple[str, bool, str]] = field(default_factory=dict)
    doc: str | None = None  # replaces the class docstring
    #: The method whose pages ``__iter__`` flattens (as ``__aiter__`` does): one blocking
    #: step per page, not per item.
    items_of: str | None = None


SPECS = [
    Spec(
        "azt._core.pagination",
        "AsyncPager",
        "Pager",
        items_of="by_page",
        doc=(
            "Follows continuation tokens; iterate for items or use :meth:`by_page`.\n\n"
            "The blocking twin of :class:`azt.AsyncPager`, returned by the blocking\n"
            "clients' ``query_entities``, ``list_entities``, ``query_tables`` and\n"
            "``list_tables``. It can be iterated more than once; each iteration starts\n"
            "again from the pager's ``continuation``.\n\n"
            "Example::\n\n"
            "    for page in table.query_entities(\"PartitionKey eq 'p'\").by_page():\n"
            "        print(len(page), page.continuation)\n"
            "    rows = table.list_entities().to_list()\n"
        ),
    ),
    Spec(
        "azt._core.table_client",
        "TableClient",
        "TableClient",
        owns_runtime=True,
        tracks_transport=True,
        attributes={
            "table_name": (
                "str",
                False,
                "The table's name.\n\nExample::\n\n    print(table.table_name)\n",
            )
        },
    ),
    Spec(
        "azt._core.service_client",
        "TableServiceClient",
        "TableServiceClient",
        owns_runtime=True,
        tracks_transport=True,
    ),
    Spec(
        "azt._core.batch_writer",
        "BatchWriter",
        "BatchWriter",
        doc=(
            "Buffers writes, groups them by PartitionKey and sends each group as entity group\n"
            "transactions: at 100 operations, at the exact 4 MiB body limit, when the buffered\n"
            "bytes pass ``max_buffer_bytes`` (its largest group is sent), on :meth:`flush` and\n"
            "on a clean exit. The blocking twin of :class:`azt.BatchWriter`, from\n"
            ":meth:`TableClient.batch_writer`; a call may send a transaction. Failures are\n"
            "raised together on a clean exit (:class:`azt.BatchWriteError`); when the ``with``\n"
            "body raises, what is still buffered is not sent (:attr:`unsent`). Entity objects\n"
            "get their new ETag and Timestamp once their transaction succeeds.\n\n"
            "Example::\n\n"
            "    with table.batch_writer() as writer:\n"
            '        writer.insert({"PartitionKey": "p", "RowKey": "1"})\n'
        ),
    ),
    Spec("azt._orm.query", "Query", "Query", items_of="pages"),
    Spec("azt._orm.entity_table", "EntityTable", "EntityTable"),
    Spec("azt._uow.query", "ContextQuery", "ContextQuery", items_of="pages"),
    Spec(
        "azt._uow.context",
        "TableContext",
        "TableContext",
        attributes={
            "ignore_resource_not_found": (
                "bool",
                True,
                "Whether a missing entity or table reads as nothing instead of raising.\n\n"
                "Example::\n\n    ctx.ignore_resource_not_found = True\n",
            )
        },
    ),
]

#: Protocols the wrapped classes satisfy, seen by the blocking API as the classes.
PROTOCOLS = {
    ("azt._orm.pages", "QueryTable"): "TableClient",
    ("azt._orm.query", "TableProvider"): "TableServiceClient",
    ("azt._uow.query", "QueryHost"): "TableContext",
}

RENAMED = {"aclose": "close", "__aenter__": "__enter__", "__aexit__": "__exit__"}
RENAMED.update({"__aiter__": "__iter__"})
KEPT_DUNDERS = {"__aenter__", "__aexit__", "__aiter__", "__len__"}
ASYNC_ITERATORS = {"AsyncIterator", "AsyncGenerator", "AsyncIterable"}


class GenerationError(Exception):
    pass


# --- reading modules -------------------------------------------------------------------------


_trees: dict[str, ast.Module] = {}


def module_file(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise GenerationError(f"cannot find module {module}")
    return Path(spec.origin)


def tree_of(module: str) -> ast.Module:
    if module not in _trees:
        _trees[module] = ast.parse(module_file(module).read_text(encoding="utf-8"))
    return _trees[module]


def is_package(module: str) -> bool:
    return module_file(module).name == "__init__.py"


def absolute(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    base = parts if is_package(module) else parts[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ModuleNotFoundError, ValueError):
        return False


def _top_level(tree: ast.Module) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.If):  # if TYPE_CHECKING: ...
            out.extend(node.body)
            out.extend(node.orelse)
        else:
            out.append(node)
    return out


def alias_value(module: str, name: str) -> ast.expr | None:
    """The value of ``name`` if ``module`` defines it as a type alias (``X = A | B``,
    ``X: TypeAlias = "A | B"``), else ``None``."""
    for node in _top_level(tree_of(module)):
        value: ast.expr | None = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id == name:
                value = node.value
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == name
            and ast.unparse(node.annotation).endswith("TypeAlias")
        ):
            value = node.value
        if value is None:
            continue
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            if not isinstance(node, ast.AnnAssign):
                return None  # a str constant, not a type alias
            value = ast.parse(value.value, mode="eval").body
        if isinstance(value, ast.BinOp | ast.Subscript | ast.Name | ast.Attribute):
            return value
        return None
    return None


def resolve(module: str, name: str) -> tuple[str, str | None]:
    """Where ``name`` as seen in ``module`` is defined: (module, name), or (module, None)
    when the name is a module itself."""
    for node in _top_level(tree_of(module)):
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            if node.name == name:
                return module, name
        elif isinstance(node, ast.Assign):
            if any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                return module, name
        elif isinstance(node, ast.AnnAssign):
            if isinstance(node.target, ast.Name) and node.target.id == name:
                return module, name
        elif isinstance(node, ast.ImportFrom):
            source = absolute(module, node)
            for alias in node.names:
                if (alias.asname or alias.name) != name:
                    continue
                if is_module(f"{source}.{alias.name}"):
                    return f"{source}.{alias.name}", None
                if source.startswith("azt"):
                    return resolve(source, alias.name)
                return source, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if (alias.asname or alias.name.split(".")[0]) == name:
                    return alias.name, None
    if hasattr(builtins, name):
        return "builtins", name
    raise GenerationError(f"cannot resolve {name!r} in {module}")


# --- the output's names ------------------------------------------------------------------------


class Names:
    """The generated module's imports: each origin gets one local name."""

    def __init__(self) -> None:
        self.local: dict[tuple[str, str], str] = {}
        self.taken = {spec.sync for spec in SPECS} | {
            "Runtime",
            "Wrapper",
            "UNBOUND",
            "runtime_of",
            "track_transport",
            "unwrap",
        }

    def get(self, module: str, name: str) -> str:
        key = (module, name)
        if key not in self.local:
            local = name
            if local in self.taken:
                local = f"_{module.rsplit('.', 1)[-1]}_{name}"
            self.taken.add(local)
            self.local[key] = local
        return self.local[key]

    def get_async(self, spec: Spec) -> str:
        """The local name of a wrapped async class (``_AsyncTableClient``)."""
        key = (spec.module, spec.name)
        if key not in self.local:
            local = f"_{spec.name}" if spec.name.startswith("Async") else f"_Async{spec.name}"
            self.taken.add(local)
            self.local[key] = local
        return self.local[key]

    def imports(self) -> list[str]:
        lines = []
        for (module, name), local in sorted(self.local.items()):
            if module == "builtins":
                continue
            alias = "" if local == name else f" as {local}"
            lines.append(f"from {module} import {name}{alias}")
        return lines


WRAPPED = {(s.module, s.name): s.sync for s in SPECS} | PROTOCOLS


class Rewriter(ast.NodeTransformer):
    """Rewrite one annotation or default: resolved, local names; async iterators become
    ``Iterator``; wrapped classes and their protocols become the blocking twins."""

    def __init__(self, module: str, names: Names) -> None:
        self.module = module
        self.names = names
        self.wrapped: set[str] = set()

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        if isinstance(node.value, ast.Name) and node.value.id in ASYNC_ITERATORS:
            origin = resolve(self.module, node.value.id)
            if origin[0] in ("collections.abc", "typing"):
                item = node.slice.elts[0] if isinstance(node.slice, ast.Tuple) else node.slice
                new = ast.Subscript(
                    value=ast.Name(id="Iterator", ctx=ast.Load()),
                    slice=self.visit(item),
                    ctx=ast.Load(),
                )
                self.wrapped.add("<iterator>")
                return new
        return self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if isinstance(node.value, ast.Name):
            module, name = resolve(self.module, node.value.id)
            if name is None:
                target_module, target = resolve(module, node.attr)
                return self._name(target_module, target or node.attr)
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        module, name = resolve(self.module, node.id)
        if name is None:
            raise GenerationError(f"module {module} used as a value in {self.module}")
        return self._name(module, name)

    def _name(self, module: str, name: str) -> ast.expr:
        if (module, name) in WRAPPED:
            sync = WRAPPED[(module, name)]
            self.wrapped.add(sync)
            return ast.Name(id=sync, ctx=ast.Load())
        expanded = self._alias(module, name)
        if expanded is not None:
            return expanded
        if name == "Self" and module == "typing":
            self.wrapped.add("Self")
        return ast.Name(id=self.names.get(module, name), ctx=ast.Load())

    def _alias(self, module: str, name: str) -> ast.expr | None:
        """A type alias that mentions a wrapped class or protocol (``TableSource =
        QueryTable | TableProvider | str``), written out with the blocking twins in their
        places; other aliases keep their name."""
        if module == "builtins" or not module.startswith("azt"):
            return None
        value = alias_value(module, name)
        if value is None:
            return None
        inner = Rewriter(module, self.names)
        expanded = inner.visit(ast.parse(ast.unparse(value), mode="eval").body)
        if not inner.wrapped:
            return None
        self.wrapped |= inner.wrapped
        return expanded


def rewrite(node: ast.expr | None, module: str, names: Names) -> tuple[str, set[str]]:
    if node is None:
        return "", set()
    rewriter = Rewriter(module, names)
    new = rewriter.visit(ast.parse(ast.unparse(node), mode="eval").body)
    return ast.unparse(new), rewriter.wrapped


# --- docstrings --------------------------------------------------------------------------------

_DOC_RULES = [
    (re.compile(r"\basync with\b"), "with"),
    (re.compile(r"\basync for\b"), "for"),
    (re.compile(r"\bawait\s+"), ""),
    (re.compile(r"\baclose\b"), "close"),
    (re.compile(r"(?<!azt\.)\bAsyncPager\b"), "Pager"),
    (re.compile(r":class:`~?azt\.(TableClient|TableServiceClient|TableContext)`"), r":class:`\1`"),
]


def sync_doc(doc: str) -> str:
    for pattern, replacement in _DOC_RULES:
        doc = pattern.sub(replacement, doc)
    return doc


def doc_literal(doc: str, indent: str) -> str:
    doc = sync_doc(doc).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    lines = doc.strip("\n").split("\n")
    body = "\n".join((indent + line) if line.strip() else "" for line in lines)
    return (
        f'{indent}"""{body.lstrip()}\n{indent}"""\n'
        if len(lines) > 1
        else (f'{indent}"""{lines[0]}"""\n')
    )


# --- members -----------------------------------------------------------------------------------


Function = ast.FunctionDef | ast.AsyncFunctionDef


#: Decorators that keep the method's signature (ParamSpec) and only add behaviour inside the
#: async call (``azt._core.tracing.traced``: the operation span). The blocking twin calls
#: the decorated method, so they are left out of the twin, not refused.
TRANSPARENT_DECORATORS = frozenset({"traced"})


def decorator_names(fn: Function) -> list[str]:
    out = []
    for d in fn.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if isinstance(target, ast.Name) and target.id in TRANSPARENT_DECORATORS:
            continue
        out.append(ast.unparse(d))
    return out


def has_yield(fn: Function) -> bool:
    return any(isinstance(node, ast.Yield | ast.YieldFrom) for node in ast.walk(fn))


@dataclass
class Member:
    name: str
    module: str
    defs: list[Function]  # overloads first, then the implementation (or getter, setter)


def class_node(module: str, name: str) -> ast.ClassDef:
    for node in _top_level(tree_of(module)):
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    raise GenerationError(f"no class {name} in {module}")


def class_chain(module: str, name: str) -> list[tuple[str, ast.ClassDef]]:
    """The class and its azt base classes (most derived first)."""
    node = class_node(module, name)
    chain = [(module, node)]
    for base in node.bases:
        if isinstance(base, ast.Name):
            base_module, base_name = resolve(module, base.id)
            if base_name and base_module.startswith("azt"):
                chain.extend(class_chain(base_module, base_name))
    return chain


def public_instance_attributes(node: ast.ClassDef) -> set[str]:
    found = set()
    for item in ast.walk(node):
        if (
            isinstance(item, ast.Attribute)
            and isinstance(item.ctx, ast.Store)
            and isinstance(item.value, ast.Name)
            and item.value.id == "self"
            and not item.attr.startswith("_")
        ):
            found.add(item.attr)
    for stmt in node.body:
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and not stmt.target.id.startswith("_")
        ):
            found.add(stmt.target.id)
    return found


def members(spec: Spec) -> list[Member]:
    seen: dict[str, Member] = {}
    for module, node in class_chain(spec.module, spec.name):
        extra = public_instance_attributes(node) - set(spec.attributes)
        if extra:
            raise GenerationError(
                f"{spec.name} has public instance attributes {sorted(extra)}: "
                "describe them in Spec.attributes"
            )
        own: dict[str, Member] = {}
        for stmt in node.body:
            if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            name = stmt.name
            if name.startswith("_") and name not in KEPT_DUNDERS and name != "__init__":
                continue
            own.setdefault(name, Member(name, module, [])).defs.append(stmt)
        for name, member in own.items():
            seen.setdefault(name, member)
    return list(seen.values())


# --- emitting ----------------------------------------------------------------------------------


class Emitter:
    def __init__(self) -> None:
        self.names = Names()
        self.lines: list[str] = []

    def out(self, text: str = "") -> None:
        self.lines.append(text)

    def signature(
        self,
        fn: Function,
        module: str,
        *,
        drop_first: bool,
        force: frozenset[str] = frozenset(),
    ) -> tuple[str, list[str], dict[str, set[str]]]:
        """The parameter list (text), the call's argument list, and per parameter the
        wrapped names its annotation mentions (or, for the parameters in ``force``, that an
        overload's annotation of it mentions)."""
        a = fn.args
        params: list[str] = []
        call: list[str] = []
        wrapped: dict[str, set[str]] = {}
        positional = [*a.posonlyargs, *a.args]
        defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults))
        defaults += list(a.defaults)
        first = positional[0].arg if positional else None

        def param(arg: ast.arg, default: ast.expr | None, prefix: str = "") -> str:
            annotation, used = rewrite(arg.annotation, module, self.names)
            wrapped[arg.arg] = used - {"<iterator>", "Self"}
            if arg.arg in force:
                wrapped[arg.arg].add("<overload>")
            text = prefix + arg.arg + (f": {annotation}" if annotation else "")
            if default is not None:
                default_text, _ = rewrite(default, module, self.names)
                text += f" = {default_text}"
            return text

        def value(name: str) -> str:
            return f"unwrap({name})" if wrapped.get(name) else name

        for i, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
            if i == 0 and drop_first:
                params.append(arg.arg)
                continue
            params.append(param(arg, default))
            if i + 1 == len(a.posonlyargs):
                params.append("/")
            call.append(value(arg.arg))
        if a.vararg is not None:
            params.append(param(a.vararg, None, "*"))
            call.append(
                "*" + (f"map(unwrap, {a.vararg.arg})" if wrapped[a.vararg.arg] else a.vararg.arg)
            )
        elif a.kwonlyargs:
            params.append("*")
        for arg, default in zip(a.kwonlyargs, a.kw_defaults, strict=True):
            params.append(param(arg, default))
            call.append(f"{arg.arg}={value(arg.arg)}")
        if a.kwarg is not None:
            params.append(param(a.kwarg, None, "**"))
            call.append(f"**{a.kwarg.arg}")
        del first
        return ", ".join(params), call, wrapped

    def emit_class(self, spec: Spec) -> None:
        node = class_node(spec.module, spec.name)
        generic = ""
        for base in node.bases:
            if isinstance(base, ast.Subscript) and ast.unparse(base.value) == "Generic":
                text, _ = rewrite(base, spec.module, self.names)
                generic = f", {text}"
        self.out()
        self.out()
        self.out(f"class {spec.sync}(Wrapper{generic}):")
        doc = spec.doc if spec.doc is not None else ast.get_docstring(node, clean=True) or ""
        self.out(doc_literal(doc, "    ").rstrip("\n"))
        self.out()
        self.out("    __slots__ = ()")
        async_name = self.names.get_async(spec)
        params_text = ""
        if generic:
            params_text = generic[generic.index("[") : generic.rindex("]") + 1]
        self.out(f"    _inner: {async_name}{params_text}")
        for attr, (typ, writable, adoc) in spec.attributes.items():
            self.out()
            self.out("    @property")
            self.out(f"    def {attr}(self) -> {typ}:")
            self.out(doc_literal(adoc, "        ").rstrip("\n"))
            self.out(f"        inner: {async_name}{params_text} = self._inner")
            self.out(f"        return inner.{attr}")
            if writable:
                self.out()
                self.out(f"    @{attr}.setter")
                self.out(f"    def {attr}(self, value: {typ}) -> None:")
                self.out(f"        self._inner.{attr} = value")
        for member in members(spec):
            self.emit_member(spec, member, async_name)

    def emit_member(self, spec: Spec, member: Member, async_name: str) -> None:
        defs = member.defs
        decorators = [decorator_names(d) for d in defs]
        for names in decorators:
            for d in names:
                if d not in ("overload", "property", "classmethod", "staticmethod") and not (
                    d.endswith(".setter")
                ):
                    raise GenerationError(f"{spec.name}.{member.name}: decorator {d!r}")
        if member.name == "__init__":
            self.emit_init(spec, member, async_name)
            return
        if any("property" in names for names in decorators):
            self.emit_property(spec, member)
            return
        impl = [d for d, names in zip(defs, decorators, strict=True) if "overload" not in names]
        if len(impl) != 1:
            raise GenerationError(f"{spec.name}.{member.name}: {len(impl)} implementations")
        implementation = impl[0]
        for fn, names in zip(defs, decorators, strict=True):
            self.emit_function(spec, member, fn, names, implementation)

    def emit_init(self, spec: Spec, member: Member, async_name: str) -> None:
        fn = member.defs[-1]
        params, call, wrapped = self.signature(fn, member.module, drop_first=True)
        self.out()
        self.out(f"    def __init__({params}) -> None:")
        wrapped_args = [p for p, used in wrapped.items() if used]
        self.out(f"        self._inner = {async_name}({', '.join(call)})")
        found = f"runtime_of({', '.join(wrapped_args)})" if wrapped_args else "None"
        self.out(f"        rt = {found}")
        if spec.owns_runtime:
            self.out("        self._owns = rt is None")
            self.out("        self._rt = Runtime() if rt is None else rt")
        else:
            self.out("        self._owns = False")
            self.out("        self._rt = UNBOUND if rt is None else rt")
        if spec.tracks_transport:
            self.out("        track_transport(self._rt, self._inner)")

    def emit_property(self, spec: Spec, member: Member) -> None:
        for fn in member.defs:
            names = decorator_names(fn)
            returns, used = rewrite(fn.returns, member.module, self.names)
            self.out()
            for d in names:
                self.out(f"    @{d}")
            if "property" in names:
                self.out(f"    def {fn.name}(self) -> {returns}:")
                doc = ast.get_docstring(fn, clean=True)
                if doc:
                    self.out(doc_literal(doc, "        ").rstrip("\n"))
                inner = f"self._inner.{fn.name}"
                result = self.convert(spec, member, returns, used, inner, [])
                self.out(f"        return {result}")
            else:
                params, call, _ = self.signature(fn, member.module, drop_first=True)
                self.out(f"    def {fn.name}({params}) -> None:")
                arg = call[0]
                self.out(f"        self._inner.{fn.name} = {arg}")

    def convert(
        self,
        spec: Spec,
        member: Member,
        returns: str,
        used: set[str],
        value: str,
        wrapped_args: list[str],
    ) -> str:
        """The expression turning the async result ``value`` into the blocking one."""
        wrapped = used - {"<iterator>"}
        rt = "self._rt"
        if wrapped_args:
            rt = f"runtime_of({', '.join(wrapped_args)}) or self._rt"
        if not wrapped and "<iterator>" not in used:
            return value
        if "<iterator>" in used:
            if not returns.startswith("Iterator[") or (wrapped - {"Self"}):
                raise GenerationError(f"{spec.name}.{member.name}: cannot convert {returns}")
            return f"self._rt.iterate({value})"
        if returns == "Self":
            return f"self._from_inner({rt}, {value})"
        head = returns.split("[", 1)[0]
        if head in WRAPPED.values() and head in wrapped and len(wrapped) == 1:
            return f"{head}._from_inner({rt}, {value})"
        # Only the class itself may appear nested (Query[R] -> R is fine).
        if head in WRAPPED.values():
            others = wrapped - {head}
            if not others:
                return f"{head}._from_inner({rt}, {value})"
        raise GenerationError(f"{spec.name}.{member.name}: cannot convert {returns}")

    def overload_wrapped(self, member: Member, impl: Function) -> frozenset[str]:
        """The implementation's parameters that receive a blocking object in some overload
        (same position or same name), though its own annotation may not say so
        (``def add(self, table: object, ...)`` behind ``add(table: str | TableClient, ...)``
        and ``add(entity, /)``): they are unwrapped before the async call."""
        positional = [a.arg for a in [*impl.args.posonlyargs, *impl.args.args]]
        own = set(positional) | {a.arg for a in impl.args.kwonlyargs}
        force: set[str] = set()
        for fn in member.defs:
            if fn is impl:
                continue
            fn_positional = [*fn.args.posonlyargs, *fn.args.args]
            for i, arg in enumerate([*fn_positional, *fn.args.kwonlyargs]):
                _, used = rewrite(arg.annotation, member.module, self.names)
                if not used - {"<iterator>", "Self"}:
                    continue
                if i < len(fn_positional) and i < len(positional):
                    force.add(positional[i])
                if arg.arg in own:
                    force.add(arg.arg)
        return frozenset(force)

    def emit_function(
        self, spec: Spec, member: Member, fn: Function, names: list[str], impl: Function
    ) -> None:
        is_overload = "overload" in names
        is_class = "classmethod" in names
        is_static = "staticmethod" in names
        name = RENAMED.get(fn.name, fn.name)
        force = self.overload_wrapped(member, fn) if fn is impl and len(member.defs) > 1 else None
        params, call, wrapped = self.signature(
            fn, member.module, drop_first=not is_static, force=force or frozenset()
        )
        returns, used = rewrite(fn.returns, member.module, self.names)
        if fn.name == "__aexit__":
            returns, used = "None", set()
        self.out()
        for d in names:
            self.out(f"    @{d}")
        self.out(f"    def {name}({params}) -> {returns}:" + (" ..." if is_overload else ""))
        if is_overload:
            return
        doc = ast.get_docstring(fn, clean=True)
        if doc:
            self.out(doc_literal(doc, "        ").rstrip("\n"))
        wrapped_args = [p for p, u in wrapped.items() if u]
        if is_class or is_static:
            target = f"{self.names.get_async(spec)}.{fn.name}"
        elif len(member.defs) > 1:
            # An overloaded implementation forwards its (union) arguments untyped; callers
            # see the overloads, which mirror the async ones.
            self.out("        inner: Any = self._inner")
            target = f"inner.{fn.name}"
        else:
            target = f"self._inner.{fn.name}"
        value = f"{target}({', '.join(call)})"
        is_async = isinstance(impl, ast.AsyncFunctionDef)
        async_gen = is_async and has_yield(impl)
        if is_async and not async_gen:
            if target == f"inner.{fn.name}" and returns not in ("Any", "None") and not used:
                # The untyped forward would return Any: the coroutine gets the
                # implementation's declared result type, which run() then returns.
                self.out(f"        coro: Coroutine[Any, Any, {returns}] = {value}")
                value = "coro"
            value = f"self._rt.run({value})" if not is_class else f"Runtime().run({value})"
        if fn.name == "__aenter__":
            self.out(f"        {value}")
            self.out("        return self")
            return
        if fn.name in ("aclose", "__aexit__"):
            self.out(f"        {value}")
            self.out("        if self._owns:")
            self.out("            self._rt.close()")
            return
        if is_class:
            if not (spec.owns_runtime and returns.split("[", 1)[0] in (spec.sync, "Self")):
                raise GenerationError(f"{spec.name}.{fn.name}: classmethod returning {returns}")
            rt = f"runtime_of({', '.join(wrapped_args)})" if wrapped_args else "None"
            self.out(f"        inner = {value}")
            self.out(f"        rt = {rt}")
            self.out("        runtime = Runtime() if rt is None else rt")
            self.out("        self = cls._from_inner(runtime, inner, owns=rt is None)")
            if spec.tracks_transport:
                self.out("        track_transport(runtime, inner)")
            self.out("        return self")
            return
        if fn.name == "__aiter__" and spec.items_of is not None:
            self.out(f"        return self._rt.items(self._inner.{spec.items_of}())")
            return
        result = self.convert(spec, member, returns, used, value, wrapped_args)
        if returns == "None":
            self.out(f"        {result}")
        else:
            self.out(f"        return {result}")


HEADER = '''\
# Over 800 lines: generated by scripts/gen_sync.py (one blocking twin per async class).
"""The blocking twins of the async classes. GENERATED by ``scripts/gen_sync.py`` from the
async source: do not edit by hand; re-run the script after changing an async class (the
test suite fails while this file is stale).

Each class drives its async twin on a private event loop (:mod:`azt.sync._runtime`): same
names, parameters, overloads, results, errors and docstrings, blocking.

Example::

    from azt.sync import TableServiceClient

    with TableServiceClient.from_connection_string(conn_str) as service:
        table = service.create_table_if_not_exists("movies")
        table.upsert_entity({"PartitionKey": "Action", "RowKey": "Heat"})
"""

from __future__ import annotations

'''


def generate() -> str:
    emitter = Emitter()
    for spec in SPECS:
        emitter.names.get_async(spec)
    for spec in SPECS:
        emitter.emit_class(spec)
    imports = [
        "from collections.abc import Coroutine, Iterator",
        "from typing import Any, overload",
        "from azt.sync._runtime import UNBOUND, Runtime, Wrapper, runtime_of, "
        "track_transport, unwrap",
        *emitter.names.imports(),
    ]
    all_names = ", ".join(f'"{s.sync}"' for s in sorted(SPECS, key=lambda s: s.sync))
    body = "\n".join(emitter.lines)
    source = HEADER + "\n".join(imports) + f"\n\n__all__ = [{all_names}]\n" + body + "\n"
    return tidy(source)


def tidy(source: str) -> str:
    """ruff: drop unused imports, sort them, format (deterministic, so --check compares)."""
    ruff = Path(sys.executable).with_name("ruff")
    command = [str(ruff)] if ruff.exists() else [sys.executable, "-m", "ruff"]
    name = str(OUTPUT.relative_to(ROOT))
    fixed = subprocess.run(
        [*command, "check", "--fix", "--select", "I,F401", "--stdin-filename", name, "-"],
        input=source,
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    if fixed.returncode not in (0, 1) or not fixed.stdout:
        raise GenerationError(fixed.stderr)
    formatted = subprocess.run(
        [*command, "format", "--stdin-filename", name, "-"],
        input=fixed.stdout,
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return formatted.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    args = parser.parse_args(argv)
    source = generate()
    if args.check:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != source:
            print(f"{OUTPUT.relative_to(ROOT)} is stale: run python scripts/gen_sync.py")
            return 1
        return 0
    OUTPUT.write_text(source, encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
