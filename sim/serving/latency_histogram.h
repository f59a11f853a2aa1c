#pragma once
// A latency distribution in logarithmic bins, so that the distributions of several runs (a
// schedule's phases) merge into one and give its percentiles, as HdrHistogram does: each bin
// spans a factor of 10^(1/100) (2.3%), so a percentile read from it is within 1.2% of the exact
// one; the mean is kept exactly.
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace archsim {

/// Counts of latencies (s) in bins [from_s x 10^(k/100), from_s x 10^((k+1)/100)), from_s = 1 ns
/// (smaller values fall in bin 0), with their exact sum.
class LatencyHistogram {
public:
    static constexpr double kFromS = 1e-9;
    static constexpr int kBinsPerDecade = 100;

    /// Adds `count` latencies of `value_s` each.
    void add(double value_s, double count = 1.0);
    /// Adds every latency of `other`, each counted `weight` times (a phase's replicas).
    void merge(const LatencyHistogram& other, double weight = 1.0);
    double count() const { return m_count; }
    double mean() const { return m_count > 0 ? m_sum / m_count : 0.0; }
    /// The p-th percentile (0-100): the geometric middle of the bin where the cumulative count
    /// reaches p% of the total (0 for an empty histogram).
    double percentile(double p) const;
    /// Bins with a count, as (bin index, count), ascending; the sum of all latencies.
    std::vector<std::pair<int, double>> bins() const { return {m_bins.begin(), m_bins.end()}; }
    double sum() const { return m_sum; }
    /// Rebuilds a histogram from bins() and sum() (a run's JSON).
    static LatencyHistogram from(const std::vector<std::pair<int, double>>& bins, double sum);

private:
    std::map<int, double> m_bins;
    double m_count = 0, m_sum = 0;
};

}  // namespace archsim
