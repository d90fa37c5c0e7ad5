"""Frozen values without ``dataclasses`` at import: the base of the package's public values.

``import mcp_client`` must not load :mod:`dataclasses` (which loads ``inspect``,
``ast``, ``dis`` and ``tokenize``) nor compile five or six generated methods for
each of its twenty values. A :class:`Frozen` subclass names its fields once, in
``__slots__`` (in order), writes its own ``__init__`` (the signature, defaults
and checks a reader sees), and gets the rest of what a frozen dataclass gave,
shared here rather than generated per class:

- frozen: assigning or deleting any attribute raises
  :class:`dataclasses.FrozenInstanceError` (an :class:`AttributeError`), as a
  frozen dataclass does (``dataclasses`` is imported then, on that error path);
- ``==`` and ``hash`` by the fields' tuple, between instances of the same class
  only; ``repr`` as ``Name(field=value, ...)``; ``__match_args__``;
- pickling and :mod:`copy` (the class called again with the fields, so a value
  is checked again as it is rebuilt);
- :func:`dataclasses.fields`, :func:`dataclasses.replace`,
  :func:`dataclasses.asdict` and :func:`dataclasses.is_dataclass`, through a
  ``__dataclass_fields__`` built on first use (the first read imports
  :mod:`dataclasses` and builds the field table from the annotations and the
  ``__init__`` signature).

A field left out of comparison (and hashing) is named in ``_uncompared``, one
left out of hashing only in ``_unhashed``, one left out of the repr in
``_unshown``. To a type checker a subclass is a frozen dataclass (PEP 681's
``dataclass_transform``): assigning a field is an error there too.
"""

from __future__ import annotations

from operator import attrgetter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dataclasses import Field
    from typing import Any, Callable, ClassVar, Dict, Protocol, Tuple

    from typing_extensions import dataclass_transform

    Setter = Callable[[Any, Any], None]

    class Values(Protocol):
        """An instance to the tuple of some of its fields' values (never bound)."""

        def __call__(self, instance: Any, /) -> Tuple[Any, ...]: ...
else:

    def dataclass_transform(**_options: object) -> object:  # the type checker's alone
        return lambda cls: cls


__all__ = ["Frozen", "setters"]


def _values(names: Tuple[str, ...]) -> Values:
    """A function from an instance to the tuple of these fields' values."""
    if len(names) > 1:
        return attrgetter(*names)  # a tuple for 2+ names
    if names:
        one = attrgetter(names[0])
        return lambda instance: (one(instance),)
    return lambda instance: ()


class _LazyFields:
    """``__dataclass_fields__``, built for a class the first time it is read."""

    def __get__(self, instance: object, owner: type) -> Dict[str, Field[Any]]:
        fields = _dataclass_fields(owner)
        if owner is not Frozen:
            type.__setattr__(owner, "__dataclass_fields__", fields)  # once per class
        return fields


def _dataclass_fields(cls: Any) -> Dict[str, Field[Any]]:
    """The field table ``dataclasses`` reads, as ``@dataclass(frozen=True)`` would
    have made it for ``cls``: types from its annotations, defaults from its
    ``__init__``, compare / hash / repr from ``_uncompared`` and friends."""
    import dataclasses
    import inspect

    if cls is Frozen:
        return {}
    parameters = inspect.signature(cls.__init__).parameters
    annotations = cls.__dict__.get("__annotations__", {})
    spec = []
    for name in cls._fields:
        options: Dict[str, Any] = {
            "compare": name not in cls._uncompared,
            "repr": name not in cls._unshown,
            "hash": False if name in cls._unhashed else None,
        }
        default = parameters[name].default
        if default is not inspect.Parameter.empty:
            options["default"] = default
        spec.append((name, annotations.get(name, "Any"), dataclasses.field(**options)))
    # A stand-in made by dataclasses itself, so the Field objects are exactly its own.
    shadow = dataclasses.make_dataclass(cls.__name__, spec, init=False, repr=False, eq=False)
    fields: Dict[str, Field[Any]] = getattr(shadow, "__dataclass_fields__")
    return fields


@dataclass_transform(frozen_default=True)
class Frozen:
    """A frozen value with fields named by ``__slots__``; see the module doc."""

    __slots__ = ()

    #: Fields left out of ``==`` and ``hash`` / of ``hash`` only / of ``repr``.
    _uncompared: ClassVar[Tuple[str, ...]] = ()
    _unhashed: ClassVar[Tuple[str, ...]] = ()
    _unshown: ClassVar[Tuple[str, ...]] = ()
    # Set for each subclass by __init_subclass__:
    _fields: ClassVar[Tuple[str, ...]] = ()
    _shown: ClassVar[Tuple[str, ...]] = ()
    _compared: ClassVar[Values]
    _hashed: ClassVar[Values]
    _setters: ClassVar[Tuple[Setter, ...]] = ()
    if TYPE_CHECKING:
        __dataclass_fields__: ClassVar[Dict[str, Field[Any]]]
    else:
        __dataclass_fields__ = _LazyFields()

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        fields = tuple(cls.__dict__["__slots__"])
        compared = tuple(name for name in fields if name not in cls._uncompared)
        cls._fields = fields
        type.__setattr__(cls, "__match_args__", fields)  # as a dataclass has it
        cls._shown = tuple(name for name in fields if name not in cls._unshown)
        # (A staticmethod is callable from Python 3.10; 3.9's typeshed says it is not.)
        cls._compared = staticmethod(_values(compared))  # type: ignore[assignment,unused-ignore]
        hashed = tuple(name for name in compared if name not in cls._unhashed)
        cls._hashed = staticmethod(_values(hashed))  # type: ignore[assignment,unused-ignore]
        cls._setters = setters(cls)

    def _assign(self, *values: Any) -> None:
        """Set every field, in order: for an ``__init__`` (bypasses the freeze)."""
        for setter, value in zip(self._setters, values):
            setter(self, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise _frozen("cannot assign to field %r" % name)

    def __delattr__(self, name: str) -> None:
        raise _frozen("cannot delete field %r" % name)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return bool(self._compared(self) == self._compared(other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._hashed(self))

    def __repr__(self) -> str:
        shown = ["%s=%r" % (name, getattr(self, name)) for name in self._shown]
        return "%s(%s)" % (self.__class__.__qualname__, ", ".join(shown))

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:
        return self.__class__, tuple(getattr(self, name) for name in self._fields)


def setters(cls: type) -> Tuple[Setter, ...]:
    """The slot setters of ``cls``'s fields, in order: what a hot ``__init__``
    (or a decoder building instances itself) calls to fill a frozen value."""
    slots = cls.__dict__["__slots__"]
    return tuple(cls.__dict__[name].__set__ for name in slots)


def _frozen(message: str) -> AttributeError:
    from dataclasses import FrozenInstanceError  # only when a value is misused

    return FrozenInstanceError(message)
