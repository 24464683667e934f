#include "display_width.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

namespace eventctl {
namespace {

struct Range {
    char32_t first;
    char32_t last;
};

// Combining marks (Mn, Me) of the scripts most often met, and the invisible format characters.
constexpr std::array<Range, 26> kZeroWidth{{
    {0x0300, 0x036f}, {0x0483, 0x0489},   {0x0591, 0x05bd}, {0x05bf, 0x05bf}, {0x05c1, 0x05c2}, {0x05c4, 0x05c5},
    {0x05c7, 0x05c7}, {0x0610, 0x061a},   {0x064b, 0x065f}, {0x0670, 0x0670}, {0x06d6, 0x06dc}, {0x06df, 0x06e4},
    {0x0e31, 0x0e31}, {0x0e34, 0x0e3a},   {0x0e47, 0x0e4e}, {0x1160, 0x11ff}, {0x1ab0, 0x1aff}, {0x1dc0, 0x1dff},
    {0x200b, 0x200f}, {0x202a, 0x202e},   {0x2060, 0x2064}, {0x20d0, 0x20ff}, {0xfe00, 0xfe0f}, {0xfe20, 0xfe2f},
    {0xfeff, 0xfeff}, {0xe0100, 0xe01ef},
}};

// East Asian Wide (W) and Fullwidth (F).
constexpr std::array<Range, 34> kWide{{
    {0x1100, 0x115f}, {0x231a, 0x231b},   {0x2329, 0x232a},   {0x23e9, 0x23ec},   {0x23f0, 0x23f0}, {0x23f3, 0x23f3},
    {0x25fd, 0x25fe}, {0x2614, 0x2615},   {0x2648, 0x2653},   {0x267f, 0x267f},   {0x2693, 0x2693}, {0x26a1, 0x26a1},
    {0x26aa, 0x26ab}, {0x26bd, 0x26be},   {0x26c4, 0x26c5},   {0x2705, 0x2705},   {0x270a, 0x270b}, {0x2728, 0x2728},
    {0x274c, 0x274c}, {0x2e80, 0x303e},   {0x3041, 0x33ff},   {0x3400, 0x4dbf},   {0x4e00, 0x9fff}, {0xa000, 0xa4cf},
    {0xa960, 0xa97f}, {0xac00, 0xd7a3},   {0xf900, 0xfaff},   {0xfe10, 0xfe19},   {0xfe30, 0xfe6f}, {0xff00, 0xff60},
    {0xffe0, 0xffe6}, {0x1f300, 0x1f64f}, {0x1f900, 0x1f9ff}, {0x20000, 0x3fffd},
}};

template <std::size_t N>
constexpr bool sorted_and_disjoint(const std::array<Range, N>& ranges) {
    for (std::size_t i = 0; i < N; ++i) {
        if (ranges[i].first > ranges[i].last) return false;
        if (i > 0 && ranges[i - 1].last >= ranges[i].first) return false;
    }
    return true;
}
static_assert(sorted_and_disjoint(kZeroWidth) && sorted_and_disjoint(kWide));

template <std::size_t N>
bool in(const std::array<Range, N>& ranges, char32_t c) {
    // The ranges are sorted and disjoint: the one that could hold c is the first ending at or after it.
    const auto it =
        std::lower_bound(ranges.begin(), ranges.end(), c, [](const Range& r, char32_t v) { return r.last < v; });
    return it != ranges.end() && it->first <= c;
}

int code_point_columns(char32_t c) {
    if (c < 0x300) return 1;
    if (in(kZeroWidth, c)) return 0;
    if (in(kWide, c)) return 2;
    return 1;
}

}  // namespace

CharColumns char_columns_at(std::string_view text, std::size_t i) {
    const auto b = static_cast<uint8_t>(text[i]);
    if (b < 0x80) return {1, 1};
    const std::size_t len = b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    if (len == 0 || i + len > text.size()) return {1, 1};
    char32_t c = b & (0x7f >> len);
    for (std::size_t k = 1; k < len; ++k) {
        const auto cont = static_cast<uint8_t>(text[i + k]);
        if ((cont & 0xc0) != 0x80) return {1, 1};
        c = (c << 6) | (cont & 0x3f);
    }
    return {len, code_point_columns(c)};
}

std::size_t display_columns(std::string_view text) {
    std::size_t columns = 0;
    for (std::size_t i = 0; i < text.size();) {
        const CharColumns ch = char_columns_at(text, i);
        columns += static_cast<std::size_t>(ch.columns);
        i += ch.bytes;
    }
    return columns;
}

}  // namespace eventctl
