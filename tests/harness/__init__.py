"""The machinery the test files share; each test file keeps only its patterns and invariants.

    schedules  the generated schedules: strategies, canonical relabelling, example counts, searches,
               and how many distinct schedules ran (a summary line per pattern)
    endpoint   notebook 09's endpoint, served; a fresh provider and wallets; both tables read back
    delivery   delivering a schedule: lost responses armed per delivery, bursts, the final retry,
               DynamoDB's failure answers installed for one schedule
    rigs       what a pattern runs against: the notebooks' code, one table per pattern, emptied now and then
    resends    sending again: on DynamoDB's "send again" answers (counted), or after every error; one
               failure answer, then the same request resent
    wallets    04's and 05's orders of requests, delivered to a wallet of their own
    processes  whether a process is alive, stopping one, a DynamoDB Local of a test's own
    gc_startup run, not imported: the garbage collector's setting (conftest.py; make test's kernels)

Import them flat (tests/ is on sys.path): ``from harness.delivery import deliver_all``.
"""
