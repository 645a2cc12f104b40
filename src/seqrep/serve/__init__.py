"""Serving a trained labeler: an HTTP API with dynamic batching, a web page and a spaCy
component.

* :mod:`seqrep.serve.app` -- :func:`create_app`, the FastAPI application (``seqrep serve``).
* :mod:`seqrep.serve.batcher` -- requests that arrive together run as one forward pass.
* :mod:`seqrep.serve.spacy_component` -- ``nlp.add_pipe("seqrep", config={"model": RUN})``.

Nothing here is imported by ``seqrep`` itself; the web parts need the ``serve`` extra
(``pip install 'seqrep-labeler[serve]'``) and the component the ``spacy`` extra.
"""
