#include "sim/serving/arrivals.h"

#include <cmath>
#include <random>

#include "sim/base/error.h"

namespace archsim {

std::vector<ServingRequest> make_requests(int64_t count, double rate_per_s, const std::string& process, uint64_t seed, int64_t prompt,
                                          int64_t output) {
    if (!(rate_per_s > 0)) throw UserError("serving.arrival_rate_per_s", "must be above 0 (or inf: every request at once)");
    if (count < 1) throw UserError("serving.requests", "must be at least 1");
    if (process != "poisson" && process != "uniform" && process != "bursty")
        throw UserError("serving.arrival = " + process, "must be poisson, uniform or bursty");
    std::vector<ServingRequest> out(static_cast<size_t>(count));
    std::mt19937_64 rng(seed);
    const double mean_gap = std::isinf(rate_per_s) ? 0.0 : 1.0 / rate_per_s;
    std::exponential_distribution<double> expo(rate_per_s > 0 && !std::isinf(rate_per_s) ? rate_per_s : 1.0);
    constexpr double kBurstCv = 4.0;  // gamma shape 1 / CV^2
    std::gamma_distribution<double> gamma(1.0 / (kBurstCv * kBurstCv), mean_gap * kBurstCv * kBurstCv);
    double t = 0;
    for (size_t i = 0; i < out.size(); ++i) {
        if (i > 0 && mean_gap > 0) t += process == "uniform" ? mean_gap : process == "poisson" ? expo(rng) : gamma(rng);
        out[i] = {t, prompt, output};
    }
    return out;
}

}  // namespace archsim
