#include "sim/serving/arrivals.h"

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

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
        std::string a, p, o, extra;
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
