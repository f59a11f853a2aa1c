#pragma once
// A workload's operator graph as a document: what `archsim graph --format json` prints and what
// the Python module's archsim.graph() reads, computed once here.
#include <string>

#include "workloads/onnx/importer.h"

namespace archsim {

/// The graph of an import as JSON text: `model`, `source`, `total` (ops, macs, flops, params,
/// bytes read + written, folded_nodes, edges) and `ops[]` in topological order, each with name,
/// op_type, class, macs, flops (1 MAC = 2 FLOPs), params, bytes_read, bytes_written (bytes),
/// arithmetic_intensity (FLOPs per byte moved), input and output shapes and, for a contraction,
/// its GEMM views (repeat, batch, groups, m, n, k). Throws nothing.
std::string graph_report_json(const ImportResult& r);

}  // namespace archsim
