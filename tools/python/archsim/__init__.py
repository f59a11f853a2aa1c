"""archsim from Python: workloads, runs, jobs and sweeps as pandas DataFrames.

    import archsim
    ops = archsim.graph("../shared/models/resnet50.onnx")            # operators as a DataFrame
    r = archsim.run(arch="kpu/t256", precision="int8", sets={"clock_mhz": 800})
    r.metrics["total"]["latency_s"], r.ops, r.components            # metrics.json, DataFrames
    df = archsim.sweep("configs/studies/kpu_fabric_sizes.toml")      # one row per point

How it runs (docs/python.md): SystemC elaborates a design once per process and cannot start
over, so every simulation (run, run_job, sweep) runs the `archsim` binary this module was built
with in a child process, exactly as the command line does: the results are the CLI's, and one
Python process can run any number of simulations. What needs no simulation (graph) runs in this
process through the _archsim extension (pybind11), on the same library code the CLI calls.

Errors: bad input raises archsim.Error carrying the one-line message the CLI prints after
"archsim: error: " (file, place, reason).
"""
import json
import os
import subprocess
import tempfile

import pandas as pd

from . import _archsim
from ._build import ARCHSIM_BIN, SOURCE_DIR

Error = _archsim.Error
__version__ = _archsim.version()

__all__ = ["Error", "graph", "run", "run_job", "sweep", "from_torch", "Result", "JobResult", "binary"]


def binary():
    """The archsim binary the simulations run: $ARCHSIM_BIN, else the one built with this module."""
    return os.environ.get("ARCHSIM_BIN", ARCHSIM_BIN)


def _call(args):
    """Runs `archsim ARGS` in a child process; returns its CompletedProcess, or raises Error with
    the CLI's one-line message when it fails."""
    r = subprocess.run([binary()] + [str(a) for a in args], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        prefix = "archsim: error: "
        lines = [line for line in r.stderr.splitlines() if line.startswith(prefix)]
        if lines:
            raise Error(lines[-1][len(prefix):])
        tail = r.stderr.strip().splitlines()
        raise Error(f"archsim {args[0]} exited with code {r.returncode}" + (f": {tail[-1]}" if tail else ""))
    return r


def _value(v):
    """A --set value as the CLI takes it (TOML-like: true/false, numbers, words)."""
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def _out_dir(out, tag):
    """`out`, or a fresh folder that stays (its trace is the result's)."""
    if out:
        os.makedirs(out, exist_ok=True)
        return str(out)
    return tempfile.mkdtemp(prefix=f"archsim_{tag}_")


def graph(model=None, batch=0, dims=None, inputs="", allow_unsupported=False, workload_sets=None):
    """The operator graph of `model` (an .onnx file, a SCALE-Sim .csv, FILE.toml#NAME; default the
    bundled ResNet-18), as `archsim graph --format json` reports it: one row per operator in
    topological order (name, op_type, class, macs, flops, params, bytes_read, bytes_written,
    arithmetic_intensity in FLOPs per byte, input and output shapes, GEMM views). The totals are in
    `.attrs["total"]` (ops, macs, flops, params, bytes, folded_nodes, edges), the model's name in
    `.attrs["model"]`. `dims` binds symbolic dims ({"batch_size": 8}); `workload_sets` sets fields of
    a generated workload (["width=512"]). Runs in this process. Raises Error."""
    model = str(model) if model else os.path.join(SOURCE_DIR, "workloads", "models", "resnet18.onnx")
    doc = json.loads(_archsim.graph_json(model, int(batch), {k: int(v) for k, v in (dims or {}).items()}, str(inputs),
                                         bool(allow_unsupported), [str(s) for s in (workload_sets or [])]))
    df = pd.DataFrame(doc["ops"])
    df.attrs["total"], df.attrs["model"], df.attrs["source"] = doc["total"], doc["model"], doc["source"]
    return df


class Result:
    """A finished `archsim run`: `metrics` (its metrics.json, or llm.json for an LLM entry's
    phases), `ops` and `components` (DataFrames; nested fields such as traffic_bytes flattened to
    `traffic_bytes.dram` columns), `total` (the totals), `dir` (the output folder) and `trace`
    (trace.h5's path, None where the run writes none)."""

    def __init__(self, out_dir):
        self.dir = out_dir
        name = "metrics.json" if os.path.exists(os.path.join(out_dir, "metrics.json")) else "llm.json"
        with open(os.path.join(out_dir, name)) as f:
            self.metrics = json.load(f)
        trace = os.path.join(out_dir, "trace.h5")
        self.trace = trace if os.path.exists(trace) else None

    @property
    def total(self):
        return self.metrics.get("total", {})

    @property
    def ops(self):
        return pd.json_normalize(self.metrics.get("ops", []))

    @property
    def components(self):
        return pd.json_normalize(self.metrics.get("components", []))

    def _summary(self):
        m, t = self.metrics, self.total
        rows = {k: m[k] for k in ("model", "machine", "precision", "precision_from", "runtime", "runtime_from") if k in m}
        rows.update({k: t[k] for k in ("latency_s", "energy_j", "macs", "utilization") if k in t})
        return pd.DataFrame({"value": rows})

    def _repr_html_(self):
        return (self._summary().to_html() + f"<p>{len(self.metrics.get('ops', []))} operators; trace {self.trace}</p>"
                + self.ops.head(10).to_html())

    def __repr__(self):
        return f"archsim.Result({self.dir})\n{self._summary().to_string()}"


def run(model=None, arch=None, runtime=None, precision=None, batch=0, train=False, sets=None, out=None, detail="full",
        options=None, mapper="auto"):
    """Simulates `model` (as graph(); default the bundled ResNet-18) on machine `arch` (a config
    path or a bundled name such as "kpu/t256"; default the CLI's) in a child process, as `archsim
    run` does, and returns its Result. `runtime`, `precision`, `batch` and `train` as the CLI's
    --runtime, --precision, --batch and --train; `sets` a dict of config keys to set
    ({"clock_mhz": 800}); `out` the output folder (default a fresh temporary one, kept);
    `detail` "full" or "kernel" (the trace's detail); `mapper` "auto", "search" or "fixed"
    (the CLI's --mapper: each kernel's mapping searched where the config leaves it open, also where
    it names one, or every machine's fixed schedule); `options` more
    CLI arguments as a list. Raises Error."""
    out = _out_dir(out, "run")
    args = ["run"] + ([str(model)] if model else []) + ["--out", out, "--format", "json", "--quiet", "--detail", detail,
                                                        "--mapper", mapper]
    if arch:
        args += ["--arch", str(arch)]
    if runtime:
        args += ["--runtime", runtime]
    if precision:
        args += ["--precision", precision]
    if batch:
        args += ["--batch", int(batch)]
    if train:
        args += ["--train"]
    for k, v in (sets or {}).items():
        args += ["--set", f"{k}={_value(v)}"]
    _call(args + list(options or []))
    return Result(out)


class JobResult:
    """A finished job (`archsim run WORKLOADS.yaml#NAME --target T.yaml#NAME`): `metrics` (its
    last_run.json: step time, tokens/s, MFU, phases), `dir` (the output folder)."""

    def __init__(self, out_dir):
        self.dir = out_dir
        with open(os.path.join(out_dir, "last_run.json")) as f:
            self.metrics = json.load(f)

    def _repr_html_(self):
        flat = {k: v for k, v in self.metrics.items() if not isinstance(v, (dict, list))}
        return pd.DataFrame({"value": flat}).to_html()

    def __repr__(self):
        return f"archsim.JobResult({self.dir})"


def run_job(entry, target, out=None, microbatch=0, global_batch=0, phase=None, options=None, parallel=None, search=None):
    """Runs job `entry` (WORKLOADS.yaml#NAME) on `target` (TARGETS.yaml#NAME) in a child process,
    as the CLI does, and returns its JobResult. `microbatch`, `global_batch`, `phase` as the CLI's
    flags; `parallel` a dict of plan fields (run --parallel KEY=VALUE: {"tp": 4, "recompute":
    "selective"}); `search` True or False for run --search on/off (None: the entry's track);
    `options` more CLI arguments as a list. Raises Error."""
    out = _out_dir(out, "job")
    args = ["run", str(entry), "--target", str(target), "--out", out, "--quiet"]
    if microbatch:
        args += ["--microbatch", int(microbatch)]
    if global_batch:
        args += ["--global-batch", int(global_batch)]
    if phase:
        args += ["--phase", phase]
    for key, value in (parallel or {}).items():
        args += ["--parallel", f"{key}={str(value).lower() if isinstance(value, bool) else value}"]
    if search is not None:
        args += ["--search", "on" if search else "off"]
    _call(args + list(options or []))
    return JobResult(out)


def sweep(study, out=None, jobs=0, options=None):
    """Runs a what-if study (a study file's path, or the same as a dict, written to TOML with
    tomli_w) with `archsim sweep` in a child process and returns its results as a DataFrame (one
    row per point, the columns of DIR/results.csv; `.attrs["dir"]` the output folder). `jobs`
    parallel points (0: the CLI's default); `options` more CLI arguments. Raises Error."""
    out = _out_dir(out, "sweep")
    if isinstance(study, dict):
        import tomli_w

        path = os.path.join(out, "study.toml")
        with open(path, "wb") as f:
            tomli_w.dump(study, f)
        study = path
    args = ["sweep", str(study), "--out", out, "--quiet"]
    if jobs:
        args += ["--jobs", int(jobs)]
    _call(args + list(options or []))
    df = pd.read_csv(os.path.join(out, "results.csv"))
    df.attrs["dir"] = out
    return df


def from_torch(module, example_inputs, path=None, opset=17, input_names=None):
    """A workload from a torch.nn.Module: exported with torch.onnx.export (eval mode, constants
    folded) on `example_inputs` (a tensor or a tuple of them, whose shapes the graph takes) to
    `path` (default a temporary .onnx file); returns the path, which graph() and run() take."""
    import torch

    if path is None:
        fd, path = tempfile.mkstemp(prefix="archsim_torch_", suffix=".onnx")
        os.close(fd)
    inputs = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            torch.onnx.export(module, inputs, path, opset_version=opset, do_constant_folding=True,
                              input_names=input_names or [f"input_{i}" for i in range(len(inputs))])
    finally:
        module.train(was_training)
    return path
