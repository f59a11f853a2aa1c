#include "sim/serving/latency_histogram.h"

#include <algorithm>
#include <cmath>

namespace archsim {

void LatencyHistogram::add(double value_s, double count) {
    const int bin = value_s > kFromS ? int(std::floor(std::log10(value_s / kFromS) * kBinsPerDecade)) : 0;
    m_bins[bin] += count;
    m_count += count, m_sum += value_s * count;
}

void LatencyHistogram::merge(const LatencyHistogram& other, double weight) {
    for (const auto& [b, c] : other.m_bins) m_bins[b] += c * weight;
    m_count += other.m_count * weight, m_sum += other.m_sum * weight;
}

double LatencyHistogram::percentile(double p) const {
    if (m_count <= 0) return 0.0;
    const double target = std::clamp(p, 0.0, 100.0) / 100.0 * m_count;
    double seen = 0;
    for (const auto& [b, c] : m_bins) {
        seen += c;
        if (seen >= target) return kFromS * std::pow(10.0, (double(b) + 0.5) / kBinsPerDecade);
    }
    return kFromS * std::pow(10.0, (double(m_bins.rbegin()->first) + 0.5) / kBinsPerDecade);
}

LatencyHistogram LatencyHistogram::from(const std::vector<std::pair<int, double>>& bins, double sum) {
    LatencyHistogram h;
    for (const auto& [b, c] : bins) h.m_bins[b] += c, h.m_count += c;
    h.m_sum = sum;
    return h;
}

}  // namespace archsim
