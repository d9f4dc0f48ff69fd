"""Memory for agents (SPEC L18): what a prompt recalls (``core``), the agents' hook
contracts (``hooks``) and the local receipts of every hook run (``receipts``)."""
