#!/usr/bin/python3
"""Checks that archsim's layers depend only downward: every #include between source folders and
every link between archsim's libraries goes from a higher layer to a lower one.

Usage: tools/check_layers.py [REPO]   (default: the repository this file is in)
Prints one line per violation (`file:line: folder (layer) includes header (layer)`) and exits 1
when there is one; a source folder missing from LAYERS is a violation too, so a new folder must
be placed (a new machine kind need not: every arch/ folder not listed is a machine). Run by the
suite (tests/integration/test_layers.cpp).

The layers, lowest first (docs/architecture.md draws them). A folder may include headers of its
own folder and of any lower layer; folders of the same layer are independent of each other. A
listed folder holds its own files only (`workloads` is the dispatcher, not every workloads/
subfolder); FOLDER/** holds its subfolders too.
"""
import os
import re
import sys

LAYERS = [
    ("base", ["sim/base"]),                               # errors, units, params, config loading
    ("traces", ["traces/**"]),                            # trace events, reducers, metrics
    ("graph", ["workloads/graph"]),                       # the operator graph, workload names
    ("import", ["workloads/onnx", "workloads/scalesim"]),  # model files -> graphs
    ("training", ["workloads/training"]),                 # a forward graph -> a training step
    ("generators", ["workloads/generators"]),             # workload files and generated models
    ("parallel", ["workloads/parallel"]),                 # parallel plans, pipeline schedules
    ("jobs", ["workloads/jobs"]),                         # jobs of the workload format
    ("workloads", ["workloads"]),                         # load_workload: the dispatcher
    ("lowering", ["workloads/lowering"]),                 # runtime profiles, fusion, kernels
    ("machine parts", ["arch/memory", "arch/energy", "arch/power", "arch/interconnect"]),
    ("machine core", ["arch/common"]),                    # interface, registry, recorder
    ("machines", ["arch/*"]),                            # every other arch/ folder: a kind, clusters
    ("engine", ["sim/engine"]),                           # one graph on one machine
    ("cluster", ["sim/cluster", "sim/serving"]),          # a job on many devices; requests served over time
    ("api", ["sim/api"]),                                 # the library API: runs, jobs, sweeps, process pool
    ("tools", ["tools/**"]),                              # the command line
]

# archsim's libraries and the layer each belongs to (its highest folder's)
LIBRARIES = {
    "archsim_common": "base",
    "archsim_traces": "traces",
    "archsim_graph": "graph",
    "archsim_workloads": "workloads",
    "archsim_lowering": "lowering",
    "archsim_arch_common": "machine core",
    "archsim_interconnect": "machines",  # arch/interconnect and arch/cluster
    "archsim_machines": "machines",
    "archsim_engine": "engine",
    "archsim_cluster": "cluster",
    "archsim_serving": "cluster",
    "archsim_api": "api",
    "archsim": "tools",
    "_archsim": "tools",                 # the Python extension (tools/python)
}

CHECKED = ("sim", "traces", "workloads", "arch", "tools")
RANK = {name: i for i, (name, _) in enumerate(LAYERS)}


def layer_of(path):
    """(folder, layer name) of a repository-relative path: the listed folder that holds it (a
    folder holds its own files; FOLDER/** also every subfolder's; arch/* is any arch/ subfolder
    not listed otherwise, with its subfolders), or (its directory, None) when none does."""
    here = os.path.dirname(path)
    wildcard = None
    for name, folders in LAYERS:
        for f in folders:
            if f.endswith("/**"):
                if here == f[:-3] or here.startswith(f[:-2]):
                    return f[:-3], name
            elif f.endswith("/*"):
                parts = here.split("/")
                if here.startswith(f[:-1]) and len(parts) >= 2:
                    wildcard = ("/".join(parts[:2]), name)
            elif here == f:
                return f, name
    return wildcard or (here, None)


def include_violations(repo):
    out = []
    inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
    for top in CHECKED:
        for dirpath, _, files in os.walk(os.path.join(repo, top)):
            for fn in sorted(files):
                if not fn.endswith((".h", ".cpp", ".hpp", ".cpp.in")):
                    continue
                path = os.path.relpath(os.path.join(dirpath, fn), repo)
                folder, layer = layer_of(path)
                if layer is None:
                    out.append(f"{path}:1: folder {folder} is in no layer of tools/check_layers.py (place it in LAYERS)")
                    continue
                with open(os.path.join(repo, path), errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        m = inc.match(line)
                        if not m or not os.path.exists(os.path.join(repo, m.group(1))):
                            continue  # a system header, or one generated into the build folder
                        hfolder, hlayer = layer_of(m.group(1))
                        if hfolder == folder or hlayer is None:
                            continue
                        if RANK[hlayer] >= RANK[layer]:
                            out.append(f"{path}:{n}: {folder} ({layer}) includes {m.group(1)} ({hlayer}): "
                                       f"{'a sibling' if hlayer == layer else 'a higher layer'}")
    return out


def link_violations(repo):
    out = []
    call = re.compile(r"target_link_libraries\(\s*(\w+)([^)]*)\)", re.S)
    for dirpath, _, files in os.walk(repo):
        if "CMakeLists.txt" not in files or os.path.relpath(dirpath, repo).split(os.sep)[0] not in CHECKED + (".",):
            continue
        path = os.path.join(dirpath, "CMakeLists.txt")
        text = open(path).read()
        for m in call.finditer(text):
            target = m.group(1)
            if target not in LIBRARIES:
                continue
            for dep in re.findall(r"\barchsim_\w+\b", m.group(2)):
                if dep == target or dep not in LIBRARIES:
                    continue
                if RANK[LIBRARIES[dep]] > RANK[LIBRARIES[target]]:
                    line = text.count("\n", 0, m.start()) + 1
                    out.append(f"{os.path.relpath(path, repo)}:{line}: {target} ({LIBRARIES[target]}) links {dep} "
                               f"({LIBRARIES[dep]}): a higher layer")
    return out


def main():
    repo = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    bad = include_violations(repo) + link_violations(repo)
    for b in bad:
        print(b)
    if bad:
        print(f"check_layers: {len(bad)} dependencies against the layers (tools/check_layers.py lists them)", file=sys.stderr)
        return 1
    print(f"check_layers: every include and library link points down ({len(LAYERS)} layers)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
