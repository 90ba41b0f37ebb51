"""What makes each backend answer like DynamoDB (or AWS): every patch of others' code, and DynamoDB Local itself.

A notebook rarely opens these; `helpers.connect()` installs most of them. Each module has one job, and
each private site it patches is named, with the version it was written against, in
tests/test_patched_hooks.py. One verb each: ``use_virtual_time(clock)`` runs a patched library on the
virtual clock (sqs_clock, powertools_clock; ``use_virtual_backoff`` for botocore's retry sleeps), and
``use_...()`` turns on any other process-wide patch (``use_item_rollback()``, ``use_aws_deduplication()``);
a hook on one client is ``install(client)`` (``FaithfulMoto``'s before-send handler here; a fault or a
watcher is a helpers/wire.py layer, undone with ``uninstall()``).

    faithful_moto     moto made atomic, and ClientRequestToken honoured
    moto_speed        moto's expression parses cached by their text, a filtered Scan copying only what it returns
                      (answers unchanged; faithful_moto turns it on)
    client_tokens     DynamoDB's ClientRequestToken rules
    item_rollback     moto's transactions rolled back item by item (stock copies whole tables)
    capacity          the capacity units DynamoDB Local reports, as rules (moto's own are wrong)
    virtual_backoff   botocore's retry backoff on the virtual clock
    sqs_clock         moto's SQS visibility timeouts on the virtual clock
    fifo_dedup        moto's FIFO queues: AWS's 5-minute deduplication window and group order
    powertools_clock  Powertools' idempotency utility on the virtual clock
    search_constants  hypothesis's search, without the literals of this project's source (the checker's)
    dynamodb_local    find, start and stop AWS's DynamoDB Local (its launcher is java/)
    java/             LoopbackDynamoDBLocal.java: DynamoDB Local on 127.0.0.1 only, gone with its parent
"""
