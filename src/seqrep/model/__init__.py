"""The model: a backbone cut at its exit layer, its attention strategy and head, as a
:class:`~seqrep.model.labeler.SequenceLabeler`, saved and loaded as a folder or a Hub id."""
