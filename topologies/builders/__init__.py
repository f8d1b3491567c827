"""Preset topologies: the study's machines, parametric fat-trees, DGX H100 clusters.

Each preset composes a node builder (:mod:`topologies.nodes`) with a fabric
builder (:mod:`topologies.fabrics`) and returns a validated
:class:`networkx.DiGraph` following :mod:`topologies.schema`. Every hardware
figure is a keyword parameter.

* :mod:`topologies.builders.study`: the study's platform models
  (:func:`abci`, :func:`dgx1_cluster`, :func:`dgx2_cluster`);
* :mod:`topologies.builders.parametric`: :func:`fat_tree` and
  :func:`dgx_h100_cluster`.

The hardware presets as built are in :mod:`topologies.hardware`.

Examples
--------
>>> from topologies import builders
>>> builders.dgx1_cluster(2).graph["rank_order"]
'0,3,2,1,5,6,7,4'
"""

from .parametric import dgx_h100_cluster, fat_tree
from .study import abci, dgx1_cluster, dgx2_cluster

__all__ = ["abci", "dgx1_cluster", "dgx2_cluster", "fat_tree", "dgx_h100_cluster"]
