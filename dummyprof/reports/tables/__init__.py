"""One table model for every format: a command builds its tables once, backends lay them out.

``model.py`` holds what a table is (columns, cells, emphasis, notes); ``compare.py`` (one module per
command) builds a command's blocks from its Results; ``to_terminal.py``, ``to_markdown.py`` and
``to_html.py`` render any block, so every format carries the same content and only the syntax differs.
"""
