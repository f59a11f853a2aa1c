// archsim's Python extension (_archsim): the in-process part of the `archsim` Python module
// (tools/python/archsim/__init__.py), bound with pybind11. It imports workloads and reports their
// graphs in this process; simulations run in a child process each (see the package's doc).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <string>
#include <vector>

#include "sim/base/error.h"
#include "sim/base/version.h"
#include "workloads/graph_report.h"
#include "workloads/load_workload.h"

namespace py = pybind11;

namespace {

/// The graph of `model` (an .onnx file, a SCALE-Sim .csv or FILE.toml#NAME) as the JSON text
/// `archsim graph --format json` prints: `batch` (0: as in the model) sets dim 0 of every input,
/// `dims` binds symbolic dims by name, `inputs` names sample inputs (a directory of input_<i>.pb or
/// one .pb), `workload_sets` sets fields of a generated workload ("KEY=VALUE"). Throws UserError.
std::string graph_json(const std::string& model, int64_t batch, const std::map<std::string, int64_t>& dims,
                       const std::string& inputs, bool allow_unsupported, const std::vector<std::string>& workload_sets) {
    return archsim::graph_report_json(
        archsim::load_workload(model, archsim::make_import_options(dims, batch, allow_unsupported, workload_sets, inputs)));
}

}  // namespace

PYBIND11_MODULE(_archsim, m) {
    m.doc() = "archsim's in-process part: workload import and graph reports (see the archsim package)";
    // archsim.Error: a user error, with the one-line message the CLI prints after "archsim: error: "
    static py::exception<archsim::UserError> error(m, "Error");
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const archsim::UserError& e) {
            error(e.what());
        }
    });
    m.def("graph_json", &graph_json, py::arg("model"), py::arg("batch") = 0, py::arg("dims") = std::map<std::string, int64_t>{},
          py::arg("inputs") = "", py::arg("allow_unsupported") = false, py::arg("workload_sets") = std::vector<std::string>{},
          "The graph of a workload as `archsim graph --format json` prints it (JSON text). Raises archsim.Error.");
    m.def("version", [] { return std::string(archsim::version()); }, "archsim's version, as `archsim --version` prints it");
}
