"""SQL building blocks: bound values, the edge query pgRouting reads, and constraint predicates.

pgRouting functions take the SQL of the graph as *text* that they run themselves, so request values
cannot be ``$n`` parameters there. Every request value is instead bound with ``set_config`` (a
bound parameter of our own statement, set on the pooled connection, whose ``RESET ALL`` on release
clears it) and the text refers to it as ``current_setting('roadkit.pN')::<type>``. The only other text in that SQL is column and table names
from the configuration, checked as identifiers and double-quoted. No text from a request reaches SQL.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import asyncpg
import attrs

from roadkit.contract import Constraint, EngineError
from roadkit_pgrouting.options import IDENTIFIER, quote

# Column types whose values are compared natively; other columns are compared as text.
CASTS = {
    "double precision": "float8",
    "real": "float4",
    "integer": "int4",
    "bigint": "int8",
    "smallint": "int2",
    "numeric": "numeric",
    "text": "text",
    "character varying": "text",
    "character": "text",
    "boolean": "bool",
}
CONDITIONS = {
    "equal": "=",
    "=": "=",
    "inequal": "<>",
    "!=": "<>",
    "greater": ">",
    "greatereq": ">=",
    "less": "<",
    "lesseq": "<=",
    "like": "LIKE",
}
NUMERIC_OPERATORS = {"=": "=", "!=": "<>", ">": ">", ">=": ">=", "<": "<", "<=": "<="}
_DOLLAR = re.compile(r"^\$(\w*)\$(.*)\$\1\$$", re.DOTALL)


def literal_value(value: Any) -> Any:
    """A condition value of a resource file as a plain value: Road2's ``$tag$text$tag$`` and ``'text'`` unwrapped."""
    if isinstance(value, str):
        match = _DOLLAR.match(value.strip())
        if match:
            return match.group(2)
        if len(value) >= 2 and value[0] == value[-1] == "'":
            return value[1:-1].replace("''", "'")
    return value


@attrs.define
class Binder:
    """Values bound for one transaction; ``ref`` gives the SQL text that reads one back."""

    values: list[str] = attrs.field(factory=list)
    sent: int = 0  # values already set on the connection

    def ref(self, value: Any, cast: str) -> str:
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, float):
            text = repr(value)
        else:
            text = str(value)
        self.values.append(text)
        return f"current_setting('roadkit.p{len(self.values)}')::{cast}"

    def array(self, values: Sequence[Any], cast: str) -> str:
        """A bound array (``{1,2,3}``) of numbers."""
        return self.ref("{" + ",".join(repr(float(v)) if cast.startswith("float") else str(int(v)) for v in values) + "}", f"{cast}[]")

    def pending(self, statement_timeout: str | None = None) -> tuple[str, list[str]] | None:
        """The statement that sets the values not set yet (and the time-out, when given), and its arguments.

        Session-level settings (no transaction: that saves the BEGIN and COMMIT round trips); the pool's
        ``RESET ALL`` clears them when the connection goes back. None when there is nothing to set.
        """
        names = [("statement_timeout", statement_timeout)] if statement_timeout is not None else []
        names += [(f"roadkit.p{i}", self.values[i - 1]) for i in range(self.sent + 1, len(self.values) + 1)]
        self.sent = len(self.values)
        if not names:
            return None
        calls = ", ".join(f"set_config('{name}', ${i}, false)" for i, (name, _) in enumerate(names, 1))
        return f"SELECT {calls}", [value for _, value in names]


async def send(conn: asyncpg.Connection, binder: Binder, statement_timeout: str | None = None) -> None:
    """Set the binder's new values on the connection (one round trip, none when nothing is new)."""
    pending = binder.pending(statement_timeout)
    if pending is not None:
        await conn.execute(pending[0], *pending[1])


def _column(columns: Mapping[str, str], name: str | None, what: str) -> tuple[str, str]:
    """(quoted column, cast) of a constraint's column; a clear error when the graph lacks it."""
    if not name or not IDENTIFIER.match(name) or name not in columns:
        raise EngineError(f"the {what} refers to column {name!r}, which the graph's ways table does not have")
    return quote(name), CASTS.get(columns[name], "text")


def condition(constraint: Constraint, columns: Mapping[str, str], binder: Binder) -> str:
    """The SQL that is true on the edges the constraint speaks of (NULL counts as false)."""
    where = f"constraint key '{constraint.key}'"
    if constraint.condition is None:  # numerical-pgr: the user's operator and number on the column
        column, cast = _column(columns, constraint.field, where)
        operator = NUMERIC_OPERATORS[constraint.operator]
        numeric = cast in ("float8", "float4", "int4", "int8", "int2", "numeric")
        # A text column holding numbers is compared as numbers; one that holds other text is an engine error.
        left = column if numeric else f"{column}::float8"
        return f"coalesce({left} {operator} {binder.ref(float(constraint.value), 'float8')}, false)"
    condition_spec = constraint.condition if isinstance(constraint.condition, Mapping) else {}
    column, cast = _column(columns, constraint.field, where)
    compare = CONDITIONS.get(str(condition_spec.get("type", "equal")).lower())
    if compare is None:
        raise EngineError(f"{where}: condition type {condition_spec.get('type')!r} is not one of {', '.join(CONDITIONS)}")
    value = literal_value(condition_spec.get("value"))
    if compare == "LIKE" or cast == "text":
        predicate = f"{column}::text {compare} {binder.ref(value, 'text')}"
    else:
        predicate = f"{column} {compare} {binder.ref(value, cast)}"
    holds = f"coalesce({predicate}, false)"
    # Road2: with '!=' the user speaks of the edges where the condition does NOT hold.
    return f"NOT {holds}" if constraint.operator == "!=" and constraint.condition is not None else holds


def banned(constraints: Sequence[Constraint], columns: Mapping[str, str], binder: Binder) -> list[str]:
    """One predicate per banned constraint: the edges that stay in the graph."""
    return [f"NOT ({condition(c, columns, binder)})" for c in constraints if c.type == "banned"]


def weighted(cost: str, constraints: Sequence[Constraint], columns: Mapping[str, str], binder: Binder) -> str:
    """``cost`` multiplied by the ratio of every prefer/avoid constraint that holds on the edge."""
    expression = cost
    for constraint in constraints:
        if constraint.type in ("prefer", "avoid") and constraint.ratio is not None:
            ratio = binder.ref(float(constraint.ratio), "float8")
            # Negative costs mean "not this way": they stay negative whatever the ratio.
            expression = f"{expression} * (CASE WHEN {condition(constraint, columns, binder)} THEN {ratio} ELSE 1 END)"
    return expression
