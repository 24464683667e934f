#include "case_runner.hpp"

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include <catch2/catch.hpp>

namespace eventd::query_it {

std::string cases_dir() {
    const char* path = std::getenv("QUERY_CASES_DIR");
    if (!path || !*path) throw std::runtime_error("QUERY_CASES_DIR is not set: run the tests through `meson test`");
    return path;
}

namespace {

std::string strip_newline(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    return s;
}

}  // namespace

std::optional<std::string> run_case(QueryEnv& env, const QueryCase& c) {
    std::optional<RunAs> as;
    if (!c.user.empty()) {
        as = lookup_user(c.user);
        if (!as) return c.file + ":" + std::to_string(c.line) + ": no local user " + c.user;
    }
    const RunResult r = env.query(c.text, as);
    std::ostringstream report;
    report << c.file << ":" << c.line << (c.user.empty() ? "" : " (as " + c.user + ")") << "\n  query: " << c.text
           << "\n";
    auto got = [&] {
        report << "  got: exit " << r.exit_code << (r.timed_out ? " (timed out)" : "") << "\n  stdout:\n" << r.out
               << "  stderr: " << r.err << "\n";
        return report.str();
    };
    if (c.kind == QueryCase::Kind::error) {
        // eventctl prints "eventctl: <eventd's message>"; the tables hold eventd's message.
        std::string err = strip_newline(r.err);
        if (err.rfind("eventctl: ", 0) == 0) err.erase(0, 10);
        const bool matches = c.error_substring ? err.find(c.error) != std::string::npos : err == c.error;
        if (r.exit_code == 1 && r.out.empty() && matches) return std::nullopt;
        report << "  expected: exit 1, no stdout, stderr " << (c.error_substring ? "containing: " : "") << c.error << "\n";
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

void run_case_dir(QueryEnv& env, const std::string& dir) {
    size_t total = 0, passed = 0;
    for (const std::string& file : case_files(dir)) {
        std::vector<QueryCase> cases;
        try {
            cases = parse_case_file(file);
        } catch (const std::exception& e) {
            FAIL(e.what());
        }
        for (const QueryCase& c : cases) {
            ++total;
            const auto failure = run_case(env, c);
            if (!failure) {
                ++passed;
                continue;
            }
            INFO(*failure);
            CHECK(false);
        }
    }
    std::cout << dir << ": " << passed << " of " << total << " cases pass\n";
    CHECK(total > 0);
}

}  // namespace eventd::query_it
