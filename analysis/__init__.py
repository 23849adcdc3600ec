"""loadbench analysis: results folders into tables, plots and reports (Debian's python3)."""
