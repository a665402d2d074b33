"""``frozen_dataclass``: frozen, slotted dataclasses that cost almost nothing to import.

``@dataclass(frozen=True, slots=True)`` compiles six methods per class from source text
and needs the ``dataclasses`` module (and ``copy``) loaded: about 0.15 ms a class plus
1.2 ms once, most of what ``import interaction`` used to cost. Here each class writes its
``__init__`` out (so it sits in the bytecode cache, storing each field with
:data:`set_field`, or with the slot setters of :func:`slot_setters` in a class built for
every question), and ``__repr__``, ``__eq__``, ``__hash__``, pickling, ``__replace__``
(for ``copy.replace``) and the frozen ``__setattr__`` are shared functions over the field
names. ``dataclasses`` itself is loaded only when someone introspects a class: the first
read of ``__dataclass_fields__`` or ``__dataclass_params__`` (which ``fields()``,
``replace()``, ``asdict()`` and ``is_dataclass()`` make) takes both from a standard
dataclass of the same declaration. mypy reads the standard decorator and ``field``, so it
checks these as frozen, slotted dataclasses; ``tests/test_types.py`` holds every class to
a standard dataclass.
"""

from __future__ import annotations

import operator
import reprlib
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final, TypeAlias, TypeVar

__all__ = ["field", "frozen_dataclass", "set_field", "slot_setters"]

_T = TypeVar("_T")

set_field: Final = object.__setattr__
"""How ``__init__`` methods store a field past the frozen ``__setattr__``."""

_Setter: TypeAlias = Callable[[object, object], None]

_introspecting: Final = threading.RLock()
"""Held while a class's dataclass metadata is stored (see ``_Introspected``)."""

_MISSING: Final = object()
"""No default: the field must be given (``dataclasses.MISSING`` without its module)."""


class _FieldSpec:
    """What :func:`field` records at run time, for the standard ``field`` when introspected."""

    __slots__ = ("compare", "default", "default_factory")

    def __init__(self, default: object, default_factory: object, compare: bool) -> None:
        self.default = default
        self.default_factory = default_factory
        self.compare = compare


def _field(
    *, default: object = _MISSING, default_factory: object = _MISSING, compare: bool = True
) -> _FieldSpec:
    return _FieldSpec(default, default_factory, compare)


def _frozen_dataclass(*, frozen: bool, slots: bool) -> Callable[[type[_T]], type[_T]]:
    assert frozen, "the vocabulary is frozen"
    assert slots, "the vocabulary is slotted"
    return _frozen_slotted


if TYPE_CHECKING:
    from dataclasses import dataclass as frozen_dataclass
    from dataclasses import field
else:
    frozen_dataclass = _frozen_dataclass
    field = _field


def _is_class_var(annotation: object) -> bool:
    # The modules that use frozen_dataclass defer their annotations, so each is a string.
    assert isinstance(annotation, str), "declare with `from __future__ import annotations`"
    return annotation.startswith("ClassVar[")


def _frozen_slotted(cls: type[_T]) -> type[_T]:
    """What ``@dataclass(frozen=True, slots=True)`` makes of ``cls``, compiling nothing."""
    assert "__init__" in cls.__dict__, f"{cls.__name__} must write out its __init__"
    assert cls.__bases__ == (object,), f"{cls.__name__} must not inherit"
    declared = {
        name: cls.__dict__.get(name, _MISSING)
        for name, annotation in cls.__annotations__.items()
        if not _is_class_var(annotation)
    }
    names = tuple(declared)
    compared = tuple(
        name
        for name, spec in declared.items()
        if not (isinstance(spec, _FieldSpec) and not spec.compare)
    )
    namespace = {
        key: value
        for key, value in cls.__dict__.items()
        if key not in declared and key not in ("__dict__", "__weakref__")
    }
    namespace["__slots__"] = names
    namespace["__match_args__"] = names
    namespace["__repr__"] = _repr_of(names)
    namespace["__eq__"] = _eq_of(compared)
    namespace.setdefault("__hash__", _hash_of(compared))
    namespace["__setattr__"] = _frozen_setattr
    namespace["__delattr__"] = _frozen_delattr
    namespace.setdefault("__getstate__", _getstate_of(names))
    namespace.setdefault("__setstate__", _setstate_of(names))
    namespace.setdefault("__replace__", _replace)
    namespace["__dataclass_fields__"] = _Introspected(declared)
    namespace["__dataclass_params__"] = _Introspected(declared)
    slotted: type[_T] = type(cls.__name__, cls.__bases__, namespace)
    slotted.__qualname__ = cls.__qualname__
    return slotted


class _Introspected:
    """A class's ``__dataclass_fields__`` and ``__dataclass_params__``, made on first read.

    They come from the standard decorator applied to the class's declaration, so they are
    what ``@dataclass(frozen=True, slots=True)`` would have made; both then replace this
    descriptor on the class.
    """

    __slots__ = ("declared", "name", "owner")

    def __init__(self, declared: Mapping[str, object]) -> None:
        self.declared = declared
        self.name = ""
        self.owner: type = object

    def __set_name__(self, owner: type, name: str) -> None:
        self.owner, self.name = owner, name

    def __get__(self, instance: object, owner: type) -> object:
        # Made for the class that declared the fields, whichever class is read (a subclass
        # inherits them, as from a standard dataclass), and stored once: threads reading
        # at the same time may each make them, but all get the ones stored first. Nothing
        # is made under the lock, so a read from a finalizer or a signal handler that
        # lands meanwhile cannot wait on it.
        declarer = self.owner
        if declarer.__dict__[self.name] is self:
            standard = self._standard(declarer)
            with _introspecting:
                if declarer.__dict__[self.name] is self:
                    for name in ("__dataclass_fields__", "__dataclass_params__"):
                        setattr(declarer, name, getattr(standard, name))
        made: object = declarer.__dict__[self.name]
        return made

    def _standard(self, owner: type) -> type:
        import dataclasses  # only for introspection; see the module docstring

        namespace: dict[str, object] = {
            "__module__": owner.__module__,  # where a ClassVar annotation is resolved
            "__qualname__": owner.__qualname__,
            "__doc__": owner.__doc__,
            "__annotations__": owner.__annotations__,
        }
        for name, annotation in owner.__annotations__.items():
            if _is_class_var(annotation):
                namespace[name] = getattr(owner, name)
        for name, spec in self.declared.items():
            if isinstance(spec, _FieldSpec):
                options: dict[str, object] = {"compare": spec.compare}
                if spec.default is not _MISSING:
                    options["default"] = spec.default
                if spec.default_factory is not _MISSING:
                    options["default_factory"] = spec.default_factory
                namespace[name] = dataclasses.field(**options)  # type: ignore[call-overload]
            elif spec is not _MISSING:
                namespace[name] = spec
        declaration = type(owner.__name__, (), namespace)
        return dataclasses.dataclass(frozen=True, slots=True)(declaration)


def slot_setters(cls: type) -> tuple[_Setter, ...]:
    """Each field's slot ``__set__``, in field order, for the ``__init__`` of a class built
    for every question: a third faster than ``set_field``, which looks the name up first."""
    return tuple(getattr(cls, name).__set__ for name in cls.__match_args__)  # type: ignore[attr-defined]


def _values_of(names: tuple[str, ...]) -> Callable[[object], tuple[object, ...]]:
    """The field values of an object as a tuple, read by one C call."""
    if len(names) == 1:  # attrgetter of one name returns the value, not a tuple
        (name,) = names
        return lambda value: (getattr(value, name),)
    return operator.attrgetter(*names)


def _repr_of(names: tuple[str, ...]) -> Callable[[object], str]:
    @reprlib.recursive_repr()
    def __repr__(self: object) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__qualname__}({shown})"

    return __repr__


def _eq_of(names: tuple[str, ...]) -> Callable[[object, object], bool]:
    values = _values_of(names)

    def __eq__(self: object, other: object) -> bool:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def _hash_of(names: tuple[str, ...]) -> Callable[[object], int]:
    values = _values_of(names)
    return lambda self: hash(values(self))


def _getstate_of(names: tuple[str, ...]) -> Callable[[object], list[object]]:
    return lambda self: [getattr(self, name) for name in names]


def _setstate_of(names: tuple[str, ...]) -> Callable[[object, list[object]], None]:
    def __setstate__(self: object, state: list[object]) -> None:
        for name, value in zip(names, state, strict=True):
            set_field(self, name, value)

    return __setstate__


def _replace(self: object, /, **changes: object) -> object:
    # What copy.replace() calls (Python 3.13+), as a standard dataclass defines it there.
    for name in self.__match_args__:  # type: ignore[attr-defined]
        if name not in changes:
            changes[name] = getattr(self, name)
    return type(self)(**changes)


def _frozen_setattr(self: object, name: str, value: object) -> None:
    # For every name: a non-field would otherwise meet the slots' confusing AttributeError.
    from dataclasses import FrozenInstanceError  # the error path only

    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: object, name: str) -> None:
    from dataclasses import FrozenInstanceError  # the error path only

    raise FrozenInstanceError(f"cannot delete field {name!r}")
