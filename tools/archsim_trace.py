#!/usr/bin/python3
"""Loads an archsim trace (trace.h5, schema in traces/README.md) into numpy arrays.

    import sys; sys.path.insert(0, "tools")
    import archsim_trace
    t = archsim_trace.load("out/run/trace.h5")
    t.events["t_ps"], t.events["kind"], ...      # a numpy structured array, one row per event
    t.event_sums["bytes"], ...                   # per operator, component, kind and stall cause
    t.kind_names, t.components["name"], t.ops["name"], t.attrs["model"]
    t.stall_causes["name"][t.select(kind="stall")["detail"]]  # why each stall waited
    folds = t.select(kind="fold", component="sm0")  # rows by kind name and component name
    for chunk in archsim_trace.chunks("big.h5"): ...  # 65,536 events at a time, for huge traces

Needs Debian's python3-h5py and python3-numpy. Refuses a trace of another schema version, or
one that was not closed normally, with a clear message (TraceError).
"""
import sys

import h5py
import numpy as np

SCHEMA_VERSIONS = (3, 4, 5)  # 4 adds /event_sums and `detail`; 5 stores replayed kernels by reference
KIND_NAMES = ["op", "fold", "vector", "dram_read", "dram_write", "sram_read", "sram_write", "stall", "transfer"]


class TraceError(Exception):
    """A file that is not a complete archsim trace of the supported schema version."""


def _text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def _open(path):
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise TraceError(f"{path}: not a readable HDF5 trace ({e})") from None
    version = int(f.attrs.get("schema_version", -1))
    if version not in SCHEMA_VERSIONS:
        f.close()
        raise TraceError(f"{path}: trace schema version {version}, this reader knows {SCHEMA_VERSIONS}")
    if int(f.attrs.get("complete", 0)) != 1:
        f.close()
        raise TraceError(f"{path}: incomplete trace (the run did not finish)")
    return f


def _table(ds):
    out = {}
    for name in ds.dtype.names:
        col = ds[name]
        out[name] = np.array([_text(x) for x in col]) if col.dtype.kind in "OS" else np.asarray(col)
    return out


class Trace:
    """A whole trace in memory: events (structured array), components and ops (dicts of arrays),
    attrs (dict), event_sums (structured array; None for a schema-3 trace). A trace written with
    `run --detail kernel` has no events: its event_sums hold what the run did."""

    def __init__(self, events, components, ops, stall_causes, attrs, event_sums=None):
        self.events = events
        self.event_sums = event_sums
        self.components = components
        self.ops = ops
        self.stall_causes = stall_causes  # the machine's own causes; row = a stall's `detail`
        self.attrs = attrs
        self.kind_names = KIND_NAMES

    def select(self, kind=None, component=None, op=None):
        """Events of a kind name ("fold", ...), a component name ("sm0") and an operator name."""
        mask = np.ones(len(self.events), dtype=bool)
        if kind is not None:
            mask &= self.events["kind"] == KIND_NAMES.index(kind)
        if component is not None:
            idx = np.flatnonzero(self.components["name"] == component)
            mask &= np.isin(self.events["component"], idx)
        if op is not None:
            idx = np.flatnonzero(self.ops["name"] == op)
            mask &= np.isin(self.events["op"], idx)
        return self.events[mask]

    def latency_ps(self):
        if self.event_sums is not None and len(self.event_sums):
            return int(self.event_sums["end_ps"].max())
        return int((self.events["t_ps"] + self.events["dur_ps"]).max()) if len(self.events) else 0


def _replay(f, ref):
    """The events of one replayed kernel (a /kernel_refs row: position, recording, op, origin_ps):
    its recording's rows of /events (a /kernel_records row: first row, count, origin_ps) moved to
    its origin and stamped with its operator."""
    offset, count, origin = (int(x) for x in f["kernel_records"][int(ref[1])])
    ev = f["events"][offset:offset + count]
    ev["op"] = int(ref[2])
    ev["t_ps"] = ev["t_ps"] - np.uint64(origin) + np.uint64(ref[3])
    return ev


def _expanded(f, size):
    """Yields the stored events in slices of at most `size` rows with every kernel replayed by
    reference (schema 5, /kernel_refs) expanded in its place, in the order the run emitted them."""
    ev = f["events"]
    refs = f["kernel_refs"][:] if "kernel_refs" in f else np.zeros((0, 4))
    ri = 0
    for i in range(0, ev.shape[0] + 1, size):
        end = min(i + size, ev.shape[0])
        part = ev[i:end]
        pieces, last = [], 0
        # the replays placed before stored events i .. end (and, at the end, after the last one)
        while ri < len(refs) and (refs[ri][0] < end or (end == ev.shape[0] and refs[ri][0] <= end)):
            at = int(refs[ri][0]) - i
            pieces.append(part[last:at])
            pieces.append(_replay(f, refs[ri]))
            last = at
            ri += 1
        pieces.append(part[last:])
        out = np.concatenate(pieces) if len(pieces) > 1 else part
        if len(out):
            yield out
        if end == ev.shape[0]:
            break


def load(path):
    """The whole trace in memory (replayed kernels expanded)."""
    with _open(path) as f:
        attrs = {k: (_text(v) if isinstance(v, (bytes, str)) else v.item() if hasattr(v, "item") else v) for k, v in f.attrs.items()}
        sums = f["event_sums"][:] if "event_sums" in f else None
        parts = list(_expanded(f, 1 << 20))
        events = np.concatenate(parts) if parts else f["events"][:0]
        return Trace(events, _table(f["components"]), _table(f["ops"]), _table(f["stall_causes"]), attrs, sums)


def chunks(path, size=65536):
    """Yields the events (replayed kernels expanded) in consecutive structured arrays; each holds
    at most `size` stored events plus the replays among them."""
    with _open(path) as f:
        yield from _expanded(f, size)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    try:
        t = load(sys.argv[1])
    except TraceError as e:
        print(f"archsim_trace.py: {e}", file=sys.stderr)
        sys.exit(2)
    print(f"{t.attrs['model']} on {t.attrs['machine']}: {len(t.events)} events, latency {t.latency_ps() / 1e6:.3f} us, "
          f"MACs {int(t.select(kind='fold')['ops'].sum())}")
