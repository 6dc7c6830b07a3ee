"""``@/<zid>/router/linkstate/...``: a graph as petgraph's ``Dot`` prints it (Graphviz
text), the way zenohd shows its link-state graphs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def _weight_label(weight: float) -> str:
    # Rust prints whole floats without a fraction ("100"), others in shortest form.
    if float(weight).is_integer():
        return str(int(weight))
    return repr(float(weight))


def dot_graph(labels: Sequence[str], edges: Iterable[tuple[int, int, float]] = ()) -> str:
    """petgraph's ``Dot`` text of an undirected graph, as zenohd's ``linkstate`` keys show."""
    lines = ["graph {\n"]
    lines += [f'    {i} [ label = "{label}" ]\n' for i, label in enumerate(labels)]
    lines += [f'    {a} -- {b} [ label = "{_weight_label(w)}" ]\n' for a, b, w in edges]
    lines.append("}\n")
    return "".join(lines)
