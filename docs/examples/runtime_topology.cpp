// docs/runtime.md's topology example: page views arrive keyed by user; one
// sub-topology counts each user's views and re-keys every view by page
// through a repartition topic; the other counts each page's views, with
// its store keyed by page, for the pages a global store of page titles
// lists (read whole on every instance). Both answer queries.
//
//   runtime_topology --bootstrap 127.0.0.1:9092 --quick     a self-check on fresh topics (a test)

#include <strata/decorators/all.hpp>
#include <strata/kafka/admin.hpp>
#include <strata/kafka/murmur2.hpp>
#include <strata/kafka/producer.hpp>
#include <strata/runtime/global_store.hpp>
#include <strata/runtime/topology.hpp>
#include <strata/stores/hash_map_store.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include <unistd.h>

namespace {

struct settings {
    std::string bootstrap = "127.0.0.1:9092";
    std::string app = "views-example";
    std::string views = "page-views";  // key: user, value: page
    std::string titles = "page-titles";  // key: page, value: its title (compacted)
    std::filesystem::path state = std::filesystem::temp_directory_path() / "strata-views";
};

// [make-global]
/// Every page's title, on every instance, whatever partitions it runs.
auto make_titles(const settings& s) {
    return strata::runtime::make_global_store<std::string, std::string>(
        {.topic = s.titles}, strata::hash_map_store<std::string, std::string>("titles"));
}
using titles_store = decltype(make_titles(std::declval<const settings&>()));
// [make-global]

// [make-topology]
auto make_views(const settings& s, titles_store titles) {
    strata::runtime::application_options o;
    o.application_id = s.app;  // groups views-example-by-user and views-example-by-page
    o.bootstrap_servers = s.bootstrap;
    o.state_dir = s.state;
    o.instance_id = "quick";
    o.guarantee = strata::runtime::processing_guarantee::exactly_once;  // across the hop too
    using strata::runtime::sub_topology;
    return strata::runtime::make_topology(
        o,
        // Sub-topology 0 reads the views, keyed by user.
        sub_topology<std::string, std::string>(
            {.name = "by-user", .topics = {s.views}},
            [](strata::runtime::task_context& t) {
                return strata::hash_map_store<std::string, std::int64_t>("views-per-user") | t.logged();
            },
            [](auto& ctx, const strata::runtime::record<std::string, std::string>& view) {
                auto& per_user = ctx.stores();
                per_user.put(view.key, per_user.get(view.key).value_or(0) + 1);
                // Re-keyed by page: to views-example-pages-repartition, with the view's time.
                ctx.repartition("pages", *view.value, view.key);
            }),
        // Sub-topology 1 reads the repartition topic: each task holds every view of its pages.
        sub_topology<std::string, std::string>(
            {.name = "by-page", .repartitions = {"pages"}},
            [](strata::runtime::task_context& t) {
                return strata::hash_map_store<std::string, std::int64_t>("views-per-page") | t.logged();
            },
            [titles](auto& ctx, const strata::runtime::record<std::string, std::string>& view) {
                if (!titles->get(view.key)) return;  // a page the site does not list: not counted
                auto& per_page = ctx.stores();
                per_page.put(view.key, per_page.get(view.key).value_or(0) + 1);
            }));
}
// [make-topology]

std::string user(long i) { return "user-" + std::to_string(i % 31); }
std::string page(long i) { return "/page/" + std::to_string(i * 7 % 11); }

/// Pages 0..9 have titles; page 10 is not listed.
bool listed(const std::string& page) { return page != "/page/10"; }

void feed(const settings& s, long n) {
    strata::kafka::topic_options o;
    o.bootstrap_servers = s.bootstrap;
    o.partitions = 4;
    o.topic_configs = {{"cleanup.policy", "delete"}};
    o.require_compaction = false;
    (void)strata::kafka::ensure_topic(s.views, o);
    o.partitions = 2;
    o.topic_configs = {};  // compacted: the current title of each page
    o.require_compaction = true;
    (void)strata::kafka::ensure_topic(s.titles, o);
    strata::kafka::producer p({s.bootstrap, std::nullopt, {}});
    auto& tracker = p.new_tracker();
    const strata::kafka::unique_topic titles(rd_kafka_topic_new(p.get(), s.titles.c_str(), nullptr));
    for (int i = 0; i < 10; ++i) {
        const std::string key = "/page/" + std::to_string(i), value = "Page " + std::to_string(i);
        p.produce(titles.get(), strata::kafka::default_partition(strata::as_bytes(key), 2), strata::as_bytes(key),
                  strata::as_bytes(value), tracker);
    }
    const strata::kafka::unique_topic t(rd_kafka_topic_new(p.get(), s.views.c_str(), nullptr));
    for (long i = 0; i < n; ++i) {
        const std::string key = user(i), value = page(i);
        p.produce(t.get(), strata::kafka::default_partition(strata::as_bytes(key), 4), strata::as_bytes(key),
                  strata::as_bytes(value), tracker);
    }
    p.wait(tracker);
    if (tracker.has_failed()) throw std::runtime_error("feed: " + tracker.first_error_text);
}

int quick_check(settings s) {
    const std::string suffix = std::to_string(::getpid()) + "-" +
                               std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    s.app += "-" + suffix;
    s.views += "-" + suffix;
    s.titles += "-" + suffix;
    s.state /= suffix;
    constexpr long n = 3000;
    feed(s, n);
    std::map<std::string, std::int64_t> per_user, per_page;
    for (long i = 0; i < n; ++i) {
        ++per_user[user(i)];
        if (listed(page(i))) ++per_page[page(i)];
    }
    // [run]
    const auto titles = make_titles(s);
    auto views = make_views(s, titles);
    views.add_global_store(titles);  // run() reads every title before any view is processed
    // [run]
    std::thread runner([&views] { views.run(); });
    // [query]
    // A page's count, from the sub-topology keyed by page (index 1).
    const auto views_of = [&](const std::string& p) -> std::optional<std::int64_t> {
        const auto r = views.sub<1>().get(p);
        return r.ok() ? *r : std::nullopt;
    };
    // [query]
    long right = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (right != static_cast<long>(per_page.size() + per_user.size()) &&
           std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        right = 0;
        for (const auto& [p, count] : per_page) right += views_of(p) == count ? 1 : 0;
        for (const auto& [u, count] : per_user) {
            const auto r = views.sub<0>().get(u);
            right += r.ok() && *r == count ? 1 : 0;
        }
    }
    const auto unlisted = views.sub<1>().get(std::string("/page/10"));
    const bool unlisted_uncounted = unlisted.ok() && !*unlisted;
    views.stop();
    runner.join();
    std::error_code ec;
    std::filesystem::remove_all(s.state, ec);
    if (right != static_cast<long>(per_page.size() + per_user.size()) || !unlisted_uncounted) {
        std::printf("TOPOLOGY EXAMPLE FAILED: %ld of %zu counts right, the unlisted page %s\n", right,
                    per_page.size() + per_user.size(), unlisted_uncounted ? "not counted" : "counted or not answered");
        return 1;
    }
    std::printf("TOPOLOGY EXAMPLE PASSED: %ld views, %zu users and %zu listed pages counted right\n", n,
                per_user.size(), per_page.size());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    settings s;
    bool quick = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--bootstrap" && i + 1 < argc) s.bootstrap = argv[++i];
        else if (a == "--quick") quick = true;
        else {
            std::fprintf(stderr, "usage: runtime_topology [--bootstrap B] --quick\n");
            return 2;
        }
    }
    if (!quick) {
        std::fprintf(stderr, "runtime_topology: only --quick (a self-check on fresh topics) is offered\n");
        return 2;
    }
    try {
        return quick_check(s);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "runtime_topology: %s\n", e.what());
        return 1;
    }
}
