"""The records every compatibility client produces, and how consumers report them.

Each client program (whatever its language) implements exactly this; keep them in step
(README.md in this folder spells it out for the non-Python clients).

Record i, produced by a call covering indices [first, first + count) with codec list C:
  codec(i)   = C[(i - first) * len(C) // count]      (one producer instance per codec)
  key(i)     = "key-" + str(i % 1000)
  value(i)   = "value-" + str(i) + "-" + letter * (i % 500), letter = "abc...z"[i % 26]
  headers(i) = [("idx", str(i)), ("codec", codec(i))]   (in this order)
The consumer reports value(i) as the lowercase hex SHA-256 of its bytes.
"""

import hashlib

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def codec_of(i, first, count, codecs):
    return codecs[(i - first) * len(codecs) // count]


def key(i):
    return "key-%d" % (i % 1000)


def value(i):
    return "value-%d-" % i + chr(ord("a") + i % 26) * (i % 500)


def headers(i, codec):
    return [("idx", str(i)), ("codec", codec)]


def value_hash(v):
    if isinstance(v, str):
        v = v.encode()
    return hashlib.sha256(v).hexdigest()
