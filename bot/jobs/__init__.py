"""The bot's jobs: the durable queue, the workers and their supervisor, the handlers that run one
evaluation per job, the events they are made from, and backfill (which evaluates a repository's
history in one process or through the queue). Nothing here serves HTTP."""
