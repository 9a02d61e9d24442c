"""The model's graph, rewired so its int8 weights stay int8 in memory (``docs/hybrid-retrieval.md``, Costs).

ONNX Runtime would fold each weight's dequantisation at load (90 MB of float32): the embedding
table is dequantised after its lookup instead, and each ``MatMul`` weight becomes an 8-bit
``MatMulNBits`` operand.  Edited at the protobuf wire level (no ``onnx`` package); anything
unexpected leaves the model as it was.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["BLOCK", "int8_embeddings", "int8_matmuls", "lean"]

_TABLE = "inner.embeddings.word_embeddings.weight"
_LENGTH_DELIMITED = 2

#: (field number, wire type, value): value is bytes for length-delimited fields, else raw bytes
#: or an int (varint).
_Field = tuple[int, int, bytes | int]
#: A graph edit: (model fields, graph fields, nodes) -> the new graph fields, or ``None`` for no change.
_Edit = Callable[[list[_Field], list[_Field], list[list[_Field]]], list[_Field] | None]


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _fields(data: bytes) -> list[_Field]:
    out: list[_Field] = []
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        value: bytes | int
        if wire == 0:
            value, at = _varint(data, at)
        elif wire == _LENGTH_DELIMITED:
            size, at = _varint(data, at)
            value, at = data[at : at + size], at + size
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            value, at = data[at : at + width], at + width
        else:
            raise ValueError(f"unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def _b(value: bytes | int) -> bytes:
    if isinstance(value, int):
        raise ValueError("a varint where bytes were expected")
    return value


def _i(value: bytes | int) -> int:
    if not isinstance(value, int):
        raise ValueError("bytes where a varint was expected")
    return value


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _encode(fields: list[_Field]) -> bytes:
    parts: list[bytes] = []
    for number, wire, value in fields:
        parts.append(_encode_varint(number << 3 | wire))
        if wire == 0:
            parts.append(_encode_varint(_i(value)))
        elif wire == _LENGTH_DELIMITED:
            parts.append(_encode_varint(len(_b(value))))
            parts.append(_b(value))
        else:
            parts.append(_b(value))
    return b"".join(parts)


def _strings(node: list[_Field], number: int) -> list[str]:
    return [_b(v).decode() for n, _, v in node if n == number]


def _with(node: list[_Field], inputs: list[str], outputs: list[str]) -> bytes:
    """``node`` (a NodeProto) with its inputs (field 1) and outputs (field 2) replaced, names dropped."""
    rest = [f for f in node if f[0] not in (1, 2, 3)]
    head: list[_Field] = [(1, _LENGTH_DELIMITED, i.encode()) for i in inputs]
    head += [(2, _LENGTH_DELIMITED, o.encode()) for o in outputs]
    return _encode(head + rest)


def _names(nodes: list[list[_Field]]) -> tuple[list[str], list[list[str]], list[list[str]]]:
    """Each node's op type, inputs and outputs."""
    ops = [(_strings(n, 4) or [""])[0] for n in nodes]
    return ops, [_strings(n, 1) for n in nodes], [_strings(n, 2) for n in nodes]


def _edited(model: bytes, edit: _Edit) -> bytes:
    """``model`` with its graph edited (``edit`` may add model fields); unchanged when it is not one
    graph, ``edit`` returns ``None`` or anything is malformed."""
    try:
        top = _fields(model)
        graph_at = [k for k, f in enumerate(top) if f[0] == 7]
        if len(graph_at) != 1:
            return model
        graph = _fields(_b(top[graph_at[0]][2]))
        new_graph = edit(top, graph, [_fields(_b(v)) for n, _, v in graph if n == 1])
    except (ValueError, IndexError, UnicodeDecodeError):
        return model
    if new_graph is None:
        return model
    top[graph_at[0]] = (7, _LENGTH_DELIMITED, _encode(new_graph))
    return _encode(top)


def _lookup_first(top: list[_Field], graph: list[_Field], nodes: list[list[_Field]]) -> list[_Field] | None:
    """The graph with the table's lookup before its dequantisation, or ``None``."""
    ops, ins, outs = _names(nodes)
    cast = [k for k, o in enumerate(outs) if o == [_TABLE + "_f"] and ops[k] == "Cast"]
    mul = [k for k, o in enumerate(outs) if o == [_TABLE] and ops[k] == "Mul"]
    users = [k for k, i in enumerate(ins) if _TABLE in i]
    if len(cast) != 1 or len(mul) != 1 or len(users) != 1 or ops[users[0]] != "Gather":
        return None
    c, m, g = cast[0], mul[0], users[0]
    if ins[c] != [_TABLE + "_q"] or ins[m] != [_TABLE + "_f", _TABLE + "_scale"] or ins[g][0] != _TABLE:
        return None
    if any(_TABLE + "_f" in i for k, i in enumerate(ins) if k != m):
        return None
    ids, (looked_up,) = ins[g][1], outs[g]
    rows_q, rows_scale, rows_f = "paxm_rows_q", "paxm_rows_scale", "paxm_rows_f"
    lookup_q = _with(nodes[g], [_TABLE + "_q", ids], [rows_q])
    lookup_scale = _with(nodes[g], [_TABLE + "_scale", ids], [rows_scale])
    cast_rows = _with(nodes[c], [rows_q], [rows_f])
    scale_rows = _with(nodes[m], [rows_f, rows_scale], [looked_up])
    rest = [_encode(n) for k, n in enumerate(nodes) if k not in (c, m, g)]
    rewired = [lookup_q, lookup_scale, cast_rows, scale_rows, *rest]
    return [(1, _LENGTH_DELIMITED, n) for n in rewired] + [f for f in graph if f[0] != 1]


def int8_embeddings(model: bytes) -> bytes:
    """``model`` (ONNX bytes) with the word-embedding table dequantised after its lookup.

    The model unchanged when its graph is not the expected ``Cast``/``Mul``/``Gather`` chain.
    """
    return _edited(model, _lookup_first)


#: ``MatMulNBits`` block (K values per scale; each block of a column shares the column's scale):
#: also the span over which the int8 kernel quantises the activations (smaller is closer).
BLOCK = 32
#: ``MatMulNBits`` accuracy level 4: activations quantised to int8 per block, int8 dot products
#: (ONNX Runtime's fast path; level 0 dequantises the weights to float32 per block and is 3x
#: slower than the float32 model).  A sentence vector stays within cosine 0.999 of the float one.
ACCURACY_LEVEL = 4
_UINT8, _FLOAT, _INT_ATTRIBUTE = 2, 1, 2


def _attribute(name: str, value: int) -> bytes:
    return _encode([(1, _LENGTH_DELIMITED, name.encode()), (3, 0, value), (20, 0, _INT_ATTRIBUTE)])


def _tensor(name: str, dims: list[int], data_type: int, raw: bytes) -> bytes:
    fields: list[_Field] = [(1, 0, d) for d in dims]
    fields += [(2, 0, data_type), (8, _LENGTH_DELIMITED, name.encode()), (9, _LENGTH_DELIMITED, raw)]
    return _encode(fields)


#: The graph's initializers by name: ``(dims, data_type, raw bytes)``.
_Weights = dict[str, tuple[list[int], int, bytes]]


def _weights(graph: list[_Field]) -> _Weights:
    by_name: _Weights = {}
    for number, _, value in graph:
        if number != 5:
            continue
        fields = _fields(_b(value))
        names = [_b(v).decode() for n, _, v in fields if n == 8]
        raws = [_b(v) for n, _, v in fields if n == 9]
        types = [_i(v) for n, _, v in fields if n == 2]
        if len(names) == 1 and len(raws) == 1 and len(types) == 1:
            by_name[names[0]] = ([_i(v) for n, _, v in fields if n == 1], types[0], raws[0])
    return by_name


def _nbits(k: int, n: int, codes: bytes, scale: bytes) -> tuple[bytes, bytes]:
    """``MatMulNBits`` operands for a ``K x N`` int8 matrix with one float32 scale per column."""
    import numpy as np

    blocks = k // BLOCK
    weights = np.frombuffer(codes, dtype=np.int8).reshape(k, n)
    packed = (weights.T.astype(np.int16) + 128).astype(np.uint8)  # zero point 128: the default for 8 bits
    scales = np.repeat(np.frombuffer(scale, dtype=np.float32).reshape(n), blocks)
    return packed.tobytes(), scales.astype(np.float32).tobytes()


def _matmul_rewrites(nodes: list[list[_Field]], weights: _Weights) -> dict[int, tuple[bytes, list[bytes], set[str]]]:
    """Per ``MatMul`` fed by a dequantised int8 weight: its ``MatMulNBits`` node, new weights, dropped names."""
    ops, ins, outs = _names(nodes)
    producer = {name: k for k, names in enumerate(outs) for name in names}
    users: dict[str, list[int]] = {}
    for k, names in enumerate(ins):
        for name in names:
            users.setdefault(name, []).append(k)
    plans: dict[int, tuple[bytes, list[bytes], set[str]]] = {}
    for k, op in enumerate(ops):
        if op != "MatMul" or len(ins[k]) != 2:
            continue
        x, w = ins[k]
        mul = producer.get(w)
        if mul is None or ops[mul] != "Mul" or len(ins[mul]) != 2 or users.get(w) != [k]:
            continue
        w_f, scale = ins[mul]
        cast = producer.get(w_f)
        if cast is None or ops[cast] != "Cast" or users.get(w_f) != [mul] or len(ins[cast]) != 1:
            continue
        codes = ins[cast][0]
        if codes not in weights or scale not in weights:
            continue
        (dims, kind, raw), (s_dims, s_kind, s_raw) = weights[codes], weights[scale]
        if kind != 3 or s_kind != _FLOAT or len(dims) != 2 or s_dims != [1, dims[1]] or dims[0] % BLOCK:
            continue
        if users.get(codes) != [cast] or users.get(scale) != [mul]:
            continue
        k_in, n_out = dims
        packed, scales = _nbits(k_in, n_out, raw, s_raw)
        b_name, s_name = f"{codes}_nbits", f"{scale}_nbits"
        attributes = [
            _attribute("K", k_in),
            _attribute("N", n_out),
            _attribute("bits", 8),
            _attribute("block_size", BLOCK),
            _attribute("accuracy_level", ACCURACY_LEVEL),
        ]
        node: list[_Field] = [(1, _LENGTH_DELIMITED, n.encode()) for n in (x, b_name, s_name)]
        node += [(2, _LENGTH_DELIMITED, outs[k][0].encode()), (4, _LENGTH_DELIMITED, b"MatMulNBits")]
        node += [(5, _LENGTH_DELIMITED, a) for a in attributes] + [(7, _LENGTH_DELIMITED, b"com.microsoft")]
        new = [
            _tensor(b_name, [n_out, k_in // BLOCK, BLOCK], _UINT8, packed),
            _tensor(s_name, [n_out * (k_in // BLOCK)], _FLOAT, scales),
        ]
        plans[k] = (_encode(node), new, {codes, scale, w_f, w, f"#{cast}", f"#{mul}"})
    return plans


def _nbits_graph(top: list[_Field], graph: list[_Field], nodes: list[list[_Field]]) -> list[_Field] | None:
    """The graph with each dequantised int8 ``MatMul`` weight as a ``MatMulNBits`` operand, or ``None``."""
    plans = _matmul_rewrites(nodes, _weights(graph))
    if not plans:
        return None
    dropped = set().union(*(names for _, _, names in plans.values()))
    kept = [plans[k][0] if k in plans else _encode(n) for k, n in enumerate(nodes) if f"#{k}" not in dropped]
    rebuilt: list[_Field] = [(1, _LENGTH_DELIMITED, n) for n in kept]
    for number, wire, value in graph:
        if number == 1:
            continue
        if number in (5, 13):  # an initializer or a value_info of a dropped tensor goes
            name_field = 8 if number == 5 else 1
            names = [_b(v).decode() for n, _, v in _fields(_b(value)) if n == name_field]
            if names and names[0] in dropped:
                continue
        rebuilt.append((number, wire, value))
    rebuilt += [(5, _LENGTH_DELIMITED, t) for _, tensors, _ in plans.values() for t in tensors]
    domains = [_fields(_b(v)) for n, _, v in top if n == 8]
    if not any(_b(v) == b"com.microsoft" for d in domains for n, _, v in d if n == 1):
        top.append((8, _LENGTH_DELIMITED, _encode([(1, _LENGTH_DELIMITED, b"com.microsoft"), (2, 0, 1)])))
    return rebuilt


def int8_matmuls(model: bytes) -> bytes:
    """``model`` with each dequantised int8 ``MatMul`` weight as a ``MatMulNBits`` (8-bit) operand.

    ONNX Runtime folds ``Cast``/``Mul`` of a constant into a float32 weight (4 bytes a value);
    ``MatMulNBits`` keeps the int8 codes (the zero point 128 shifts them to uint8) and the
    column's scale, and dequantises a block at a time as it multiplies: the same products of
    the same float32 numbers.  The model unchanged when no weight has that shape.
    """
    return _edited(model, _nbits_graph)


def lean(model: bytes) -> bytes:
    """``model`` with its int8 weights kept int8 in memory (:func:`int8_embeddings`, :func:`int8_matmuls`)."""
    return int8_matmuls(int8_embeddings(model))
