// Time literal resolution (PSD-008 §8.1). Pure arithmetic on UTC: no time zones, no leap
// seconds, no locale — the same text always means the same instant for the same "now".
#include "eventd/query_language/time_literal.hpp"

#include <limits>

#include "eventd/query_language/ascii.hpp"

namespace eventd::query {

namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool all_digits(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s) {
        if (!is_digit(c)) return false;
    }
    return true;
}

int64_t digits_value(std::string_view s) {  // caller checked all_digits and a short length
    int64_t v = 0;
    for (char c : s) v = v * 10 + (c - '0');
    return v;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
    y -= m <= 2 ? 1 : 0;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const int64_t yoe = y - era * 400;
    const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

bool is_leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int64_t days_in_month(int64_t y, int64_t m) {
    static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : kDays[m - 1];
}

// Floor division (now_ns may be negative in tests; the calendar must not round towards 0).
int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}

}  // namespace

bool is_duration_shape(std::string_view text) {
    if (text.size() < 2) return false;
    const char unit = lower(text.back());
    if (unit != 's' && unit != 'm' && unit != 'h' && unit != 'd') return false;
    return all_digits(text.substr(0, text.size() - 1));
}

bool is_date_shape(std::string_view text) {
    // YYYY-MM-DD
    if (text.size() < 10) return false;
    if (!all_digits(text.substr(0, 4)) || text[4] != '-' || !all_digits(text.substr(5, 2)) || text[7] != '-' ||
        !all_digits(text.substr(8, 2))) {
        return false;
    }
    if (text.size() == 10) return true;
    // THH:MM:SS
    std::string_view rest = text.substr(10);
    if (rest.size() < 9 || lower(rest[0]) != 't' || !all_digits(rest.substr(1, 2)) || rest[3] != ':' ||
        !all_digits(rest.substr(4, 2)) || rest[6] != ':' || !all_digits(rest.substr(7, 2))) {
        return false;
    }
    rest.remove_prefix(9);
    // [.fffffffff]
    if (!rest.empty() && rest[0] == '.') {
        size_t n = 1;
        while (n < rest.size() && is_digit(rest[n])) ++n;
        if (n == 1 || n > 10) return false;
        rest.remove_prefix(n);
    }
    // [Z]
    if (rest == "Z" || rest == "z") return true;
    return rest.empty();
}

std::optional<int64_t> duration_ns(std::string_view text) {
    if (!is_duration_shape(text)) return std::nullopt;
    const std::string_view digits = text.substr(0, text.size() - 1);
    int64_t unit_ns = kNsPerSecond;
    switch (lower(text.back())) {
        case 'm':
            unit_ns = 60 * kNsPerSecond;
            break;
        case 'h':
            unit_ns = 3600 * kNsPerSecond;
            break;
        case 'd':
            unit_ns = kNsPerDay;
            break;
        default:
            break;
    }
    const int64_t max_count = std::numeric_limits<int64_t>::max() / unit_ns;
    int64_t count = 0;
    for (char c : digits) {
        if (count > (max_count - (c - '0')) / 10) return std::nullopt;
        count = count * 10 + (c - '0');
    }
    return count * unit_ns;
}

std::optional<int64_t> relative_ns(int64_t now_ns, int64_t duration, bool ago) {
    int64_t out = 0;
    if (ago ? __builtin_sub_overflow(now_ns, duration, &out) : __builtin_add_overflow(now_ns, duration, &out)) {
        return std::nullopt;
    }
    return out;
}

int64_t midnight_ns(int64_t now_ns, int days_back) { return (floor_div(now_ns, kNsPerDay) - days_back) * kNsPerDay; }

std::optional<int64_t> date_ns(std::string_view text) {
    if (!is_date_shape(text)) return std::nullopt;
    const int64_t year = digits_value(text.substr(0, 4));
    const int64_t month = digits_value(text.substr(5, 2));
    const int64_t day = digits_value(text.substr(8, 2));
    if (year < 1970 || month < 1 || month > 12 || day < 1 || day > days_in_month(year, month)) {
        return std::nullopt;
    }
    int64_t seconds = 0;
    int64_t fraction_ns = 0;
    if (text.size() > 10) {
        const int64_t hour = digits_value(text.substr(11, 2));
        const int64_t minute = digits_value(text.substr(14, 2));
        const int64_t second = digits_value(text.substr(17, 2));
        if (hour > 23 || minute > 59 || second > 59) return std::nullopt;
        seconds = hour * 3600 + minute * 60 + second;
        if (text.size() > 19 && text[19] == '.') {
            std::string_view frac = text.substr(20);
            if (!frac.empty() && lower(frac.back()) == 'z') frac.remove_suffix(1);
            int64_t scale = kNsPerSecond;
            for (char c : frac) {
                scale /= 10;
                fraction_ns += (c - '0') * scale;
            }
        }
    }
    const int64_t days = days_from_civil(year, month, day);
    // int64 nanoseconds end at 2262-04-11T23:47:16.854775807Z.
    constexpr int64_t kMaxSeconds = std::numeric_limits<int64_t>::max() / kNsPerSecond;
    const int64_t total_seconds = days * 86'400 + seconds;
    if (total_seconds >= kMaxSeconds) return std::nullopt;
    return total_seconds * kNsPerSecond + fraction_ns;
}

}  // namespace eventd::query
