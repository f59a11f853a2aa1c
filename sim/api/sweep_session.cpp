#include "sim/api/sweep_session.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "sim/base/error.h"
#include "workloads/graph/workload_ref.h"
#include "sim/api/process_pool.h"

namespace archsim {

namespace fs = std::filesystem;

namespace {

std::string duration(double s) {
    if (s < 90) return fmt::format("{:.0f}s", s);
    if (s < 5400) return fmt::format("{:.0f}m{:02.0f}s", std::floor(s / 60), std::fmod(s, 60));
    return fmt::format("{:.0f}h{:02.0f}m", std::floor(s / 3600), std::fmod(s / 60, 60));
}

}  // namespace

SweepSession::SweepSession(const SweepArgs& a, bool writer)
    : m_args(a), m_study(load_study(a.study)), m_plan(plan_sweep(m_study)), m_t0(std::chrono::steady_clock::now()) {
    if (a.traces != "none" && a.traces != "summary" && a.traces != "full")
        throw UserError("--traces " + a.traces, "must be none, summary or full");
    m_journal = (fs::path(a.out_dir) / "results.jsonl").string();
    m_finished.assign(m_plan.points.size(), false);
    std::error_code ec;
    fs::create_directories(fs::path(a.out_dir) / "points", ec);
    if (ec) throw UserError(a.out_dir, "cannot create the output directory: " + ec.message());
    if (fs::exists(m_journal) && !a.resume && writer)
        throw UserError(a.out_dir, "already holds a sweep (results.jsonl); pass --resume to continue it, or choose another --out");
    std::map<std::string, size_t> by_id;
    for (const auto& p : m_plan.points) by_id[p.id] = p.index;
    std::set<std::string> seen;
    for (SweepRow& r : rows_from_journal(m_journal)) {
        auto it = by_id.find(r.id);
        if (it == by_id.end() || !seen.insert(r.id).second) continue;  // not in this study (any more), or twice
        r.index = it->second;  // the study may have grown: keep today's order
        m_finished[it->second] = true;
        m_rows.push_back(std::move(r));
    }
    if (writer) {
        m_journal_fd = ::open(m_journal.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (m_journal_fd < 0) throw UserError(m_journal, "cannot open for appending");
        fs::copy_file(a.study, fs::path(a.out_dir) / "study.toml", fs::copy_options::overwrite_existing, ec);
        m_tty = isatty(2) && !a.quiet;
    }
    m_to_run = todo().size();
}

std::vector<size_t> SweepSession::todo() const {
    std::vector<size_t> t;
    for (size_t i = 0; i < m_finished.size(); ++i)
        if (!m_finished[i]) t.push_back(i);
    return t;
}

void SweepSession::announce(int jobs, int ranks) const {
    std::fprintf(stderr, "archsim sweep %s: %zu points (%zu skipped by rules), %zu finished earlier, %zu to run, %d job%s%s\n",
                 m_study.name.c_str(), m_plan.points.size(), m_plan.skipped, m_plan.points.size() - m_to_run, m_to_run, jobs,
                 jobs == 1 ? "" : "s", ranks > 1 ? fmt::format(" on each of {} worker ranks", ranks - 1).c_str() : "");
}

ChildTask SweepSession::start(size_t i) {
    const SweepPoint& p = m_plan.points[i];
    const fs::path dir = fs::path(m_args.out_dir) / "points" / p.id;
    std::error_code ec;
    fs::remove_all(dir, ec);  // a run that was killed leaves a partial folder
    fs::create_directories(dir);
    {
        std::ofstream cfg(dir / "machine.toml");
        cfg << "# point " << p.id << " of " << m_study.name << ": " << p.machine << ", " << workload_name(p.model) << "\n"
            << p.resolved_config;
    }
    // a point whose trace is not kept writes per-operator sums only (the same metrics)
    std::vector<std::string> args = {"run", p.model, "--arch", (dir / "machine.toml").string(), "--out", dir.string(), "--format", "json", "--quiet",
                                     "--detail", m_args.traces == "full" ? "full" : "kernel"};
    if (p.batch > 0) args.insert(args.end(), {"--batch", std::to_string(p.batch)});
    // a precision or runtime the study sets is the study's command line: it wins over the
    // workload's and the training defaults (the one rule, sim/engine/run_choice.h); the resolved
    // machine.toml alone would rank below them
    for (const auto& set : p.sets)
        for (const char* key : {"precision", "runtime"})
            if (set.rfind(std::string(key) + "=", 0) == 0) args.insert(args.end(), {"--set", set});
    for (const auto& ws : p.workload_sets) args.insert(args.end(), {"--workload-set", ws});
    return ChildTask{args, (dir / "report.json").string(), (dir / "stderr.log").string()};
}

SweepRow SweepSession::finish(size_t i, bool exited_ok) {
    const SweepPoint& p = m_plan.points[i];
    const fs::path dir = fs::path(m_args.out_dir) / "points" / p.id;
    SweepRow row;
    if (exited_ok && fs::exists(dir / "metrics.json")) {
        const std::string trace = m_args.traces == "full" ? (fs::path("points") / p.id / "trace.h5").string() : "";
        try {
            row = row_from_metrics(p, read_file((dir / "metrics.json").string()), trace);
        } catch (const UserError& e) {
            row = failed_row(p, e.what());
        }
    } else {
        const std::string said = last_line(read_file((dir / "stderr.log").string()));
        row = failed_row(p, said.empty() ? "no output (killed?)" : said);
    }
    std::error_code ec;
    if (row.status == "ok" && m_args.traces == "none") fs::remove_all(dir, ec);
    else if (row.status == "ok" && m_args.traces == "summary") fs::remove(dir / "trace.h5", ec);
    return row;
}

void SweepSession::record(const SweepRow& row) {
    const std::string line = journal_line(row) + "\n";
    if (::write(m_journal_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size()) || ::fsync(m_journal_fd) != 0)
        throw UserError(m_journal, "cannot append (disk full?)");
    m_finished[row.index] = true;
    m_rows.push_back(row);
    write_results_csv((fs::path(m_args.out_dir) / "results.csv").string(), m_rows, m_plan.axis_keys);
    write_results_h5((fs::path(m_args.out_dir) / "results.h5").string(), m_rows, m_plan.axis_keys, m_study.name);
    ++m_done_now;
    progress(row);
}

void SweepSession::progress(const SweepRow& row) {
    if (m_args.quiet && row.status == "ok") return;  // a failure is still reported as it happens
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_t0).count();
    const double rate = el > 0 ? m_done_now / el : 0;
    const double eta = rate > 0 ? (m_to_run - m_done_now) / rate : 0;
    if (m_tty) {
        const int width = 30, filled = m_to_run ? static_cast<int>(width * m_done_now / m_to_run) : width;
        std::fprintf(stderr, "\r[%s%s] %zu/%zu  %.2f points/s  ETA %s   ", std::string(static_cast<size_t>(filled), '#').c_str(),
                     std::string(static_cast<size_t>(width - filled), '.').c_str(), m_done_now, m_to_run, rate, duration(eta).c_str());
        if (row.status != "ok") std::fprintf(stderr, "\n  point %s (%s on %s) failed: %s\n", row.id.c_str(), row.model.c_str(),
                                             row.machine.c_str(), row.error.c_str());
    } else {  // a log: each line names the point by what was swept (its id is in results.csv)
        std::string swept;
        for (const auto& [k, v] : row.axes) swept += (swept.empty() ? "" : ", ") + k + "=" + v;
        std::fprintf(stderr, "[%zu/%zu] %s on %s%s%s%s: %s (%.2f points/s, ETA %s)\n", m_done_now, m_to_run, row.model.c_str(),
                     row.machine.c_str(), swept.empty() ? "" : " (", swept.c_str(), swept.empty() ? "" : ")",
                     row.status == "ok" ? "ok" : ("FAILED: " + row.error).c_str(), rate, duration(eta).c_str());
    }
}

int SweepSession::close() {
    write_results_csv((fs::path(m_args.out_dir) / "results.csv").string(), m_rows, m_plan.axis_keys);
    write_results_h5((fs::path(m_args.out_dir) / "results.h5").string(), m_rows, m_plan.axis_keys, m_study.name);
    if (m_journal_fd >= 0) ::close(m_journal_fd);
    m_journal_fd = -1;
    size_t failed = 0;
    for (const auto& r : m_rows) failed += r.status != "ok";
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_t0).count();
    if (m_tty) std::fputc('\n', stderr);
    std::fprintf(stderr, "archsim sweep: %zu points in %s, %zu ran now in %.1f s (%.2f points/s), %zu failed; wrote %s/results.csv and results.h5\n",
                 m_rows.size(), m_args.out_dir.c_str(), m_done_now, el, el > 0 ? m_done_now / el : 0.0, failed, m_args.out_dir.c_str());
    return failed ? 1 : 0;
}

int run_sweep_here(const SweepArgs& a) {
    SweepSession session(a);
    const int jobs = a.jobs > 0 ? a.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const std::vector<size_t> todo = session.todo();
    session.announce(jobs, 1);
    run_children(self_program(), todo.size(), static_cast<size_t>(jobs), [&](size_t k) { return session.start(todo[k]); },
                 [&](size_t k, int status) { session.record(session.finish(todo[k], exited_ok(status))); });
    return session.close();
}

}  // namespace archsim
