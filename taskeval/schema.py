"""JSON Schemas that ``taskeval schema`` prints: the result, the evidence bundle and the config file.

The config schema is generated from the pydantic model :class:`taskeval.config.Settings`, so it
cannot drift from what the loader accepts; editors use it through the ``yaml-language-server``
comment documented in docs/config.md. The validators that JSON Schema cannot express (a regex that
compiles) stay the loader's job; everything else (unknown keys, types, ranges, signal ids) is in
the schema.
"""

from __future__ import annotations

from typing import Any, Literal

SchemaName = Literal["result", "bundle", "config"]
SCHEMA_NAMES: tuple[SchemaName, ...] = ("result", "bundle", "config")
SCHEMA_BASE = "https://taskeval.dev/schema"
CONFIG_SCHEMA_FILE = "taskeval.schema.json"  # the name docs/config.md suggests beside the config


def config_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of ``.github/taskeval.yml``."""
    from taskeval.config import Settings
    from taskeval.signals import signal_specs

    schema = Settings.model_json_schema(by_alias=True)
    ids = sorted(spec.id for spec in signal_specs())
    props = schema["properties"]
    # Known signal ids let an editor complete and flag typos (the loader only warns about them).
    props["signal_weights"]["propertyNames"] = {"enum": ids}
    props["signal_weights"]["additionalProperties"] = {"type": "number", "minimum": 0, "maximum": 10}
    props["disabled_signals"]["items"] = {"type": "string", "enum": ids}
    schema["title"] = "taskeval configuration (.github/taskeval.yml)"
    return schema


def schema_of(what: SchemaName) -> dict[str, Any]:
    """The named schema, with ``$schema`` and ``$id`` set."""
    version = "1"  # the config file's
    if what == "config":
        schema = config_schema()
    else:
        from taskeval.models import SCHEMA_VERSION, EvaluationResult, EvidenceBundle

        model = EvidenceBundle if what == "bundle" else EvaluationResult
        schema = model.model_json_schema(by_alias=True)
        version = SCHEMA_VERSION  # the bundle's, which the result carries
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"{SCHEMA_BASE}/{what}-v{version}.json"
    return schema
