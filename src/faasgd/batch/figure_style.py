"""The one look of every plot a batch writes: fonts, sizes, colours, markers, legends and panels.

A plot module builds its figure with `new_panels` (one sub-figure per panel, one column of them, two past
two panels, each with its legend below its axes, so no legend covers data), colours its series with
`look`, and writes it with `write`, which builds and saves inside the style's rc context:

    legend = LegendText(("number_of_workers=1", "number_of_workers=2"), title="configuration")
    fig, (panel,) = new_panels([legend])          # in a draw(runs) -> Figure | None
    write(draw, path, runs)                       # the file name, or None: nothing to show, no file

Figures are `matplotlib.figure.Figure`s drawn by the Agg canvas: no pyplot state, no display. The
layout is matplotlib's constrained layout, so titles, labels and legends are fitted inside the figure;
a figure grows in height with its panels and legend rows rather than squeezing its axes, and long
titles and labels are wrapped to the width they have.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import matplotlib
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure, SubFigure

DPI = 150  # dots per inch of the written PNGs: sharp on paper, still small files
WIDTH = 7.0  # inches: a page's text width, so a figure prints at 100%
AXES_HEIGHT = 3.0  # inches of one panel's axes with its ticks, axis labels and title
LEGEND_ROW = 0.19  # inches per legend row at the legend's font size
LEGEND_PAD = 0.35  # inches between a legend and the axes above it, and below it
PANEL_MAX = 6  # configurations (or lines) per panel; more are split over several panels
LABEL_WIDTH = 104  # characters of legend text that fit across WIDTH at the legend's font size
TITLE_WIDTH = 76  # characters of a figure title that fit across WIDTH at its font size
AXIS_WIDTH = 84  # characters of an axis label that fit across WIDTH (less the axis' margin) at its font size
MARKERS = "osD^vP*Xh<>p"  # with tab10's 10 colours: (colour, marker) pairs stay distinct up to 120 series

STYLE = {
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "figure.titlesize": 11,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "legend.title_fontsize": 8,
    "legend.frameon": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "lines.linewidth": 1.5,
    "lines.markersize": 5,
    "errorbar.capsize": 3,
}


def look(index: int) -> dict[str, Any]:
    """Colour and marker of series `index`: tab10's colours, a new marker each time they repeat."""
    cmap = colormaps["tab10"]
    return {"color": cmap(index % cmap.N), "marker": MARKERS[(index // cmap.N) % len(MARKERS)]}


def colour(index: int):
    """The colour of series `index` (see `look`)."""
    return look(index)["color"]


def split(items: Sequence, size: int = PANEL_MAX) -> list[list]:
    """`items` in order, in as few panels of at most `size` as can hold them, the panels as even as can be."""
    panels = max(1, math.ceil(len(items) / size))
    per = math.ceil(len(items) / panels) if items else 0
    return [list(items[i:i + per]) for i in range(0, len(items), per)] if items else [[]]


def wrap(label: str, width: int) -> str:
    """`label` broken at spaces (not hyphens) into lines of at most `width` characters; a longer word stays whole."""
    return "\n".join(textwrap.wrap(label, width, break_long_words=False, break_on_hyphens=False)) or label


def grid_columns(panels: int) -> int:
    """Panels side by side: one column for one or two panels, two for more (so a figure stays page-sized)."""
    return 1 if panels <= 2 else 2


def text_chars(columns: int) -> int:
    """Characters of legend text that fit across one panel of a grid `columns` panels wide."""
    return LABEL_WIDTH // columns


@dataclass(frozen=True)
class LegendText:
    """A legend's labels and title as shown in a panel `chars` characters wide: wrapped, in columns."""

    labels: tuple[str, ...]
    title: str | None = None
    chars: int = LABEL_WIDTH

    def shown(self) -> list[str]:
        """The labels wrapped when one alone is wider than the panel."""
        return [wrap(text, self.chars - 6) for text in self.labels]

    def shown_title(self) -> str | None:
        return wrap(self.title, self.chars) if self.title else None

    def columns(self) -> int:
        """Up to 6 columns for short labels, 1 for long ones."""
        longest = max((len(line) for text in self.shown() for line in text.split("\n")), default=0) + 6
        return max(1, min(6, self.chars // longest, len(self.labels)))

    def rows(self) -> int:
        """The text lines the legend takes, its title's among them."""
        heights = [text.count("\n") + 1 for text in self.shown()]
        per = self.columns()
        rows = sum(max(heights[i:i + per]) for i in range(0, len(heights), per))
        return rows + (self.shown_title().count("\n") + 1 if self.title else 0)


def new_panels(legends: Sequence[LegendText], axes_height: float = AXES_HEIGHT) -> tuple[Figure, list[SubFigure]]:
    """A figure WIDTH wide with one sub-figure per legend, in a grid `grid_columns` wide, each tall enough
    for its axes and its legend below them."""
    columns = grid_columns(len(legends))
    grid_rows = math.ceil(len(legends) / columns)
    panel = [axes_height + LEGEND_ROW * legend.rows() + LEGEND_PAD for legend in legends]
    heights = [max(panel[r * columns:(r + 1) * columns]) for r in range(grid_rows)]
    fig = Figure(figsize=(WIDTH, sum(heights) + 0.4), layout="constrained")
    grid = fig.subfigures(grid_rows, columns, height_ratios=heights, squeeze=False)
    return fig, [grid[i // columns, i % columns] for i in range(len(legends))]


def add_legend(panel: Figure | SubFigure, handles: list, legend: LegendText) -> None:
    """The legend below the panel's axes, outside them, in as many columns as its labels fit."""
    panel.legend(handles, legend.shown(), loc="outside lower center", ncols=legend.columns(),
                 title=legend.shown_title(), alignment="left" if legend.title else "center")


def add_title(fig: Figure, text: str) -> None:
    """The figure's title above its panels, wrapped onto more lines when wider than the figure."""
    fig.suptitle(wrap(text, TITLE_WIDTH))


def shared_settings(settings: Sequence[dict]) -> tuple[str, list[str]]:
    """The "key=value" pairs every one of `settings` has, and each one's other pairs (the panel's title and
    its legend labels); "all runs" for a setting with no other pair."""
    shared = [(k, v) for k, v in settings[0].items() if len(settings) > 1 and all(s.get(k) == v for s in settings)]
    own = [" ".join(f"{k}={v}" for k, v in s.items() if (k, v) not in shared) or "all runs" for s in settings]
    return " ".join(f"{k}={v}" for k, v in shared), own


def fit(text: str, panels: int, chars: int = AXIS_WIDTH) -> str:
    """`text` wrapped to the width of one panel of `panels` (`chars`: what fits across the whole figure)."""
    return wrap(text, chars // grid_columns(panels))


def panel_title(index: int, panels: list[list], shared: str = "", noun: str = "configurations") -> str:
    """"configurations 7-12 of 24" for the second of four panels of 6, then the settings its series share
    (wrapped to the panel's width); empty for a single panel."""
    if len(panels) < 2:
        return shared
    start = sum(len(p) for p in panels[:index])
    span = f"{noun} {start + 1}-{start + len(panels[index])} of {sum(len(p) for p in panels)}"
    return span + (f"\n{fit(shared, len(panels), TITLE_WIDTH)}" if shared else "")


def render(draw: Callable[..., Figure | None], *args: Any) -> Figure | None:
    """`draw(*args)`'s figure, built and drawn inside the style (so every text artist has its final place)."""
    with matplotlib.rc_context(STYLE):
        fig = draw(*args)
        if fig is not None:
            FigureCanvasAgg(fig).draw()
        return fig


def write(draw: Callable[..., Figure | None], path, *args: Any) -> str | None:
    """Builds `draw(*args)` in the style and saves it as a PNG at `path`; the file name, or None when
    `draw` had nothing to show (no file then)."""
    with matplotlib.rc_context(STYLE):
        fig = draw(*args)
        if fig is None:
            return None
        FigureCanvasAgg(fig)
        fig.savefig(path, dpi=DPI)
    return Path(path).name
