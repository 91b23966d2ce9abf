"""SQL building blocks: bound values, the SQL texts pgRouting runs, and constraint predicates.

A request is one statement. Its values are bound parameters (``$n``). pgRouting functions take the SQL
of the graph as *text* that they run themselves, so that text cannot hold ``$n`` parameters: the
statement builds it with PostgreSQL's ``format()``, whose ``%L`` quotes each bound value (or each value
the statement computed, such as a snapped point) as a literal. No request text is ever written into
SQL by Python: only column and table names from the configuration, checked as identifiers and
double-quoted. Nothing is set on the session, so a pooled connection keeps no request's values.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from roadkit.contract.sources import Constraint, EngineError
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


_MARK = re.compile("\x00(\\d+)\x00")


@attrs.define
class Binder:
    """The parameters of one statement, and the values the SQL texts run by pgRouting read.

    ``param`` is a plain parameter of the statement. ``ref`` (a request value) and ``expr`` (an SQL
    expression of the statement, e.g. a column of a CTE) give a marked reference that may appear in
    the statement and in a pgRouting SQL text alike: :meth:`statement` writes it as the expression,
    :meth:`text` as a ``%L`` of ``format()``.
    """

    #: The request's own numbers (points, cost values...), which change from one request to the next
    #: without changing the statement: see :meth:`input` and :meth:`args_for`.
    inputs: Mapping[str, Any] = attrs.field(factory=dict)
    args: list[Any] = attrs.field(factory=list)
    exprs: list[str] = attrs.field(factory=list)
    slots: dict[int, str] = attrs.field(factory=dict)

    def param(self, value: Any, cast: str) -> str:
        """A parameter of the statement only (not usable in a pgRouting SQL text)."""
        self.args.append(value)
        return f"${len(self.args)}::{cast}"

    def input(self, name: str, cast: str) -> str:
        """A parameter holding the input ``name``."""
        self.slots[len(self.args)] = name
        return self.param(self.inputs[name], cast)

    def args_for(self, inputs: Mapping[str, Any]) -> list[Any]:
        """The statement's arguments for other inputs (the same statement, e.g. from a cache)."""
        return [inputs[self.slots[i]] if i in self.slots else value for i, value in enumerate(self.args)]

    def ref(self, value: Any, cast: str) -> str:
        """A request value, sent as text and cast by PostgreSQL (as a condition value of a configuration is)."""
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, float):
            text = repr(value)
        else:
            text = str(value)
        self.args.append(text)
        return self.expr(f"${len(self.args)}::text", cast)

    def expr(self, sql: str, cast: str) -> str:
        """An SQL expression of the statement, usable in a pgRouting SQL text too."""
        self.exprs.append(sql)
        return f"(\x00{len(self.exprs)}\x00)::{cast}"

    def text(self, sql: str) -> str:
        """The SQL that makes ``sql`` as a text for pgRouting: ``format()`` quoting every reference in."""
        if "$rk$" in sql:
            raise ValueError("unexpected dollar-quote in generated SQL")
        order: list[int] = []

        def place(match: re.Match[str]) -> str:
            index = int(match.group(1))
            if index not in order:
                order.append(index)
            return f"%{order.index(index) + 1}$L"

        template = _MARK.sub(place, sql.replace("%", "%%"))
        if not order:
            return f"$rk${sql}$rk$"
        return f"format($rk${template}$rk$, {', '.join(self.exprs[i - 1] for i in order)})"

    def statement(self, sql: str) -> str:
        """The statement's SQL: every reference written as its expression."""
        return _MARK.sub(lambda match: self.exprs[int(match.group(1)) - 1], sql)


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
