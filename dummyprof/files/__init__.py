"""The user's files: read bounded, never written when a run reads them, written without clobbering.

- ``reading``: every file dummyprof parses (results, baselines, gate configs, Hugging Face
  ``config.json``) is read through one bounded read; JSON objects with a key twice are refused.
- ``inputs``: every file a run reads, computed in one place for every command and the gate.
- ``outputs``: the one policy for every file a command writes; an input is never an output.

Imports nothing of dummyprof but ``errors``, so any layer may read through it; only the edges
(``cli``, ``api``, ``gate``) import ``inputs`` and ``outputs`` (tests/test_import_rules.py).
"""
