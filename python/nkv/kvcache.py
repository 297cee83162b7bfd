# SPDX-License-Identifier: MIT
"""A KV-cache helper shaped after the serving engines' connector
interfaces (vLLM's KV connector and prefix cache, LMCache-style lookup /
store / retrieve): chained block keys, a prefix lookup, and store / load
of whole blocks between nkv and a paged cache tensor in vLLM's layout,
with an outcome per block. Shaped after those interfaces from their
documentation; NOT tested against vLLM, SGLang or LMCache themselves.

Keys (as examples/pc_keys.h derives them, byte for byte):
  root   = H("nkv prefix_cache {layers} {value_bytes}" NUL-padded to
           klen + 4 * (block_tokens + 1) bytes)   -- or any root you pass
  block  = H(parent || token ids (u32 LE each) || extra (u32 LE))
  layer  = H(block || layer (u32 LE))
with H = XXH3-128 (16-byte canonical digest, python3-xxhash) or SHA-256
(32 bytes, hashlib). A key longer than the namespace's max_key (KML, at
most 255 bytes), from make_key(), is replaced by
  b"nkv-h:" + SHA-256(key)   (38 bytes)
so long names (a model path and a request id, say) still map to one key;
the rule is fixed so that every process derives the same key.

The cache layout (vLLM's paged KV cache, flash-attention backends): per
layer a tensor [2, num_blocks, block_size, num_kv_heads, head_size], K
then V. A block's value, per block and layer, is its K then its V: two
runs of block_bytes each, stored and loaded in place when the tensor
lives in a Region (numpy or CPU torch over it: Region.numpy /
Region.torch, shape CacheLayout.shape()): one command per block and
layer with two runs, as nkv_kvcache.h moves them (NKV_QPAIR_NO_SLOTS).
"""
from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence

from ._core import Namespace, Outcome, Region

LONG_KEY_PREFIX = b"nkv-h:"


def _h(klen: int, data: bytes) -> bytes:
    if klen == 16:
        import xxhash
        return xxhash.xxh3_128_digest(data)
    if klen == 32:
        return hashlib.sha256(data).digest()
    raise ValueError("nkv.kvcache: klen is 16 (XXH3-128) or 32 (SHA-256)")


def make_key(key: bytes, max_key: int = 255) -> bytes:
    """@key as it is stored: itself when it fits @max_key bytes, else
    b"nkv-h:" + SHA-256(key) (the documented rule for long keys)."""
    if len(key) <= max_key:
        return key
    return LONG_KEY_PREFIX + hashlib.sha256(key).digest()


def root_hash(klen: int, block_tokens: int, layers: int, value_bytes: int) -> bytes:
    """pc_keys.h's root: the model's shape in it, so two shapes never
    share a key (an engine would put its model's name there too)."""
    buf = bytearray(klen + 4 * (block_tokens + 1))
    text = f"nkv prefix_cache {layers} {value_bytes}".encode()[:len(buf) - 1]
    buf[:len(text)] = text
    return _h(klen, bytes(buf))


def block_hashes(tokens: Sequence[int], block_tokens: int, parent: bytes,
                 extra: int = 0, klen: int = 16) -> List[bytes]:
    """The chained hash of every whole block of @tokens: block i =
    H(block i-1's hash, its token ids, @extra), block 0's parent @parent."""
    out = []
    for b in range(len(tokens) // block_tokens):
        ids = tokens[b * block_tokens:(b + 1) * block_tokens]
        parent = _h(klen, parent + struct.pack(f"<{block_tokens}I", *ids) +
                    struct.pack("<I", extra))
        out.append(parent)
    return out


def layer_key(block_hash: bytes, layer: int) -> bytes:
    """The key of one layer of a block: H(block hash, layer)."""
    return _h(len(block_hash), block_hash + struct.pack("<I", layer))


@dataclass
class CacheLayout:
    """A paged KV cache as vLLM lays it out: per layer [2, num_blocks,
    block_size, num_kv_heads, head_size]; element_size bytes each."""
    layers: int
    num_blocks: int
    block_size: int
    num_kv_heads: int
    head_size: int
    element_size: int = 2

    @property
    def block_bytes(self) -> int:
        """One block's K (or V) of one layer."""
        return self.block_size * self.num_kv_heads * self.head_size * self.element_size

    @property
    def layer_bytes(self) -> int:
        return 2 * self.num_blocks * self.block_bytes

    def shape(self) -> tuple:
        return (self.layers, 2, self.num_blocks, self.block_size, self.num_kv_heads,
                self.head_size)

    def k_offset(self, layer: int, block: int) -> int:
        """Byte offset of block @block's K of @layer in a cache laid out
        layer after layer (the V follows at + num_blocks x block_bytes)."""
        return layer * self.layer_bytes + block * self.block_bytes


class KVCache:
    """Store and load blocks of a paged cache in one Region through a
    namespace, an entry per (block, layer), content keys per block chain.

    The connector's three questions, shaped after vLLM's KV connector
    (get_num_new_matched_tokens / save_kv_layer / start_load_kv):
      lookup(hashes)                how many leading blocks nkv holds
      store(hashes, block_ids)      save blocks of the cache under their keys
      load(hashes, block_ids)       bring them back into the cache
    """

    def __init__(self, ns: Namespace, layout: CacheLayout, region: Region) -> None:
        if region.nbytes < layout.layers * layout.layer_bytes:
            raise ValueError("nkv.kvcache: the region is smaller than the cache")
        self.ns, self.layout, self.region = ns, layout, region

    def _runs(self, hashes: Sequence[bytes], block_ids: Sequence[int]):
        L = self.layout
        keys: List[bytes] = []
        offs: List[int] = []
        for h, b in zip(hashes, block_ids):
            for layer in range(L.layers):
                keys.append(make_key(layer_key(h, layer), self.ns.max_key))
                offs.append(L.k_offset(layer, b))
        return keys, offs

    def lookup(self, hashes: Sequence[bytes]) -> int:
        """The number of leading blocks whose layer-0 key exists (blocks
        are stored last layer first, layer 0 last, so layer 0 means whole)."""
        keys = [make_key(layer_key(h, 0), self.ns.max_key) for h in hashes]
        hit = 0
        for o in self.ns.exist_many(keys):
            if not o.ok:
                break
            hit += 1
        return hit

    def _move(self, store: bool, keys: List[bytes], offs: List[int]) -> List[Outcome]:
        """One command per (block, layer) whose value is two runs in place:
        K (block_bytes at its offset) then V (num_blocks x block_bytes on)."""
        L = self.layout
        bb, half = L.block_bytes, L.num_blocks * L.block_bytes
        runs = [[(self.region, o, bb), (self.region, o + half, bb)] for o in offs]
        if store:
            return self.ns.store_runs(keys, runs)
        out = self.ns.retrieve_runs(keys, runs)
        # A value of another size is not this block: never ok.
        return [o if not o.ok or o.length == 2 * bb else Outcome(o.key, -90, o.length)
                for o in out]

    def store(self, hashes: Sequence[bytes], block_ids: Sequence[int]) -> List[Outcome]:
        """Save cache blocks @block_ids under @hashes: an Outcome per
        (block, layer), block-major. Layers 1.. go first, layer 0 in a
        second batch once they are stored, so a block whose layer-0 key
        exists is whole (lookup's rule)."""
        keys, offs = self._runs(hashes, block_ids)
        L = self.layout
        rest = [i for i in range(len(keys)) if i % L.layers]
        out: List[Optional[Outcome]] = [None] * len(keys)
        for i, o in zip(rest, self._move(True, [keys[i] for i in rest], [offs[i] for i in rest])):
            out[i] = o
        # Layer 0 of a block only when its other layers are stored.
        zero = [i for i in range(0, len(keys), L.layers)
                if all(out[i + j].ok for j in range(1, L.layers))]  # type: ignore[union-attr]
        for i, o in zip(zero, self._move(True, [keys[i] for i in zero], [offs[i] for i in zero])):
            out[i] = o
        for i in range(0, len(keys), L.layers):
            if out[i] is None:
                out[i] = Outcome(keys[i], -125, 0)  # -ECANCELED: a layer failed
        return out  # type: ignore[return-value]

    def load(self, hashes: Sequence[bytes], block_ids: Sequence[int]) -> List[Outcome]:
        """Load blocks into cache slots @block_ids: an Outcome per (block,
        layer), block-major; length = bytes of K and V found."""
        keys, offs = self._runs(hashes, block_ids)
        return self._move(False, keys, offs)
