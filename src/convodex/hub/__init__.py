"""The client side of the team hub (SPEC S6): ``convodex sync`` pushes this machine's
local sessions into a ``convodex server``; ``convodex search --hub`` asks it."""
