// Finding and reading rule files; see rule_files.hpp.
#include "detection/rule_files.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace eventd::detection {

namespace fs = std::filesystem;

bool is_rule_file(const fs::path& path) { return path.extension() == ".yml" || path.extension() == ".yaml"; }

base::Result<std::vector<fs::path>> rule_files(const fs::path& dir) {
    std::vector<fs::path> files;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
        if (it->is_regular_file() && is_rule_file(it->path())) files.push_back(it->path());
    if (ec) return base::Error{base::ErrorCode::io, "cannot read the directory " + dir.string() + ": " + ec.message()};
    std::sort(files.begin(), files.end());
    return files;
}

base::Result<std::string> read_rule_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) return base::Error{base::ErrorCode::io, "cannot read " + path.string()};
    return text.str();
}

}  // namespace eventd::detection
