#include "sim/serving/arrivals.h"

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "sim/base/error.h"

namespace archsim {

int64_t draw_length(int64_t mean, const LengthDistribution& d, std::mt19937_64& rng) {
    if (d.kind == "fixed" || mean <= 1) return std::max<int64_t>(1, mean);
    if (d.kind == "uniform") return std::uniform_int_distribution<int64_t>(1, 2 * mean - 1)(rng);
    if (d.kind == "exponential") return 1 + std::geometric_distribution<int64_t>(1.0 / double(mean))(rng);
    // lognormal: sigma^2 = ln(1 + cv^2), mu = ln(mean) - sigma^2 / 2 gives the mean and CV asked
    const double s2 = std::log1p(d.cv * d.cv);
    const double x = std::lognormal_distribution<double>(std::log(double(mean)) - s2 / 2, std::sqrt(s2))(rng);
    return std::max<int64_t>(1, std::llround(x));
}

std::vector<ServingRequest> make_requests(int64_t count, double rate_per_s, const std::string& process, uint64_t seed, int64_t prompt,
                                          int64_t output, const LengthDistribution& lengths) {
    if (!(rate_per_s > 0)) throw UserError("serving.arrival_rate_per_s", "must be above 0 (or inf: every request at once)");
    if (count < 1) throw UserError("serving.requests", "must be at least 1");
    if (process != "poisson" && process != "uniform" && process != "bursty")
        throw UserError("serving.arrival = " + process, "must be poisson, uniform or bursty");
    if (lengths.kind != "fixed" && lengths.kind != "uniform" && lengths.kind != "exponential" && lengths.kind != "lognormal")
        throw UserError("serving.lengths = " + lengths.kind, "must be fixed, uniform, exponential or lognormal");
    if (!(lengths.cv > 0)) throw UserError("serving.length_cv", "must be above 0");
    std::mt19937_64 len_rng(seed ^ 0x9e3779b97f4a7c15ULL);  // the lengths' own stream
    std::vector<ServingRequest> out(static_cast<size_t>(count));
    std::mt19937_64 rng(seed);
    const double mean_gap = std::isinf(rate_per_s) ? 0.0 : 1.0 / rate_per_s;
    std::exponential_distribution<double> expo(rate_per_s > 0 && !std::isinf(rate_per_s) ? rate_per_s : 1.0);
    constexpr double kBurstCv = 4.0;  // gamma shape 1 / CV^2
    std::gamma_distribution<double> gamma(1.0 / (kBurstCv * kBurstCv), mean_gap * kBurstCv * kBurstCv);
    double t = 0;
    for (size_t i = 0; i < out.size(); ++i) {
        if (i > 0 && mean_gap > 0) t += process == "uniform" ? mean_gap : process == "poisson" ? expo(rng) : gamma(rng);
        out[i] = {t, draw_length(prompt, lengths, len_rng), draw_length(output, lengths, len_rng)};
    }
    return out;
}

std::vector<ServingRequest> read_replay_csv(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw UserError(path, "cannot read the replay file");
    std::string line;
    if (!std::getline(in, line) || line.rfind("arrival_s,prompt_tokens,output_tokens", 0) != 0)
        throw UserError(path + ":1", "the header must be arrival_s,prompt_tokens,output_tokens");
    std::vector<ServingRequest> out;
    for (int64_t n = 2; std::getline(in, line); ++n) {
        if (line.empty() || line == "\r") continue;
        const std::string where = path + ":" + std::to_string(n);
        std::stringstream ss(line);
        std::string a, p, o;
        std::getline(ss, a, ','), std::getline(ss, p, ','), std::getline(ss, o, ',');
        ServingRequest r;
        try {
            size_t used = 0;
            r.arrival_s = std::stod(a, &used);
            if (used != a.size()) throw std::invalid_argument(a);
            r.prompt = std::stoll(p, &used);
            if (used != p.size()) throw std::invalid_argument(p);
            while (!o.empty() && (o.back() == '\r' || o.back() == ' ')) o.pop_back();
            r.output = std::stoll(o, &used);
            if (used != o.size()) throw std::invalid_argument(o);
        } catch (const std::exception&) {
            throw UserError(where, "'" + line + "' is not arrival_s,prompt_tokens,output_tokens (a number and two integers)");
        }
        if (!(r.arrival_s >= 0) || r.prompt < 1 || r.output < 1)
            throw UserError(where, "an arrival must be >= 0 s and both lengths at least 1 token");
        if (!out.empty() && r.arrival_s < out.back().arrival_s)
            throw UserError(where, "arrivals must not decrease (" + a + " s after " + std::to_string(out.back().arrival_s) + " s)");
        out.push_back(r);
    }
    if (out.empty()) throw UserError(path, "no requests in the replay file");
    return out;
}

}  // namespace archsim
