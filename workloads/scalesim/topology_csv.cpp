#include "workloads/scalesim/topology_csv.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "sim/base/error.h"

namespace archsim {

static std::string trim(const std::string& s) {
    auto b = s.find_first_not_of(" \t\r\n");
    auto e = s.find_last_not_of(" \t\r\n");
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

OpGraph read_scalesim_topology(const std::string& path, int64_t batch) {
    std::ifstream in(path);
    if (!in) throw UserError(path, "cannot open topology file");
    if (batch < 1) throw UserError(path + ": --batch", "must be >= 1");
    std::vector<Tensor> tensors;
    std::vector<Operator> ops;
    std::string line;
    int line_no = 0;
    while (std::getline(in, line)) {
        ++line_no;
        if (line_no == 1) continue;  // header row, skipped as SCALE-Sim does
        if (trim(line).empty()) continue;
        std::vector<std::string> f;
        std::stringstream ss(line);
        std::string cell;
        while (std::getline(ss, cell, ',')) f.push_back(trim(cell));
        while (!f.empty() && f.back().empty()) f.pop_back();  // the trailing comma
        const std::string where = path + ":" + std::to_string(line_no);
        if (f.size() < 8 || f.size() > 9)
            throw UserError(where, "expected 8 or 9 fields (name, ifmap h, ifmap w, filter h, filter w, channels, filters, stride[, stride w]), got " +
                                       std::to_string(f.size()));
        int64_t v[8];
        for (size_t k = 1; k < f.size(); ++k) {
            size_t pos = 0;
            long long x = 0;
            try { x = std::stoll(f[k], &pos); } catch (...) { pos = std::string::npos; }
            if (pos != f[k].size() || x < 1)
                throw UserError(where, "field " + std::to_string(k + 1) + " ('" + f[k] + "') must be a positive integer");
            v[k - 1] = x;
        }
        const int64_t ih = v[0], iw = v[1], fh = v[2], fw = v[3], ch = v[4], nf = v[5], sh = v[6];
        const int64_t sw = f.size() == 9 ? v[7] : sh;
        if (fh > ih || fw > iw) throw UserError(where, "filter larger than the ifmap");
        const int64_t eh = (ih - fh + sh + sh - 1) / sh;  // ceil((H - F + s) / s)
        const int64_t ew = (iw - fw + sw + sw - 1) / sw;
        const bool depthwise = f[0].find("DP") != std::string::npos;

        Operator op;
        op.name = f[0];
        op.op_type = "Conv";
        const int32_t base = static_cast<int32_t>(tensors.size());
        tensors.push_back({f[0] + ".ifmap", {batch, ch, ih, iw}, 1, 4, TensorRole::Input});
        const int64_t w_in = depthwise ? 1 : ch;
        tensors.push_back({f[0] + ".filter", {nf, w_in, fh, fw}, 1, 4, TensorRole::Weight});
        tensors.push_back({f[0] + ".ofmap", {batch, nf, eh, ew}, 1, 4, TensorRole::Activation});
        op.inputs = {base, base + 1};
        op.outputs = {base + 2};
        GemmView g;
        g.groups = depthwise ? ch : 1;
        g.m = batch * eh * ew;
        g.n = depthwise ? std::max<int64_t>(1, nf / ch) : nf;
        g.k = fh * fw * (depthwise ? 1 : ch);
        g.a_unique_elems = std::min(g.m * g.k, batch * (depthwise ? 1 : ch) * ih * iw);
        g.a = {base, /*in_place=*/true};  // a convolution layer: implicit im2col over the ifmap
        g.b = {base + 1, false};
        g.c = {base + 2, false};
        op.cost.cls = OpClass::Contraction;
        op.cost.gemms = {g};
        op.cost.macs = g.macs();
        op.cost.flops = 2 * op.cost.macs;
        op.cost.bytes_read = tensors[base].bytes() + tensors[base + 1].bytes();
        op.cost.bytes_written = tensors[base + 2].bytes();
        op.cost.params = tensors[base + 1].elems();
        ops.push_back(std::move(op));
    }
    if (ops.empty()) throw UserError(path, "no layers (a header row and at least one layer row expected)");
    return OpGraph(std::filesystem::path(path).stem().string(), path, std::move(tensors), std::move(ops));
}

}  // namespace archsim
