"""The fault-injection soak: real agent turns and direct store writers on a few shared
conversations while a killer SIGKILLs them (at random, while holding the compression
lease, while running a tool), a process holds the store's write lock for seconds and the
summary model fails or hangs; then a checker over the store.

    python -m benchmarks.soak --backend sqlite --minutes 2 --workers 4 --seed 1

Modules: ``store`` (where the soak's store lives, raw connections), ``model`` (the fake
model's answers and summary fault windows), ``worker`` (one agent or writer process),
``faults`` (killer, write-lock holder), ``checker`` (the figures), ``runner`` (the CLI).
"""
