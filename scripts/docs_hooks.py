"""MkDocs hooks (mkdocs.yml `hooks:`): pages generated at build time from the repository's own
sources, so the site never holds a second copy that could drift.

- `gateway-api.md`: the PIP-64 gateway's endpoints, parameters, bodies and answers, rendered
  from `rust/streamwire-gateway/openapi.json` (the document the gateway serves at
  `GET /openapi.json`, which a Rust unit test holds to the router both ways);
- `openapi.json`: that document itself, published beside the page;
- `changelog.md`: `CHANGELOG.md` from the repository root.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
OPENAPI = ROOT / "rust" / "streamwire-gateway" / "openapi.json"
CHANGELOG = ROOT / "CHANGELOG.md"

_METHODS = ("get", "post", "put", "delete", "patch")


def _resolve(doc: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """Follow one local `$ref` (`#/components/...`)."""
    ref = node.get("$ref")
    if not isinstance(ref, str):
        return node
    target: Any = doc
    for part in ref.removeprefix("#/").split("/"):
        target = target[part]
    resolved: dict[str, Any] = target
    return resolved


def _text(text: object) -> str:
    # The document's prose is plain text: "Bearer <token>" must not become an HTML tag.
    return html.escape(str(text), quote=False)


def _cell(text: object) -> str:
    # A Markdown table cell: no raw pipes or line breaks.
    return _text(text).replace("|", "\\|").replace("\n", " ")


def _schema_name(doc: dict[str, Any], schema: dict[str, Any]) -> str:
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        return f"[`{name}`](#{name.lower()})"
    kind = schema.get("type", "object")
    if kind == "array":
        return f"array of {_schema_name(doc, schema.get('items', {}))}"
    if "enum" in schema:
        return f"`{kind}`: " + ", ".join(f"`{v}`" for v in schema["enum"])
    return f"`{kind}`"


def render_openapi(doc: dict[str, Any]) -> str:
    """The OpenAPI document as a Markdown reference page."""
    info = doc["info"]
    out = [
        "# Gateway HTTP API (OpenAPI)",
        "",
        _text(info.get("description", "")),
        "",
        f"Generated at build time from `rust/streamwire-gateway/openapi.json` "
        f"(OpenAPI {doc['openapi']}, API version {info['version']}); the gateway serves the "
        "same document at `GET /openapi.json`, and it is published here as "
        "[openapi.json](openapi.json) for code generators. The guide is [here](gateway.md).",
        "",
    ]
    for path, item in doc["paths"].items():
        for method in _METHODS:
            op = item.get(method)
            if op is None:
                continue
            out += [f"## `{method.upper()} {path}`", "", _text(op.get("summary", "")), ""]
            if op.get("description"):
                out += [_text(op["description"]), ""]
            params = [_resolve(doc, p) for p in op.get("parameters", [])]
            if params:
                out += ["| parameter | in | required | type | meaning |", "|---|---|---|---|---|"]
                for p in params:
                    out.append(
                        f"| `{p['name']}` | {p['in']} | {'yes' if p.get('required') else 'no'} "
                        f"| {_cell(_schema_name(doc, p.get('schema', {})))} "
                        f"| {_cell(p.get('description', ''))} |"
                    )
                out.append("")
            body = op.get("requestBody")
            if body is not None:
                body = _resolve(doc, body)
                out.append("Request body" + (" (required)" if body.get("required") else "") + ":")
                out.append("")
                for ctype, media in body.get("content", {}).items():
                    out.append(f"- `{ctype}`: {_schema_name(doc, media.get('schema', {}))}")
                out.append("")
            out += ["| answer | meaning |", "|---|---|"]
            for code, resp in op.get("responses", {}).items():
                resp = _resolve(doc, resp)
                out.append(f"| {code} | {_cell(resp.get('description', ''))} |")
            out.append("")
    out += ["## Schemas", ""]
    for name, schema in doc.get("components", {}).get("schemas", {}).items():
        out += [f"### {name}", ""]
        if schema.get("description"):
            out += [_text(schema["description"]), ""]
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        if props:
            out += ["| field | type | required | meaning |", "|---|---|---|---|"]
            for field, spec in props.items():
                out.append(
                    f"| `{field}` | {_cell(_schema_name(doc, spec))} "
                    f"| {'yes' if field in required else 'no'} "
                    f"| {_cell(spec.get('description', ''))} |"
                )
            out.append("")
        else:
            out += [f"Type: {_schema_name(doc, schema)}", ""]
    return "\n".join(out)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    doc = json.loads(OPENAPI.read_text())
    files.append(File.generated(config, "gateway-api.md", content=render_openapi(doc)))
    files.append(File.generated(config, "openapi.json", content=OPENAPI.read_text()))
    files.append(File.generated(config, "changelog.md", content=CHANGELOG.read_text()))
    return files
