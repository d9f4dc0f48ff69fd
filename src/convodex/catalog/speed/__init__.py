"""The accelerators: measured speed-ups the core answers correctly without.

See docs/architecture.md for what each one does and how to switch it off.
"""
