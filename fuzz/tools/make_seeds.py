#!/usr/bin/env python3
"""Writes the hand-made seed inputs of every fuzz target into fuzz/corpus/<target>/seed-*.

Run once when a target is added (or its input layout changes): `python3 fuzz/tools/make_seeds.py`,
or `python3 fuzz/tools/make_seeds.py TARGET...` to write only those targets' seeds.
Seeds are small, valid-ish inputs that reach each parser's main paths quickly; what fuzzing
finds beyond them is merged in by `./scripts/fuzz --merge` under libFuzzer's hash names.
"""
import glob
import json
import os
import struct
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CORPUS = os.path.join(ROOT, "fuzz", "corpus")


ONLY = set(sys.argv[1:])  # the targets named on the command line; none: every target


def write(target, name, data):
    if ONLY and target not in ONLY:
        return
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def pack(v):
    """Msgpack in the smallest forms (a few lines instead of a dependency)."""
    if v is None:
        return b"\xc0"
    if v is True or v is False:
        return b"\xc3" if v else b"\xc2"
    if isinstance(v, int):
        if 0 <= v < 128:
            return bytes([v])
        if -32 <= v < 0:
            return struct.pack("b", v)
        for lo, hi, tag, fmt in ((0, 2**8, 0xcc, ">B"), (0, 2**16, 0xcd, ">H"), (0, 2**32, 0xce, ">I"),
                                 (0, 2**64, 0xcf, ">Q"), (-2**7, 0, 0xd0, ">b"), (-2**15, 0, 0xd1, ">h"),
                                 (-2**31, 0, 0xd2, ">i"), (-2**63, 0, 0xd3, ">q")):
            if lo <= v < hi:
                return bytes([tag]) + struct.pack(fmt, v)
        raise ValueError(v)
    if isinstance(v, float):
        return b"\xcb" + struct.pack(">d", v)
    if isinstance(v, str):
        b = v.encode()
        if len(b) < 32:
            return bytes([0xa0 | len(b)]) + b
        return (b"\xd9" + bytes([len(b)]) if len(b) < 256 else b"\xda" + struct.pack(">H", len(b))) + b
    if isinstance(v, bytes):
        return (b"\xc4" + bytes([len(v)]) if len(v) < 256 else b"\xc5" + struct.pack(">H", len(v))) + v
    if isinstance(v, (list, tuple)):
        return container_header(0x90, 0xdc, len(v)) + b"".join(pack(x) for x in v)
    if isinstance(v, dict):
        return container_header(0x80, 0xde, len(v)) + b"".join(pack(k) + pack(x) for k, x in v.items())
    raise TypeError(v)


def container_header(fix, tag16, n):
    """An array's (fix 0x90, tag16 0xdc) or a map's (0x80, 0xde) header in its smallest form."""
    if n < 16:
        return bytes([fix | n])
    return (bytes([tag16]) + struct.pack(">H", n)) if n < 2**16 else bytes([tag16 + 1]) + struct.pack(">I", n)


# Payload shapes shared by the msgpack targets.
PAYLOADS = {
    "map": {"user": "alice", "attempts": 3, "ok": True, "ratio": 0.5},
    "nested": {"source": {"name": "ssh", "ip": "10.0.0.1"}, "tags": ["a", "b"], "n": None},
    "ints": {"neg": -5, "big": 2**64 - 1, "i32": -70000, "u16": 60000},
    "bin": {"blob": b"\x00\x01\xff", "s": "\u00e9t\u00e9"},
    "array": [1, "two", 3.25, None, [False]],
    "scalar": 42,
    "deep": {"a": {"b": {"c": {"d": [[[1]]]}}}},
    "header_names": {"timestamp": "x", "event_type": 1, "payload": [1]},
}
raw_payloads = {k: pack(v) for k, v in PAYLOADS.items()}
raw_payloads["intkey"] = b"\x82\x01\xa1x\xa1k\x81\x02\x03"  # {1:"x", "k":{2:3}}
raw_payloads["ext"] = b"\x81\xa1e\xd4\x05\x07"  # {"e": fixext1 type 5}
raw_payloads["float32"] = b"\x81\xa1f\xca\x3f\xc0\x00\x00"  # {"f": 1.5f}
raw_payloads["dupkeys"] = b"\x82\xa1a\x01\xa1a\x02"
raw_payloads["trailing"] = pack({"a": 1}) + b"\x00"
raw_payloads["truncated"] = pack({"a": "hello"})[:-2]

# ---- msgpack_reader, eventctl_output ----
for k, v in raw_payloads.items():
    write("msgpack_reader", k, v)
    write("eventctl_output", k, v)
write("eventctl_output", "record", pack({"timestamp": 1763830522678123456, "cpu_id": 1, "event_type": "kacs.x",
                                          "user": "alice\nbob", "nan": float("nan"), "inf": float("inf")}))

# ---- row_encoder: mode byte, null flag, payload ----
for i, (k, v) in enumerate(sorted(raw_payloads.items())):
    write("row_encoder", k, bytes([i % 3, 0]) + v)
write("row_encoder", "null", b"\x00\x01")

# ---- msgpack_extract: path NUL payload ----
for path, payload in [("$.user", "map"), ("$.source.name", "nested"), ("$.tags", "nested"), ("$.ints.big", "ints"),
                      ("$.big", "ints"), ("$.blob", "bin"), ("$.a.b.c.d", "deep"), ("$.k", "intkey"),
                      ("$.e", "ext"), ("$.f", "float32"), ("$.a", "dupkeys"), ("$", "map"), ("$.", "map"),
                      ("x", "map")]:
    write("msgpack_extract", path.replace("$", "root").replace(".", "_") + "-" + payload,
          path.encode() + b"\x00" + raw_payloads[payload])

# ---- query: every query of the query tables ----
queries = []
for f in sorted(glob.glob(os.path.join(ROOT, "tests", "query", "cases", "*.test"))):
    for line in open(f, encoding="utf-8"):
        for prefix in ("query ", "error "):
            if line.startswith(prefix):
                queries.append(line[len(prefix):].rstrip("\n"))
for i, q in enumerate(dict.fromkeys(queries)):
    write("query", "%03d" % i, q)

# ---- frame: streams of frames ----
def frame(body):
    return struct.pack("<I", len(body)) + body

request = frame(pack({"query": "EVENTS app.login WHERE user == \"alice\""}))
write("frame", "request", request)
write("frame", "request-extra-keys", frame(pack({"other": [1, {"k": "v"}], "query": "EVENTS"})))
write("frame", "replies", frame(pack({"status": "ok", "records": [PAYLOADS["map"], PAYLOADS["nested"]]}))
      + frame(pack({"status": "end"})))
write("frame", "watch", frame(pack({"status": "ok", "records": []})) + frame(pack({"status": "watch"})))
write("frame", "error", frame(pack({"status": "error", "error": "parse error at position 1"})))
write("frame", "truncated", request[:-3])
write("frame", "header-only", b"\x10\x00\x00")

# ---- access_policy: Security objects ----
policies = [
    {"Events": {"*": [{"allow": ["group:adm"]}]}, "Admins": ["group:adm"]},
    {"Events": {"app.login": [{"allow": ["group:auditors", "uid:1000"], "fields": ["timestamp", "event_type", "user"]}],
                "kacs": [{"deny": ["user:nobody"]}, {"allow": ["everyone"]}],
                "*": [{"allow": ["gid:4"], "fields": ["payload", "source.name"]}]}},
    {"Events": None, "Admins": None},
    {"Events": {"APP": [{"allow": ["user:root", "group:root"]}]}, "Admins": ["everyone", "uid:0"]},
    {"Events": {"x": [{"allow": "everyone"}]}},
]
for i, p in enumerate(policies):
    write("access_policy", str(i), json.dumps(p, indent=1))
write("access_policy", "null", "null")
write("access_policy", "comment", "// comment\n{\"Events\": {\"*\": [{\"allow\": [\"everyone\"]}]}}")

# ---- eventd_config, shim_config: the shipped files and variations ----
eventd_json = open(os.path.join(ROOT, "config", "eventd.json"), encoding="utf-8").read()
kmes_json = open(os.path.join(ROOT, "config", "kmes.json"), encoding="utf-8").read()
write("eventd_config", "shipped", eventd_json)
write("eventd_config", "minimal", json.dumps({"EventStorePath": "/var/lib/eventd", "QuerySocketPath": "/run/eventd.sock"}))
write("eventd_config", "bad-values", json.dumps({"EventStorePath": "/s", "QuerySocketPath": "/q", "MaxBatchSize": -1,
                                                   "AdaptiveIndexDropThreshold": 500, "QueryTimeoutMs": "x",
                                                   "EventRetentionMaxBytes": 2**70, "StorageShards": 1.5,
                                                   "Security": {"Events": {}}}))
write("eventd_config", "missing", "{}")
write("shim_config", "shipped", kmes_json)
write("shim_config", "bad-values", json.dumps({"BufferCapacity": 3, "MaxEventSize": 0, "MaxNestingDepth": 300,
                                                 "MaxEmitRate": -1, "AttachGroup": "nosuchgroup", "EmitGroup": 0,
                                                 "Cpus": 99999, "Generators": [{"rate": 5, "types": {"a": 0}}]}))
write("shim_config", "generate-flag", "rate=100,payload=32,origin=2,types=a.b:3+c:1")
write("shim_config", "generate-bad", "rate=x,payload=,types=:3")

# ---- shim_emit: op/count bytes, then the entry table and each entry's bytes ----
def emit(entries, batch=True, count=None, flags=None):
    count = len(entries) if count is None else count
    table = b""
    data = b""
    for i, (t, p) in enumerate(entries):
        table += struct.pack("<HHI", len(t), (flags or {}).get(i, 0), len(p))
        data += t + p
    return bytes([1 if batch else 0, count & 0xff]) + table + data

write("shim_emit", "single", emit([(b"app.login", raw_payloads["map"])], batch=False))
write("shim_emit", "batch", emit([(b"a.b", raw_payloads["map"]), (b"c", raw_payloads["nested"]),
                                  (b"\xc3\xa9t\xc3\xa9", raw_payloads["array"])]))
write("shim_emit", "bad-utf8", emit([(b"a\xff", raw_payloads["map"])]))
write("shim_emit", "bad-msgpack", emit([(b"a", raw_payloads["truncated"])]))
write("shim_emit", "too-deep", emit([(b"deep", b"\x91" * 40 + b"\x01")]))
write("shim_emit", "fault", emit([(b"a", raw_payloads["map"]), (b"b", b"")], flags={1: 1}))
write("shim_emit", "missing-bytes", emit([(b"a", raw_payloads["map"])])[:-4])
write("shim_emit", "count-zero", emit([], count=0))
write("shim_emit", "empty-type", emit([(b"", raw_payloads["map"])], batch=False))

# ---- ring_reader: write_pos, tail_pos, generation, flags, seek sequence, data area ----
def event(seq, type_, payload, identity=b""):
    header_size = 29 + len(type_) + len(identity)
    size = header_size + len(payload)
    return (struct.pack("<IIQQHBH", size, header_size, 1700000000 + seq, seq, 0, 1, len(type_)) + type_ + identity
            + payload)

events = event(1, b"app.login", raw_payloads["map"]) + event(2, b"x", b"\x01", b"\x11" * 48) + event(3, b"", b"")
def ring(write_pos, tail_pos, data, flags=0, seek=0):
    return struct.pack("<QQQBQ", write_pos, tail_pos, 7, flags, seek) + data

write("ring_reader", "three-events", ring(len(events), 0, events))
write("ring_reader", "start-at-end", ring(len(events), 0, events, flags=1))
write("ring_reader", "seek", ring(len(events), 0, events, flags=2, seek=1))
write("ring_reader", "wrapped", ring(4096 + len(events), 4096, events))
write("ring_reader", "lapped", ring(10000, 9000, events))
# Regression inputs of the two reader bugs this target found (tests/unit/protocol_test.cpp):
# tail_pos > write_pos looped forever; an event_size under a write_pos more than a ring ahead
# copied past the double mapping.
write("ring_reader", "regression-tail-after-write", ring(100, 200, events))
big = event(1, b"big", b"\x00" * 300)
write("ring_reader", "regression-overread", ring(1 << 20, 0, big + struct.pack("<II", 8000, 29) + b"\x00" * 64))
write("ring_reader", "far-ahead", ring(1 << 40, 0, events))
write("ring_reader", "bad-size", ring(64, 0, struct.pack("<II", 0xffffffff, 29) + b"\x00" * 56))

# ---- collector_message: message bodies as eventd-forward publishes them ----
# A record is what a host's eventd serves (PSD-008 §8.8; eventd/query/row_encoder.cpp): the
# header columns in store/event_columns.hpp's order (GUIDs as text, NULL as nil), then the stored
# payload's pairs as they are stored — or, through the tree encoder (a restricted caller, a
# SELECT, a payload the direct way cannot copy), one map with its keys sorted, floats as float64.
# eventd-forward (forward/packer.cpp) publishes one record as the body (MaxRecordsPerMessage 1) or
# packs records of one event_type and one boot into an array in the smallest header form.
BOOT = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
BOOT2 = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
TOKEN = "3b241101-e2bb-4255-8caf-4136c566a962"
TRUE_TOKEN = "a1b2c3d4-0000-4000-8000-00000000beef"
PROCESS = "e4d909c2-90d0-4b0e-a0c3-6a0c3e0f1f01"
T0 = 1763830522678123456


def served(event_type, payload=None, boot=BOOT, timestamp=T0, cpu=1, sequence=1, origin=0, tokens=True):
    """A record by the direct encoder: header columns in order, then the payload's pairs."""
    header = {"boot_id": boot, "timestamp": timestamp, "cpu_id": cpu, "sequence": sequence, "origin_class": origin,
              "event_type": event_type, "effective_token_guid": TOKEN if tokens else None,
              "true_token_guid": TRUE_TOKEN if tokens else None, "process_guid": PROCESS if tokens else None}
    pairs = [(k, v) for k, v in (payload or {}).items() if k not in header]  # a header name wins
    return (container_header(0x80, 0xde, len(header) + len(pairs)) + b"".join(pack(k) + pack(v) for k, v in header.items())
            + b"".join(pack(k) + (v if isinstance(v, RawValue) else pack(v)) for k, v in pairs))


class RawValue(bytes):
    """A payload value's stored bytes, copied as they are (a kernel emitter's map with integer keys)."""


def tree_served(fields):
    """A record by the tree encoder: nlohmann's object, keys sorted."""
    return pack(dict(sorted(fields.items())))


def packed(records):
    return container_header(0x90, 0xdc, len(records)) + b"".join(records)


login = lambda seq, user="alice", boot=BOOT: served(
    "app.login", {"user": user, "attempts": seq % 5, "ok": seq % 3 != 0, "ratio": seq / 8,
                  "source": {"name": "ssh", "ip": "10.0.0.%d" % seq}, "tags": ["a", "b"][: seq % 3]},
    boot=boot, timestamp=T0 + seq * 1000, sequence=seq, cpu=seq % 2)
execve = served("audit.syscall", {
    "serial": 42, "audit_time": 1700000000123000000, "syscall": "execve", "syscall_nr": 59, "arch": "x86_64",
    "success": "yes", "exit": 0, "pid": 101, "ppid": 100, "auid": 1000, "uid": 0, "uid_name": "root", "ses": 3,
    "comm": "true", "exe": "/usr/bin/true", "key": "exec", "a0": "55d5", "cwd": "/home/alice",
    "paths": [{"item": 0, "name": "/bin/true", "inode": 1234, "mode": "0100755", "nametype": "NORMAL"},
              {"item": 1, "name": "/lib64/ld-linux-x86-64.so.2", "inode": 99, "mode": "0100755"}],
    "proctitle": "/bin/true", "record_types": ["SYSCALL", "EXECVE", "CWD", "PATH", "PATH", "PROCTITLE"],
    "argc": 2, "argv": ["/bin/true", b"hello\xffworld"]}, origin=4, sequence=7)
gap = lambda first, last: served(
    "synthetic.gap", {"cpu_id": 1, "first_sequence": first, "last_sequence": last, "count": last - first + 1,
                      "last_seen_timestamp": T0, "revealing_timestamp": T0 + 5},
    sequence=None, origin=None, tokens=False)
startup = served("synthetic.startup", {"boot_id": BOOT, "os_boot_id": BOOT2, "restart": False, "shard_count": 4,
                                       "resume_points": [{"cpu_id": 0, "sequence": 10}, {"cpu_id": 1, "sequence": 12}]},
                 cpu=None, sequence=None, origin=None, tokens=False)
kacs = served("kacs.token_adjusted", {"privileges": ["SeTcbPrivilege"], "delta": -70000, "big": 2**64 - 1,
                                      "blob": b"\x00\x01\xff", "ext": RawValue(b"\xd4\x05\x07"),
                                      "intkeys": RawValue(b"\x82\x01\xa1x\xa1k\x81\x02\x03"), "empty": {}, "n": None},
              origin=2, sequence=2**40, cpu=65535)
hosted = served("app.relay", {"host": "web-3", "path": "/x"}, sequence=9)  # the collector renames host
bare = served("app.ping", None, sequence=3)  # a NULL payload: the header alone
tree_record = tree_served({"boot_id": BOOT, "timestamp": T0, "cpu_id": 0, "sequence": 11, "origin_class": 0,
                           "event_type": "app.login", "user": "bob", "ratio": 0.25, "effective_token_guid": TOKEN})
not_a_map = tree_served({"boot_id": BOOT, "timestamp": T0, "cpu_id": 0, "sequence": 12, "origin_class": 0,
                         "event_type": "app.blob", "payload": b"\x93\x01\x02\x03"})  # a payload that was not a map
forward_gap = pack(dict(sorted({"event_type": "synthetic.forward_gap", "timestamp": T0, "boot_id": "0" * 8 + "-0000-0000-0000-" + "0" * 12,
                                "host": "web-3", "lost": None, "detail": "retention deleted 12 records",
                                "resumed_after": "c1.AAAA"}.items())))

for name, record in [("execve", execve), ("gap", gap(100, 120)), ("startup", startup), ("kacs", kacs),
                     ("host-renamed", hosted), ("no-payload", bare), ("tree", tree_record),
                     ("payload-not-a-map", not_a_map), ("forward-gap", forward_gap), ("login", login(1))]:
    write("collector_message", "record-" + name, record)
write("collector_message", "packed-3", packed([login(i) for i in range(1, 4)]))
write("collector_message", "packed-16", packed([login(i, user="u%d" % i) for i in range(1, 17)]))  # array 16
write("collector_message", "packed-gaps", packed([gap(1, 5), gap(9, 9), gap(20, 2**40)]))
write("collector_message", "packed-execve", packed([execve, execve]))
write("collector_message", "packed-second-boot", packed([login(i, boot=BOOT2) for i in range(1, 3)]))
write("collector_message", "packed-tree", packed([tree_record, not_a_map]))
write("collector_message", "packed-cut", packed([login(i) for i in range(1, 4)])[:-7])
write("collector_message", "packed-trailing", packed([login(1)]) + b"\xc0")
write("collector_message", "array32", b"\xdd\x00\x00\x00\x02" + login(1) + kacs)
