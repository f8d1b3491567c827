"""NCCL on the simulator: its topology search (channels, rings, trees), its protocols, its
cost model, and its allreduce algorithms as per-rank generator code.

``model`` (NCCL's tuner and channel counts), ``search`` (rings and trees on the graph),
``protocols`` (Simple / LL / LL128), ``collectives`` (what the ``nccl-*`` algorithms run),
``nccltests`` (reading nccl-tests output), ``compare`` (the ``simcollective compare`` command).
"""
