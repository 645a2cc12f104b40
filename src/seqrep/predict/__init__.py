"""Prediction: tags and spans from a labeler, its input files and records, and large corpora
labeled in resumable chunks."""
