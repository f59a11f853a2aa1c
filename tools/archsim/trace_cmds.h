#pragma once
// `archsim trace ...`: inspecting a trace — summary, per-operator table, timeline window,
// Perfetto export, and the difference between two traces.
#include <cstdint>
#include <string>
#include <vector>

namespace archsim::cli {

/// The trace file a user named: `path` itself, or `path`/trace.h5 when `path` is a folder (a
/// run's --out). Throws UserError for a folder without a trace.h5.
std::string resolve_trace_path(const std::string& path);

/// `trace summary`: model, machine, totals, the ten operators that cost the most time and the ten
/// that cost the most energy, stall time by cause, traffic by level, utilization per compute
/// component, and the resolved config. One pass over the events (chunked: memory stays flat).
int cmd_trace_summary(const std::string& trace);

/// `trace ops`: one row per operator (start, duration, compute and stall shares, MACs, achieved
/// vs peak MAC rate, arithmetic intensity in FLOPs per DRAM byte, the bound), sorted by `sort`
/// (latency | energy | macs | stall, largest first) and kept when every `where` (KEY=VALUE on
/// name, op_type, op_class or bound) holds. Throws UserError for an unknown sort or filter key;
/// filters that keep no operator print a warning and return 1.
int cmd_trace_ops(const std::string& trace, const std::string& sort, const std::vector<std::string>& where, bool by_operator = false);

/// `trace timeline`: the events overlapping [from, to) (times with their unit: 12.5us, 3ms, 400ns,
/// 1000ps; defaults: the whole run), optionally only on components whose name starts with
/// `component`, at most `limit` rows (then how many more there were). An empty window prints a
/// warning with the time the trace's events end and returns 1.
int cmd_trace_timeline(const std::string& trace, const std::string& from, const std::string& to,
                       const std::string& component, uint64_t limit);

/// `trace export --perfetto OUT.json.gz`: see traces/perfetto_export.h.
int cmd_trace_export(const std::string& trace, const std::string& out, uint64_t max_events);

/// `trace diff A B`: operator by operator (matched by name), where the time moved between two
/// traces of the same model: latency in each, the change, and why (the bound changed, stalls
/// appeared or went). The header names each run (model, machine name, kind, config file,
/// precision); traces of different models get a warning. Prints "no differences" for identical
/// traces; returns 0 either way.
int cmd_trace_diff(const std::string& a, const std::string& b, uint64_t top);

}  // namespace archsim::cli
