"""The record tree of one Claude Code file (``uuid``/``parentUuid``), its sub-agent
runs and the display spans of a chain.

Kept apart from the reader (``claude_code``): it sees only where each record is and
what it links to, never a message body.
"""

from __future__ import annotations

# One record of the tree (a display message, a part of one, or a record between them).
Node = tuple[
    str | None,  # parent key (``parentUuid``, else ``logicalParentUuid``)
    int,  # offset
    int,  # length
    bool,  # a user or assistant record (a display message)
    bool,  # an assistant record
    str | None,  # the API message id of an assistant record
]


class RecordTree:
    """The records of one file in the order first written, main and sidechain apart."""

    __slots__ = ("keys", "nodes")

    def __init__(self) -> None:
        self.keys: dict[str, int] = {}  # record key -> position in ``nodes``
        self.nodes: list[Node] = []

    def add(self, key: str, node: Node) -> None:
        """A record not met before (the reader decides what a duplicate does)."""
        self.keys[key] = len(self.nodes)
        self.nodes.append(node)

    def replace(self, key: str, node: Node) -> None:
        """``node`` in the place of the record ``key`` names: records naming it still do,
        and it keeps its parent (else takes the one ``node`` names)."""
        position = self.keys[key]
        self.nodes[position] = (self.nodes[position][0] or node[0], *node[1:])

    def has_messages(self) -> bool:
        return any(node[3] for node in self.nodes)

    def chain(self, leaf: int | None = None) -> list[Node]:
        """The chain from the root to ``leaf`` (a position; default: the last record).

        A record's parent is the one it names if that was written before it, else the
        record written before it: every parent comes earlier, so no record after the
        last one can name it, it is the leaf, and the walk up always ends.
        """
        nodes, keys = self.nodes, self.keys
        chain: list[Node] = []
        position = len(nodes) - 1 if leaf is None else leaf
        while position >= 0:
            node = nodes[position]
            chain.append(node)
            parent = keys.get(node[0]) if node[0] is not None else None
            position = parent if parent is not None and parent < position else position - 1
        chain.reverse()
        return chain


def run_root(run_of: dict[str, str], key: str) -> str:
    """The run a sidechain record is in (its agent's ``agent:<id>``, else its first
    record's key): the root of ``key`` in ``run_of``, where a key missing is a root."""
    root = key
    while run_of.get(root, root) != root:
        root = run_of[root]
    return root


def display_spans(chain: list[Node]) -> list[tuple[int, int]]:
    """Display spans of a chain; lines of one streamed API message join one span."""
    spans: list[tuple[int, int]] = []
    group: str | None = None
    for _, offset, length, message, assistant, message_id in chain:
        if not message:
            group = None
            continue
        if assistant and message_id is not None and group == message_id:
            start, joined = spans[-1]
            end = max(start + joined, offset + length)
            start = min(start, offset)
            spans[-1] = (start, end - start)
            continue
        group = message_id if assistant else None
        spans.append((offset, length))
    return spans
