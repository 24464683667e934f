// The programs' command lines: a thin face on CLI11 (Debian's libcli11-dev 2.1, header-only).
// CLI11's headers define validators and their lambdas at namespace scope, so every file that
// includes them compiles all of it — about 9 s of CPU per program at -O2 here, six programs —
// while this header costs nothing; base/cli.cpp is the one place that includes CLI11
// (docs/DEVELOPING.md "Build time"). Help texts, error texts and exit codes are CLI11's.
//
//   base::cli::App app{"what the program does", "name"};
//   std::string config;
//   app.add_option("-c,--config", config, "configuration file")->type_name("FILE");
//   const base::cli::Parsed parsed = app.parse(argc, argv);
//   if (!parsed.go_on) return parsed.error.empty() ? parsed.exit_code : usage_error(parsed.error);
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace base::cli {

// One option of an App (owned by it). Each setter returns the option, so calls chain.
class Option {
public:
    explicit Option(CLI::Option* option) : option_(option) {}
    Option* type_name(const std::string& name);
    Option* required();
    Option* capture_default_str();  // the help shows the variable's value before parsing
    Option* excludes(Option* other);
    Option* check_range(uint64_t min, uint64_t max);
    Option* check_member(std::vector<std::string> allowed);
    // `validate` returns "" for a valid value, otherwise what is wrong with it.
    Option* check(std::function<std::string(const std::string&)> validate);
    // How often the option was given.
    size_t count() const;

private:
    CLI::Option* option_;
};

// What App::parse found.
struct Parsed {
    bool go_on = true;  // false: the program exits with exit_code
    int exit_code = 0;  // 0 after --help or --version (already printed)
    std::string error;  // a usage error: CLI11's words, not printed yet
};

class App {
public:
    explicit App(const std::string& description, const std::string& name = "");
    ~App();
    App(const App&) = delete;
    App& operator=(const App&) = delete;

    Option* add_option(const std::string& names, std::string& into, const std::string& help = "");
    Option* add_option(const std::string& names, std::vector<std::string>& into, const std::string& help = "");
    Option* add_option(const std::string& names, uint32_t& into, const std::string& help = "");
    Option* add_option(const std::string& names, uint64_t& into, const std::string& help = "");
    Option* add_option(const std::string& names, double& into, const std::string& help = "");
    Option* add_flag(const std::string& names, bool& into, const std::string& help = "");
    void set_version_flag(const std::string& names, const std::string& version, const std::string& help);
    void footer(const std::string& text);
    std::string help() const;

    // Parses the command line. --help and --version are printed here (go_on false, exit 0); a
    // usage error is returned in `error` for the caller to word.
    Parsed parse(int argc, const char* const* argv);
    // The usage error of the last parse printed as CLI11 prints it; returns its exit code.
    int print_error();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace base::cli
