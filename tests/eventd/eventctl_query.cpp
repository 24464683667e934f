#include "eventctl_query.hpp"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>

#include <catch2/catch.hpp>

namespace eventd::it {

using nlohmann::json;

std::vector<json> eventctl(Pipeline& p, const std::string& query, int* exit_code) {
    const char* binary = std::getenv("EVENTCTL");
    REQUIRE(binary);
    const std::string command =
        std::string(binary) + " --socket " + p.dir() + "/query.sock --format jsonl '" + query + "' 2>&1";
    FILE* out = ::popen(command.c_str(), "r");
    REQUIRE(out);
    std::string text;
    char buffer[4096];
    for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, out)) > 0;) text.append(buffer, n);
    const int status = ::pclose(out);
    if (exit_code) *exit_code = WEXITSTATUS(status);
    std::vector<json> records;
    size_t start = 0;
    for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
        const std::string line = text.substr(start, end - start);
        json parsed = json::parse(line, nullptr, false);
        if (!parsed.is_discarded()) records.push_back(std::move(parsed));
    }
    INFO(query << " → " << text);
    if (!exit_code) REQUIRE(WEXITSTATUS(status) == 0);
    return records;
}

}  // namespace eventd::it
