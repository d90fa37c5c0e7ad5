"""Code mode's check of a program before it runs: ``compile()``, then mypy.

``compile()`` always runs, in a child Python of its own (``-I -S``: no site, no
user path) whose address space is capped (:data:`COMPILE_MEMORY`) before it reads
the program, within :data:`COMPILE_TIMEOUT` seconds: a 1 MiB program can make
``compile()`` take half a gigabyte and seconds of the GIL, which the runner (and
every run ``serve`` holds) must not pay. Where mypy is importable (the optional
``check`` extra; the runtime stays standard library only), mypy checks the program
against the written ``cap`` package, in a child of its own session, within
:data:`MYPY_TIMEOUT` seconds (past it, the child's group is killed and the check
says so) and :data:`MYPY_MEMORY` bytes of address space, with **no configuration
file** (``--config-file=``): mypy otherwise reads ``mypy.ini``, ``pyproject.toml`` or
``setup.cfg`` in every directory up from the check's (``/tmp`` among them, which
anyone may write) and the user's own config, and a config's ``plugins`` are code
that mypy runs.

**What the check says: what would fail when the program runs, or read wrong data**
(:data:`MYPY_FLAGS`): an unknown name, module, function or attribute, a wrong
keyword, a missing argument, an argument of the wrong type, a key a typed result
does not have (a ``TypedDict``'s, a ``ToolOutput``'s), a comparison that is never
true; in the bodies of functions without annotations too (``--check-untyped-defs``:
a model's helpers seldom have them). **Not what ``--strict`` adds about the
program's own annotations**, which every correct program a model writes trips
over: a bare ``list`` or ``dict`` (type arguments), a function without
annotations, a call to one, ``Any`` returned, a variable whose type is not spelt
(``rows = []``), a name given a value of another type (``data = json.loads(data)``,
``--allow-redefinition``), a library without stubs. Errors in modules the program
imports are not its own: they are not shown (``--follow-imports=silent``).

Each message is ``line N: <compile's or mypy's words>``, mypy's cut to the
program's: the notes that list overloads or point at docs are dropped, a
``ToolOutput``'s type is named as the surface names it, a key a ``ToolOutput``
does not have says its keys, a call that does not fit its generated function
gives that function's signature (a note), and a type argument mypy cannot infer
for a call that runs (``dict(out)``) is no message.

:func:`warm_program` imports every server's module and the standard library modules
programs use most: checked once (``CodeMode.warm_check``, which ``serve`` starts in
the background), it leaves mypy's cache holding them, and the first check of a
program is as fast as the later ones.

Both children are a :class:`~mcp_client._os.bounded.Brood`'s, the runner's: each dies
with the runner, even by SIGKILL (a lifeline), and the runner's close kills them at
once. At most :data:`MAX_CHECKS` checks run at once (the runner refuses one more):
each holds a core and up to :data:`MYPY_MEMORY` bytes while it runs.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from typing import AbstractSet, Iterable, List, Mapping, Optional, Tuple

from .._os.bounded import Brood
from ..errors import TransportFailed

#: Seconds mypy may take (a first check of a large package takes several).
MYPY_TIMEOUT = 120.0
#: Bytes of address space mypy may map (a check of the cap package maps ~300 MB).
MYPY_MEMORY = 4 * 1024 * 1024 * 1024
#: Seconds, and bytes of address space, ``compile()`` of one program may take.
COMPILE_TIMEOUT = 60.0
COMPILE_MEMORY = 2 * 1024 * 1024 * 1024

#: The child that compiles: the program on stdin (UTF-8, lone surrogates kept), the one
#: message or nothing on stdout. Its own failures (MemoryError) are messages too.
_COMPILE = r"""
import sys
source = sys.stdin.buffer.read().decode("utf-8", "surrogatepass")
try:
    compile(source, sys.argv[1], "exec", dont_inherit=True)
except SyntaxError as e:
    sys.stdout.write("line %s: %s" % (e.lineno or 0, e.msg))
except MemoryError:
    sys.stdout.write("line 0: the program is too large to compile")
except (ValueError, OverflowError, RecursionError) as e:
    sys.stdout.write("line 0: %s" % e)
"""
#: Checks at once (each a compile() and a mypy child): one more is refused, busy.
MAX_CHECKS = 2
#: How many of mypy's messages are kept.
MAX_MESSAGES = 50

#: mypy's flags for a check (the module doc says why each): no config file; what would
#: fail, not the program's own annotations.
MYPY_FLAGS = (
    "--config-file=",
    "--no-error-summary",
    "--no-pretty",
    "--show-column-numbers",
    "--show-error-codes",
    "--hide-error-context",
    "--check-untyped-defs",
    "--strict-equality",
    "--allow-redefinition",
    "--disable-error-code=var-annotated",
    "--disable-error-code=import-untyped",
    "--follow-imports=silent",
)

#: The standard library modules programs import most, held in the cache by :func:`warm`.
WARM_MODULES = (
    "base64",
    "collections",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "functools",
    "hashlib",
    "itertools",
    "json",
    "math",
    "os",
    "pathlib",
    "random",
    "re",
    "statistics",
    "string",
    "sys",
    "textwrap",
    "time",
    "typing",
    "urllib.parse",
)

_LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+):(?:\d+:)? (?P<kind>error|note): (?P<text>.*)$")


def compiled(
    program: str,
    filename: str,
    brood: Optional[Brood] = None,
    timeout: float = COMPILE_TIMEOUT,
) -> Optional[str]:
    """``None``, or the one message ``compile()`` gives (in a bounded child of ``brood``,
    whose end kills it; of one of its own when none is given)."""
    brood = Brood() if brood is None else brood
    argv = (sys.executable, "-I", "-S", "-c", _COMPILE, filename)
    data = program.encode("utf-8", "surrogatepass")
    try:
        ended = brood.run(argv, data, memory=COMPILE_MEMORY, timeout=timeout)
    except TransportFailed as e:
        return "line 0: compile() could not start: %s" % e
    if ended is None:
        return "line 0: compile() did not finish within %g s" % timeout
    status, out = ended
    if status != 0 and not out:
        return "line 0: compile() could not finish (exit status %d)" % status
    return out.decode("utf-8", "replace") or None


def have_mypy() -> bool:
    return importlib.util.find_spec("mypy") is not None


def warm_program(modules: Iterable[str]) -> str:
    """A program that imports :data:`WARM_MODULES` and the ``cap.mcp`` ``modules``:
    checked once, it leaves mypy's cache holding them all."""
    lines = ["import %s" % name for name in WARM_MODULES]
    lines += ["import cap.mcp.%s" % name for name in sorted(modules)]
    return "\n".join(lines) + "\n"


def mypy(
    path: str,
    lib: str,
    cache: str,
    brood: Brood,
    timeout: float = MYPY_TIMEOUT,
    signatures: Optional[Mapping[Tuple[str, str], str]] = None,
    outputs: AbstractSet[str] = frozenset(),
) -> Tuple[bool, List[str]]:
    """mypy (:data:`MYPY_FLAGS`) on ``path`` with ``lib`` on its path: (passed, messages);
    a child of ``brood``, whose end kills it. ``signatures``: each generated function's
    signature line, by its module and name, for the note a call that does not fit it
    gets; ``outputs``: the modules' ``ToolOutput`` type names (``Generated.outputs``),
    whose keys the runtime gives as attributes too, so reading one so is no message."""
    argv = [sys.executable, "-m", "mypy", *MYPY_FLAGS, "--cache-dir", cache, path]
    env = dict(os.environ, MYPYPATH=lib)
    env.pop("PYTHONPATH", None)  # the program sees only cap, as it does when it runs
    try:
        ended = brood.run(
            tuple(argv),
            b"",
            memory=MYPY_MEMORY,
            timeout=timeout,
            env=env,
            cwd=os.path.dirname(path),
            merge_stderr=True,
        )
    except TransportFailed as e:
        return False, ["line 0: mypy could not start: %s" % e]
    if ended is None:
        return False, ["line 0: mypy did not finish within %g s; the check is incomplete" % timeout]
    status, out = ended
    messages = _messages(out.decode("utf-8", "replace"), path, signatures or {}, outputs)
    return status == 0 or not messages, messages


def _messages(
    output: str,
    path: str,
    signatures: Mapping[Tuple[str, str], str],
    outputs: AbstractSet[str] = frozenset(),
) -> List[str]:
    messages: List[str] = []
    dropping = False  # within a dropped message's notes
    called_at = "line 0"  # where the last error is: its notes are about it
    for line in output.splitlines():
        found = _LINE.match(line)
        if found is None:
            if line.strip() and "Success" not in line:
                messages.append("line 0: mypy: %s" % line.strip())
            continue
        text, note = found.group("text"), found.group("kind") == "note"
        if not note:
            dropping = any(noise in text for noise in _NOISE) or _read_as_attribute(text, outputs)
        if dropping or (note and text.lstrip().startswith(_DROPPED_NOTES)):
            continue
        where = "line %s" % found.group("line")
        if os.path.basename(found.group("file")) != os.path.basename(path):
            where = "%s (in %s)" % (where, found.group("file"))
        defined = _defined(text, found.group("file"), path) if note else None
        if defined is not None:  # where the function is: its signature instead, at the call
            shown = signatures.get(defined)
            if shown is not None:
                messages.append("%s: note: the signature: %s" % (called_at, shown))
            continue
        called_at = where if not note else called_at
        text = _cut_to_the_program(text, outputs)
        messages.append("%s: %s%s" % (where, "note: " if note else "", text))
        called = None if note else _CALLED.search(text)
        if called is not None:
            shown = _unique_signature(signatures, called.group(1))
            if shown is not None:
                messages.append("%s: note: the signature: %s" % (where, shown))
    return _once(messages)[:MAX_MESSAGES]


#: What mypy says of a program that runs: no message (a type argument it cannot infer).
_NOISE = ("Cannot infer value of type parameter",)
#: A ToolOutput's key read as an attribute, which the runtime's ToolOutput answers.
_OUTPUT_ATTRIBUTE = re.compile(r'"(\w+)" has no attribute "(?:text|data|content)"')


def _read_as_attribute(text: str, outputs: AbstractSet[str]) -> bool:
    """Whether ``text`` says no more than that a ToolOutput's key was read as an attribute
    (mypy then takes it as Any: no other message follows from it)."""
    found = _OUTPUT_ATTRIBUTE.match(text)
    return found is not None and found.group(1) in outputs


#: Notes that list overloads or point at docs: not what a program needs.
_DROPPED_NOTES = ("Possible overload variant", "def ", "<", "See https://")
_DEFINED_IN = re.compile(r'"(\w+)" defined in "(cap\.mcp\.\w+)"')
#: mypy before 2.0 says where instead, at the generated module's line.
_DEFINED_HERE = re.compile(r'"(\w+)" defined here$')
_MODULE_FILE = re.compile(r"/cap/mcp/(\w+)\.pyi?$")


def _defined(text: str, file: str, program: str) -> Optional[Tuple[str, str]]:
    """(module, function) of a note that says where a function of ``cap.mcp`` is defined;
    ``("", "")`` for such a note about a file not the program's nor a server module's (it
    is dropped: a path of the runner's says nothing to the program); else None."""
    named = _DEFINED_IN.match(text)
    if named is not None:
        return named.group(2), named.group(1)
    here = _DEFINED_HERE.match(text)
    if here is None or os.path.basename(file) == os.path.basename(program):
        return None
    module = _MODULE_FILE.search(file)
    return ("cap.mcp." + module.group(1), here.group(1)) if module else ("", "")


#: A call of a named function that does not fit it (a keyword, an argument, a count).
_CALLED = re.compile(
    r'(?:keyword argument "\w+" for|Argument "?\w*"? to|argument "\w+" in call to|'
    r'arguments? for|positional arguments? in call to) "(\w+)"'
)
#: A key a ToolOutput does not have (its type is a TypedDict of the three).
_OUTPUT_KEY = re.compile(r'TypedDict "(?P<type>\w+)" has no key (?P<key>"[^"]*")(?P<rest>.*)$')


def _cut_to_the_program(text: str, outputs: AbstractSet[str]) -> str:
    """``text``, a key a ``ToolOutput`` does not have said with the keys it has."""
    found = _OUTPUT_KEY.match(text)
    if found is None or found.group("type") not in outputs:
        return text
    return 'a ToolOutput has the keys "text", "data" and "content" (attributes too), not %s%s' % (
        found.group("key"),
        found.group("rest"),
    )


def _unique_signature(signatures: Mapping[Tuple[str, str], str], function: str) -> Optional[str]:
    """The signature of the one generated function named ``function``, if only one is."""
    found = [shown for (_, name), shown in signatures.items() if name == function]
    return found[0] if len(found) == 1 else None


def _once(messages: List[str]) -> List[str]:
    """Each message once, in order (a signature note for two errors on one line)."""
    return list(dict.fromkeys(messages))
