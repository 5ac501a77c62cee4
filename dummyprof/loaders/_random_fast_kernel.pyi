# Type stub of the C extension built from _random_fast_kernel.c.
LANES: int
STEPS: int

def fill_chunks(
    address: int,
    total_bytes: int,
    first_chunk: int,
    end_chunk: int,
    key: int,
    and_word: int,
    or_word: int,
    lanes_address: int,
    lanes_words: int,
    /,
) -> None: ...
