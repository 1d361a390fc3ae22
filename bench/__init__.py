"""Benchmarks: what the runner costs on top of the work it runs.

Run `python -m bench [figure ...] [--quick]`; every figure is printed next to a baseline
measured in the same run (see bench/README.md).
"""
