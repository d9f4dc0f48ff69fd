"""The record tree of one Claude Code file (``uuid``/``parentUuid``), its sub-agent
runs, the branches a rewind left and the display spans of a chain.

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

    def _parent(self, position: int) -> int:
        """The position of a record's parent (-1: none): the one it names if that was
        written before it, else the record written before it."""
        named = self.nodes[position][0]
        parent = self.keys.get(named) if named is not None else None
        return parent if parent is not None and parent < position else position - 1

    def positions(self, leaf: int | None = None) -> list[int]:
        """The positions of the chain from the root to ``leaf`` (default: the last
        record). Every parent comes earlier, so no record after the last one can name
        it, it is the leaf, and the walk up always ends."""
        chain: list[int] = []
        position = len(self.nodes) - 1 if leaf is None else leaf
        while position >= 0:
            chain.append(position)
            position = self._parent(position)
        chain.reverse()
        return chain

    def chain(self, leaf: int | None = None) -> list[Node]:
        """The chain from the root to ``leaf`` (a position; default: the last record)."""
        return [self.nodes[position] for position in self.positions(leaf)]

    def branches(self, chain: list[int]) -> list[tuple[int, list[int]]]:
        """The records off ``chain`` (positions), as the branches a rewind or an edit
        left: one per abandoned leaf, in the order written, each ``(the position it
        continues, -1 for the root; its positions root first)``. A branch ends where
        it meets the chain or a branch before it."""
        parents = [self._parent(position) for position in range(len(self.nodes))]
        named = set(parents)
        covered = set(chain)
        found: list[tuple[int, list[int]]] = []
        for leaf in range(len(self.nodes)):
            if leaf in named or leaf in covered:
                continue
            path: list[int] = []
            position = leaf
            while position >= 0 and position not in covered:
                path.append(position)
                covered.add(position)
                position = parents[position]
            path.reverse()
            found.append((position, path))
        return found


def run_root(run_of: dict[str, str], key: str) -> str:
    """The run a sidechain record is in (its agent's ``agent:<id>``, else its first
    record's key): the root of ``key`` in ``run_of``, where a key missing is a root."""
    root = key
    while run_of.get(root, root) != root:
        root = run_of[root]
    return root


def display_spans(chain: list[Node], owners: list[int] | None = None) -> list[tuple[int, int]]:
    """Display spans of a chain; lines of one streamed API message join one span.
    ``owners`` receives, for each node, the index of the span holding it or, for a
    record that is no message, of the last span before it (-1: none yet)."""
    spans: list[tuple[int, int]] = []
    group: str | None = None
    for _, offset, length, message, assistant, message_id in chain:
        if not message:
            group = None
        elif assistant and message_id is not None and group == message_id:
            start, joined = spans[-1]
            end = max(start + joined, offset + length)
            start = min(start, offset)
            spans[-1] = (start, end - start)
        else:
            group = message_id if assistant else None
            spans.append((offset, length))
        if owners is not None:
            owners.append(len(spans) - 1)
    return spans


#: an abandoned branch: the start offset of the display message it continues (``None``:
#: the session's start) and its display spans
Branch = tuple[int | None, list[tuple[int, int]]]


def branch_spans(
    tree: RecordTree, chain: list[int], chain_spans: list[tuple[int, int]], owners: list[int]
) -> list[Branch]:
    """The display spans of every branch off ``chain`` (its spans and their
    ``owners`` given), each with the message it continues; branches that hold no
    display message (a progress record beside the chain) are left out."""
    # The display message holding or preceding each record already placed.
    message_at: dict[int, int | None] = {
        position: chain_spans[owner][0] if owner >= 0 else None
        for position, owner in zip(chain, owners, strict=True)
    }
    found: list[Branch] = []
    for attach, path in tree.branches(chain):
        after = message_at.get(attach) if attach >= 0 else None
        marks: list[int] = []
        spans = display_spans([tree.nodes[p] for p in path], marks)
        for position, owner in zip(path, marks, strict=True):
            message_at[position] = spans[owner][0] if owner >= 0 else after
        if spans:
            found.append((after, spans))
    return found
