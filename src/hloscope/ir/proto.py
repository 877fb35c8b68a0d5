"""The protobuf wire format, read and written by hand: enough to find a field of a
message and to copy a message with some fields dropped, without the protobuf
package or XLA's generated classes.
"""

from __future__ import annotations

from collections.abc import Callable


def proto_field(data: bytes, field: int) -> bytes | None:
    """The payload of the first length-delimited `field` in a protobuf message."""
    pos = 0
    size = len(data)

    def varint() -> int:
        nonlocal pos
        shift = value = 0
        while pos < size:
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 63:
                break
        raise ValueError("bad varint")

    try:
        while pos < size:
            key = varint()
            number, wire = key >> 3, key & 7
            if wire == 2:
                length = varint()
                if pos + length > size:
                    return None
                if number == field:
                    return data[pos : pos + length]
                pos += length
            elif wire == 0:
                varint()
            elif wire == 1:
                pos += 8
            elif wire == 5:
                pos += 4
            else:
                return None
    except ValueError:
        return None
    return None


def proto_message(data: bytes) -> list[tuple[int, int | bytes]]:
    """Each field of a message, in order: (number, value), the value an int for a
    varint and the payload's bytes for a length-delimited field (fixed-width fields
    are skipped). Raises ValueError if malformed."""
    pos = 0
    size = len(data)
    out: list[tuple[int, int | bytes]] = []

    def varint() -> int:
        nonlocal pos
        shift = value = 0
        while True:
            if pos >= size or shift > 63:
                raise ValueError("bad varint")
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7

    while pos < size:
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            out.append((number, varint()))
        elif wire == 2:
            length = varint()
            if pos + length > size:
                raise ValueError("truncated field")
            out.append((number, data[pos : pos + length]))
            pos += length
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
            if pos > size:
                raise ValueError("truncated field")
        else:
            raise ValueError(f"unsupported wire type {wire}")
    return out


def proto_varints(value: int | bytes) -> list[int]:
    """A repeated integer field's values: one varint, or a packed run of them."""
    if isinstance(value, int):
        return [value]
    out: list[int] = []
    shift = current = 0
    for byte in value:
        current |= (byte & 0x7F) << shift
        if byte & 0x80:
            shift += 7
            if shift > 63:
                raise ValueError("bad varint")
        else:
            out.append(current)
            shift = current = 0
    if shift:
        raise ValueError("truncated varint")
    return out


def proto_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def proto_key(number: int, wire: int) -> bytes:
    return proto_varint((number << 3) | wire)


def proto_rewrite(
    data: bytes,
    field: int,
    rewrite: Callable[[bytes], bytes | None],
    read: frozenset[int] = frozenset(),
) -> tuple[bytes, dict[int, bytes]]:
    """`data` with the payload of each length-delimited `field` replaced by what
    `rewrite` makes of it (None drops the field), and the payload of the last
    length-delimited field of each number in `read`. Runs of other fields are
    copied as they are, in one slice each. Raises ValueError if malformed.

    One loop with the varints read in place: this runs over every field of every
    instruction of a module (a fifth of a million at 10k ops)."""
    pos = 0
    size = len(data)
    copied = 0
    out: list[bytes] = []
    found: dict[int, bytes] = {}
    while pos < size:
        start = pos
        byte = data[pos]
        pos += 1
        key = byte & 0x7F
        shift = 7
        while byte & 0x80:
            if pos >= size or shift > 63:
                raise ValueError("bad varint")
            byte = data[pos]
            pos += 1
            key |= (byte & 0x7F) << shift
            shift += 7
        wire = key & 7
        if wire == 2:
            if pos >= size:
                raise ValueError("bad varint")
            byte = data[pos]
            pos += 1
            length = byte & 0x7F
            shift = 7
            while byte & 0x80:
                if pos >= size or shift > 63:
                    raise ValueError("bad varint")
                byte = data[pos]
                pos += 1
                length |= (byte & 0x7F) << shift
                shift += 7
            end = pos + length
            if end > size:
                raise ValueError("truncated field")
            number = key >> 3
            if number == field:
                body = rewrite(data[pos:end])
                out.append(data[copied:start])
                if body is not None:
                    out.append(proto_key(number, 2) + proto_varint(len(body)) + body)
                copied = end
            elif number in read:
                found[number] = data[pos:end]
            pos = end
        elif wire == 0:
            limit = pos + 10
            while True:
                if pos >= size or pos >= limit:
                    raise ValueError("bad varint")
                byte = data[pos]
                pos += 1
                if not byte & 0x80:
                    break
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if pos > size:
            raise ValueError("truncated field")
    if not out:
        return data, found
    out.append(data[copied:])
    return b"".join(out), found


def proto_bytes(number: int, payload: bytes) -> bytes:
    """A length-delimited field (a string, a message, a packed run): its key, length
    and payload."""
    return proto_key(number, 2) + proto_varint(len(payload)) + payload


def proto_int(number: int, value: int) -> bytes:
    """A varint field (an int64's two's complement for a negative value)."""
    return proto_key(number, 0) + proto_varint(value & 0xFFFFFFFFFFFFFFFF)
