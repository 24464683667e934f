#include "case_check.hpp"

#include <sstream>

namespace eventd::query_it {
namespace {

std::string strip_newline(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    return s;
}

}  // namespace

std::optional<std::string> check_outcome(const QueryCase& c, const RunResult& r) {
    std::ostringstream report;
    report << c.file << ":" << c.line << (c.user.empty() ? "" : " (as " + c.user + ")") << "\n  query: " << c.text
           << "\n";
    auto got = [&] {
        report << "  got: exit " << r.exit_code << (r.timed_out ? " (timed out)" : "") << "\n  stdout:\n"
               << r.out << "  stderr: " << r.err << "\n";
        return report.str();
    };
    if (c.kind == QueryCase::Kind::error) {
        std::string err = strip_newline(r.err);
        if (err.rfind("eventctl: ", 0) == 0) err.erase(0, 10);
        const bool matches = c.error_substring ? err.find(c.error) != std::string::npos : err == c.error;
        if (r.exit_code == 1 && r.out.empty() && matches) return std::nullopt;
        report << "  expected: exit 1, no stdout, stderr " << (c.error_substring ? "containing: " : "") << c.error
               << "\n";
        return got();
    }
    std::vector<nlohmann::json> records;
    bool parsed = true;
    {
        std::istringstream in(r.out);
        std::string line;
        while (std::getline(in, line)) {
            if (line.empty()) continue;
            try {
                records.push_back(nlohmann::json::parse(line));
            } catch (...) {
                parsed = false;
            }
        }
    }
    bool same = parsed && r.exit_code == 0 && records.size() == c.records.size();
    for (size_t i = 0; same && i < records.size(); ++i) same = records_equal(c.records[i], records[i]);
    if (same) return std::nullopt;
    report << "  expected: exit 0, " << c.records.size() << " record(s):\n";
    for (const auto& e : c.records) report << "    " << e.dump() << "\n";
    return got();
}

}  // namespace eventd::query_it
