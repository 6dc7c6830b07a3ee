"""The reports' interactive charts: plotly figures written into one self-contained HTML
page (plotly.js inlined once, no network needed to open it). Inputs are small lists Spark
has already aggregated; nothing here reads a table.

Rates are bars, one per time bucket that saw traffic (an empty bucket is a gap, not a
line drawn across it), on clock-time axes (UTC).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

#: Number of time buckets a rate chart aims for.
PLOT_BUCKETS = 300
_SECOND = 1_000_000_000

CSS = """
body { font-family: sans-serif; margin: 2em; max-width: 1200px; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
td, th { border: 1px solid #ccc; padding: 2px 8px; text-align: left; font-size: 90%; }
.pass { color: #176117; } .fail { color: #a01010; }
.chart { margin: 0.5em 0 1.5em; }
header p { margin: 0.2em 0; }
"""

Series = dict[str, list[tuple[int, float, float]]]  # name -> [(bucket start ns, messages, bytes)]


def bucket_ns(span_ns: int) -> int:
    """A round bucket width giving at most about :data:`PLOT_BUCKETS` buckets."""
    raw = max(1, span_ns // PLOT_BUCKETS)
    for step in (_SECOND // 100, _SECOND // 10, _SECOND, 10 * _SECOND, 60 * _SECOND, 600 * _SECOND, 3600 * _SECOND):
        if raw <= step:
            return step
    return 86_400 * _SECOND


def when(ns: int | None) -> datetime | None:
    return None if ns is None else datetime.fromtimestamp(ns / 1e9, tz=UTC)


def when_text(ns: int | None) -> str:
    t = when(ns)
    return "" if t is None else t.isoformat(timespec="milliseconds")


def html_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def page(title: str, parts: Sequence[str]) -> str:
    """A whole HTML document: plotly.js once in its head, then ``parts``."""
    from plotly.offline import get_plotlyjs

    plotly_js: str = get_plotlyjs()
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{CSS}</style>"
        f'<script type="text/javascript">{plotly_js}</script></head><body>' + "\n".join(parts) + "</body></html>"
    )


def _div(fig: Any) -> str:
    body: str = fig.to_html(full_html=False, include_plotlyjs=False, config={"responsive": True})
    return '<div class="chart">' + body + "</div>"


def _palette() -> list[str]:
    from plotly.colors import qualitative

    colors: list[str] = qualitative.Plotly
    return colors


def rate_chart(title: str, series: Series, step_ns: int, stacked: bool = True) -> str:
    """Messages/s above bytes/s, one bar series per name (click the legend to hide one)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08)
    per_s = _SECOND / step_ns
    palette = _palette()
    for i, (name, pts) in enumerate(series.items()):
        x = [when(t) for t, _, _ in pts]
        width = step_ns / 1e6  # a date axis counts in milliseconds
        # one colour per name in both rows: the legend shows it once, for both
        color = palette[i % len(palette)]
        common = {
            "x": x,
            "name": name,
            "legendgroup": name,
            "width": [width] * len(x),
            "offset": 0,
            "marker_color": color,
        }
        fig.add_trace(go.Bar(y=[m * per_s for _, m, _ in pts], **common), row=1, col=1)
        fig.add_trace(go.Bar(y=[b * per_s for _, _, b in pts], showlegend=False, **common), row=2, col=1)
    fig.update_yaxes(title_text="messages/s", row=1, col=1)
    fig.update_yaxes(title_text="bytes/s", row=2, col=1)
    fig.update_xaxes(title_text="time (UTC)", row=2, col=1)
    fig.update_layout(
        title=f"{title} ({step_ns / _SECOND:g} s buckets)",
        barmode="stack" if stacked else "group",
        height=560,
        bargap=0,
        legend={"title": "click to hide"},
    )
    return _div(fig)


def count_chart(title: str, series: dict[str, list[tuple[int, float]]], step_ns: int, y_title: str) -> str:
    """Counts per time bucket as stacked bars (e.g. samples lost, by reason)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, pts in series.items():
        x = [when(t) for t, _ in pts]
        fig.add_trace(go.Bar(x=x, y=[n for _, n in pts], name=name, width=[step_ns / 1e6] * len(x), offset=0))
    fig.update_layout(
        title=f"{title} ({step_ns / _SECOND:g} s buckets)",
        barmode="stack",
        bargap=0,
        height=360,
        xaxis_title="time (UTC)",
        yaxis_title=y_title,
    )
    return _div(fig)


def level_chart(title: str, series: dict[str, list[tuple[int, int]]], y_title: str) -> str:
    """Levels that change at instants (e.g. entities declared), drawn as steps."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, pts in series.items():
        fig.add_trace(go.Scatter(x=[when(t) for t, _ in pts], y=[v for _, v in pts], name=name, line_shape="hv"))
    fig.update_layout(title=title, height=360, xaxis_title="time (UTC)", yaxis_title=y_title)
    return _div(fig)


def latency_chart(title: str, samples: dict[str, list[float]]) -> str:
    """Distributions of latencies in ms, one histogram per name."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, values in samples.items():
        fig.add_trace(go.Histogram(x=values, name=name, opacity=0.6, nbinsx=60))
    fig.update_layout(title=title, barmode="overlay", height=360, xaxis_title="ms", yaxis_title="queries")
    return _div(fig)


def bar_chart(title: str, names: Sequence[str], values: Sequence[float], x_title: str) -> str:
    """One horizontal bar per name (e.g. the busiest keys)."""
    import plotly.graph_objects as go

    fig = go.Figure(go.Bar(x=list(values)[::-1], y=list(names)[::-1], orientation="h"))
    fig.update_layout(title=title, height=max(260, 28 * len(names) + 120), xaxis_title=x_title)
    return _div(fig)
