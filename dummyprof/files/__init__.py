"""The user's files: read bounded (``reading``), never written when a run reads them (``inputs``), written
without clobbering (``outputs``). Any layer may read through ``reading``; only the edges import the other two.
"""
