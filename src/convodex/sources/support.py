"""The support table of docs/formats.md, generated from the readers themselves.

Each reader's ``support`` row and ``resume`` template, then the agents documented
without a faithful sample, with the reason. ``python -m convodex.sources.support``
prints the table; a test fails when the page and the readers disagree.
"""

from __future__ import annotations

from convodex.sources.registry import FORMATS

BEGIN = "<!-- support table: `python -m convodex.sources.support` writes it; do not edit -->"
END = "<!-- end of support table -->"

# Agents whose format is documented (tests/fixtures/README.md) but not well enough,
# or without a public sample, to write a faithful test: not read yet, and why.
NOT_SUPPORTED = (
    ("Windsurf / Cascade", "no public sample; the chat keys are reverse-engineered"),
    ("Warp (Agent Mode)", "no public sample of `warp.sqlite`"),
    ("Augment Code / Auggie CLI", "no public sample; the session shape is third-party only"),
    ("JetBrains Junie", "no public sample of `events.jsonl`"),
    ("Codebuff / Freebuff", "no public sample of `chat-messages.json`"),
    ("Claude Desktop (local agent mode)", "no public sample of its session index"),
    ("Crush", "no permissively licensed sample of `crush.db`"),
    ("Continue", "no public sample"),
)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table() -> str:
    """The generated Markdown, markers included."""
    rows = [
        BEGIN,
        "| agent | name | versions seen | default locations | branches | sub-agents | resume "
        "| known gaps |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, fmt in FORMATS.items():
        support = fmt.support
        if support is None:
            raise ValueError(f"the {name} reader has no support row")
        resume = f"`{fmt.resume}`" if fmt.resume else "—"
        cells = (
            support.agent,
            f"`{name}`",
            support.versions,
            support.where,
            support.branches,
            support.subagents,
            resume,
            support.gaps,
        )
        rows.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    rows += ["", "Not read yet:", ""]
    rows += [f"- {agent}: {reason}." for agent, reason in NOT_SUPPORTED]
    rows.append(END)
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(table(), end="")
