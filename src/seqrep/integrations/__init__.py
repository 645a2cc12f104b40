"""seqrep on engines people already run: Ray Data and Ray Serve (:mod:`seqrep.integrations.ray`,
:mod:`seqrep.integrations.ray_serve`; the ``ray`` extra). Nothing here is imported by the rest of
seqrep, so everything else works without them."""
