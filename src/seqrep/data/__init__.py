"""Reading labeled text: plain objects, tag schemes, readers and named datasets."""
