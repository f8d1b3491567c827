"""NCCL's model as a library: what NCCL would set up and run on a machine, without running it.

``protocols`` (Simple / LL / LL128: the one definition of the protocols, their chunk rules
and NCCL's caps), ``search`` (channel counts and speeds, rings and trees on the graph),
``model`` (NCCL's tuner for allreduce and what NCCL sees of a machine), ``coll_model`` (the
tuner for allgather, reduce-scatter, broadcast and reduce), ``plans`` (the plan of one call,
cached by value), ``fill`` (pipeline-fill rules), ``hooks`` (the registry hooks of the
``nccl-*`` algorithms), ``versions`` (the tuner's algorithms and tables per NCCL release family,
``--nccl-version``). The algorithms themselves (per-rank generator code) are in
``simcollective/algorithms``; reading nccl-tests output and the comparison are in
``simcollective/validation``.
"""
