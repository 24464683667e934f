#include "text_table.hpp"

#include <algorithm>

namespace eventctl {
namespace {

std::size_t display_width(const std::string& s) {
    return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) {
        return (static_cast<unsigned char>(c) & 0xc0) != 0x80;  // not a continuation byte
    }));
}

}  // namespace

void TextTable::add_column(std::string header, bool right_aligned) {
    headers_.push_back(std::move(header));
    right_.push_back(right_aligned);
}

void TextTable::add_row(std::vector<std::string> cells) {
    cells.resize(headers_.size());
    rows_.push_back(std::move(cells));
}

std::string TextTable::render(const std::string& indent) const {
    std::vector<std::size_t> width(headers_.size());
    for (std::size_t c = 0; c < headers_.size(); ++c) {
        width[c] = display_width(headers_[c]);
        for (const auto& row : rows_) width[c] = std::max(width[c], display_width(row[c]));
    }
    std::string out;
    auto emit = [&](const std::vector<std::string>& cells) {
        std::string line = indent;
        for (std::size_t c = 0; c < cells.size(); ++c) {
            const std::string pad(width[c] - display_width(cells[c]), ' ');
            if (c > 0) line += "  ";
            line += right_[c] ? pad + cells[c] : cells[c] + (c + 1 < cells.size() ? pad : "");
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out += line + "\n";
    };
    emit(headers_);
    for (const auto& row : rows_) emit(row);
    return out;
}

}  // namespace eventctl
