"""SQLite lexical recall: ``Request`` in (``model.py``), ``Candidate`` list out (``search.py``)."""
