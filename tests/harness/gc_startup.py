# PYTHONSTARTUP for the kernels `make test` starts (nbval's, the hygiene walk's, Lab's): tools/run_tests.py sets it,
# and tests/conftest.py runs this file in the tests' own processes. IPython runs it in a new kernel before its first
# cell. Cyclic garbage is collected less often than at Python's default (700 allocations): 11-17% less CPU for
# notebooks 03, 07 and 11 under strict nbval (user time 22-23 s to 19-20 s, two runs each; issue 37). Only the
# collector's schedule changes; nothing is defined in the kernel's namespace (no name, no docstring), so outputs and
# execution counts are the same. Learners' kernels keep Python's default.
__import__("gc").set_threshold(50_000, 20, 100)
