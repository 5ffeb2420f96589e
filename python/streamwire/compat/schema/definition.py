"""The official client's record DSL (``pulsar.schema.Record`` and its ``Field`` types), so
that models written for ``pulsar-client`` work unchanged.

``Record.schema()`` builds the same Avro definition, key for key and in the same order, as the
official ``Record.schema()``: the registry compares the JSON text, so the same text keeps both
clients on one schema version of a topic. A field is nullable (``["null", T]``) unless made
with ``required=True``; its ``default`` enters the definition only with
``required_default=True``; ``_avro_namespace`` sets the record's namespace and
``_sorted_fields = True`` orders the fields by name.
"""

from __future__ import annotations

import builtins
import copy
import enum
from typing import Any, ClassVar, Optional

__all__ = [
    "Array",
    "Boolean",
    "Bytes",
    "CustomEnum",
    "Double",
    "Field",
    "Float",
    "Integer",
    "Long",
    "Map",
    "Null",
    "Record",
    "String",
]


def _name(x: Any) -> str:
    return str(getattr(x, "__name__", x))


class Field:
    """A field of a :class:`Record`: its Avro type, Python type, default and nullability.

    Args:
        default: the value of a field not given (also written into the definition with
            ``required_default``).
        required: not nullable (the Avro type alone instead of ``["null", type]``).
        required_default: write ``default`` into the definition.
    """

    _avro_type = ""
    _python_types: tuple[type, ...] = ()
    _fallback: Any = None

    def __init__(
        self, default: Any = None, required: bool = False, required_default: bool = False
    ) -> None:
        self._required = required
        self._required_default = required_default
        self._default = None
        if default is not None:
            self._default = self.validate_type("default", default)

    def type(self) -> str:
        """The Avro type name."""
        return self._avro_type

    def python_type(self) -> Any:
        """The Python type(s) a value of this field has."""
        return self._python_types

    def validate_type(self, name: str, val: Any) -> Any:
        """``val`` as stored in field ``name`` (``TypeError`` when it does not fit)."""
        if val is None and not self._required:
            return self.default()
        if not isinstance(val, self.python_type()):
            raise TypeError(
                f"Invalid type '{type(val)}' for field '{name}'. "
                f"Expected: {_name(self.python_type())}"
            )
        return val

    def schema(self) -> Any:
        """This field's Avro schema on its own."""
        return self.schema_info(set())

    def schema_info(self, defined_names: set[str]) -> Any:
        """This field's Avro schema; named types already in ``defined_names`` by name."""
        return self.type()

    def default(self) -> Any:
        """The field's default value."""
        return self._fallback if self._default is None else self._default

    def required_default(self) -> bool:
        """Whether the default is written into the definition."""
        return self._required_default


class Null(Field):
    """Always None (``default``, ``required`` and ``required_default`` as for :class:`Field`)."""

    _avro_type = "null"
    _python_types = (type(None),)

    def validate_type(self, name: str, val: Any) -> Any:
        if val is not None:
            raise TypeError(f"Field {name} is set to be None")
        return val


class Boolean(Field):
    """A ``bool`` (Avro ``boolean``; False when not given) (``default``, ``required`` and
    ``required_default`` as for :class:`Field`)."""

    _avro_type = "boolean"
    _python_types = (bool,)
    _fallback = False


class Integer(Field):
    """A 32-bit ``int`` (Avro ``int``) (``default``, ``required`` and ``required_default`` as for
    :class:`Field`)."""

    _avro_type = "int"
    _python_types = (int,)


class Long(Field):
    """A 64-bit ``int`` (Avro ``long``) (``default``, ``required`` and ``required_default`` as for
    :class:`Field`)."""

    _avro_type = "long"
    _python_types = (int,)


class Float(Field):
    """A 32-bit ``float`` (Avro ``float``) (``default``, ``required`` and ``required_default`` as
    for :class:`Field`)."""

    _avro_type = "float"
    _python_types = (float, int)


class Double(Field):
    """A ``float`` (Avro ``double``) (``default``, ``required`` and ``required_default`` as for
    :class:`Field`)."""

    _avro_type = "double"
    _python_types = (float, int)


class Bytes(Field):
    """``bytes`` (Avro ``bytes``; a ``str`` is kept as its UTF-8) (``default``, ``required`` and
    ``required_default`` as for :class:`Field`)."""

    _avro_type = "bytes"
    _python_types = (bytes, str)

    def validate_type(self, name: str, val: Any) -> Any:
        # A str is kept as its UTF-8 bytes (the official behaviour, without a type check).
        return val.encode() if isinstance(val, str) else val


class String(Field):
    """A ``str`` (Avro ``string``; ``bytes`` are decoded as UTF-8) (``default``, ``required`` and
    ``required_default`` as for :class:`Field`)."""

    _avro_type = "string"
    _python_types = (str, bytes)

    def validate_type(self, name: str, val: Any) -> Any:
        if val is None and not self._required:
            return self.default()
        if not isinstance(val, (str, bytes)):
            raise TypeError(f"Invalid type '{type(val)}' for field '{name}'. Expected a string")
        return val.decode() if isinstance(val, bytes) else val


class CustomEnum(Field):
    """A field holding members of ``enum_type``, an ``enum.Enum`` (written as the member's
    name); ``default``, ``required`` and ``required_default`` as for :class:`Field`."""

    _avro_type = "enum"

    def __init__(
        self,
        enum_type: type[enum.Enum],
        default: Any = None,
        required: bool = False,
        required_default: bool = False,
    ) -> None:
        if not (isinstance(enum_type, type) and issubclass(enum_type, enum.Enum)):
            raise Exception(f"{_name(enum_type)} is not a valid Enum type")
        self.enum_type = enum_type
        self.values = {m.value: m for m in enum_type.__members__.values()}
        super().__init__(default, required, required_default)

    def python_type(self) -> Any:
        return self.enum_type

    def validate_type(self, name: str, val: Any) -> Any:
        if val is None:
            return None
        if type(val) is str:
            if val in self.enum_type.__members__:
                return self.enum_type.__members__[val]
            raise TypeError(f"Invalid enum value '{val}' for field '{name}'")
        if type(val) is int:
            if val in self.values:
                return self.values[val]
            raise TypeError(f"Invalid enum value '{val}' for field '{name}'")
        if not isinstance(val, self.enum_type):
            raise TypeError(
                f"Invalid type '{type(val)}' for field '{name}'. Expected: {_name(self.enum_type)}"
            )
        return val

    def schema_info(self, defined_names: set[str]) -> Any:
        name = self.enum_type.__name__
        if name in defined_names:
            return name
        defined_names.add(name)
        return {"type": "enum", "name": name, "symbols": [m.name for m in self.enum_type]}


def _item_schema(item: Any, defined_names: set[str]) -> Any:
    # Records, arrays and maps nest their whole schema; any other item type is named by its
    # type() (the official rule, kept so that the definitions are the same text).
    if isinstance(item, (Array, Map, Record)):
        return item.schema_info(defined_names)
    return item.type()


def _check_record_or_field(x: Any) -> None:
    if isinstance(x, type) and not issubclass(x, Record) and not isinstance(x, Field):
        raise Exception(f"Argument {_name(x)} is not a Record or a Field")


class Array(Field):
    """A list whose items are all of ``array_type`` (a Field or a Record); ``default``,
    ``required`` and ``required_default`` as for :class:`Field`."""

    _avro_type = "array"
    _python_types = (list,)

    def __init__(
        self,
        array_type: Any,
        default: Any = None,
        required: bool = False,
        required_default: bool = False,
    ) -> None:
        _check_record_or_field(array_type)
        self.array_type = array_type
        super().__init__(default, required, required_default)

    def validate_type(self, name: str, val: Any) -> Any:
        if val is None:
            return None
        super().validate_type(name, val)
        for x in val:
            if not isinstance(x, self.array_type.python_type()):
                raise TypeError(
                    f"Array field {name} items should all be of type {self.array_type.type()}"
                )
        return val

    def schema_info(self, defined_names: set[str]) -> Any:
        return {"type": "array", "items": _item_schema(self.array_type, defined_names)}


class Map(Field):
    """A dict from ``str`` to values of ``value_type`` (a Field or a Record); ``default``,
    ``required`` and ``required_default`` as for :class:`Field`."""

    _avro_type = "map"
    _python_types = (dict,)

    def __init__(
        self,
        value_type: Any,
        default: Any = None,
        required: bool = False,
        required_default: bool = False,
    ) -> None:
        _check_record_or_field(value_type)
        self.value_type = value_type
        super().__init__(default, required, required_default)

    def validate_type(self, name: str, val: Any) -> Any:
        if val is None:
            return None
        super().validate_type(name, val)
        for k, v in val.items():
            if not isinstance(k, str):
                raise TypeError(f"Map keys for field {name} should all be strings")
            if not isinstance(v, self.value_type.python_type()):
                raise TypeError(
                    f"Map values for field {name} should all be of type "
                    f"{_name(self.value_type.python_type())}"
                )
        return val

    def schema_info(self, defined_names: set[str]) -> Any:
        return {"type": "map", "values": _item_schema(self.value_type, defined_names)}


class RecordMeta(type):
    """Collects a Record subclass's fields (in definition order) into ``_fields``."""

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> RecordMeta:
        if name != "Record" or bases:
            fields: dict[str, Any] = {}
            for key, value in namespace.items():
                if isinstance(value, type) and issubclass(value, enum.Enum):
                    value = CustomEnum(value)
                elif isinstance(value, RecordMeta):
                    value = value()  # a nested record class stands for an instance of it
                if isinstance(value, (Record, Field)):
                    fields[key] = value
            namespace["_fields"] = fields
            namespace["_required"] = False
        return super().__new__(mcs, name, bases, namespace)


class Record(metaclass=RecordMeta):
    """Base class of record models: declare fields as class attributes (``Field`` instances,
    nested ``Record`` classes, ``enum.Enum`` classes) and build instances with the fields as
    keyword arguments (``kwargs``; a nested record may be given as a dict).

    As a field of another record, an instance takes ``default``, ``required`` and
    ``required_default`` as :class:`Field` does (``args`` are ignored, as the official
    ``Record`` ignores them).
    """

    _avro_namespace: ClassVar[Optional[str]] = None
    _sorted_fields: ClassVar[bool] = False
    _fields: ClassVar[dict[str, Any]] = {}

    def __init__(
        self,
        default: Any = None,
        required_default: bool = False,
        required: bool = False,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        self._required_default = required_default
        self._default = default
        self._required = required
        for key, field in self._fields.items():
            if key not in kwargs:
                if isinstance(field, Record):
                    setattr(self, key, field)
                else:
                    # The default, set without checking it again.
                    object.__setattr__(self, key, field.default())
                continue
            value = kwargs[key]
            if isinstance(field, Record) and isinstance(value, dict):
                value = _record_from(field, value)
            elif isinstance(field, Array) and isinstance(field.array_type, Record):
                if isinstance(value, list) and value and isinstance(value[0], dict):
                    value = [_record_from(field.array_type, v) for v in value]
            elif isinstance(field, Map) and isinstance(field.value_type, Record):
                if isinstance(value, dict) and value:
                    if isinstance(next(iter(value.values())), dict):
                        value = {k: _record_from(field.value_type, v) for k, v in value.items()}
            setattr(self, key, value)

    @classmethod
    def schema(cls) -> dict[str, Any]:
        """The Avro record definition (what ``AvroSchema`` / ``JsonSchema`` register)."""
        out: Any = cls.schema_info(set())
        return out  # type: ignore[no-any-return]

    @classmethod
    def schema_info(cls, defined_names: set[str]) -> Any:
        """The definition; a name already in ``defined_names`` is referred to by name."""
        full = f"{cls._avro_namespace}.{cls.__name__}" if cls._avro_namespace else cls.__name__
        if full in defined_names:
            return full
        defined_names.add(full)
        schema: dict[str, Any] = {"type": "record", "name": cls.__name__}
        if cls._avro_namespace is not None:
            schema["namespace"] = cls._avro_namespace
        names = sorted(cls._fields) if cls._sorted_fields else list(cls._fields)
        fields = []
        for name in names:
            field = cls._fields[name]
            ftype = field.schema_info(defined_names)
            if not field._required:
                ftype = ["null", ftype]
            if field.required_default():
                default = field.default()
                if isinstance(default, enum.Enum):
                    default = default.name
                fields.append({"name": name, "default": default, "type": ftype})
            else:
                fields.append({"name": name, "type": ftype})
        schema["fields"] = fields
        return schema

    def __setattr__(self, key: str, value: Any) -> None:
        if key in ("_default", "_required_default", "_required"):
            object.__setattr__(self, key, value)
            return
        if key not in self._fields:
            raise AttributeError(f"Cannot set undeclared field {key} on record")
        object.__setattr__(self, key, self._fields[key].validate_type(key, value))

    def __eq__(self, other: object) -> bool:
        return all(getattr(self, f) == getattr(other, f, object()) for f in self._fields)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    # Mutable and compared by value, so unhashable (as the official Record).
    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        return str(self.__dict__)

    def __repr__(self) -> str:
        fields = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({fields})"

    def type(self) -> str:
        """The record's name (its type, as a field of another record)."""
        return type(self).__name__

    def python_type(self) -> builtins.type:
        """The record's class."""
        return builtins.type(self)

    def validate_type(self, name: str, val: Any) -> Any:
        """``val`` as the value of field ``name``, of this record type (``TypeError`` when it is
        not)."""
        if val is None and not self._required:
            return self.default()
        if not isinstance(val, type(self)):
            raise TypeError(
                f"Invalid type '{type(val)}' for sub-record field '{name}'. "
                f"Expected: {type(self).__name__}"
            )
        return val

    def default(self) -> Any:
        """The default, as a field of another record."""
        return self._default

    def required_default(self) -> bool:
        """Whether the default is written into the definition, as a field."""
        return self._required_default


def _record_from(template: Record, values: dict[str, Any]) -> Record:
    # A nested record given as a dict: a copy of the field's record, filled from the dict.
    out = copy.copy(template)
    Record.__init__(out, **values)
    return out


def record_types(cls: type[Record]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every record class (by full name) and enum class (by name) in ``cls``'s definition: the
    types decoded values are built as."""
    records: dict[str, Any] = {}
    enums: dict[str, Any] = {}

    def visit(item: Any) -> None:
        if isinstance(item, Record) or (isinstance(item, type) and issubclass(item, Record)):
            rc = item if isinstance(item, type) else type(item)
            full = f"{rc._avro_namespace}.{rc.__name__}" if rc._avro_namespace else rc.__name__
            if full in records:
                return
            records[full] = rc
            for f in rc._fields.values():
                visit(f)
        elif isinstance(item, CustomEnum):
            enums.setdefault(item.enum_type.__name__, item.enum_type)
        elif isinstance(item, Array):
            visit(item.array_type)
        elif isinstance(item, Map):
            visit(item.value_type)

    visit(cls)
    return records, enums
