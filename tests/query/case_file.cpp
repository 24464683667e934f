#include "case_file.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace eventd::query_it {

namespace {

std::string trim_right(std::string s) {
    while (!s.empty() && (s.back() == ' ' || s.back() == '\r' || s.back() == '\t')) s.pop_back();
    return s;
}

}  // namespace

std::vector<std::string> case_files(const std::string& dir) {
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
        if (entry.path().extension() == ".test") files.push_back(entry.path().string());
    std::sort(files.begin(), files.end());
    return files;
}

std::vector<QueryCase> parse_case_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read " + path);
    const std::string base = std::filesystem::path(path).filename().string();
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(trim_right(line));

    std::vector<QueryCase> cases;
    std::string user;
    auto fail = [&](size_t i, const std::string& why) {
        throw std::runtime_error(base + ":" + std::to_string(i + 1) + ": " + why);
    };
    for (size_t i = 0; i < lines.size(); ++i) {
        const std::string& line = lines[i];
        if (line.empty() || line[0] == '#') continue;
        if (line.rfind("user ", 0) == 0) {
            user = line.substr(5);
            if (user == "root") user.clear();
            continue;
        }
        QueryCase c;
        if (line.rfind("query ", 0) == 0)
            c.kind = QueryCase::Kind::query;
        else if (line.rfind("error ", 0) == 0)
            c.kind = QueryCase::Kind::error;
        else
            fail(i, "expected `query`, `error`, `user` or a comment, found: " + line);
        c.file = base;
        c.line = int(i + 1);
        c.user = user;
        c.text = line.substr(6);
        if (i + 1 >= lines.size() || lines[i + 1] != "----") fail(i + 1, "expected ---- after the query");
        i += 2;
        for (; i < lines.size() && !lines[i].empty(); ++i) {
            if (c.kind == QueryCase::Kind::error) {
                if (!c.error.empty()) fail(i, "an error case has one expected line");
                if (lines[i].rfind("~ ", 0) == 0) {
                    c.error_substring = true;
                    c.error = lines[i].substr(2);
                } else {
                    c.error = lines[i];
                }
                continue;
            }
            try {
                c.records.push_back(nlohmann::json::parse(lines[i]));
            } catch (const std::exception& e) {
                fail(i, std::string("expected record is not JSON: ") + e.what());
            }
        }
        if (c.kind == QueryCase::Kind::error && c.error.empty()) fail(i, "an error case needs its expected message");
        cases.push_back(std::move(c));
    }
    return cases;
}

bool records_equal(const nlohmann::json& expected, const nlohmann::json& actual) {
    if (expected.is_number() && actual.is_number()) {
        if (expected.is_number_float() || actual.is_number_float()) {
            const double a = expected.get<double>(), b = actual.get<double>();
            return a == b || std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
        }
        return expected == actual;
    }
    if (expected.type() != actual.type()) return false;
    if (expected.is_object()) {
        if (expected.size() != actual.size()) return false;
        for (auto it = expected.begin(); it != expected.end(); ++it) {
            auto found = actual.find(it.key());
            if (found == actual.end() || !records_equal(it.value(), *found)) return false;
        }
        return true;
    }
    if (expected.is_array()) {
        if (expected.size() != actual.size()) return false;
        for (size_t i = 0; i < expected.size(); ++i)
            if (!records_equal(expected[i], actual[i])) return false;
        return true;
    }
    return expected == actual;
}

}  // namespace eventd::query_it
