"""One table model (``model.py``): each command builds its blocks once, ``to_*.py`` give each format its syntax."""
