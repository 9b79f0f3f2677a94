"""figure_style: panels split evenly, settings shared by a panel moved to its title, legends sized to their text,
and one look on every plot a batch writes (same width, same resolution, same fonts)."""

from __future__ import annotations

import matplotlib
import matplotlib.image
import pytest
from matplotlib.text import Text

from faasgd.batch import figure_style
from faasgd.batch.figure_style import LegendText, shared_settings, split


@pytest.mark.parametrize(("count", "sizes"), [(0, [0]), (1, [1]), (6, [6]), (7, [4, 3]), (12, [6, 6]),
                                              (13, [5, 5, 3]), (24, [6, 6, 6, 6])])
def test_split_makes_few_even_panels_in_order(count, sizes):
    panels = split(list(range(count)))
    assert [len(p) for p in panels] == sizes and sum(panels, []) == list(range(count))


def test_settings_every_series_shares_go_to_the_title():
    shared, own = shared_settings([{"store": "redis", "n_fetch": "1"}, {"store": "memcached", "n_fetch": "1"}])
    assert shared == "n_fetch=1" and own == ["store=redis", "store=memcached"]
    assert shared_settings([{"store": "redis"}]) == ("", ["store=redis"])  # one series shares with nothing
    assert shared_settings([{"a": "1"}, {"a": "1"}]) == ("a=1", ["all runs", "all runs"])


def test_short_labels_share_rows_and_long_ones_wrap_onto_their_own():
    short = LegendText(tuple(f"worker {i}" for i in range(12)))
    assert short.columns() == 6 and short.rows() == 2
    label = "number_of_workers=4 store=memcached n_fetch=25 n_push=25 batch_size=128 invocation_mode=per-iteration"
    long = LegendText((label, label), title="configuration", chars=figure_style.text_chars(2))
    assert long.columns() == 1 and all(len(line) <= long.chars for text in long.shown() for line in text.split("\n"))
    assert long.rows() == 1 + sum(text.count("\n") + 1 for text in long.shown()) and long.rows() >= 5


def test_more_than_two_panels_go_two_wide_and_the_figure_grows_with_its_legends():
    one_row = LegendText(("a",))
    fig, panels = figure_style.new_panels([one_row] * 4)
    assert len(panels) == 4 and fig.get_figwidth() == figure_style.WIDTH
    first, second = (panel.bbox_relative for panel in panels[:2])
    assert first.y0 == second.y0 and first.x0 < second.x0  # side by side
    _, two = figure_style.new_panels([one_row] * 2)
    first, second = (panel.bbox_relative for panel in two)
    assert first.x0 == second.x0 and first.y0 > second.y0  # one above the other
    tall, _ = figure_style.new_panels([LegendText(tuple("word " * 20 + str(i) for i in range(10)))])  # 2 lines each
    short, _ = figure_style.new_panels([one_row])
    assert tall.get_figheight() == pytest.approx(short.get_figheight() + 19 * figure_style.LEGEND_ROW)


def test_every_plot_is_written_in_the_one_style(tmp_path):
    sizes = []

    def draw(_):
        fig, (panel,) = figure_style.new_panels([LegendText(("series",))])
        ax = panel.add_subplot()
        ax.plot([0, 1], [0, 1], label="series")
        sizes.append(Text().get_fontsize())  # the style's font size, read while drawing
        return fig

    assert figure_style.write(draw, tmp_path / "a.png", None) == "a.png"
    image = matplotlib.image.imread(tmp_path / "a.png")
    assert image.shape[1] == round(figure_style.WIDTH * figure_style.DPI)
    assert sizes == [figure_style.STYLE["font.size"]]
    assert matplotlib.rcParams["axes.spines.top"] is True  # the style stays inside write: the process's is left alone
    assert figure_style.write(lambda _: None, tmp_path / "b.png", None) is None and not (tmp_path / "b.png").exists()


def test_panel_titles_and_axis_labels_wrap_to_a_half_width_panel_without_breaking_words():
    panels = [[1] * 6] * 4  # two wide
    shared = "n_fetch=25 batch_size=128 n_push=25 invocation_mode=per-iteration"
    title = figure_style.panel_title(1, panels, shared)
    assert title.startswith("configurations 7-12 of 24\n") and "per-iteration" in title
    assert all(len(line) <= figure_style.TITLE_WIDTH // 2 for line in title.split("\n"))
    assert figure_style.panel_title(0, [[1, 2]], "a=1") == "a=1"  # one panel: no span
    label = figure_style.fit("n_fetch = n_push (minibatches between fetches and pushes)", 4)
    assert "\n" in label and all(len(line) <= figure_style.AXIS_WIDTH // 2 for line in label.split("\n"))
    assert "\n" not in figure_style.fit("n_fetch = n_push (minibatches between fetches and pushes)", 2)
