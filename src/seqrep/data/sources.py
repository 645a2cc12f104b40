"""The old import path of the readers' shared helpers, which now live in
:mod:`seqrep.data.textfile`, :mod:`seqrep.data.quote`, :mod:`seqrep.data.jsonparse`,
:mod:`seqrep.data.options` and :mod:`seqrep.data.iob2`; import from those."""

from seqrep.data.iob2 import to_iob2
from seqrep.data.jsonparse import parse_json
from seqrep.data.options import check_flag, check_index, check_scheme
from seqrep.data.quote import brief, cut, show
from seqrep.data.textfile import forget, read_start, read_text, split_lines

__all__ = ["brief", "check_flag", "check_index", "check_scheme", "cut", "forget", "parse_json",
           "read_start", "read_text", "show", "split_lines", "to_iob2"]
