"""The sweep and the startup reconciliation: runs of gone workers, lost messages, orphan
process groups, leftovers, and what the sweep reads to judge them."""
