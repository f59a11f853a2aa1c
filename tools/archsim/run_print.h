#pragma once
// Printing the results the library computes for runs made of several simulations: an llm
// workload's serving phases (sim/api/llm_serving.h) and a parallel job (sim/api/job_run.h).
#include <string>

#include <nlohmann/json.hpp>

namespace archsim::cli {

/// Prints OUT/llm.json's figures `j` (run_llm_serving) as JSON (`format` "json") or as lines with
/// three significant digits in an engineering unit (docs/units.md); `out_dir` is where they went.
void print_llm_serving(const nlohmann::json& j, const std::string& format, const std::string& out_dir);

/// Prints a job's last_run.json `out` (run_job: a training step, an inference request, or the
/// duration-weighted summary of a job's schedule phases) as JSON or as the report's lines.
void print_job(const nlohmann::json& out, const std::string& format, const std::string& out_dir);

}  // namespace archsim::cli
