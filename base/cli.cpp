// The one file that includes CLI11 (see cli.hpp for why).
#include "base/cli.hpp"

#include <deque>
#include <exception>

#include <CLI/CLI.hpp>

namespace base::cli {

Option* Option::type_name(const std::string& name) {
    option_->type_name(name);
    return this;
}

Option* Option::required() {
    option_->required();
    return this;
}

Option* Option::capture_default_str() {
    option_->capture_default_str();
    return this;
}

Option* Option::excludes(Option* other) {
    option_->excludes(other->option_);
    return this;
}

Option* Option::check_range(uint64_t min, uint64_t max) {
    option_->check(CLI::Range(min, max));
    return this;
}

Option* Option::check_member(std::vector<std::string> allowed) {
    option_->check(CLI::IsMember(std::move(allowed)));
    return this;
}

Option* Option::check(std::function<std::string(const std::string&)> validate) {
    option_->check(std::move(validate));
    return this;
}

size_t Option::count() const { return option_->count(); }

struct App::Impl {
    CLI::App app;
    std::deque<Option> options;  // stable addresses: the programs keep Option pointers
    std::exception_ptr error;    // the last parse's CLI::ParseError

    Impl(const std::string& description, const std::string& name) : app(description, name) {}
    Option* keep(CLI::Option* option) { return &options.emplace_back(option); }
};

App::App(const std::string& description, const std::string& name) : impl_(std::make_unique<Impl>(description, name)) {}

App::~App() = default;

Option* App::add_option(const std::string& names, std::string& into, const std::string& help) {
    return impl_->keep(impl_->app.add_option(names, into, help));
}

Option* App::add_option(const std::string& names, std::vector<std::string>& into, const std::string& help) {
    return impl_->keep(impl_->app.add_option(names, into, help));
}

Option* App::add_option(const std::string& names, uint32_t& into, const std::string& help) {
    return impl_->keep(impl_->app.add_option(names, into, help));
}

Option* App::add_option(const std::string& names, uint64_t& into, const std::string& help) {
    return impl_->keep(impl_->app.add_option(names, into, help));
}

Option* App::add_option(const std::string& names, double& into, const std::string& help) {
    return impl_->keep(impl_->app.add_option(names, into, help));
}

Option* App::add_flag(const std::string& names, bool& into, const std::string& help) {
    return impl_->keep(impl_->app.add_flag(names, into, help));
}

void App::set_version_flag(const std::string& names, const std::string& version, const std::string& help) {
    impl_->app.set_version_flag(names, version, help);
}

void App::footer(const std::string& text) { impl_->app.footer(text); }

std::string App::help() const { return impl_->app.help(); }

Parsed App::parse(int argc, const char* const* argv) {
    impl_->error = nullptr;
    try {
        impl_->app.parse(argc, argv);
        return {};
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return {false, impl_->app.exit(e), {}};  // --help, --version: printed
        impl_->error = std::current_exception();
        return {false, e.get_exit_code(), e.what()};
    }
}

int App::print_error() {
    if (!impl_->error) return 0;
    try {
        std::rethrow_exception(impl_->error);
    } catch (const CLI::ParseError& e) {
        return impl_->app.exit(e);
    }
}

}  // namespace base::cli
