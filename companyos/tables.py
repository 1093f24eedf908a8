"""Tables for the terminal that stay readable at any width (80 columns included).

Rich fits a table to the terminal by shrinking every column, so a table wider than the screen
ends up with labels cut to one character ("…"). Here labels never shrink: a column is either a
*label* (ids, names, numbers: shown whole) or *text* (descriptions: wrapped, at least
`MIN_TEXT` wide). When the labels and the narrowest text still do not fit, each row is printed
as a block of ``column  value`` lines instead, which fits any width.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

MIN_TEXT = 16
MAX_LABEL = 48
"""A label longer than this is cut with an ellipsis (a free-form value in a label column)."""


def _header(name: str) -> str:
    return name.replace("_", " ")  # headers wrap at spaces; snake_case would not


def _label_width(name: str, cells: Sequence[str]) -> int:
    longest_word = max((len(w) for w in _header(name).split()), default=0)
    return min(MAX_LABEL, max([longest_word, *(len(c) for c in cells)]))


def fits(console: Console, columns: Sequence[str], rows: Sequence[Sequence[str]],
         text: Collection[int] = ()) -> bool:  # fmt: skip
    """Whether the table layout fits: labels whole, text columns at least `MIN_TEXT`."""
    need = 1 + 3 * len(columns)  # borders and padding
    for i, name in enumerate(columns):
        cells = [r[i] for r in rows]
        need += MIN_TEXT if i in text else _label_width(name, cells)
    return need <= console.width


def print_table(
    console: Console,
    columns: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    title: str | None = None,
    text: Collection[int] = (),
    right: Collection[int] = (),
    caption: str | None = None,
    heading: int = 1,
) -> None:
    """``text``: indexes of wrapped text columns; ``right``: right-aligned (numbers);
    ``heading``: in the block layout, how many leading columns name the row."""
    if fits(console, columns, rows, text):
        table = Table(title=title, title_justify="left", header_style="bold", caption=caption)
        for i, name in enumerate(columns):
            if i in text:
                table.add_column(_header(name), overflow="fold", min_width=MIN_TEXT, ratio=1)
            else:
                width = _label_width(name, [r[i] for r in rows])
                table.add_column(
                    _header(name),
                    no_wrap=True,
                    overflow="ellipsis",
                    min_width=width,
                    max_width=MAX_LABEL,
                    justify="right" if i in right else "left",
                )
        for r in rows:
            table.add_row(*r)
        console.print(table)
        return
    if title:
        console.print(Text(title, style="italic"))
    names = [_header(c) for c in columns]
    pad = max((len(n) for n in names[heading:]), default=0)
    for r in rows:
        console.print(Text(" · ".join(r[:heading]), style="bold"))
        grid = Table.grid(padding=(0, 2))
        grid.add_column(no_wrap=True, style="dim", min_width=pad)
        grid.add_column(overflow="fold")
        for name, cell in zip(names[heading:], r[heading:], strict=True):
            grid.add_row(name, cell)
        console.print(grid, style=None)
    if caption:
        console.print(Text(caption, style="dim"))


__all__ = ["MIN_TEXT", "fits", "print_table"]
