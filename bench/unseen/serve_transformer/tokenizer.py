"""A hashing word tokenizer: stable ids without a vocabulary file."""

import re
import zlib

PAD_ID = 0
CLS_ID = 1
_WORD = re.compile(r"[a-z']+|[0-9]+|[^\sa-z0-9]")


def encode(text: str, vocab_size: int, max_len: int) -> list[int]:
    ids = [CLS_ID]
    for word in _WORD.findall(text.lower()):
        ids.append(2 + zlib.crc32(word.encode()) % (vocab_size - 2))
    ids = ids[:max_len]
    return ids + [PAD_ID] * (max_len - len(ids))
