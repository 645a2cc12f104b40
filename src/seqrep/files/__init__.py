"""The file system boundary: the one owner of what seqrep writes and deletes
(:mod:`seqrep.files.owner`) and the one reader of folders that may come from anyone
(:mod:`seqrep.files.reader`)."""
