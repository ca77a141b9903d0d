# mgx_edit.py - rewrites one field of a .mgx plan (docs/plan-format.md) and
# fixes the section's CRC, so that tests reach the checks behind the CRC.
#   python3 mgx_edit.py IN OUT EDIT [ARGS...]
# EDITS
#   version V               the header's format version
#   device-kind KIND        every device's kind string ("cpu" -> "gpu")
#   global-batch B          the train section's global batch
#   arena BYTES             device 0's planned arena size
#   dims NODE D0 D1 ...     node NODE's dimensions (same rank)
#   crc SECTION             flips the stored CRC of section SECTION (1..8)
#   poke SECTION AT FMT V   packs V with struct format FMT at byte AT of a payload
#   cut SECTION N           drops the payload's last N bytes
#   pad SECTION N           appends N zero bytes to the payload
#   item-kind V             the kind of the first item of the first non-empty schedule list
#   drop-waits LIST         removes every wait of schedule list LIST (a racy plan)
import struct
import sys
import zlib

SECTIONS = ["strings", "graph", "model", "train", "devices", "memory", "schedule", "sources"]


def split(data):
    magic, version, count = data[:8], *struct.unpack_from("<II", data, 8)
    pos, secs = 16, []
    for _ in range(count):
        tag, length, crc = struct.unpack_from("<IQI", data, pos)
        secs.append([tag, bytearray(data[pos + 16:pos + 16 + length]), crc])
        pos += 16 + length
    return magic, version, secs


def join(magic, version, secs, fix_crc=True):
    out = bytearray(magic) + struct.pack("<II", version, len(secs))
    for tag, payload, crc in secs:
        if fix_crc:
            crc = zlib.crc32(payload) & 0xFFFFFFFF
        out += struct.pack("<IQI", tag, len(payload), crc) + payload
    return bytes(out)


def strings(payload):
    n, = struct.unpack_from("<I", payload, 0)
    pos, out = 4, []
    for _ in range(n):
        length, = struct.unpack_from("<I", payload, pos)
        out.append((pos + 4, payload[pos + 4:pos + 4 + length].decode()))
        pos += 4 + length
    return out


def node_offsets(graph, names):
    """(offset of the rank field, rank) of every node; names: the string table
    (for the program a fused node carries, version 6)."""
    n, = struct.unpack_from("<I", graph, 0)
    pos, out = 4, []
    for _ in range(n):
        op, = struct.unpack_from("<I", graph, pos)
        rank, = struct.unpack_from("<I", graph, pos + 8)
        out.append((pos + 8, rank))
        pos += 12 + 8 * rank
        n_in, = struct.unpack_from("<I", graph, pos)
        pos += 4 + 4 * n_in
        pos += 1 + 8 * graph[pos]          # integer attributes
        pos += 1 + 8 * graph[pos]          # float attributes
        pos += 4 * 8 + 8                   # name, file, line, col, programs, device, stream, origin; offset
        if names[op] == "fused":
            count, = struct.unpack_from("<I", graph, pos)
            pos += 4 + 20 * count          # (op, a, b, alpha) per instruction
    return out


def main():
    src, dst, edit, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    magic, version, secs = split(open(src, "rb").read())
    fix = True
    if edit == "version":
        version = int(args[0])
    elif edit == "device-kind":
        strs, dev = strings(secs[0][1]), secs[4][1]
        n, = struct.unpack_from("<I", dev, 0)
        ids = {struct.unpack_from("<I", dev, 4 + 8 * d)[0] for d in range(n)}
        for i in ids:
            at, s = strs[i]
            assert len(s) == len(args[0]), s
            secs[0][1][at:at + len(s)] = args[0].encode()
    elif edit == "global-batch":
        # has_train 1, optimizer 4, 7 f64, nesterov 1: batch per replica at 62, global at 70
        struct.pack_into("<q", secs[3][1], 70, int(args[0]))
    elif edit == "arena":
        struct.pack_into("<q", secs[5][1], 1, int(args[0]))
    elif edit == "dims":
        at, rank = node_offsets(secs[1][1], [s for _, s in strings(secs[0][1])])[int(args[0])]
        dims = [int(a) for a in args[1:]]
        assert len(dims) == rank, (dims, rank)
        for k, d in enumerate(dims):
            struct.pack_into("<q", secs[1][1], at + 4 + 8 * k, d)
    elif edit == "poke":
        struct.pack_into(args[2], secs[int(args[0]) - 1][1], int(args[1]), int(args[3]))
    elif edit == "cut":
        del secs[int(args[0]) - 1][1][-int(args[1]):]
    elif edit == "pad":
        secs[int(args[0]) - 1][1] += bytes(int(args[1]))
    elif edit == "item-kind":
        sched = secs[6][1]
        pos = 8
        while True:
            n, = struct.unpack_from("<I", sched, pos + 12)
            if n:
                sched[pos + 16] = int(args[0])
                break
            pos += 16
    elif edit == "drop-waits":
        sched, out = secs[6][1], bytearray(secs[6][1][:8])
        n_lists, = struct.unpack_from("<I", sched, 4)
        pos = 8
        for index in range(n_lists):
            head, (n_items,) = sched[pos:pos + 12], struct.unpack_from("<I", sched, pos + 12)
            items = [sched[pos + 16 + 5 * k:pos + 21 + 5 * k] for k in range(n_items)]
            if index == int(args[0]):
                items = [it for it in items if it[0] != 2]
            out += head + struct.pack("<I", len(items)) + b"".join(items)
            pos += 16 + 5 * n_items
        secs[6][1] = out
    elif edit == "crc":
        fix = False
        secs[int(args[0]) - 1][2] ^= 1
    else:
        sys.exit("mgx_edit.py: unknown edit " + edit)
    open(dst, "wb").write(join(magic, version, secs, fix))


main()
