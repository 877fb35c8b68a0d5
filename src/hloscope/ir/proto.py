"""The protobuf wire format, read and written by hand: enough to find a field of a
message and to copy a message with some fields dropped, without the protobuf
package or XLA's generated classes.
"""

from __future__ import annotations

from collections.abc import Iterator


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


def proto_fields(data: bytes) -> Iterator[tuple[int, int, int, int, bytes]]:
    """(field number, wire type, start, end, payload) of each field of a message;
    `data[start:end]` is the whole field, key included. Raises ValueError if malformed."""
    pos = 0
    size = len(data)

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
        start = pos
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            varint()
            payload = b""
        elif wire == 2:
            length = varint()
            if pos + length > size:
                raise ValueError("truncated field")
            payload = data[pos : pos + length]
            pos += length
        elif wire == 1:
            pos += 8
            payload = b""
        elif wire == 5:
            pos += 4
            payload = b""
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if pos > size:
            raise ValueError("truncated field")
        yield number, wire, start, pos, payload


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
