"""MkDocs hook: the HTTP API reference pages, rendered at build time from the OpenAPI documents the oracle and the
learner produce (``app.openapi()``, the same document each serves at ``/openapi.json``).

Nothing is fetched: both apps are built in-process on a throwaway SQLite file, and their documents are rendered to
Markdown here (operations grouped by tag, each with its parameters, request body, answers and their bodies, then
every schema as a table of fields). A field or operation added to either service appears in the docs at the next
build; one that lost its description shows as such.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

# The pages this hook writes: path in the site, the service, and the command that serves it.
PAGES = {
    "reference/http-oracle.md": ("oracle", "budgetlab serve oracle", 8000),
    "reference/http-learner.md": ("learner", "budgetlab serve learner", 8001),
}
METHODS = ("get", "post", "put", "patch", "delete")


def oracle_document(workdir: Path) -> dict[str, Any]:
    from client.dashboards import with_page
    from server.app import create_app
    from server.config import Settings

    settings = Settings(database_url=f"sqlite:///{workdir / 'ledger.db'}", batch_process=False)
    # Migrated: the oracle checks at start that it can write its ledger.
    app = create_app(settings)
    try:
        return with_page(app, "oracle.html").openapi()
    finally:
        # Never served, the app never runs its lifespan's end, which closes what it opened: its connections, and the
        # ledger's checkpoint thread, which would checkpoint the start-up check's write a second later in a folder
        # this hook has removed by then ("WAL checkpoint failed ... unable to open database file" in `make docs`).
        app.state.sessions.close_connections()


def learner_document(workdir: Path) -> dict[str, Any]:
    from client.dashboards import with_page
    from learner.service.app import create_app
    from learner.service.settings import LearnerSettings

    settings = LearnerSettings(database_url=f"sqlite:///{workdir / 'runs.db'}")
    return with_page(create_app(settings), "learner.html").openapi()


DOCUMENTS: dict[str, Callable[[Path], dict[str, Any]]] = {"oracle": oracle_document, "learner": learner_document}


def anchor(name: str) -> str:
    return "schema-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def prose(text: Any) -> str:
    """A description shown as written: ``<w, x>`` is not a tag, nor ``||w*||_2 ... w*`` emphasis; its `code` spans
    stay code."""
    parts = re.split(r"(`[^`]*`)", str(text).strip())
    return "".join(part if part.startswith("`") else
                   re.sub(r"([\\*_\[\]])", r"\\\1",
                          part.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))
                   for part in parts)


def cell(text: Any) -> str:
    """A description that stays inside one table cell."""
    return re.sub(r"\s*\n\s*", " ", prose(text)).replace("|", "\\|")


def type_of(schema: dict[str, Any]) -> str:
    """A schema's type in a few words, a referenced schema as a link to its table."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{anchor(name)})"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(type_of(option) for option in schema[key])
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return type_of(schema["allOf"][0])
    if "enum" in schema:
        return " \\| ".join(f"`{json.dumps(value)}`" for value in schema["enum"])
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        return f"list of {type_of(items)}" if items else "list"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {type_of(schema['additionalProperties'])}"
    if isinstance(kind, list):
        return " or ".join(kind)
    return kind or "any"


def bounds(schema: dict[str, Any]) -> str:
    words = {"minimum": "≥ {}", "exclusiveMinimum": "> {}", "maximum": "≤ {}", "exclusiveMaximum": "< {}",
             "minLength": "length ≥ {}", "maxLength": "length ≤ {}", "minItems": "≥ {} items",
             "maxItems": "≤ {} items", "pattern": "matches `{}`"}
    found = [template.format(schema[key]) for key, template in words.items() if key in schema]
    for option in schema.get("anyOf", []):
        found += [template.format(option[key]) for key, template in words.items() if key in option]
    return ", ".join(found)


def default_of(schema: dict[str, Any]) -> str:
    return f"`{json.dumps(schema['default'])}`" if "default" in schema else ""


def body_schema(content: dict[str, Any]) -> str:
    """The media types of a body and their schemas: ``application/json`` [Model](#...)."""
    return "; ".join(f"`{media}` {type_of(spec['schema'])}" if spec.get("schema") else f"`{media}`"
                     for media, spec in content.items())


def example_of(content: dict[str, Any], schemas: dict[str, Any]) -> Any:
    """The body's example: the media type's own, else the first of its schema's ``examples``."""
    spec = content.get("application/json", {})
    if "example" in spec:
        return spec["example"]
    for example in (spec.get("examples") or {}).values():
        if isinstance(example, dict) and "value" in example:
            return example["value"]
    schema = spec.get("schema", {})
    if "$ref" in schema:
        schema = schemas.get(schema["$ref"].rsplit("/", 1)[-1], {})
    examples = schema.get("examples")
    return examples[0] if isinstance(examples, list) and examples else None


def render_operation(method: str, path: str, op: dict[str, Any], schemes: dict[str, Any],
                     schemas: dict[str, Any], root_security: list[dict[str, Any]]) -> list[str]:
    lines = [f"### {method.upper()} `{path}`", ""]
    if op.get("summary"):
        lines += [f"**{op['summary']}**", ""]
    if op.get("description"):
        lines += [prose(op["description"]), ""]
    # An operation without credentials of its own takes the document's (the oracle states its optional key there).
    security = [name for requirement in op.get("security", root_security) for name in requirement]
    if security:
        described = [cell(schemes.get(name, {}).get("description", name)) for name in security]
        lines += ["Credentials: " + "; or ".join(described), ""]
    parameters = op.get("parameters", [])
    if parameters:
        lines += ["| parameter | in | type | required | default | description |", "|---|---|---|---|---|---|"]
        for p in parameters:
            schema = p.get("schema", {})
            extra = bounds(schema)
            lines.append(f"| `{p['name']}` | {p['in']} | {type_of(schema)} | {'yes' if p.get('required') else 'no'} "
                         f"| {default_of(schema)} | {cell(p.get('description', schema.get('description', '')))}"
                         f"{' (' + extra + ')' if extra else ''} |")
        lines.append("")
    body = op.get("requestBody")
    if body:
        lines += [f"Request body{' (required)' if body.get('required') else ''}: {body_schema(body['content'])}", ""]
        example = example_of(body["content"], schemas)
        if example is not None:
            lines += ["```json", json.dumps(example, indent=2, ensure_ascii=False), "```", ""]
    lines += ["| status | meaning | body |", "|---|---|---|"]
    for status, answer in op.get("responses", {}).items():
        content = answer.get("content", {})
        shown = body_schema(content) if content else ""
        lines.append(f"| {status} | {cell(answer.get('description', ''))} | {shown} |")
    return [*lines, ""]


def render_schema(name: str, schema: dict[str, Any]) -> list[str]:
    lines = [f"### {name} {{#{anchor(name)}}}", ""]
    if schema.get("description"):
        lines += [prose(schema["description"]), ""]
    properties = schema.get("properties")
    if not properties:
        return [*lines, f"Type: {type_of(schema)}.", ""]
    required = set(schema.get("required", []))
    lines += ["| field | type | required | default | description |", "|---|---|---|---|---|"]
    for field, spec in properties.items():
        extra = bounds(spec)
        lines.append(f"| `{field}` | {type_of(spec)} | {'yes' if field in required else 'no'} | {default_of(spec)} "
                     f"| {cell(spec.get('description', ''))}{' (' + extra + ')' if extra else ''} |")
    return [*lines, ""]


def render(service: str, command: str, port: int, doc: dict[str, Any]) -> str:
    info = doc["info"]
    schemes = doc.get("components", {}).get("securitySchemes", {})
    lines = [f"# {info['title']}: HTTP API", "",
             f"Generated when this site was built, from the OpenAPI {doc['openapi']} document the {service} "
             f"produces. A running {service} (`{command}`) serves the same document at `/openapi.json` and an "
             f"interactive page at `/docs` (`http://localhost:{port}/docs`). What changed in it, and when: the "
             "[changelog](changelog.md).", ""]
    if info.get("description"):
        lines += [prose(info["description"]), ""]
    schemas = doc.get("components", {}).get("schemas", {})
    by_tag: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for path, operations in doc["paths"].items():
        for method, op in operations.items():
            if method in METHODS:
                by_tag.setdefault((op.get("tags") or ["other"])[0], []).append((method, path, op))
    for tag, operations in by_tag.items():
        lines += [f"## {tag.capitalize()}", ""]
        for method, path, op in operations:
            lines += render_operation(method, path, op, schemes, schemas, doc.get("security", []))
    if schemas:
        lines += ["## Schemas", ""]
        for name in sorted(schemas):
            lines += render_schema(name, schemas[name])
    return "\n".join(lines)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    with tempfile.TemporaryDirectory(prefix="budgetlab-docs-") as workdir:
        for page, (service, command, port) in PAGES.items():
            doc = DOCUMENTS[service](Path(workdir))
            files.append(File.generated(config, page, content=render(service, command, port, doc)))
    return files
