"""Drawing the supervision tree (the data of `supervision.inspect_tree`) with rich."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.text import Text
    from rich.tree import Tree


_STATE_STYLE = {"running": "green", "restarting": "yellow", "stopped": "dim"}


def _uptime(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds // 60:.0f}m{seconds % 60:02.0f}s"
    return f"{seconds // 3600:.0f}h{seconds % 3600 // 60:02.0f}m"


def _label(node: dict[str, Any]) -> Text:
    from rich.text import Text

    label = Text()
    ident = str(node["id"])
    label.append(ident if len(ident) <= 20 else ident[:12] + "…", style="bold")
    if node.get("label"):
        label.append(f"  {node['label']}", style="italic")
    label.append(f"  {node.get('pid') or '-'}  {node['kind']}", style="cyan")
    if node.get("strategy"):
        label.append(f" {node['strategy']}", style="cyan")
    if node.get("restart"):
        label.append(f"  {node['restart']}")
    state = str(node.get("state", ""))
    label.append(f"  {state}", style=_STATE_STYLE.get(state, ""))
    restarts = node.get("restarts", 0)
    label.append(f"  restarts={restarts}", style="bold red" if restarts else "dim")
    if node.get("uptime") is not None:
        label.append(f"  up {_uptime(float(node['uptime']))}")
    if node.get("mailbox"):
        label.append(f"  mailbox={node['mailbox']}", style="magenta")
    return label


def render(tree: dict[str, Any]) -> Tree:
    """The tree: id, pid, kind, restart type, state, restarts, uptime and mailbox length of each node."""
    from rich.tree import Tree

    root = Tree(_label(tree))

    def add(parent: Tree, node: dict[str, Any]) -> None:
        for child in node.get("children") or []:
            add(parent.add(_label(child)), child)

    add(root, tree)
    return root
