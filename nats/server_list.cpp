#include "nats/server_list.hpp"

#include <cctype>
#include <cerrno>

namespace eventd::nats {
namespace {

std::string_view trimmed(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

std::vector<std::string_view> elements(std::string_view list) {
    std::vector<std::string_view> out;
    for (size_t start = 0;;) {
        const size_t comma = list.find(',', start);
        out.push_back(trimmed(list.substr(start, comma == std::string_view::npos ? comma : comma - start)));
        if (comma == std::string_view::npos) return out;
        start = comma + 1;
    }
}

// What is wrong with one element, or "" when nothing is.
std::string element_problem(std::string_view url) {
    if (url.empty()) return "is empty (separate the servers with single commas)";
    for (unsigned char c : url)
        if (std::isspace(c)) return "contains a space (separate the servers with commas)";
    std::string_view rest = url;
    if (const size_t sep = url.find("://"); sep != std::string_view::npos) {
        std::string scheme(url.substr(0, sep));
        for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (scheme != "nats" && scheme != "tls")
            return "has the scheme '" + std::string(url.substr(0, sep)) + "': use nats:// or tls://";
        rest = url.substr(sep + 3);
    }
    if (const size_t at = rest.rfind('@'); at != std::string_view::npos) rest.remove_prefix(at + 1);
    if (rest.empty() || rest.front() == ':' || rest.front() == '/') return "names no host";
    return "";
}

}  // namespace

base::Result<std::vector<std::string>> server_urls(std::string_view list) {
    const auto parts = elements(list);
    std::vector<std::string> urls;
    for (size_t i = 0; i < parts.size(); ++i) {
        if (const std::string problem = element_problem(parts[i]); !problem.empty()) {
            const std::string which = parts.size() == 1
                                          ? "'" + std::string(parts[i]) + "'"
                                          : "element " + std::to_string(i + 1) + " of " + std::to_string(parts.size()) +
                                                " ('" + std::string(parts[i]) + "')";
            return base::Error{EINVAL, which + " " + problem};
        }
        urls.emplace_back(parts[i]);
    }
    return urls;
}

std::string servers_text(std::string_view list) {
    const auto parts = elements(list);
    if (parts.size() == 1) return std::string(parts[0]);
    std::string text = "any of ";
    for (size_t i = 0; i < parts.size(); ++i) text += (i ? ", " : "") + std::string(parts[i]);
    return text;
}

}  // namespace eventd::nats
