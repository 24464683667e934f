// A plain text table for `eventctl status`: a header row, columns two spaces apart, numbers
// right-aligned. Widths count UTF-8 characters, not bytes.
#pragma once

#include <string>
#include <vector>

namespace eventctl {

class TextTable {
public:
    void add_column(std::string header, bool right_aligned);
    void add_row(std::vector<std::string> cells);  // one cell per column; missing ones are blank
    std::string render(const std::string& indent) const;

private:
    std::vector<std::string> headers_;
    std::vector<bool> right_;
    std::vector<std::vector<std::string>> rows_;
};

}  // namespace eventctl
