"""Reads dtrun's TensorBoard event files with python3-protobuf, independently of dtrun's writer:
the TFRecord framing with its masked CRC-32Cs, then tensorflow.Event messages from a descriptor
built here (event.proto's fields: wall_time 1, step 2, file_version 3, summary 5, session_log 6;
Summary.value 1; Value.tag 1, simple_value 2; SessionLog.status 1, START = 1).

  tb_read.py scalars RUN_DIR    every (problem, tag, step, value) TensorBoard would show, one per
                                line, after its purge rule (a SessionLog START at step s drops
                                what the run's earlier files hold from s on); exit 1 on a bad file
  tb_read.py check RUN_DIR      the same scalars against results.sqlite: every recorded metric of
                                every node and evaluation, and mean/min/max over the nodes
"""
import glob, math, os, sqlite3, struct, sys

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

F = descriptor_pb2.FieldDescriptorProto


def _messages():
    fd = descriptor_pb2.FileDescriptorProto(name="dtrun_event_test.proto", package="tensorflow", syntax="proto3")
    def msg(name, fields):
        m = fd.message_type.add(name=name)
        for fname, num, typ, label, tname in fields:
            f = m.field.add(name=fname, number=num, type=typ, label=label)
            if tname:
                f.type_name = tname
        return m
    msg("Value", [("tag", 1, F.TYPE_STRING, F.LABEL_OPTIONAL, None), ("simple_value", 2, F.TYPE_FLOAT, F.LABEL_OPTIONAL, None)])
    msg("Summary", [("value", 1, F.TYPE_MESSAGE, F.LABEL_REPEATED, ".tensorflow.Value")])
    msg("SessionLog", [("status", 1, F.TYPE_INT32, F.LABEL_OPTIONAL, None)])
    msg("Event", [("wall_time", 1, F.TYPE_DOUBLE, F.LABEL_OPTIONAL, None), ("step", 2, F.TYPE_INT64, F.LABEL_OPTIONAL, None),
                  ("file_version", 3, F.TYPE_STRING, F.LABEL_OPTIONAL, None),
                  ("summary", 5, F.TYPE_MESSAGE, F.LABEL_OPTIONAL, ".tensorflow.Summary"),
                  ("session_log", 6, F.TYPE_MESSAGE, F.LABEL_OPTIONAL, ".tensorflow.SessionLog")])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return message_factory.MessageFactory(pool).GetPrototype(pool.FindMessageTypeByName("tensorflow.Event"))


Event = _messages()
_T = []
for n in range(256):
    c = n
    for _ in range(8):
        c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
    _T.append(c)


def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = _T[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked(b):
    c = crc32c(b)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def events(path):
    data = open(path, "rb").read()
    p, out = 0, []
    while p < len(data):
        if p + 12 > len(data):
            sys.exit("%s: a truncated record header at byte %d" % (path, p))
        n, lc = struct.unpack_from("<QI", data, p)
        if masked(data[p:p + 8]) != lc:
            sys.exit("%s: the length CRC of the record at byte %d is wrong" % (path, p))
        body = data[p + 12:p + 12 + n]
        (dc,) = struct.unpack_from("<I", data, p + 12 + n)
        if masked(body) != dc:
            sys.exit("%s: the data CRC of the record at byte %d is wrong" % (path, p))
        ev = Event()
        ev.ParseFromString(body)
        out.append(ev)
        p += 16 + n
    if not out or out[0].file_version != "brain.Event:2":
        sys.exit("%s: the first event is not file_version brain.Event:2" % path)
    return out


def scalars(run):
    got = {}
    for pdir in sorted(glob.glob(os.path.join(run, "tensorboard", "*"))):
        seen = []  # (step, tag, value) in reading order, purged as TensorBoard does
        for f in sorted(glob.glob(os.path.join(pdir, "events.out.tfevents.*"))):
            for ev in events(f):
                if ev.HasField("session_log") and ev.session_log.status == 1:
                    seen = [s for s in seen if s[0] < ev.step]
                for v in ev.summary.value:
                    seen.append((ev.step, v.tag, v.simple_value))
        got[os.path.basename(pdir)] = seen
    return got


def main():
    what, run = sys.argv[1], sys.argv[2]
    got = scalars(run)
    if what == "scalars":
        for prob in sorted(got):
            for step, tag, v in sorted(got[prob]):
                print(prob, tag, step, repr(v))
        return
    db = sqlite3.connect(os.path.join(run, "results.sqlite"))
    cols = [r[1] for r in db.execute("PRAGMA table_info(evaluations)")][4:]
    n = 0
    for (prob,) in db.execute("SELECT problem_name FROM problems ORDER BY problem"):
        have = {(s, t): v for s, t, v in got[prob]}
        assert len(have) == len(got[prob]), "%s: a scalar written twice" % prob
        want = {}
        rows = db.execute("SELECT e.* FROM evaluations e JOIN problems p USING (run, problem) WHERE p.problem_name = ?",
                          (prob,)).fetchall()
        by = {}
        for r in rows:
            for c, v in zip(cols, r[4:]):
                if v is not None:
                    want[(r[2], "%s/node_%d" % (c, r[3]))] = v
                    by.setdefault((r[2], c), []).append(v)
        for (step, c), vs in by.items():
            for stat, v in (("mean", sum(vs) / len(vs)), ("min", min(vs)), ("max", max(vs))):
                want[(step, "%s/%s" % (c, stat))] = v
        assert set(have) == set(want), "%s: tags differ: %s" % (prob, sorted(set(have) ^ set(want))[:5])
        for k, v in want.items():
            f32 = struct.unpack("<f", struct.pack("<f", v))[0] if math.isfinite(v) else v
            assert have[k] == f32 or (math.isnan(v) and math.isnan(have[k])) or abs(have[k] - f32) <= 1e-6 * abs(f32), (prob, k, have[k], v)
            n += 1
    print("%d scalars match results.sqlite" % n)


if __name__ == "__main__":
    main()
