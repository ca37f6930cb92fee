"""Write Outlook .msg files (MS-OXMSG in an MS-CFB compound file) for tests.

No library writes .msg files offline, so the fixtures are built here from the two
specifications: a version-3 compound file (512-byte sectors, a mini stream for streams under
4,096 bytes) holding the message's property stream, its ``__substg1.0_`` streams, recipient
and attachment storages, and attached messages as nested storages. The hostile variants
(truncated, lying sizes, sector loops, deep nesting) are made by editing these bytes.
"""

import struct
from dataclasses import dataclass, field
from datetime import UTC, datetime

SECTOR = 512
MINI = 64
CUTOFF = 4096
FREE, END, FATSECT = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD
NOSTREAM = 0xFFFFFFFF

PT_LONG, PT_SYSTIME, PT_UNICODE, PT_BINARY, PT_OBJECT = 0x0003, 0x0040, 0x001F, 0x0102, 0x000D


@dataclass
class MsgAttachment:
    filename: str
    data: bytes = b""
    mime: str = "application/octet-stream"
    message: "MsgMessage | None" = None  # an attached .msg


@dataclass
class MsgMessage:
    subject: str = ""
    body: str = ""
    sender_name: str = ""
    sender_email: str = ""
    to: list[tuple[str, str]] = field(default_factory=list)
    cc: list[tuple[str, str]] = field(default_factory=list)
    message_id: str = ""
    in_reply_to: str = ""
    references: str = ""
    date: datetime | None = None
    headers: str = ""
    attachments: list[MsgAttachment] = field(default_factory=list)


class _Node:
    def __init__(self, name: str, data: bytes | None = None):
        self.name = name
        self.data = data  # None: a storage
        self.children: list[_Node] = []

    def add(self, node: "_Node") -> "_Node":
        self.children.append(node)
        return node


def _filetime(value: datetime) -> int:
    return int((value - datetime(1601, 1, 1, tzinfo=UTC)).total_seconds() * 10_000_000)


def _message_nodes(store: _Node, msg: MsgMessage, *, embedded: bool) -> None:
    props: list[tuple[int, int, bytes]] = []  # (tag, flags, 8-byte value)

    def string(prop_id: int, text: str) -> None:
        if not text:
            return
        data = text.encode("utf-16-le")
        store.add(_Node(f"__substg1.0_{prop_id:04X}{PT_UNICODE:04X}", data))
        # The size counts the terminating NUL, which the stream does not hold (MS-OXMSG 2.1.2).
        props.append((prop_id << 16 | PT_UNICODE, 6, struct.pack("<II", len(data) + 2, 0)))

    string(0x001A, "IPM.Note")
    string(0x0037, msg.subject)
    string(0x0E1D, msg.subject)  # normalized subject
    string(0x1000, msg.body)
    string(0x0C1A, msg.sender_name)
    string(0x0C1F, msg.sender_email)
    string(0x0042, msg.sender_name)
    string(0x0065, msg.sender_email)
    string(0x0C1E, "SMTP")
    string(0x1035, msg.message_id)
    string(0x1042, msg.in_reply_to)
    string(0x1039, msg.references)
    string(0x007D, msg.headers)
    string(0x0E04, "; ".join(n for n, _ in msg.to))
    string(0x0E03, "; ".join(n for n, _ in msg.cc))
    if msg.date is not None:
        when = struct.pack("<Q", _filetime(msg.date))
        props.append((0x0039 << 16 | PT_SYSTIME, 6, when))
        props.append((0x0E06 << 16 | PT_SYSTIME, 6, when))
    recipients = [(n, e, 1) for n, e in msg.to] + [(n, e, 2) for n, e in msg.cc]
    for i, (name, address, kind) in enumerate(recipients):
        recip = store.add(_Node(f"__recip_version1.0_#{i:08X}"))
        rprops = []
        for prop_id, text in ((0x3001, name), (0x3003, address), (0x39FE, address)):
            data = text.encode("utf-16-le")
            recip.add(_Node(f"__substg1.0_{prop_id:04X}{PT_UNICODE:04X}", data))
            rprops.append((prop_id << 16 | PT_UNICODE, 6, struct.pack("<II", len(data), 0)))
        recip.add(_Node(f"__substg1.0_3002{PT_UNICODE:04X}", "SMTP".encode("utf-16-le")))
        rprops.append((0x3002 << 16 | PT_UNICODE, 6, struct.pack("<II", 10, 0)))
        rprops.append((0x0C15 << 16 | PT_LONG, 6, struct.pack("<II", kind, 0)))
        recip.add(_Node("__properties_version1.0", b"\0" * 8 + _props(rprops)))
    for i, att in enumerate(msg.attachments):
        node = store.add(_Node(f"__attach_version1.0_#{i:08X}"))
        aprops = []
        for prop_id, text in ((0x3707, att.filename), (0x3704, att.filename), (0x370E, att.mime)):
            data = text.encode("utf-16-le")
            node.add(_Node(f"__substg1.0_{prop_id:04X}{PT_UNICODE:04X}", data))
            aprops.append((prop_id << 16 | PT_UNICODE, 6, struct.pack("<II", len(data), 0)))
        if att.message is not None:
            inner = node.add(_Node(f"__substg1.0_3701{PT_OBJECT:04X}"))
            _message_nodes(inner, att.message, embedded=True)
            aprops.append((0x3701 << 16 | PT_OBJECT, 6, struct.pack("<II", 0xFFFFFFFF, 1)))
            aprops.append((0x3705 << 16 | PT_LONG, 6, struct.pack("<II", 5, 0)))
        else:
            node.add(_Node(f"__substg1.0_3701{PT_BINARY:04X}", att.data))
            aprops.append((0x3701 << 16 | PT_BINARY, 6, struct.pack("<II", len(att.data), 0)))
            aprops.append((0x3705 << 16 | PT_LONG, 6, struct.pack("<II", 1, 0)))
        aprops.append((0x0E21 << 16 | PT_LONG, 6, struct.pack("<II", i, 0)))
        node.add(_Node("__properties_version1.0", b"\0" * 8 + _props(aprops)))
    counts = struct.pack(
        "<8sIIII",
        b"\0" * 8,
        len(recipients),
        len(msg.attachments),
        len(recipients),
        len(msg.attachments),
    )
    header = counts if embedded else counts + b"\0" * 8
    store.add(_Node("__properties_version1.0", header + _props(props)))
    if not embedded:
        nameid = store.add(_Node("__nameid_version1.0"))
        for stream in ("00020102", "00030102", "00040102"):
            nameid.add(_Node(f"__substg1.0_{stream}", b""))


def _props(props) -> bytes:
    return b"".join(struct.pack("<II", tag, flags) + value for tag, flags, value in props)


def _sort_key(node: _Node):
    return (len(node.name), node.name.upper())


def build_msg(msg: MsgMessage) -> bytes:
    """Return the bytes of a .msg file holding ``msg``."""
    root = _Node("Root Entry")
    _message_nodes(root, msg, embedded=False)
    return build_cfb(root)


def build_cfb(root: _Node) -> bytes:
    """Return a version-3 compound file of the storages and streams under ``root``."""
    entries: list[_Node] = []

    def number(node: _Node) -> None:
        entries.append(node)
        for child in node.children:
            number(child)

    number(root)
    index = {id(n): i for i, n in enumerate(entries)}
    # Streams: small ones in the mini stream, the rest in regular sectors.
    mini_data = bytearray()
    minifat: list[int] = []
    big: list[tuple[_Node, bytes]] = []
    start_of: dict[int, int] = {}
    for node in entries[1:]:
        if node.data is None:
            continue
        if len(node.data) < CUTOFF:
            if not node.data:
                start_of[id(node)] = END
                continue
            first = len(minifat)
            count = -(-len(node.data) // MINI)
            minifat.extend(range(first + 1, first + count))
            minifat.append(END)
            start_of[id(node)] = first
            mini_data += node.data + b"\0" * (count * MINI - len(node.data))
        else:
            big.append((node, node.data))
    sectors: list[bytes] = []
    fat: list[int] = []

    def place(data: bytes) -> int:
        if not data:
            return END
        first = len(sectors)
        count = -(-len(data) // SECTOR)
        for k in range(count):
            sectors.append(data[k * SECTOR : (k + 1) * SECTOR].ljust(SECTOR, b"\0"))
            fat.append(first + k + 1 if k < count - 1 else END)
        return first

    for node, data in big:
        start_of[id(node)] = place(data)
    mini_stream_start = place(bytes(mini_data))
    minifat_bytes = b"".join(struct.pack("<I", v) for v in minifat)
    minifat_bytes += b"\xff" * (-len(minifat_bytes) % SECTOR)
    minifat_start = place(minifat_bytes)
    # Directory: siblings as a chain of right links in (length, upper-case name) order.
    dir_entries = []
    links: dict[int, tuple[int, int, int]] = {}  # entry -> (left, right, child)
    for node in entries:
        kids = sorted(node.children, key=_sort_key)
        child = index[id(kids[0])] if kids else NOSTREAM
        left, right, _ = links.get(index[id(node)], (NOSTREAM, NOSTREAM, NOSTREAM))
        links[index[id(node)]] = (left, right, child)
        for a, b in zip(kids, kids[1:], strict=False):
            la, _ra, ca = links.get(index[id(a)], (NOSTREAM, NOSTREAM, NOSTREAM))
            links[index[id(a)]] = (la, index[id(b)], ca)
    for i, node in enumerate(entries):
        name = node.name.encode("utf-16-le") + b"\0\0"
        kind = 5 if i == 0 else (1 if node.data is None else 2)
        left, right, child = links.get(i, (NOSTREAM, NOSTREAM, NOSTREAM))
        if i == 0:
            start, size = mini_stream_start, len(mini_data)
        elif node.data is None:
            start, size = 0, 0
        else:
            start, size = start_of[id(node)], len(node.data)
        dir_entries.append(
            name.ljust(64, b"\0")
            + struct.pack("<HBBIII", len(name), kind, 1, left, right, child)
            + b"\0" * 16
            + b"\0" * 4
            + b"\0" * 16
            + struct.pack("<IQ", start, size)
        )
    directory = b"".join(dir_entries)
    directory += (
        b"\0" * 64 + struct.pack("<HBBIII", 0, 0, 0, NOSTREAM, NOSTREAM, NOSTREAM) + b"\0" * 48
    ) * ((-len(directory) % SECTOR) // 128)
    dir_start = place(directory)
    # The FAT describes itself too: grow it until it holds every sector, its own included.
    n_fat = 1
    while (len(sectors) + n_fat) > n_fat * (SECTOR // 4):
        n_fat += 1
    fat_first = len(sectors)
    fat.extend([FATSECT] * n_fat)
    fat += [FREE] * (n_fat * (SECTOR // 4) - len(fat))
    fat_bytes = b"".join(struct.pack("<I", v) for v in fat)
    for k in range(n_fat):
        sectors.append(fat_bytes[k * SECTOR : (k + 1) * SECTOR])
    assert n_fat <= 109, "test fixtures stay small"
    difat = [fat_first + k for k in range(n_fat)] + [FREE] * (109 - n_fat)
    header = (
        bytes.fromhex("D0CF11E0A1B11AE1")
        + b"\0" * 16
        + struct.pack("<HHHHH", 0x3E, 3, 0xFFFE, 9, 6)
        + b"\0" * 6
        + struct.pack(
            "<IIIIIIIII",
            0,
            n_fat,
            dir_start,
            0,
            CUTOFF,
            minifat_start,
            len(minifat_bytes) // SECTOR,
            END,
            0,
        )
        + b"".join(struct.pack("<I", v) for v in difat)
    )
    assert len(header) == SECTOR
    return header + b"".join(sectors)
