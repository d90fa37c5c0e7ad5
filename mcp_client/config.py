"""Servers from a config file, in the two shapes users already keep them in.

Claude Desktop, Cursor and Claude Code write::

    {"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"],
                             "env": {"TZ": "UTC"}, "cwd": "/srv"}}}

and VS Code writes ``{"servers": {"time": {"type": "stdio", "command": ...}}}``.
:func:`load` reads either into :class:`ConfiguredServer` values, in file order,
each with the :class:`~mcp_client.transport.Spawn` that starts it: its ``env``
is *added to* the usual minimal environment, as ``Spawn.env`` always is (see
:func:`mcp_client.transport.child_environment`), never the harness's own.

``${VAR}``, ``${env:VAR}`` (VS Code's spelling) and ``${VAR:-default}`` are
expanded from the environment in ``command``, ``args``, ``env`` values and
``cwd``; as in the shell, the default stands in for a variable that is unset
or empty. An unset ``${VAR}`` without a default, or any other ``${...}`` (VS
Code's ``${input:...}``, ``${workspaceFolder}``), is a :class:`ConfigError`
naming it and the entry: a path or key silently left unexpanded would fail
later, far from its cause. A relative ``cwd`` is the harness's, as for
``Spawn``.

An entry that is not stdio (``"type": "http"`` or ``"sse"``, or one with a
``url``) is left out with one warning line in :attr:`LoadedConfig.skipped`,
as a server that fails to start would be; a file with no usable entry is an
error. Every failure -- a missing file, bad JSON, a wrong field type -- is one
:class:`ConfigError` whose ``str()`` is one line naming the file and the entry.

Used by the CLI (``--config``) and the code-mode runner, never by the client:
which servers may be spawned is the harness's decision. Nothing here runs
anything; the one side effect is reading the file.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Tuple

from .errors import ConfigError, CorruptionReport
from .jsonvalue import JsonValue, parse
from .text import escape, truncate
from .transport import Spawn

__all__ = ["ConfiguredServer", "LoadedConfig", "ConfigError", "load", "MAX_CONFIG_BYTES"]

#: A config file larger than this is refused unread (a few servers take a few KiB).
MAX_CONFIG_BYTES = 4 * 1024 * 1024

#: ``${NAME}``, ``${env:NAME}``, ``${NAME:-default}``; anything else after ``${`` is refused.
_REFERENCE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
#: Characters of a name or a reason shown in a message.
_SHOWN = 80


@dataclass(frozen=True)
class ConfiguredServer:
    """One stdio server of the file: its key there and how to start it."""

    name: str
    spawn: Spawn


@dataclass(frozen=True)
class LoadedConfig:
    """The usable servers, in file order, and one warning line per entry left out."""

    servers: Tuple[ConfiguredServer, ...]
    skipped: Tuple[str, ...] = ()

    def names(self) -> Tuple[str, ...]:
        return tuple(server.name for server in self.servers)


def load(path: str, environ: Optional[Mapping[str, str]] = None) -> LoadedConfig:
    """The servers of the config file at ``path``; ``${VAR}`` from ``environ``
    (default ``os.environ``). Raises :class:`ConfigError`, one line, for any fault."""
    environ = os.environ if environ is None else environ
    entries = _entries(path, _read(path))
    servers: List[ConfiguredServer] = []
    skipped: List[str] = []
    for name, entry in entries.items():
        why_not = _not_stdio(path, name, entry)
        if why_not is not None:
            skipped.append(why_not)
        elif isinstance(entry, dict):  # _not_stdio refused any other
            servers.append(ConfiguredServer(name, _spawn(_Entry(path, name, environ), entry)))
    if not servers:
        raise ConfigError(
            path,
            None,
            "no stdio server to start"
            + (" (%d left out: %s)" % (len(skipped), "; ".join(skipped)) if skipped else ""),
        )
    return LoadedConfig(tuple(servers), tuple(skipped))


# ----------------------------------------------------------------------------- the file


def _read(path: str) -> JsonValue:
    try:
        with open(path, "rb") as stream:
            data = stream.read(MAX_CONFIG_BYTES + 1)
    except OSError as e:
        raise ConfigError(path, None, "cannot read it: %s" % (e.strerror or e)) from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(path, None, "larger than %d bytes" % MAX_CONFIG_BYTES)
    try:
        return parse(data)
    except CorruptionReport as e:
        raise ConfigError(path, None, "not JSON: %s" % e.reason) from None


def _entries(path: str, document: JsonValue) -> Dict[str, JsonValue]:
    """The ``{name: entry}`` object of either shape."""
    if not isinstance(document, dict):
        raise ConfigError(path, None, "the file must hold a JSON object")
    keys = [key for key in ("mcpServers", "servers") if key in document]
    if not keys:
        raise ConfigError(
            path,
            None,
            'no "mcpServers" (Claude Desktop, Cursor, Claude Code) or "servers" (VS Code) object',
        )
    if len(keys) == 2:
        raise ConfigError(path, None, 'both "mcpServers" and "servers": which one is meant?')
    entries = document[keys[0]]
    if not isinstance(entries, dict):
        raise ConfigError(path, None, '"%s" must be an object of servers by name' % keys[0])
    return entries


def _not_stdio(path: str, name: str, entry: JsonValue) -> Optional[str]:
    """The warning line for an entry that is not a stdio server, ``None`` for one that is."""
    if not name:
        raise ConfigError(path, name, "a server needs a name (its key is empty)")
    if not isinstance(entry, dict):
        raise ConfigError(path, name, "the entry must be an object, not %s" % _kind(entry))
    if "type" in entry:  # given, the type decides (VS Code writes "stdio" beside a command)
        kind = entry["type"]
        if kind == "stdio":
            return None
        what = '"type" is %s' % (_show(kind) if isinstance(kind, str) else _kind(kind))
    elif "url" in entry:  # Claude Code and Cursor: a url alone means a remote server
        what = 'it has a "url"'
    else:
        return None
    return '%s: server "%s" left out: %s, and only stdio servers are started' % (
        _show(path),
        _show(name),
        what,
    )


# ----------------------------------------------------------------------------- an entry


@dataclass(frozen=True)
class _Entry:
    """Where a value comes from, for its messages, and what expands it."""

    path: str
    name: str
    environ: Mapping[str, str]

    def fail(self, reason: str) -> ConfigError:
        return ConfigError(self.path, self.name, reason)

    def expand(self, field: str, text: str) -> str:
        """``text`` with every ``${...}`` replaced; refused when one cannot be."""

        def value_of(match: "re.Match[str]") -> str:
            variable, default = match.group(1), match.group(2)
            found = self.environ.get(variable)
            if found:  # the shell's ":-": the default also stands in for an empty value
                return found
            if default is not None:
                return default
            if found is not None:  # set but empty, no default: empty, as the shell has it
                return found
            raise self.fail(
                "%s: ${%s} is not set (give it a value, or a default as "
                "${%s:-default})" % (field, variable, variable)
            )

        expanded = _REFERENCE.sub(value_of, text)
        leftover = _REFERENCE.sub("", text).find("${")
        if leftover >= 0:
            raise self.fail(
                "%s: %s is not a ${VAR} or ${VAR:-default} this reader expands"
                % (field, _show(_REFERENCE.sub("", text)[leftover:]))
            )
        return expanded


def _spawn(where: _Entry, entry: Dict[str, JsonValue]) -> Spawn:
    command = _string(where, entry, "command")
    if command is None or not command:
        raise where.fail('no "command" (a stdio server needs one)')
    cwd = _string(where, entry, "cwd")
    return Spawn(command, _args(where, entry), _env(where, entry), cwd or None)


def _string(where: _Entry, entry: Dict[str, JsonValue], field: str) -> Optional[str]:
    value = entry.get(field)
    if value is None:
        return None
    if not isinstance(value, str):
        raise where.fail('"%s" must be a string, not %s' % (field, _kind(value)))
    return _checked(where, field, where.expand(field, value))


def _args(where: _Entry, entry: Dict[str, JsonValue]) -> Tuple[str, ...]:
    value = entry.get("args")
    if value is None:
        return ()
    if not isinstance(value, list):
        raise where.fail('"args" must be a list of strings, not %s' % _kind(value))
    args: List[str] = []
    for index, arg in enumerate(value):
        if not isinstance(arg, str):
            raise where.fail('"args"[%d] must be a string, not %s' % (index, _kind(arg)))
        field = "args[%d]" % index
        args.append(_checked(where, field, where.expand(field, arg)))
    return tuple(args)


def _env(where: _Entry, entry: Dict[str, JsonValue]) -> Optional[Dict[str, str]]:
    value = entry.get("env")
    if value is None:
        return None
    if not isinstance(value, dict):
        raise where.fail('"env" must be an object of strings, not %s' % _kind(value))
    env: Dict[str, str] = {}
    for key, text in value.items():
        if not key or "=" in key or "\0" in key:
            raise where.fail('"env" key %s is not a variable name' % _show(repr(key)))
        if not isinstance(text, str):
            raise where.fail('"env"."%s" must be a string, not %s' % (_show(key), _kind(text)))
        field = 'env.%s' % _show(key)
        env[key] = _checked(where, field, where.expand(field, text))
    return env or None


def _checked(where: _Entry, field: str, text: str) -> str:
    # No process argument, variable or path can hold a NUL (execve's strings end at one).
    if "\0" in text:
        raise where.fail("%s holds a NUL character" % field)
    return text


def _kind(value: JsonValue) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return "a string" if isinstance(value, str) else "a number"


def _show(text: str) -> str:
    """File text for a one-line message: printable kept, the rest escaped, capped."""
    # cut before it is read: an escape is never shorter than its character
    shown = "".join(char if char.isprintable() else escape(char) for char in text[: _SHOWN + 1])
    return truncate(shown, _SHOWN)
