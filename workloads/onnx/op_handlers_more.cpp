// Cost rules for the rest of the ONNX default domain up to opset 18 and ai.onnx.preview.training
// (all of it but the operators with a subgraph: If, Loop, Scan, SequenceMap, which
// control_flow.cpp and sequences.cpp unroll at import):
// losses, quantized contractions, Einsum, signal processing (DFT, STFT, windows, mel matrix),
// detection and sampling (NonMaxSuppression, RoiAlign, GridSample, MaxUnpool), set and text
// operators (Unique, TfIdfVectorizer, StringNormalizer), random generators, Det, training
// operators (Momentum, Adam, Adagrad, Gradient), optionals and sequences. Counting conventions
// as in op_handlers.cpp: a MAC for each multiply-accumulate of a contraction, one vector
// operation per arithmetic, comparison or lookup step otherwise.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "sim/base/error.h"
#include "workloads/onnx/op_handlers.h"

namespace archsim::op_cost {

namespace {

int64_t elems_of_outputs(const NodeContext& c) {
    int64_t s = 0;
    for (const Tensor* t : c.out)
        if (t) s += t->elems();
    return s;
}

/// A handler costing `ops_per_elem` vector operations per element of output 0.
OpHandler per_output(OpClass cls, int64_t ops_per_elem) {
    return [cls, ops_per_elem](const NodeContext& c) {
        OpCost k = base_cost(c, cls);
        k.flops = ops_per_elem * c.output(0).elems();
        return k;
    };
}

/// The same node seen through a subset of its inputs (`keep`: input positions, -1 = omitted),
/// so the quantized contractions reuse the float ones' MAC counts.
NodeContext with_inputs(const NodeContext& c, const std::vector<int>& keep) {
    NodeContext r = c;
    r.in.clear(), r.in_ids.clear();
    for (const int i : keep) {
        const bool have = i >= 0 && static_cast<size_t>(i) < c.in.size();
        r.in.push_back(have ? c.in[static_cast<size_t>(i)] : nullptr);
        r.in_ids.push_back(have ? c.in_ids[static_cast<size_t>(i)] : -1);
    }
    return r;
}

/// The bytes of every input and output of the node as written (a quantized contraction also
/// reads its scales and zero points).
void all_bytes(const NodeContext& c, OpCost& k) {
    const OpCost b = base_cost(c, k.cls);
    k.bytes_read = b.bytes_read, k.bytes_written = b.bytes_written, k.params = b.params;
}

/// The negative log-likelihood's operations over target input `target` with class weights at
/// input `weight` (ONNX's NegativeLogLikelihoodLoss definition): per target element the picked
/// log-probability is read and negated (2), times its class weight when there are weights (1);
/// a reduction (mean or sum) adds each term (1) and, with weights and mean, the weights too (1),
/// then one division.
int64_t nll_ops(const NodeContext& c, size_t target, size_t weight) {
    const int64_t terms = c.input(target).elems();
    const bool weighted = c.in.size() > weight && c.in[weight];
    const bool reduced = c.attr_string("reduction", "mean") != "none";
    return terms * (2 + (weighted ? 1 : 0) + (reduced ? 1 + (weighted ? 1 : 0) : 0)) + (reduced ? 1 : 0);
}

/// NegativeLogLikelihoodLoss: only the picked entries of the input are read.
OpCost nll_loss(const NodeContext& c) {
    OpCost k = base_cost(c, OpClass::Reduction);
    k.flops = nll_ops(c, 1, 2);
    read_part(k, c, 0, c.input(1).elems());
    return k;
}

/// Softmax cross-entropy: the log-softmax over the class axis, 5 operations per score (max,
/// subtract, exp, sum, log and subtract: as LogSoftmax), then the negative log-likelihood; every
/// score is read.
OpCost softmax_cross_entropy(const NodeContext& c) {
    OpCost k = base_cost(c, OpClass::Reduction);
    k.flops = 5 * c.input(0).elems() + nll_ops(c, 1, 2);
    return k;
}

/// Einsum (numpy's semantics): operands contracted pairwise from the left, as a naive einsum
/// does. For a pair, the letters of both operands kept in the result are batch dims, those of
/// one operand only its free dims (m or n), those of both and not kept the reduction (k): one
/// GEMM view of batch x m x n x k MACs. A letter of one operand that no later term needs is
/// summed first (one add per element). One operand alone: a transpose (a copy) or a sum.
OpCost einsum(const NodeContext& c) {
    std::string eq = c.attr_string("equation", "");
    eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
    const size_t arrow = eq.find("->");
    const std::string lhs = eq.substr(0, arrow);
    std::vector<std::string> terms;
    for (size_t from = 0, comma = 0; comma != std::string::npos; from = comma + 1) {
        comma = lhs.find(',', from);
        terms.push_back(lhs.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
    }
    if (terms.size() != c.in.size()) throw UserError(c.where, "Einsum equation '" + eq + "' names " + std::to_string(terms.size()) +
                                                                  " operands, the node has " + std::to_string(c.in.size()));
    // "..." becomes one upper-case letter per broadcast dim (right-aligned, numpy's rule)
    size_t ell = 0;
    for (size_t i = 0; i < terms.size(); ++i)
        if (terms[i].find("...") != std::string::npos)
            ell = std::max(ell, c.input(i).shape.size() - (terms[i].size() - 3));
    auto expand = [&](const std::string& t, size_t rank) {
        const size_t at = t.find("...");
        if (at == std::string::npos) return t;
        std::string dims;
        for (size_t d = 0; d < rank; ++d) dims += static_cast<char>('Z' - (ell - rank) - (rank - 1 - d));
        return t.substr(0, at) + dims + t.substr(at + 3);
    };
    std::map<char, int64_t> size;
    for (size_t i = 0; i < terms.size(); ++i) {
        const auto& shape = c.input(i).shape;
        const size_t rank = terms[i].find("...") != std::string::npos ? shape.size() - (terms[i].size() - 3) : 0;
        terms[i] = expand(terms[i], rank);
        if (terms[i].size() != shape.size())
            throw UserError(c.where, "Einsum term '" + terms[i] + "' does not match operand " + std::to_string(i) + " of shape " +
                                         shape_string(shape));
        for (size_t d = 0; d < shape.size(); ++d) size[terms[i][d]] = std::max(size[terms[i][d]], shape[d]);
    }
    std::string out;
    if (arrow != std::string::npos) {
        out = expand(eq.substr(arrow + 2), ell);
    } else {  // implicit output: the letters appearing once, sorted (broadcast dims first)
        std::map<char, int> count;
        for (const auto& t : terms)
            for (const char ch : t) ++count[ch];
        for (const auto& [ch, n] : count)
            if (n == 1 || std::isupper(static_cast<unsigned char>(ch))) out += ch;
    }
    OpCost k = base_cost(c, OpClass::Contraction);
    auto prod_of = [&](const std::string& letters) {
        int64_t p = 1;
        for (const char ch : letters) p *= size[ch];
        return p;
    };
    std::string acc = terms[0];
    for (size_t i = 1; i < terms.size(); ++i) {
        std::set<char> later(out.begin(), out.end());  // letters needed after this pair
        for (size_t j = i + 1; j < terms.size(); ++j) later.insert(terms[j].begin(), terms[j].end());
        const std::string& b = terms[i];
        std::string batch, m, n, red, result;
        for (const char ch : acc) {
            const bool in_b = b.find(ch) != std::string::npos;
            if (in_b && later.count(ch)) batch += ch;
            else if (in_b) red += ch;
            else if (later.count(ch)) m += ch;
        }
        for (const char ch : b)
            if (acc.find(ch) == std::string::npos && later.count(ch)) n += ch;
        GemmView v;
        v.batch = prod_of(batch);
        v.m = prod_of(m);
        v.n = prod_of(n);
        v.k = prod_of(red);
        // letters of one operand only that nothing later needs: summed into the product too
        for (const char ch : acc)
            if (b.find(ch) == std::string::npos && !later.count(ch)) v.k *= size[ch];
        for (const char ch : b)
            if (acc.find(ch) == std::string::npos && !later.count(ch)) v.k *= size[ch];
        v.a_unique_elems = v.m * v.k;
        if (terms.size() == 2) {
            v.a = {c.input_id(0), false}, v.b = {c.input_id(1), false}, v.c = {c.output_id(0), false};
            v.b_is_weight = c.input(1).role == TensorRole::Weight || c.input(1).role == TensorRole::Constant;
        } else {
            v.a = {-1, false}, v.b = {-1, false}, v.c = {-1, false};
        }
        k.gemms.push_back(v);
        k.macs += v.macs();
        acc = batch + m + n;
    }
    if (terms.size() == 1) {  // a transpose, a diagonal or a sum of one operand
        const bool sums = c.output(0).elems() < c.input(0).elems();
        k.cls = sums ? OpClass::Reduction : OpClass::DataMovement;
        k.flops = sums ? c.input(0).elems() : 0;
        return k;
    }
    k.flops += 2 * k.macs;
    return k;
}

/// A quantized contraction: the float rule's MACs on (X, W[, B]) at input positions `x`, `w`,
/// `b`, plus `per_out` operations per output element (requantization: scale, round, add the zero
/// point, saturate = 4 for QLinear*; 0 for the *Integer forms, whose int32 output is the sum) and
/// one subtraction per input element for each zero point given (ConvInteger, MatMulInteger).
OpHandler quantized(OpCost (*rule)(const NodeContext&), int x, int w, int b, int64_t per_out, std::vector<int> zero_points) {
    return [=](const NodeContext& c) {
        OpCost k = rule(with_inputs(c, b >= 0 ? std::vector<int>{x, w, b} : std::vector<int>{x, w}));
        all_bytes(c, k);
        k.flops += per_out * c.output(0).elems();
        for (const int zp : zero_points)
            if (static_cast<size_t>(zp) < c.in.size() && c.in[static_cast<size_t>(zp)]) k.flops += c.input(zp == 2 ? 0 : 1).elems();
        return k;
    };
}

/// Transform length of a DFT-like operator and its cost: 5 N log2 N operations for a power of
/// two N (a radix-2 FFT's classic count, Cooley and Tukey 1965, as FFTW's benchmarks state it),
/// else the direct transform's 8 N^2 (N complex multiply-adds per output bin, 4 multiplications and 4 additions each).
int64_t transform_ops(int64_t n) {
    if (n <= 1) return 0;
    if ((n & (n - 1)) == 0) return 5 * n * static_cast<int64_t>(std::llround(std::log2(static_cast<double>(n))));
    return 8 * n * n;
}

/// DFT over `axis` (default 1; the last dim holds 1 real or 2 complex components): one
/// transform of dft_length (input 1, else the axis length) per other position.
OpCost dft(const NodeContext& c) {
    OpCost k = base_cost(c, OpClass::Reduction);
    const Tensor& x = c.input(0);
    int64_t axis = c.attr_int("axis", 1);
    if (axis < 0) axis += static_cast<int64_t>(x.shape.size());
    if (axis < 0 || axis + 1 >= static_cast<int64_t>(x.shape.size()))
        throw UserError(c.where, "DFT axis " + std::to_string(axis) + " does not fit input " + shape_string(x.shape));
    const int64_t len = x.shape[static_cast<size_t>(axis)];
    const int64_t n = std::max(len, c.output(0).shape[static_cast<size_t>(axis)]);
    const int64_t transforms = x.elems() / std::max<int64_t>(1, len * x.shape.back());
    k.flops = transforms * transform_ops(n);
    return k;
}

/// STFT: per frame of the output [batch, frames, bins, 2], the window applied (1 per sample)
/// and a transform of frame_length samples.
OpCost stft(const NodeContext& c) {
    OpCost k = base_cost(c, OpClass::Reduction);
    const Tensor& y = c.output(0);
    if (y.shape.size() != 4) throw UserError(c.where, "STFT output must be [batch, frames, bins, 2], got " + shape_string(y.shape));
    const int64_t bins = y.shape[2];
    // the frame is the window's length when a window is given, else what the bins imply
    const int64_t frame = c.in.size() > 2 && c.in[2] ? c.input(2).elems() : c.attr_int("onesided", 1) ? 2 * (bins - 1) : bins;
    k.flops = y.shape[0] * y.shape[1] * (transform_ops(frame) + frame);
    return k;
}

/// GridSample: per output point, its source coordinates unnormalized and split into index and
/// fraction (6 operations: 2 per axis plus the align_corners scale), then per channel the taps
/// blended: nearest 1 tap (1 copy), bilinear 4 taps (4 multiplies and 3 adds, 7), bicubic 16
/// taps (31) with the cubic weights (8 per axis per point, 16).
OpCost grid_sample(const NodeContext& c) {
    OpCost k = base_cost(c, OpClass::Elementwise);
    const Tensor& y = c.output(0);
    const std::string mode = c.attr_string("mode", "bilinear");
    const int64_t points = y.shape.empty() ? 0 : y.elems() / std::max<int64_t>(1, y.shape.size() > 1 ? y.shape[1] : 1);
    const int64_t per_tap = mode == "nearest" ? 1 : (mode == "bicubic" || mode == "cubic") ? 31 : 7;
    const int64_t per_point = 6 + ((mode == "bicubic" || mode == "cubic") ? 16 : 0);
    k.flops = y.elems() * per_tap + points * per_point;
    return k;
}

/// RoiAlign (He et al., Mask R-CNN, 2017): per output bin, sampling_ratio^2 bilinear samples (4
/// taps, 7 operations each, plus 6 for the sample's position) averaged (1 each); sampling_ratio
/// 0 (adaptive, data-dependent) is priced as 2, Detectron's usual.
OpCost roi_align(const NodeContext& c) {
    OpCost k = base_cost(c, OpClass::Pooling);
    const int64_t s = std::max<int64_t>(1, c.attr_int("sampling_ratio", 0) > 0 ? c.attr_int("sampling_ratio", 0) : 2);
    k.flops = c.output(0).elems() * s * s * (7 + 6 + 1);
    return k;
}

/// NonMaxSuppression over boxes [B, N, 4] and scores [B, C, N]: per batch and class, the
/// scores sorted (N log2 N comparisons) and, at worst, every pair's overlap tested (N (N - 1) / 2
/// intersections over union, 13 operations each: 4 min/max, 2 differences, 2 clamps, a product,
/// the union's 2 terms, a division and the comparison with the threshold). The bound, since how
/// many boxes survive depends on the data.
OpCost non_max_suppression(const NodeContext& c) {
    OpCost k = base_cost(c, OpClass::Reduction);
    const Tensor& scores = c.input(1);
    if (scores.shape.size() != 3) throw UserError(c.where, "NonMaxSuppression scores must be [batch, classes, boxes]");
    const int64_t n = scores.shape[2];
    const int64_t log_n = n > 1 ? static_cast<int64_t>(std::ceil(std::log2(static_cast<double>(n)))) : 0;
    k.flops = scores.shape[0] * scores.shape[1] * (n * log_n + 13 * n * (n - 1) / 2);
    return k;
}

/// Unique: a sort (n log2 n comparisons) and one pass comparing neighbours and writing the
/// indices and counts (n).
OpCost unique(const NodeContext& c) {
    OpCost k = base_cost(c, OpClass::Reduction);
    const int64_t n = c.input(0).elems();
    const int64_t log_n = n > 1 ? static_cast<int64_t>(std::ceil(std::log2(static_cast<double>(n)))) : 0;
    k.flops = n * log_n + n;
    return k;
}

/// TfIdfVectorizer: at every position, one hashed n-gram lookup per n-gram length (min to max)
/// and skip distance (0 to max_skip_count), then the weighting of every output count (1).
OpCost tfidf(const NodeContext& c) {
    OpCost k = base_cost(c, OpClass::Reduction);
    const int64_t lengths = std::max<int64_t>(1, c.attr_int("max_gram_length", 1) - c.attr_int("min_gram_length", 1) + 1);
    const int64_t skips = std::max<int64_t>(0, c.attr_int("max_skip_count", 0)) + 1;
    k.flops = c.input(0).elems() * lengths * skips + c.output(0).elems();
    return k;
}

/// The optimizers of ai.onnx.preview.training: inputs R (learning rate), T (step count), then
/// the tensors X, gradients G and `states` state tensors per group; per element of X `ops`
/// operations (as the training step's own optimizers, workloads/training/training_step.cpp:
/// momentum 4, Adam 14, Adagrad 6 = h += g^2, x -= r g / (sqrt(h) + eps)), 2 more with a weight
/// decay (norm_coefficient != 0).
OpHandler preview_optimizer(int states, int64_t ops) {
    return [=](const NodeContext& c) {
        OpCost k = base_cost(c, OpClass::Elementwise);
        const size_t groups = c.in.size() > 2 ? (c.in.size() - 2) / static_cast<size_t>(2 + states) : 0;
        const int64_t decay = c.attr_float("norm_coefficient", 0.0) != 0.0 ? 2 : 0;
        for (size_t g = 0; g < groups; ++g) k.flops += (ops + decay) * c.input(2 + g).elems();
        return k;
    };
}

}  // namespace

void add_more_handlers(const std::function<void(const std::string&, const std::string&, OpHandler)>& add) {
    add("", "NegativeLogLikelihoodLoss", nll_loss);
    add("", "SoftmaxCrossEntropyLoss", softmax_cross_entropy);
    add("", "Einsum", einsum);
    add("", "ConvInteger", quantized(&conv, 0, 1, -1, 0, {2, 3}));
    add("", "QLinearConv", quantized(&conv, 0, 3, 8, 4, {}));
    add("", "MatMulInteger", quantized(&matmul, 0, 1, -1, 0, {2, 3}));
    add("", "QLinearMatMul", quantized(&matmul, 0, 3, -1, 4, {}));
    // min and max (2 per element), then scale, round, add the zero point, saturate (3 more)
    add("", "DynamicQuantizeLinear", [](const NodeContext& c) {
        OpCost k = base_cost(c, OpClass::Reduction);
        k.flops = 5 * c.input(0).elems();
        return k;
    });
    // uniform draws: x (high - low) + low (2 per element); normal draws: Box-Muller's log, square
    // root, cosine and scale per pair of draws, then x scale + mean (6), as torch.randn
    for (const char* op : {"RandomUniform", "RandomUniformLike"}) add("", op, per_output(OpClass::Elementwise, 2));
    for (const char* op : {"RandomNormal", "RandomNormalLike"}) add("", op, per_output(OpClass::Elementwise, 6));
    // windows: a + b cos(2 pi n / N) (4 per sample: the phase, the cosine, the product and the
    // sum); Blackman two cosine terms (7)
    for (const char* op : {"HannWindow", "HammingWindow"}) add("", op, per_output(OpClass::Elementwise, 4));
    add("", "BlackmanWindow", per_output(OpClass::Elementwise, 7));
    // one triangle weight per (frequency bin, mel bin): the bin's distance to the triangle's
    // edges, the slope and the clamp (4)
    add("", "MelWeightMatrix", per_output(OpClass::Elementwise, 4));
    add("", "DFT", dft);
    add("", "STFT", stft);
    // LU factorization with partial pivoting, 2/3 M^3 operations (Golub and Van Loan, Matrix
    // Computations, 4th ed., 3.2), and the product of the diagonal (M), per matrix
    add("", "Det", [](const NodeContext& c) {
        OpCost k = base_cost(c, OpClass::Reduction);
        const Tensor& x = c.input(0);
        if (x.shape.size() < 2) throw UserError(c.where, "Det expects [*, M, M], got " + shape_string(x.shape));
        const int64_t m = x.shape.back();
        k.flops = (x.elems() / std::max<int64_t>(1, m * m)) * (2 * m * m * m / 3 + m);
        return k;
    });
    add("", "GridSample", grid_sample);
    // MaxRoiPool (Girshick, Fast R-CNN, 2015): each output bin the maximum over its share of the
    // region; the regions' sizes are data, so priced at the bound of a region the size of the
    // feature map, H W / (pooled H pooled W) comparisons per bin
    add("", "MaxRoiPool", [](const NodeContext& c) {
        OpCost k = base_cost(c, OpClass::Pooling);
        const Tensor& x = c.input(0);
        const Tensor& y = c.output(0);
        if (x.shape.size() != 4 || y.shape.size() != 4) throw UserError(c.where, "MaxRoiPool expects 4-D X and Y");
        const int64_t bins = std::max<int64_t>(1, y.shape[2] * y.shape[3]);
        k.flops = y.elems() * std::max<int64_t>(1, x.shape[2] * x.shape[3] / bins);
        return k;
    });
    // Multinomial: per batch row the cumulative sum of its C class weights (C, with the exp of
    // the log-probabilities: 2 C), then per sample a uniform draw (2) and a binary search (log2 C)
    add("", "Multinomial", [](const NodeContext& c) {
        OpCost k = base_cost(c, OpClass::Reduction);
        const Tensor& x = c.input(0);
        const int64_t classes = x.shape.empty() ? 1 : x.shape.back();
        const int64_t log_c = classes > 1 ? static_cast<int64_t>(std::ceil(std::log2(static_cast<double>(classes)))) : 0;
        k.flops = 2 * x.elems() + c.output(0).elems() * (2 + log_c);
        return k;
    });
    add("", "RoiAlign", roi_align);
    add("", "NonMaxSuppression", non_max_suppression);
    add("", "Unique", unique);
    add("", "TfIdfVectorizer", tfidf);
    // per string: the stop-word lookup and the case mapping (2); its characters are not known
    add("", "StringNormalizer", per_output(OpClass::Elementwise, 2));
    // the output zero-filled and the input scattered into it at its indices: a copy
    add("", "MaxUnpool", [](const NodeContext& c) { return base_cost(c, OpClass::DataMovement); });
    // sequences (of known contents: rewritten by sequences.cpp, else costed as one element
    // tensor, importer.cpp) and optionals: copies and views
    for (const char* op : {"SequenceConstruct", "SplitToSequence", "SequenceInsert", "SequenceErase", "ConcatFromSequence"})
        add("", op, [](const NodeContext& c) { return base_cost(c, OpClass::DataMovement); });
    for (const char* op : {"SequenceEmpty", "SequenceLength", "Optional", "OptionalHasElement", "OptionalGetElement"})
        add("", op, [](const NodeContext&) {
            OpCost k;
            k.cls = OpClass::ShapeOnly;
            return k;
        });
    // archsim's own domain: the points where Megatron-LM's sequence parallelism (Korthikanti et
    // al., "Reducing Activation Recomputation in Large Transformer Models", MLSys 2023, section
    // 4.2.2) moves a tensor between its sequence-parallel shard (1/parts of axis 1, the tokens)
    // and the whole sequence: SequenceGather (the all-gather g before a column-parallel GEMM) and
    // SequenceScatter (the reduce-scatter g-bar after a row-parallel GEMM). The collective is
    // the job model's to price (docs/clusters.md); on one device no data moves and no arithmetic
    // runs, as for a view. Attribute `parts` (the tensor-parallel size, >= 1); the output's
    // shape must be the input's with axis 1 multiplied (gather) or divided (scatter) by it.
    for (const char* op : {"SequenceGather", "SequenceScatter"})
        add(kArchsimDomain, op, [gather = std::string(op) == "SequenceGather"](const NodeContext& c) {
            const Tensor& x = c.input(0);
            const Tensor& y = c.output(0);
            const int64_t parts = c.attr_int("parts", 1);
            std::vector<int64_t> want = x.shape;
            if (parts < 1 || want.size() < 2 || (!gather && want[1] % parts != 0))
                throw UserError(c.where, "needs parts >= 1 and an input of rank >= 2 whose axis 1 it divides, got parts " + std::to_string(parts) +
                                             " and " + shape_string(x.shape));
            want[1] = gather ? want[1] * parts : want[1] / parts;
            if (y.shape != want) throw UserError(c.where, "output " + shape_string(y.shape) + " is not " + shape_string(want));
            OpCost k;
            k.cls = OpClass::ShapeOnly;
            return k;
        });
    const std::string training = "ai.onnx.preview.training";
    add(training, "Momentum", preview_optimizer(1, 4));
    add(training, "Adam", preview_optimizer(2, 14));
    add(training, "Adagrad", preview_optimizer(1, 6));
    // Gradient: the gradients of y with respect to xs through the graph's operators, priced as
    // one chain-rule pass (2 operations: the local derivative and its product) per element of
    // every gradient it writes; exact for the elementwise graphs it is used on in ONNX's tests.
    // A graph with contractions needs their gradient GEMMs: `run --train` builds those.
    add(training, "Gradient", [](const NodeContext& c) {
        OpCost k = base_cost(c, OpClass::Elementwise);
        k.flops = 2 * elems_of_outputs(c);
        return k;
    });
}

}  // namespace archsim::op_cost
