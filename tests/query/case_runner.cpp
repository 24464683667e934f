#include "case_runner.hpp"

#include "case_check.hpp"

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

std::optional<std::string> run_case(QueryEnv& env, const QueryCase& c) {
    std::optional<RunAs> as;
    if (!c.user.empty()) {
        as = lookup_user(c.user);
        if (!as) return c.file + ":" + std::to_string(c.line) + ": no local user " + c.user;
    }
    return check_outcome(c, env.query(c.text, as));
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
