"""The simulated AWS services the lessons put in front of, or behind, a table.

Each module has one job; open the one a notebook names (what makes moto's SQS and Powertools run on
the virtual clock is a patch of theirs: helpers/fidelity/):

    gateway           API Gateway's integration timeout (504) in virtual time; invoke() with a deadline
    invocation        Invocation: what one handler invocation did (gateway and Lambda's SQS poller alike)
    queues            fresh_queue() and a Consumer that can crash before deleting
    lambda_sqs        Lambda's SQS poller: batches, whole-batch failures, batchItemFailures
    lambda_streams    Lambda's DynamoDB Streams poller: shard order, whole-batch retries, bisect, checkpoints
    payment_provider  a fake provider that honours an idempotency key
"""
