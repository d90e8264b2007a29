"""Reads dtrun's TensorBoard event files with python3-protobuf, independently of dtrun's writer:
the TFRecord framing with its masked CRC-32Cs, then tensorflow.Event messages from a descriptor
built here (event.proto's fields: wall_time 1, step 2, file_version 3, summary 5, session_log 6;
Summary.value 1; Value.tag 1, simple_value 2; SessionLog.status 1, START = 1).

  tb_read.py scalars RUN_DIR    every (problem, tag, step, value) TensorBoard would show, one per
                                line, after its purge rule (a SessionLog START at step s drops
                                what the run's earlier files hold from s on); exit 1 on a bad file
  tb_read.py check RUN_DIR      the same scalars against results.sqlite: every recorded metric of
                                every node and evaluation (the time_* columns per rank), and
                                mean/min/max over the nodes (ranks)
  tb_read.py hparams LOGDIR     the hparams plugin's records (tensorboard/plugins/hparams/*.proto,
                                field numbers from there): the Experiment at LOGDIR's root, then
                                every run's sessions with their hyperparameters, group and status,
                                as one JSON document
"""
import glob, json, math, os, sqlite3, struct, sys

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory, struct_pb2

F = descriptor_pb2.FieldDescriptorProto


def _messages():
    fd = descriptor_pb2.FileDescriptorProto(name="dtrun_event_test.proto", package="tensorflow", syntax="proto3",
                                            dependency=["google/protobuf/struct.proto"])
    O, R, M = F.LABEL_OPTIONAL, F.LABEL_REPEATED, F.TYPE_MESSAGE
    def msg(name, fields, parent=None):
        m = (parent.nested_type if parent is not None else fd.message_type).add(name=name)
        for fname, num, typ, label, tname in fields:
            f = m.field.add(name=fname, number=num, type=typ, label=label)
            if tname:
                f.type_name = tname
        return m
    # summary.proto, tensor.proto (the fields read here), and the hparams plugin's messages
    msg("PluginData", [("plugin_name", 1, F.TYPE_STRING, O, None), ("content", 2, F.TYPE_BYTES, O, None)])
    msg("SummaryMetadata", [("plugin_data", 1, M, O, ".tensorflow.PluginData")])
    msg("TensorShapeProto", [])
    msg("TensorProto", [("dtype", 1, F.TYPE_INT32, O, None), ("tensor_shape", 2, M, O, ".tensorflow.TensorShapeProto"),
                        ("float_val", 5, F.TYPE_FLOAT, R, None)])
    msg("MetricName", [("group", 1, F.TYPE_STRING, O, None), ("tag", 2, F.TYPE_STRING, O, None)])
    msg("MetricInfo", [("name", 1, M, O, ".tensorflow.MetricName"), ("dataset_type", 5, F.TYPE_INT32, O, None)])
    msg("HParamInfo", [("name", 1, F.TYPE_STRING, O, None), ("display_name", 2, F.TYPE_STRING, O, None)])
    msg("Experiment", [("time_created_secs", 3, F.TYPE_DOUBLE, O, None), ("hparam_infos", 4, M, R, ".tensorflow.HParamInfo"),
                       ("metric_infos", 5, M, R, ".tensorflow.MetricInfo")])
    ssi = msg("SessionStartInfo", [("hparams", 1, M, R, ".tensorflow.SessionStartInfo.HparamsEntry"),
                                   ("group_name", 4, F.TYPE_STRING, O, None), ("start_time_secs", 5, F.TYPE_DOUBLE, O, None)])
    entry = msg("HparamsEntry", [("key", 1, F.TYPE_STRING, O, None), ("value", 2, M, O, ".google.protobuf.Value")], parent=ssi)
    entry.options.map_entry = True
    msg("SessionEndInfo", [("status", 1, F.TYPE_INT32, O, None), ("end_time_secs", 2, F.TYPE_DOUBLE, O, None)])
    msg("HParamsPluginData", [("version", 1, F.TYPE_INT32, O, None), ("experiment", 2, M, O, ".tensorflow.Experiment"),
                              ("session_start_info", 3, M, O, ".tensorflow.SessionStartInfo"),
                              ("session_end_info", 4, M, O, ".tensorflow.SessionEndInfo")])
    msg("Value", [("tag", 1, F.TYPE_STRING, F.LABEL_OPTIONAL, None), ("simple_value", 2, F.TYPE_FLOAT, F.LABEL_OPTIONAL, None),
                  ("tensor", 8, M, O, ".tensorflow.TensorProto"), ("metadata", 9, M, O, ".tensorflow.SummaryMetadata")])
    msg("Summary", [("value", 1, F.TYPE_MESSAGE, F.LABEL_REPEATED, ".tensorflow.Value")])
    msg("SessionLog", [("status", 1, F.TYPE_INT32, F.LABEL_OPTIONAL, None)])
    msg("Event", [("wall_time", 1, F.TYPE_DOUBLE, F.LABEL_OPTIONAL, None), ("step", 2, F.TYPE_INT64, F.LABEL_OPTIONAL, None),
                  ("file_version", 3, F.TYPE_STRING, F.LABEL_OPTIONAL, None),
                  ("summary", 5, F.TYPE_MESSAGE, F.LABEL_OPTIONAL, ".tensorflow.Summary"),
                  ("session_log", 6, F.TYPE_MESSAGE, F.LABEL_OPTIONAL, ".tensorflow.SessionLog")])
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(struct_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(fd)
    f = message_factory.MessageFactory(pool)
    return (f.GetPrototype(pool.FindMessageTypeByName("tensorflow.Event")),
            f.GetPrototype(pool.FindMessageTypeByName("tensorflow.HParamsPluginData")))


Event, HParamsPluginData = _messages()
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


def read_run(folder):
    """(step, tag, value) of a TensorBoard run's files in reading order, purged as TensorBoard does."""
    seen = []
    for f in sorted(glob.glob(os.path.join(folder, "events.out.tfevents.*"))):
        for ev in events(f):
            if ev.HasField("session_log") and ev.session_log.status == 1:
                seen = [s for s in seen if s[0] < ev.step]
            for v in ev.summary.value:
                if not v.tag.startswith("_hparams_/"):  # the hparams plugin's records: no scalar
                    seen.append((ev.step, v.tag, v.simple_value))
    return seen


def scalars(run):
    """Every problem's scalars: its run, and its train run (<problem>/train: train_loss_recent)."""
    got = {}
    for pdir in sorted(glob.glob(os.path.join(run, "tensorboard", "*"))):
        if os.path.isdir(pdir):
            got[os.path.basename(pdir)] = read_run(pdir) + read_run(os.path.join(pdir, "train"))
    return got


def hparams(logdir):
    """The Experiment at logdir's root and every run's sessions, each hparams record checked to be
    as tensorboard's own summaries make it (plugin hparams, the null tensor: a float32 0)."""
    def records(path):
        for ev in events(path):
            for v in ev.summary.value:
                if v.tag.startswith("_hparams_/"):
                    pd = v.metadata.plugin_data
                    assert pd.plugin_name == "hparams", (path, v.tag, pd.plugin_name)
                    assert v.tensor.dtype == 1 and list(v.tensor.float_val) == [0.0], (path, v.tag, v.tensor)
                    d = HParamsPluginData()
                    d.ParseFromString(pd.content)
                    yield v.tag, d
    out = {"experiment": None, "sessions": {}}
    for f in sorted(glob.glob(os.path.join(logdir, "events.out.tfevents.*"))):
        for tag, d in records(f):
            assert tag == "_hparams_/experiment" and d.HasField("experiment"), (f, tag)
            out["experiment"] = dict(hparams=[h.name for h in d.experiment.hparam_infos],
                                     metrics=[m.name.tag for m in d.experiment.metric_infos])
    for f in sorted(glob.glob(os.path.join(logdir, "**", "events.out.tfevents.*"), recursive=True)):
        run = os.path.relpath(os.path.dirname(f), logdir)
        if run == ".":
            continue
        for tag, d in records(f):
            s = out["sessions"].setdefault(run, {})
            if tag == "_hparams_/session_start_info":
                s["hparams"] = json_format.MessageToDict(d.session_start_info)["hparams"]
                s["group"] = d.session_start_info.group_name
            elif tag == "_hparams_/session_end_info":
                s["status"] = d.session_end_info.status
    return out


def main():
    what, run = sys.argv[1], sys.argv[2]
    if what == "hparams":
        print(json.dumps(hparams(run), indent=1, sort_keys=True))
        return
    got = scalars(run)
    if what == "scalars":
        for prob in sorted(got):
            for step, tag, v in sorted(got[prob]):
                print(prob, tag, step, repr(v))
        return
    db = sqlite3.connect(os.path.join(run, "results.sqlite"))
    cols = [r[1] for r in db.execute("PRAGMA table_info(evaluations)")][4:]
    nodes, ranks = db.execute("SELECT nodes, ranks FROM runs").fetchone()
    first = {(q * (nodes // ranks) + min(q, nodes % ranks)): q for q in range(ranks) if q < nodes}  # a rank's first node
    n = 0
    for (prob,) in db.execute("SELECT problem_name FROM problems ORDER BY problem"):
        recent = [(s, t, v) for s, t, v in got[prob] if t.startswith("train_loss_recent/")]  # no row of the database
        assert all(math.isfinite(v) for _, _, v in recent), "%s: a train_loss_recent that is not finite" % prob
        got[prob] = [x for x in got[prob] if not x[1].startswith("train_loss_recent/")]
        have = {(s, t): v for s, t, v in got[prob]}
        assert len(have) == len(got[prob]), "%s: a scalar written twice" % prob
        want = {}
        rows = db.execute("SELECT e.* FROM evaluations e JOIN problems p USING (run, problem) WHERE p.problem_name = ?",
                          (prob,)).fetchall()
        by = {}
        for r in rows:
            for c, v in zip(cols, r[4:]):
                if v is None:
                    continue
                if c.startswith("time_"):  # a rank's nodes share their calls: one value per rank
                    if r[3] in first:
                        want[(r[2], "%s/rank_%d" % (c, first[r[3]]))] = v
                        by.setdefault((r[2], c), []).append(v)
                    continue
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
