"""The simulated AWS services the lessons put in front of, or behind, a table.

Each module has one job; open the one a notebook names:

    gateway           API Gateway's integration timeout (504) in virtual time; invoke() with a deadline
    invocation        Invocation: what one handler invocation did (gateway and Lambda's SQS poller alike)
    queues            fresh_queue() and a Consumer that can crash before deleting
    lambda_sqs        Lambda's SQS poller: batches, whole-batch failures, batchItemFailures
    lambda_streams    Lambda's DynamoDB Streams poller: shard order, whole-batch retries, bisect, checkpoints
    sqs_clock         moto's SQS visibility timeouts on the virtual clock
    fifo_dedup        FIFO deduplication's 5-minute window and group order, as AWS documents them
    payment_provider  a fake provider that honours an idempotency key
    powertools_clock  Powertools' idempotency utility on the virtual clock
"""
