"""The simulated AWS services the lessons put in front of, or behind, a table.

Each module has one job; open the one a notebook names:

    gateway           API Gateway's integration timeout (504) in virtual time; invoke() with a deadline
    invocation        Invocation: what one handler invocation did (gateway and Lambda's SQS poller alike)
    queues            fresh_queue() and a Consumer that can crash before deleting
    lambda_sqs        Lambda's SQS poller: batches, whole-batch failures, batchItemFailures
    lambda_streams    Lambda's DynamoDB Streams poller: shard order, whole-batch retries, bisect, checkpoints
    sqs_clock         kept for notebooks 00 and 07: the home is fidelity/sqs_clock
    fifo_dedup        kept for notebook 07: the home is fidelity/fifo_dedup
    payment_provider  a fake provider that honours an idempotency key
    powertools_clock  kept for notebook 06: the home is fidelity/powertools_clock
"""
