#pragma once
// SCALE-Sim v2 topology CSV files as a workload, read exactly the way SCALE-Sim reads them.
#include <cstdint>
#include <string>

#include "workloads/graph/op_graph.h"

namespace archsim {

/// Reads a SCALE-Sim v2 convolution topology CSV (columns: layer name, IFMAP height, IFMAP
/// width, filter height, filter width, channels, number of filters, stride[, stride along
/// width]). As in SCALE-Sim (scalesim/topology_utils.py): the header row is skipped, the
/// trailing comma dropped, the IFMAP is taken as already padded, so the output size is
/// E = ceil((H - F + s) / s); a layer whose name contains "DP" is depthwise (one filter per
/// channel, C independent GEMMs). Each row becomes one Conv operator with GEMM view
/// M = batch * Eh * Ew, N = filters, K = Fh * Fw * C. Layers are independent, in file order.
/// Throws UserError("file:line", reason) on a malformed row.
OpGraph read_scalesim_topology(const std::string& path, int64_t batch = 1);

}  // namespace archsim
