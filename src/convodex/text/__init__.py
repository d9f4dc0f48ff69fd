"""Pure text functions shared by both systems: tokens, shown text, snippets. No I/O."""
