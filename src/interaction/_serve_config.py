"""``interaction serve --config FILE``: a TOML file that gives ``serve`` its flags.

Every flag of ``serve`` has a key, derived from the parser (so a flag added later has one
too): its long name without the dashes, the others as underscores (``--max-streams`` is
``max_streams``). A repeatable flag takes an array, a flag without a value (``--migrate``)
a boolean, a flag with a type a value of it (``port = 8765``), any other a string. A string
flag also takes ``KEY_env = "VARIABLE"``, its value from that environment variable (a
database URL with a password, say). Two tables read better than the flags they stand for:
``[users.NAME]`` (``token_env = "VARIABLE"``) for ``--user NAME=VARIABLE``, and ``[groups]``
(``ops = ["alice", "bob"]``) for ``--group ops=alice,bob`` where ``serve`` has ``--group``.
A flag given on the command line replaces its key (a repeatable flag's values replace the
file's array; they do not add to it).

Secrets are never written in the file: a key that looks as if it held one, or a URL with a
password, is refused. Every fault is a :class:`ConfigError` whose one line names the file
and the key.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from typing import Final

__all__ = ["MAX_CONFIG_BYTES", "ConfigError", "config_keys", "file_values", "with_config"]

MAX_CONFIG_BYTES: Final = 1 << 20
"""The largest config file read (1 MiB); a larger one is refused unread."""
_VARIABLE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)
_SECRET_KEY: Final = re.compile(r"token|secret|password|passwd|credential|api_?key", re.I)
_PASSWORD_IN_URL: Final = re.compile(r"://[^/@\s]*:[^/@\s]*@|\bpassword\s*=", re.I)
_TOKEN_ENV: Final = "token_env"


class ConfigError(ValueError):
    """A config file that cannot be used: the message is one line, naming the key."""


def _long_name(action: argparse.Action) -> str | None:
    return next((name for name in action.option_strings if name.startswith("--")), None)


def _kind(action: argparse.Action) -> str | None:
    """``"flag"`` (takes no value), ``"array"`` (repeatable), ``"value"`` (one value), or
    ``None`` for an action no key can stand for."""
    if isinstance(action, argparse.BooleanOptionalAction):
        return "flag"
    if isinstance(action, argparse._StoreTrueAction):
        return "flag"
    if action.nargs is not None:
        return None
    if type(action) is argparse._AppendAction:
        return "array"
    if type(action) is argparse._StoreAction:
        return "value"
    return None


def config_keys(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """Each flag of ``parser`` by its key (``--max-streams`` -> ``max_streams``), but
    ``--help`` and ``--config``."""
    keys: dict[str, argparse.Action] = {}
    for action in parser._actions:
        name = _long_name(action)
        if name is None or name in ("--help", "--config") or _kind(action) is None:
            continue
        keys[name[2:].replace("-", "_")] = action
    return keys


def _what(value: object) -> str:
    """What a TOML value is, for a message (never the value: it may be a secret)."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return "a date or time"


def _item(key: str, action: argparse.Action, value: object, *, written: bool = True) -> object:
    """One value of ``action`` as the command line would give it (``written`` in the file,
    where no password may be, or from the environment); ``ConfigError`` otherwise."""
    convert = action.type
    result: object
    if convert is int:
        if type(value) is not int:
            raise ConfigError(f"{key}: must be an integer, got {_what(value)}")
        result = value
    elif convert is float:
        if type(value) not in (int, float):
            raise ConfigError(f"{key}: must be a number, got {_what(value)}")
        assert isinstance(value, (int, float))
        result = float(value)
    else:
        if not isinstance(value, str):
            raise ConfigError(f"{key}: must be a string, got {_what(value)}")
        if written and _PASSWORD_IN_URL.search(value):
            raise ConfigError(
                f"{key}: a password is never written in the file: name the environment"
                f" variable that holds the value with {key.partition('[')[0]}_env"
            )
        result = value
        if callable(convert):
            try:
                result = convert(value)
            except (ValueError, TypeError, argparse.ArgumentTypeError) as exc:
                raise ConfigError(f"{key}: {exc}") from None
    if action.choices is not None and result not in action.choices:
        choices = ", ".join(repr(choice) for choice in action.choices)
        raise ConfigError(f"{key}: must be one of {choices}")
    return result


def _value(key: str, action: argparse.Action, value: object) -> object:
    kind = _kind(action)
    if kind == "flag":
        if not isinstance(value, bool):
            raise ConfigError(f"{key}: must be true or false, got {_what(value)}")
        return value
    if kind == "array":
        if not isinstance(value, list):
            raise ConfigError(f"{key}: must be an array, got {_what(value)}")
        return [_item(f"{key}[{index}]", action, item) for index, item in enumerate(value)]
    return _item(key, action, value)


def _variable(key: str, value: object, env: Mapping[str, str]) -> str:
    """The value of the environment variable that ``key`` names."""
    if not isinstance(value, str):
        raise ConfigError(f"{key}: must be the name of an environment variable, got {_what(value)}")
    if not _VARIABLE.fullmatch(value):
        raise ConfigError(f"{key}: {value[:64]!r} is not the name of an environment variable")
    found = env.get(value, "")
    if not found:
        raise ConfigError(f"{key}: ${value} is not set")
    return found


def _unknown(key: str, known: Mapping[str, object]) -> ConfigError:
    leaf = key.rpartition(".")[2]
    if _SECRET_KEY.search(leaf):
        return ConfigError(
            f"{key}: a secret is never written in the file: name the environment variable"
            " that holds it (token_env for a user's token)"
        )
    close = difflib.get_close_matches(leaf, list(known), n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return ConfigError(f"{key}: unknown key{hint}")


def _users(value: object, env: Mapping[str, str]) -> list[str]:
    """``[users.NAME]`` tables as ``--user`` values: ``NAME=VARIABLE`` or ``NAME``."""
    if not isinstance(value, dict):
        raise ConfigError(f"users: must be a table of users ([users.NAME]), got {_what(value)}")
    specs = []
    for name, table in value.items():
        key = f"users.{name}"
        if "=" in name or "," in name:
            raise ConfigError(f"{key}: a user name has no '=' or ','")
        if not isinstance(table, dict):
            raise ConfigError(f"{key}: must be a table (token_env = ...), got {_what(table)}")
        for entry in table:
            if entry != _TOKEN_ENV:
                raise _unknown(f"{key}.{entry}", {_TOKEN_ENV: None})
        if _TOKEN_ENV in table:
            _variable(f"{key}.{_TOKEN_ENV}", table[_TOKEN_ENV], env)
            specs.append(f"{name}={table[_TOKEN_ENV]}")
        else:
            specs.append(name)
    return specs


def _groups(value: object) -> list[str]:
    """``[groups]`` (``NAME = ["user", ...]``) as ``--group`` values: ``NAME=user,...``."""
    if not isinstance(value, dict):
        raise ConfigError(f"groups: must be a table (NAME = [users]), got {_what(value)}")
    specs = []
    for name, members in value.items():
        key = f"groups.{name}"
        if "=" in name:
            raise ConfigError(f"{key}: a group name has no '='")
        if not isinstance(members, list) or not members:
            raise ConfigError(f"{key}: must be an array of user names, got {_what(members)}")
        for index, member in enumerate(members):
            if not isinstance(member, str) or not member or "," in member:
                raise ConfigError(f"{key}[{index}]: must be a user name")
        specs.append(f"{name}={','.join(members)}")
    return specs


def file_values(
    data: Mapping[str, object], parser: argparse.ArgumentParser, env: Mapping[str, str]
) -> dict[str, object]:
    """What the parsed TOML ``data`` gives each flag of ``parser``, by the flag's ``dest``;
    ``ConfigError`` naming the key of the first fault."""
    keys = config_keys(parser)
    values: dict[str, object] = {}
    by_key: dict[str, str] = {}  # dest -> the key that gave it

    def give(key: str, action: argparse.Action, value: object) -> None:
        if action.dest in values and _kind(action) == "array":
            assert isinstance(value, list)
            existing = values[action.dest]
            assert isinstance(existing, list)
            values[action.dest] = [*existing, *value]
            return
        if action.dest in values:
            raise ConfigError(f"{key}: give {by_key[action.dest]} or {key}, not both")
        values[action.dest], by_key[action.dest] = value, key

    tables = {"users": "user", "groups": "group"}
    for key, value in data.items():
        if key in keys:
            give(key, keys[key], _value(key, keys[key], value))
        elif key in tables and tables[key] in keys:
            specs = _users(value, env) if key == "users" else _groups(value)
            give(key, keys[tables[key]], specs)
        elif key.endswith("_env") and _string_flag(keys.get(key.removesuffix("_env"))):
            action = keys[key.removesuffix("_env")]
            give(key, action, _item(key, action, _variable(key, value, env), written=False))
        else:
            raise _unknown(key, keys)
    for group in parser._mutually_exclusive_groups:
        given = [key for dest, key in by_key.items() if dest in _dests(group)]
        if len(given) > 1:
            raise ConfigError(f"{', '.join(given)}: give one of them")
    return values


def _string_flag(action: argparse.Action | None) -> bool:
    return action is not None and _kind(action) == "value" and action.type is None


def _dests(group: argparse._MutuallyExclusiveGroup) -> set[str]:
    return {action.dest for action in group._group_actions}


def _read(path: str) -> dict[str, object]:
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it: {exc.strerror}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES} bytes")
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not TOML: {exc}") from None


def with_config(
    args: argparse.Namespace,
    parser: argparse.ArgumentParser,
    reparse: Callable[[], argparse.Namespace],
) -> argparse.Namespace:
    """``args`` (parsed with ``parser``, ``serve``'s) with each flag that the command line
    did not give taken from the file ``args.config``.

    ``reparse`` parses the same command line again: with every default of ``parser``
    suppressed for it, the flags it still yields are those the command line gave.
    """
    path = args.config
    data = _read(path)
    try:
        values = file_values(data, parser, os.environ)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    defaults = {action: action.default for action in parser._actions}
    try:
        for action in parser._actions:
            action.default = argparse.SUPPRESS
        given = set(vars(reparse()))
    finally:
        for action, default in defaults.items():
            action.default = default
    for group in parser._mutually_exclusive_groups:
        if _dests(group) & given:  # the command line chose one: the file's others go
            for dest in _dests(group):
                values.pop(dest, None)
    for dest, value in values.items():
        if dest not in given:
            setattr(args, dest, value)
    return args
