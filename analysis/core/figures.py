"""A page's figures: each written as PNG and SVG into the results folder's figures/, with its
caption, for the page to show each right after the table it illustrates (`Figures.md`)."""

from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")  # files only: no display on a server
import matplotlib.pyplot as plt  # noqa: E402


class Figures:
    """Writes each figure as PNG and SVG and keeps its caption, for the report to show each
    right after the table it illustrates (`md`)."""

    def __init__(self, folder: str):
        self.dir = os.path.join(folder, "figures")
        os.makedirs(self.dir, exist_ok=True)
        self.items: list[tuple[str, str]] = []  # (name, caption)

    def save(self, fig, name: str, caption: str) -> None:
        fig.tight_layout()
        for ext in ("png", "svg"):
            fig.savefig(os.path.join(self.dir, f"{name}.{ext}"), dpi=110)
        plt.close(fig)
        self.items.append((name, caption))

    def md(self, *names: str) -> str:
        """The Markdown of the saved figures of `names`, in that order ("" for one not drawn);
        a name ending in `-` stands for every figure whose name starts with it, as saved."""
        return "\n\n".join(figure_md(n, caption) for name in names for n, caption in self.items
                           if n == name or (name.endswith("-") and n.startswith(name)))


def panel_width(longest_label: int, plot: float = 3.5) -> float:
    """Inches for a panel of horizontal bars whose longest tick label has `longest_label`
    characters: the plot's own `plot` inches beside the labels (about 0.075 inch a character at
    matplotlib's default 10 pt), never under 6; a fleet's or a cluster's spec names are long, and a
    fixed width left tight_layout no room for them."""
    return max(6.0, plot + 0.075 * longest_label)


def figure_md(name: str, caption: str) -> str:
    """A figure in Markdown, the image then its caption (html_page embeds it there)."""
    return f"![{caption}](figures/{name}.png)\n*{caption}*"
