"""Rounding exact amounts to whole cents so that every sum in a report still adds up.

A chargeback report is a table: one row per line (team, unallocated, idle...), one column per
kind of cost (allocated, idle, shared), a total per row, per column and overall. The amounts are
exact rationals (shares of a pool are fractions of a micro); the report shows cents. Rounding each
figure on its own breaks the sums by a cent here and there, and a report that does not add up to
the bill is argued about instead of read. ``round_table`` rounds the whole table at once and
guarantees, for any input:

1. the grand total is the exact grand total rounded half-even (the bill, to the cent);
2. every row's cells add up to the row's total, and the row totals add up to the grand total;
3. every column's cells add up to a column total that is the exact column total rounded up or
   down to a neighbouring cent, and the column totals add up to the grand total;
4. every cell and every row total is its exact value rounded up or down (never more than a cent
   away), and a value that is already a whole number of cents (zero in particular) is unchanged.

How (a "controlled rounding", Cox 1987): row totals are rounded by largest remainder (Hamilton:
floor everything, then give the missing cents to the largest remainders), then each row's cells by
largest remainder to that row's total. That settles 1, 2 and 4. Columns are then moved to their
own largest-remainder totals by swapping a cent between two cells of the same row (one rounded up,
one rounded down), which changes no row total; the swaps are found as augmenting paths in the flow
network rows -> cells -> columns, so when a sequence of such swaps exists it is found.

Point 3 and "row totals by largest remainder" cannot always hold together: ten lines whose only
fraction of a cent is 0.11 in the allocated column and an idle line with 0.3 in the idle column
give the idle line the one spare cent, leaving the allocated column 1.1 cents short. In that case
(and only then) a cent is moved between two rows as well, each row total staying within a cent of
exact. Such a rounding always exists (a controlled rounding of the table with its totals exists,
and the grand total can be steered to the nearest cent), so the augmenting-path search cannot fail.

The column totals can also be given (``columns``: each the exact column total rounded up or down,
adding up to the grand total), for a table that restates another one's figures: the FOCUS export
rounds its rows by origin charge (rows of the table) to the chargeback report's line figures
(columns). The same paths then steer each column to its given total, moving row totals within a
cent where the rows alone cannot. A given total can be out of reach (two columns whose cells lie
only in rows that are whole cents already, and each asks for the cent the other's row cannot
spare): then ``ValueError``, never a column off its total.

Ties between equal remainders go to the earlier row or column, so the result is deterministic.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from fractions import Fraction

_SOURCE = -1  # the BFS node standing for "a row total changes"


def round_half_even(value: Fraction) -> int:
    """The nearest integer, ties to even (banker's rounding, as ``Decimal`` does by default)."""
    return round(value)


def largest_remainder(values: Sequence[Fraction], total: int) -> list[int]:
    """Round ``values`` to integers (each down or up) that add up to ``total`` (Hamilton).

    Every value is floored, then the ``total - sum(floors)`` values with the largest remainders
    are rounded up instead; whole values are never moved. Raises ``ValueError`` when ``total``
    cannot be reached that way (it must lie between the sum of floors and the sum of ceilings).
    """
    floors = [math.floor(v) for v in values]
    missing = total - sum(floors)
    fractional = [i for i, v in enumerate(values) if v != floors[i]]
    if not 0 <= missing <= len(fractional):
        raise ValueError(f"cannot round {len(values)} values to {total} by moving each to a neighbour")
    fractional.sort(key=lambda i: (floors[i] - values[i], i))  # largest remainder first
    for i in fractional[:missing]:
        floors[i] += 1
    return floors


def apportion(numerators: Sequence[int], denominator: int, total: int) -> list[int]:
    """``largest_remainder`` of the fractions ``n / denominator`` of ``numerators``, in integers:
    the same result, without comparing fractions (a GPU's parts share one denominator)."""
    floors, remainders = [], []
    for numerator in numerators:
        floor, remainder = divmod(numerator, denominator)
        floors.append(floor)
        remainders.append(remainder)
    missing = total - sum(floors)
    fractional = [i for i, remainder in enumerate(remainders) if remainder]
    if not 0 <= missing <= len(fractional):
        raise ValueError(f"cannot round {len(floors)} values to {total} by moving each to a neighbour")
    fractional.sort(key=lambda i: (-remainders[i], i))  # largest remainder first
    for i in fractional[:missing]:
        floors[i] += 1
    return floors


def round_table(table: Sequence[Sequence[Fraction]], columns: Sequence[int] | None = None) -> list[list[int]]:
    """Round every cell of ``table`` (rows of equal width) to an integer; see the module docstring
    for what adds up, and for ``columns`` (the column totals wanted). The caller scales to the unit
    first (cents: micros / 10,000)."""
    if not table:
        return []
    width = len(table[0])
    if any(len(row) != width for row in table):
        raise ValueError("every row of the table must have the same number of cells")
    return _Table(table, columns).solve()


class _Table:
    """The working state of one ``round_table`` call: cells as integers that are each the floor
    or the ceiling of the exact cell, with row totals, column sums and their bounds."""

    def __init__(self, exact: Sequence[Sequence[Fraction]], columns: Sequence[int] | None = None) -> None:
        self.exact = [list(row) for row in exact]
        self.width = len(self.exact[0])
        self.floors = [[math.floor(v) for v in row] for row in self.exact]
        self.row_exact = [sum(row, Fraction(0)) for row in self.exact]
        self.col_exact = [sum((row[j] for row in self.exact), Fraction(0)) for j in range(self.width)]
        self.grand = round_half_even(sum(self.row_exact, Fraction(0)))
        self.rows = largest_remainder(self.row_exact, self.grand)
        self.cells = [largest_remainder(row, total) for row, total in zip(self.exact, self.rows, strict=True)]
        self.cols = [sum(row[j] for row in self.cells) for j in range(self.width)]
        self.given = columns is not None
        self.col_target = largest_remainder(self.col_exact, self.grand) if columns is None else list(columns)
        if len(self.col_target) != self.width or sum(self.col_target) != self.grand:
            raise ValueError(f"the column totals must be {self.width} integers adding up to {self.grand}")
        if any(not math.floor(e) <= t <= math.ceil(e) for e, t in zip(self.col_exact, self.col_target, strict=True)):
            raise ValueError("each column total must be its exact total rounded up or down")

    def solve(self) -> list[list[int]]:
        self._swap_within_rows()
        self._balance_columns()
        # Only when no swap inside rows can bring a column within a cent of exact: move row
        # totals too (each stays within a cent), then try the targets once more.
        while (column := self._column_out_of_bounds()) is not None:
            self._fix_bound(column)
        self._balance_columns()
        while self.given and self.cols != self.col_target:  # given totals the rows alone cannot reach
            above = {j for j in range(self.width) if self.cols[j] > self.col_target[j]}
            below = {j for j in range(self.width) if self.cols[j] < self.col_target[j]}
            if not self._augment(above, below, move_rows=True):
                raise ValueError("no rounding within a cent of every cell and row reaches the given column totals")
        return self.cells

    # -- the cells, rows and columns that may move by one cent -------------------------------

    def _remainder(self, i: int, j: int) -> Fraction:
        return self.exact[i][j] - self.floors[i][j]

    def _can_lower(self, i: int, j: int) -> bool:
        return self.cells[i][j] > self.floors[i][j]

    def _can_raise(self, i: int, j: int) -> bool:
        return self.cells[i][j] == self.floors[i][j] and self.exact[i][j] != self.floors[i][j]

    def _row_can_lower(self, i: int) -> bool:
        return self.rows[i] > math.floor(self.row_exact[i])

    def _row_can_raise(self, i: int) -> bool:
        return self.rows[i] < math.ceil(self.row_exact[i])

    def _column_out_of_bounds(self) -> int | None:
        for j, exact in enumerate(self.col_exact):
            if not math.floor(exact) <= self.cols[j] <= math.ceil(exact):
                return j
        return None

    # -- augmenting paths ---------------------------------------------------------------------

    def _swap_within_rows(self) -> None:
        """The cheap bulk of the balancing: for each pair of columns, one above and one below its
        target, swap a cent inside the rows where that costs the least rounding error."""
        for j in range(self.width):
            for k in range(self.width):
                wanted = min(self.cols[j] - self.col_target[j], self.col_target[k] - self.cols[k])
                if j == k or wanted <= 0:
                    continue
                rows = [i for i in range(len(self.cells)) if self._can_lower(i, j) and self._can_raise(i, k)]
                rows.sort(key=lambda i: (self._remainder(i, j) - self._remainder(i, k), i))
                for i in rows[:wanted]:
                    self.cells[i][j] -= 1
                    self.cells[i][k] += 1
                    self.cols[j] -= 1
                    self.cols[k] += 1

    def _balance_columns(self) -> None:
        """Move cents from columns above their target to columns below it, rows unchanged (what
        the direct swaps left: paths through a third column)."""
        while True:
            above = {j for j in range(self.width) if self.cols[j] > self.col_target[j]}
            below = {j for j in range(self.width) if self.cols[j] < self.col_target[j]}
            if not above or not self._augment(above, below, move_rows=False):
                return

    def _fix_bound(self, column: int) -> None:
        """Bring one column back within a cent of exact, moving row totals if need be."""
        if self.cols[column] > math.ceil(self.col_exact[column]):
            sources = {column}
            sinks = {k for k in range(self.width) if k != column and self.cols[k] < math.ceil(self.col_exact[k])}
        else:
            sources = {k for k in range(self.width) if k != column and self.cols[k] > math.floor(self.col_exact[k])}
            sinks = {column}
        if not self._augment(sources, sinks, move_rows=True):  # pragma: no cover - see module docstring
            raise RuntimeError("no controlled rounding found; this contradicts its existence theorem")

    def _augment(self, sources: set[int], sinks: set[int], *, move_rows: bool) -> bool:
        """Find a path column -> row -> ... -> column that lowers a cell of a source column and
        raises a cell of a sink column, and apply it. Nodes are ("c", j), ("r", i) and the
        source node (a row total goes down here and up on another row). False when none."""
        start = [("c", j) for j in sorted(sources)]
        parent: dict[tuple[str, int], tuple[str, int] | None] = dict.fromkeys(start)
        queue = deque(start)
        while queue:
            node = queue.popleft()
            if node[0] == "c" and node[1] in sinks and node not in start:
                self._apply(node, parent)
                return True
            for nxt in self._neighbours(node, move_rows=move_rows):
                if nxt not in parent:
                    parent[nxt] = node
                    queue.append(nxt)
        return False

    def _neighbours(self, node: tuple[str, int], *, move_rows: bool) -> list[tuple[str, int]]:
        kind, index = node
        rows = range(len(self.cells))
        if kind == "c":  # lower a cell of this column: prefer the smallest remainder
            lowerable = [i for i in rows if self._can_lower(i, index)]
            return [("r", i) for i in sorted(lowerable, key=lambda i: (self._remainder(i, index), i))]
        if kind == "s":  # raise a row total: prefer the largest remainder
            raisable = [i for i in rows if self._row_can_raise(i)]
            raisable.sort(key=lambda i: (math.floor(self.row_exact[i]) - self.row_exact[i], i))
            return [("r", i) for i in raisable]
        out = [("c", k) for k in range(self.width) if self._can_raise(index, k)]
        if move_rows and self._row_can_lower(index):
            out.append(("s", _SOURCE))
        return out

    def _apply(self, end: tuple[str, int], parent: dict[tuple[str, int], tuple[str, int] | None]) -> None:
        node: tuple[str, int] | None = end
        while node is not None and (previous := parent[node]) is not None:
            (kind_from, a), (kind_to, b) = previous, node
            if kind_from == "c":  # column a -> row b: lower cell (b, a)
                self.cells[b][a] -= 1
                self.cols[a] -= 1
            elif kind_from == "s":  # a row total goes up
                self.rows[b] += 1
            elif kind_to == "c":  # row a -> column b: raise cell (a, b)
                self.cells[a][b] += 1
                self.cols[b] += 1
            else:  # row a -> source: its total goes down
                self.rows[a] -= 1
            node = previous
