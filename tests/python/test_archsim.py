"""The Python module `archsim` (tools/python/): a graph, two machines and a job from one
process with the CLI's results, a bad key raising archsim.Error with one line, from_torch of a
small MLP with exact MACs, and a sweep as a DataFrame. Run by ctest ("python.<test>") with
PYTHONPATH at the build's python/ folder."""
import json
import os
import subprocess
import tempfile

import pytest

import archsim

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SHARED = os.path.join(SRC, "..", "shared", "models")
TARGET = os.path.join(SRC, "configs", "clusters", "targets.yaml") + "#NVIDIA_A100_80GB_SuperPOD"


def cli_json(*args):
    """`archsim ARGS --format json` in a child process, its printed JSON."""
    out = subprocess.run([archsim.binary(), *args, "--format", "json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_graph_is_the_clis_graph():
    model = os.path.join(SHARED, "resnet50.onnx")
    if not os.path.exists(model):
        model = os.path.join(SRC, "workloads", "models", "resnet18.onnx")
    ops = archsim.graph(model)
    cli = cli_json("graph", model)
    assert ops.attrs["total"] == cli["total"]
    assert list(ops["name"]) == [o["name"] for o in cli["ops"]]
    assert int(ops["macs"].sum()) == cli["total"]["macs"]


def test_two_machines_from_one_process_match_the_cli(tmp_path):
    for arch in ("tpu/tpu_128x128_ws", "roofline/host"):
        r = archsim.run(arch=arch, detail="kernel", out=tmp_path / arch.replace("/", "_"))
        with tempfile.TemporaryDirectory() as d:
            subprocess.run([archsim.binary(), "run", "--arch", arch, "--out", d, "--quiet", "--detail", "kernel"],
                           check=True, capture_output=True)
            with open(os.path.join(d, "metrics.json")) as f:
                cli = json.load(f)
        assert r.total["latency_s"] == cli["total"]["latency_s"]
        assert r.total["energy_j"] == cli["total"]["energy_j"]
        assert len(r.ops) == len(cli["ops"]) and len(r.components) == len(cli["components"])
        assert "traffic_bytes.dram" in r.ops.columns
        assert r.trace and os.path.exists(r.trace)
        assert "<table" in r._repr_html_()


def test_a_job_from_python_matches_the_cli(tmp_path):
    entry = os.path.join(SRC, "workloads", "workloads.yaml") + "#megatron_gpt_1_7B"
    job = archsim.run_job(entry, TARGET, out=tmp_path / "job")
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([archsim.binary(), "run", entry, "--target", TARGET, "--out", d, "--quiet"], check=True, capture_output=True)
        with open(os.path.join(d, "last_run.json")) as f:
            cli = json.load(f)
    assert job.metrics["step_time_s"] == cli["step_time_s"]
    assert job.metrics["step_time_s"] > 0
    assert "<table" in job._repr_html_()


def test_a_jobs_plan_is_set_from_python(tmp_path):
    # a small GPT whose entry asks for the search; the plan given from Python runs instead
    (tmp_path / "jobs.yaml").write_text(
        "workloads:\n  - name: tiny\n    framework: megatron\n    model_family: gpt\n"
        "    params: { hidden_size: 256, n_layers: 4, vocab_size: 1024, n_heads: 4 }\n    parallelism: { tp: 1, pp: 1, dp: 8 }\n"
        "    sequence: { prompt: 128, generate: 0 }\n    precision: { weights: fp16, activations: fp16 }\n    dataloader: synthetic\n"
        "    duration_minutes: 5\n    track: best\n    runtime_tuning: { microbatch: 2 }\n    global_batch: 16\n")
    job = archsim.run_job(str(tmp_path / "jobs.yaml") + "#tiny", TARGET, out=tmp_path / "job", parallel={"tp": 2, "dp": 4, "sequence_parallel": True},
                          search=False)
    p = job.metrics["parallelism"]
    assert (p["tp"], p["dp"], p["sequence_parallel"]) == (2, 4, True)
    assert "search" not in job.metrics


def test_a_bad_key_raises_archsim_error_with_the_clis_line(tmp_path):
    with pytest.raises(archsim.Error) as e:
        archsim.run(arch="tpu/tpu_128x128_ws", sets={"array.rowz": 64}, out=tmp_path)
    msg = str(e.value)
    assert "\n" not in msg and "array.rowz" in msg
    with pytest.raises(archsim.Error) as e:
        archsim.graph("/nonexistent/model.onnx")
    assert "/nonexistent/model.onnx" in str(e.value) and "\n" not in str(e.value)


def test_from_torch_mlp_has_exact_macs(tmp_path):
    torch = pytest.importorskip("torch")
    mlp = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    path = archsim.from_torch(mlp, torch.randn(4, 64), path=str(tmp_path / "mlp.onnx"))
    ops = archsim.graph(path)
    assert ops.attrs["total"]["macs"] == 4 * (64 * 128 + 128 * 10)
    assert sorted(ops.loc[ops["macs"] > 0, "macs"]) == [4 * 128 * 10, 4 * 64 * 128]
    r = archsim.run(path, arch="roofline/host", detail="kernel", out=tmp_path / "run")
    assert r.total["macs"] == 4 * (64 * 128 + 128 * 10)


def test_a_sweep_as_a_dataframe(tmp_path):
    study = {
        "name": "py_sweep",
        "models": [os.path.join(SRC, "workloads", "models", "resnet18.onnx")],
        "mode": "product",
        "axes": {"clock_mhz": [500, 1000]},
        "machine": [{"label": "roofline", "config": os.path.join(SRC, "configs", "roofline", "host.toml")}],
    }
    df = archsim.sweep(study, out=tmp_path / "sweep")
    assert len(df) == 2
    assert set(df["clock_mhz"]) == {500, 1000}
    lat = df.sort_values("clock_mhz")["latency_s"].tolist()
    assert lat[0] >= lat[1] > 0
