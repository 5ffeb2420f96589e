"""griffe extensions for the API reference (mkdocs.yml, mkdocstrings' `extensions`): the
build stops when the engine's docstrings are missing, instead of leaving its classes out; and
each face's page shows the calls written once with `@two_faces` as that face's own methods.

The engine's classes are documented in the Rust sources (PyO3 doc comments, compiled into
`streamwire._native`; tests/test_docstrings.py checks that each names its parameters) and typed
in `python/streamwire/_native.pyi`. griffe reads both when the compiled module sits beside the
stub: the stub's signatures, the module's docstrings. Without a built module it finds only the
stub, whose classes have no docstring, and mkdocstrings silently drops undocumented objects --
so the reference would lose `Client`, `Producer`, ... with no warning. `make docs` builds the
module first (its `setup` prerequisite).
"""

from __future__ import annotations

from typing import Any, Optional

import griffe


class NativeDocstrings(griffe.Extension):
    """Fail the load of `streamwire` when `streamwire._native` came without docstrings."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        if pkg.name != "streamwire":
            return
        client = pkg["_native"]["Client"]
        if client.docstring is None:
            raise RuntimeError(
                "streamwire._native has no docstrings: the compiled extension is not beside "
                "python/streamwire/_native.pyi (run `make setup`, or copy a built "
                "_native*.so there) -- the API reference would miss every engine class"
            )


class TwoFaces(griffe.Extension):
    """Show a ``@two_faces`` call (``streamwire._faces``) on each face's page as it is there.

    Such a call is defined once, in a private base class both faces inherit, as a generator
    annotated ``-> Steps[T]``. Read statically, both pages would show that base's generator;
    here every public class that is a face (``Blocking`` or ``Awaiting`` in its MRO) gets
    its own copy of each such call, returning ``T`` (a type variable of the base replaced by
    the class's own argument: ``_ClientBase[Writer, Reader]``), labelled ``async`` on the
    asyncio face.
    """

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        if pkg.name != "streamwire":
            return
        for cls in _classes(pkg):
            mro = cls.mro()
            faces = {base.name for base in mro if base.path.startswith("streamwire._faces.")}
            if not faces:
                continue
            for base in mro:
                for name, member in base.members.items():
                    if name in cls.members or not _is_two_faces(member):
                        continue
                    cls.set_member(name, _face_copy(member, base, cls, "Awaiting" in faces))


def _classes(mod: griffe.Module) -> list[griffe.Class]:
    found: list[griffe.Class] = []
    for member in mod.members.values():
        if member.is_alias:
            continue
        if isinstance(member, griffe.Module):
            found.extend(_classes(member))
        elif isinstance(member, griffe.Class):
            found.append(member)
    return found


def _is_two_faces(member: Any) -> bool:
    return isinstance(member, griffe.Function) and any(
        str(d.value) == "two_faces" for d in member.decorators
    )


def _args(expr: Any) -> list[Any]:
    """The subscript arguments of ``X[a, b]`` (``[a, b]``), else []."""
    if not isinstance(expr, griffe.ExprSubscript):
        return []
    sl = expr.slice
    return list(sl.elements) if isinstance(sl, griffe.ExprTuple) else [sl]


def _bound(returns: Any, base: griffe.Class, cls: griffe.Class) -> Any:
    """``returns`` with a type variable of ``base`` replaced by ``cls``'s argument for it."""
    params: list[str] = []
    for b in base.bases:
        if isinstance(b, griffe.ExprSubscript) and str(b.left) in ("Generic", "typing.Generic"):
            params += [str(a) for a in _args(b)]
    if str(returns) not in params:
        return returns
    for b in cls.bases:
        if isinstance(b, griffe.ExprSubscript) and str(b.left).split(".")[-1] == base.name:
            args = _args(b)
            if len(args) == len(params):
                return args[params.index(str(returns))]
    return returns


def _face_copy(
    fn: griffe.Function, base: griffe.Class, cls: griffe.Class, awaiting: bool
) -> griffe.Function:
    returns: Optional[Any] = fn.returns
    if isinstance(returns, griffe.ExprSubscript) and str(returns.left) == "Steps":
        returns = _bound(returns.slice, base, cls)
    parameters = griffe.Parameters(
        *(
            griffe.Parameter(p.name, annotation=p.annotation, kind=p.kind, default=p.default)
            for p in fn.parameters
        )
    )
    copy = griffe.Function(
        fn.name,
        lineno=fn.lineno,
        endlineno=fn.endlineno,
        parameters=parameters,
        returns=returns,
    )
    if fn.docstring is not None:
        copy.docstring = griffe.Docstring(
            fn.docstring.value,
            lineno=fn.docstring.lineno,
            endlineno=fn.docstring.endlineno,
            parent=copy,
            parser=fn.docstring.parser,
            parser_options=fn.docstring.parser_options,
        )
    copy.labels |= {"async"} if awaiting else set()
    return copy
