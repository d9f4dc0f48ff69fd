"""What happens after a hit (SPEC L15): show, export, resume, hand off."""
