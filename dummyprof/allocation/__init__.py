"""Host memory a run allocates on purpose: backings (pageable, pinned, shared, mmap, huge pages) and arenas."""
