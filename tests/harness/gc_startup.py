# PYTHONSTARTUP for the kernels `make test` starts (nbval's, the hygiene walk's, Lab's): tools/run_tests.py sets it.
# IPython runs this file in a new kernel before its first cell. The kernel collects cyclic garbage less often than
# Python's default, as tests/conftest.py does for the tests' own processes: 11-17% less CPU for notebooks 03, 07
# and 11 under strict nbval (user time 22-23 s to 19-20 s, two runs each; issue 37). Only the collector's schedule
# changes; nothing is defined in the kernel's namespace (no name, no docstring), so outputs and counts are the same.
__import__("gc").set_threshold(50_000, 20, 100)
